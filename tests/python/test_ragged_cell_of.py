"""`tessera.ragged.cell_of` and `cell_centres` against healpy, and against the cells a build
writes. Truth for the authalic convention is the closed-form authalic latitude of the WGS84
ellipsoid (not the series the library uses), computed here in numpy."""
import json

import numpy as np
import pytest

import tessera
from tessera import ragged

healpy = pytest.importorskip("healpy")

WGS84_F = 1 / 298.257223563
WGS84_E2 = WGS84_F * (2 - WGS84_F)


def authalic_closed_form(lat_deg):
    """β = asin(q(φ) / q(90°)) with q(φ) = (1 − e²)[sinφ/(1 − e² sin²φ) − ln((1 − e sinφ)/(1 + e sinφ))/(2e)]."""
    e = np.sqrt(WGS84_E2)

    def q(s):
        return (1 - WGS84_E2) * (s / (1 - WGS84_E2 * s * s) - np.log((1 - e * s) / (1 + e * s)) / (2 * e))

    return np.degrees(np.arcsin(np.clip(q(np.sin(np.radians(lat_deg))) / q(1.0), -1, 1)))


def random_points(n, seed):
    rng = np.random.default_rng(seed)
    return np.degrees(np.arcsin(rng.uniform(-1, 1, n))), rng.uniform(-180, 180, n)


@pytest.mark.parametrize("order", [0, 3, 12, 20])
def test_cell_of_matches_healpy(order):
    lat, lon = random_points(20000, order)
    nside = 2**order
    spherical = ragged.cell_of(lat, lon, order, latitude="geodetic-spherical")
    assert spherical.dtype == np.uint64 and spherical.shape == lat.shape
    np.testing.assert_array_equal(spherical, healpy.ang2pix(nside, lon, lat, nest=True, lonlat=True))
    authalic = ragged.cell_of(lat, lon, order)
    np.testing.assert_array_equal(authalic, healpy.ang2pix(nside, lon, authalic_closed_form(lat), nest=True, lonlat=True))
    if order >= 12:  # the geodetic and authalic cells differ away from the equator and poles
        assert (authalic != spherical).mean() > 0.5


@pytest.mark.parametrize("order", [0, 5, 14, 29])
def test_cell_centres_match_healpy_and_round_trip(order):
    rng = np.random.default_rng(order)
    cells = rng.integers(0, 12 * 4**order, 5000, dtype=np.uint64)
    cells[:2] = [0, 12 * 4**order - 1]  # the first and last cell: next to the poles
    want_lon, want_lat = healpy.pix2ang(2**order, cells.astype(np.int64), nest=True, lonlat=True)
    lat, lon = ragged.cell_centres(cells, order, latitude="geodetic-spherical")
    np.testing.assert_allclose(lat, want_lat, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.mod(lon - want_lon + 180, 360) - 180, 0, atol=1e-9)
    glat, glon = ragged.cell_centres(cells, order)
    np.testing.assert_array_equal(glon, lon)
    np.testing.assert_allclose(authalic_closed_form(glat), lat, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(ragged.cell_of(glat, glon, order), cells)
    np.testing.assert_array_equal(ragged.cell_of(lat, lon, order, latitude="geodetic-spherical"), cells)


def test_cells_of_a_build_are_the_cells_cell_of_names(tmp_path):
    lat, lon = random_points(3000, 99)
    report = ragged.build(tmp_path / "hive", lat=lat, lon=lon, value=np.arange(3000.0), cell_order=7, shard_order=1,
                          threads=1)
    want = dict(zip(*np.unique(ragged.cell_of(lat, lon, 7), return_counts=True)))
    got = {}
    for path in ragged.leaves(tmp_path / "hive"):
        field = ragged.open(path, "h_tdigest")
        start = field.axis()["root_start"]
        for index, rows in field.cells():
            got[start + index] = int(rows[:, 1].sum())
    assert got == {int(k): int(v) for k, v in want.items()}
    assert report["cells_with_data"] == len(want)


def test_bad_arguments_are_usage_errors():
    with pytest.raises(tessera.UsageError, match="point 1"):
        ragged.cell_of([10.0, 95.0], [0.0, 0.0], 5)
    with pytest.raises(tessera.UsageError, match="shape"):
        ragged.cell_of([10.0, 20.0], [0.0], 5)
    with pytest.raises(tessera.UsageError, match="order 30"):
        ragged.cell_of([10.0], [0.0], 30)
    with pytest.raises(tessera.UsageError, match="not a NESTED id at order 1"):
        ragged.cell_centres([48], 1)
    with pytest.raises(tessera.UsageError, match="latitude convention"):
        ragged.cell_of([10.0], [0.0], 5, latitude="geocentric")
    scalar = ragged.cell_of(10.0, 20.0, 3, latitude="geodetic-spherical")
    assert scalar.shape == () and int(scalar) == healpy.ang2pix(8, 20.0, 10.0, nest=True, lonlat=True)


def test_dense_arrays_of_a_leaf_read_as_numpy(tmp_path):
    lat, lon = random_points(6000, 21)
    value = np.random.default_rng(21).normal(100.0, 10.0, lat.size)
    ragged.build(tmp_path / "hive", lat=lat, lon=lon, value=value, cell_order=6, shard_order=1, stats=True, threads=1)
    cells = ragged.cell_of(lat, lon, 6)
    for path in ragged.leaves(tmp_path / "hive"):
        leaf = ragged.open(path)
        start = ragged.open(path, "h_tdigest").axis()["root_start"]
        count, mean, high = leaf.read_array("count"), leaf.read_array("6/h_mean"), leaf.read_array("h_max")
        assert count.shape == mean.shape == high.shape == (4**5,)
        assert mean.dtype == np.float32
        mine = (cells >= start) & (cells < start + count.size)
        np.testing.assert_array_equal(count, np.bincount((cells[mine] - start).astype(np.int64), minlength=count.size))
        for i in np.flatnonzero(count)[:100]:
            members = value[cells == start + i]
            np.testing.assert_allclose(mean[i], members.mean(), rtol=1e-6)
            assert high[i] == np.float32(members.max())
        assert np.isnan(mean[count == 0]).all()
        with pytest.raises(tessera.UsageError, match="read_cell"):
            leaf.read_array("h_tdigest")
