"""Missing values on `tet convert`: float variables' `_FillValue` / `missing_value` become NaN as
xarray's mask_and_scale reads them (checked against xarray and netCDF4 from Debian), `--keep-fill`
keeps the stored values, integers keep theirs, and the query engine's `nan_*` folds then equal
xarray's skipna reductions while plain folds return NaN rather than fold a fill value in."""
import json
import subprocess
import warnings

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr

import tessera
from tessera import tet

FILL = np.float32(1e20)


def cli(*args):
    proc = subprocess.run([str(tessera.cli_path()), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def era(tmp_path_factory):
    """A NetCDF4 file as climate users have them: a float field with `_FillValue` (and a -0.0),
    a double field with a two-valued `missing_value`, an int field with a fill, a packed field."""
    d = tmp_path_factory.mktemp("fill")
    rng = np.random.default_rng(3)
    with netCDF4.Dataset(d / "era.nc", "w") as nc:
        for name, n in (("time", 6), ("lat", 10), ("lon", 12)):
            nc.createDimension(name, n)
        tas = rng.normal(290, 5, (6, 10, 12)).astype("f4")
        tas[:, :3, :4] = FILL
        tas[5, 9, 11] = -0.0
        v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=FILL)
        v.set_auto_mask(False)
        v[:] = tas
        pr = rng.random((6, 10, 12))
        pr[0, 0, :] = -999.0
        pr[1, 1, :] = -1.0
        w = nc.createVariable("pr", "f8", ("time", "lat", "lon"))
        w.missing_value = np.array([-999.0, -1.0])
        w.set_auto_mask(False)
        w[:] = pr
        counts = rng.integers(0, 50, (6, 10, 12)).astype("i4")
        counts[0] = -1
        c = nc.createVariable("counts", "i4", ("time", "lat", "lon"), fill_value=np.int32(-1))
        c.set_auto_mask(False)
        c[:] = counts
    cli("tet", "convert", d / "era.nc", d / "era.tet")
    cli("tet", "convert", d / "era.nc", d / "raw.tet", "--keep-fill")
    return d


def xarray_values(path, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multiple fill values": xarray masks them all, as expected
        with xr.open_dataset(path) as ds:
            return ds[name].values


def raw_values(path, name):
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        return nc[name][:]


@pytest.mark.parametrize("name", ["tas", "pr"])
def test_float_fills_become_nan_as_xarray_reads_them(era, name):
    got = tet.open(era / "era.tet")[name][...]
    want = xarray_values(era / "era.nc", name)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaN where xarray has NaN, every other value exact
    assert np.isnan(got).sum() > 0
    if name == "tas":
        assert np.signbit(got[5, 9, 11]) and got[5, 9, 11] == 0  # untouched values keep their bits


@pytest.mark.parametrize("name", ["tas", "pr", "counts"])
def test_keep_fill_writes_the_stored_values(era, name):
    np.testing.assert_array_equal(tet.open(era / "raw.tet")[name][...], raw_values(era / "era.nc", name))


def test_integer_fills_keep_their_values_and_attribute(era):
    f = tet.open(era / "era.tet")
    np.testing.assert_array_equal(f["counts"][...], raw_values(era / "era.nc", "counts"))
    info = json.loads(cli("tet", "info", era / "era.tet", "--json", "--metadata"))
    assert "_FillValue" in json.dumps(info)


@pytest.mark.parametrize("name", ["tas", "pr"])
def test_nan_folds_equal_xarray_skipna_and_plain_folds_do_not_fold_fills_in(era, name):
    values = xarray_values(era / "era.nc", name).astype(np.float64)

    def fold(op, path="era.tet"):
        out = cli("tet", "query", json.dumps({"dataset": name, op: []}), "-t", era / path, "-x", "--format", "json")
        value = json.loads(out)["execution"][f"operation_{op}"]
        return float("nan") if value is None else float(value)

    assert fold("nan_mean") == pytest.approx(np.nanmean(values), rel=1e-12)
    assert fold("nan_std") == pytest.approx(np.nanstd(values), rel=1e-9)
    assert np.isnan(fold("mean"))
    # Kept fills are what a user gets with --keep-fill: the reference's values, folded as stored.
    assert fold("mean", "raw.tet") == pytest.approx(np.mean(raw_values(era / "era.nc", name).astype(np.float64)), rel=1e-9)


def test_hdf5_float_fill_attribute_is_masked_too(tmp_path):
    data = np.arange(24, dtype="f4").reshape(4, 6)
    data[1] = -9999.0
    with h5py.File(tmp_path / "x.h5", "w") as h:
        h.create_dataset("v", data=data).attrs["_FillValue"] = np.float32(-9999.0)
        h.create_dataset("w", data=data.astype("f8"))  # no attribute: nothing is masked
    cli("tet", "convert", tmp_path / "x.h5", tmp_path / "x.tet")
    f = tet.open(tmp_path / "x.tet")
    np.testing.assert_array_equal(f["v"][...], np.where(data == -9999.0, np.nan, data))
    np.testing.assert_array_equal(f["w"][...], data.astype("f8"))
