"""The xarray backend (`engine="tessera"`): a NetCDF4 file converted with `tessera tet convert` opens
as the Dataset xarray itself makes of the NetCDF file (dims, coordinates longer than the footer's
64 labels, decoded times, values), lazily (nothing but index coordinates read at open, selections
read only their region), with one Dask chunk per `.tet` chunk; attributes keep their types, global
attributes are kept, and mask_and_scale=False gives the source's stored values back.

The truth is xarray's own `open_dataset` on the NetCDF source, netCDF4 and numpy (Debian's), and
for the conformance files the independent decoder of tet_truth.py."""
import io
import pickle
import warnings

import netCDF4
import numpy as np
import pytest
import xarray as xr

import tessera
from tessera import tet
from tessera._xarray_backend import TesseraBackendEntrypoint

from conftest import run_cli
from tet_truth import random_key, read_tet

FILL = np.float32(1e20)


@pytest.fixture(scope="module")
def climate(tmp_path_factory):
    """A NetCDF4 file as climate users have them, and its `.tet` conversion."""
    d = tmp_path_factory.mktemp("xarray")
    rng = np.random.default_rng(18)
    with netCDF4.Dataset(d / "clim.nc", "w") as nc:
        nc.title = "backend test"
        for name, n in (("time", 6), ("lat", 90), ("lon", 180), ("y", 4), ("x", 6)):
            nc.createDimension(name, n)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar, t.standard_name = "hours since 2000-01-01", "proleptic_gregorian", "time"
        t[:] = np.arange(6) * 6.0
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(-89, 89, 90)
        lon = nc.createVariable("lon", "f4", ("lon",))
        lon.units = "degrees_east"
        lon[:] = np.arange(180) * 2.0
        nc.createVariable("y", "i4", ("y",))[:] = np.arange(4)
        nc.createVariable("x", "i4", ("x",))[:] = np.arange(6) * 10
        tas = rng.normal(285, 8, (6, 90, 180)).astype("f4")
        tas[:, :5, :7] = FILL
        v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=FILL, chunksizes=(1, 45, 90))
        v.units, v.long_name, v.valid_max = "K", "near-surface air temperature", np.float32(400)
        v.set_auto_mask(False)
        v[:] = tas
        p = nc.createVariable("pr", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32767))
        p.scale_factor, p.add_offset, p.units = np.float32(0.01), np.float32(5.0), "mm/day"
        p.set_auto_maskandscale(False)
        raw = rng.integers(-500, 2000, (6, 90, 180)).astype("i2")
        raw[2, 10:20, 30:40] = -32767
        p[:] = raw
        lat2d = nc.createVariable("lat2d", "f8", ("y", "x"))
        lat2d.units = "degrees_north"
        lat2d[:] = rng.uniform(-60, 60, (4, 6))
        w = nc.createVariable("w", "f4", ("time", "y", "x"), chunksizes=(2, 4, 3))
        w.coordinates = "lat2d"
        w[:] = rng.random((6, 4, 6)).astype("f4")
        c = nc.createVariable("counts", "i4", ("time", "y", "x"), fill_value=np.int32(-1))
        c.set_auto_mask(False)
        counts = rng.integers(0, 50, (6, 4, 6)).astype("i4")
        counts[0] = -1
        c[:] = counts
    run_cli("tet", "convert", d / "clim.nc", d / "clim.tet")
    return d


def open_tet(path, **kwargs):
    return xr.open_dataset(path, engine=TesseraBackendEntrypoint, **kwargs)


def open_nc(path, **kwargs):
    return xr.open_dataset(path, engine="netcdf4", **kwargs)


@pytest.fixture
def reads(monkeypatch):
    """Every region read from any `.tet` dataset, as (dataset name, key)."""
    seen = []
    original = tet.Dataset.__getitem__

    def recording(self, key):
        seen.append((self.name, key))
        return original(self, key)

    monkeypatch.setattr(tet.Dataset, "__getitem__", recording)
    return seen


def test_dims_and_coordinates_are_xarrays_including_coordinates_longer_than_footer_labels(climate):
    ds, ref = open_tet(climate / "clim.tet"), open_nc(climate / "clim.nc")
    assert dict(ds.sizes) == dict(ref.sizes)
    assert set(ds.data_vars) == set(ref.data_vars) == {"tas", "pr", "w", "counts"}
    assert set(ds.coords) == set(ref.coords) == {"time", "lat", "lon", "y", "x", "lat2d"}
    assert set(ds.indexes) == set(ref.indexes) == {"time", "lat", "lon", "y", "x"}
    # The footer keeps at most 64 labels per axis; the coordinates are the datasets themselves.
    assert not tet.open(climate / "clim.tet")["lat"].labels
    for name in ("lat", "lon", "y", "x", "lat2d"):
        xr.testing.assert_equal(ds[name].reset_coords(drop=True), ref[name].reset_coords(drop=True))
    for name in ref.data_vars:
        assert ds[name].dims == ref[name].dims
        assert set(ds[name].coords) == set(ref[name].coords), name
    assert "lat2d" in ds["w"].coords and "coordinates" not in ds["w"].attrs
    assert ds["w"].encoding["coordinates"] == ref["w"].encoding["coordinates"]


def test_tessera_tet_coords_are_the_coordinates_xarray_finds(climate, reads):
    f = tet.open(climate / "clim.tet")
    ref = open_nc(climate / "clim.nc", decode_times=False)
    for name in ref.data_vars:
        # Each dimension's coordinate and the variable's own CF `coordinates` (xarray also attaches
        # to `counts` the lat2d that `w` names; CF links it to w only).
        wanted = {d for d in ref[name].dims if d in ref.coords} | set(ref[name].encoding.get("coordinates", "").split())
        assert set(f[name].coords) == wanted, name
    assert reads == []  # keys come from metadata alone
    for name in ref.data_vars:
        for key, values in f[name].coords.items():
            np.testing.assert_array_equal(values, ref[name].coords[key].values, err_msg=f"{name}.{key}")
    assert f["w"].coords["lat2d"].shape == (4, 6) and len(f["tas"].coords["lat"]) == 90
    with pytest.raises(KeyError):
        f["tas"].coords["lat2d"]  # named by w's `coordinates`, not by tas's


def test_times_decode_as_xarray_decodes_them(climate):
    ds, ref = open_tet(climate / "clim.tet"), open_nc(climate / "clim.nc")
    assert ds["time"].dtype == ref["time"].dtype == np.dtype("datetime64[ns]")
    xr.testing.assert_identical(ds["time"], ref["time"])
    assert ds["time"].encoding["units"] == "hours since 2000-01-01"
    raw, raw_ref = open_tet(climate / "clim.tet", decode_times=False), open_nc(climate / "clim.nc", decode_times=False)
    xr.testing.assert_identical(raw["time"], raw_ref["time"])
    cf, cf_ref = open_tet(climate / "clim.tet", use_cftime=True), open_nc(climate / "clim.nc", use_cftime=True)
    assert type(cf["time"].values[0]) is type(cf_ref["time"].values[0])
    assert list(cf["time"].values) == list(cf_ref["time"].values)


def test_values_equal_xarrays(climate):
    ds, ref = open_tet(climate / "clim.tet"), open_nc(climate / "clim.nc")
    for name in ("tas", "w"):  # exact, NaN where xarray masks the fill value
        xr.testing.assert_equal(ds[name].reset_coords(drop=True), ref[name].reset_coords(drop=True))
    assert int(np.isnan(ds["tas"]).sum()) == 6 * 5 * 7
    # Packed: convert decodes stored × scale + offset itself, xarray in float32 steps; both are
    # within float32 rounding of the exact value.
    pr, pr_ref = ds["pr"].values, ref["pr"].values
    assert pr.dtype == pr_ref.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(pr), np.isnan(pr_ref))
    assert np.isnan(pr).sum() == 100
    with netCDF4.Dataset(climate / "clim.nc") as nc:
        nc.set_auto_maskandscale(False)
        stored, scale, offset = nc["pr"][:], nc["pr"].scale_factor, nc["pr"].add_offset
    scaled = stored.astype(np.float64) * np.float64(scale)
    exact = scaled + np.float64(offset)
    ulp = np.spacing((np.abs(scaled) + abs(np.float64(offset))).astype(np.float32)).astype(np.float64)
    kept = ~np.isnan(pr)  # one float32 rounding of the larger term, as near 0 the sum cancels
    assert np.all(np.abs(pr[kept] - exact[kept]) <= ulp[kept])
    assert np.all(np.abs(pr[kept].astype(np.float64) - pr_ref[kept]) <= 2 * ulp[kept])
    # Selecting by labels works along the whole 180-long axis, as on the NetCDF file.
    box = dict(lat=slice(-30, 30), lon=slice(100, 300), time=slice("2000-01-01T06", "2000-01-01T18"))
    xr.testing.assert_equal(ds["tas"].sel(**box), ref["tas"].sel(**box))


def test_open_reads_only_index_coordinates_and_a_selection_only_its_region(climate, reads):
    ds = open_tet(climate / "clim.tet")
    read_at_open = {name for name, _ in reads}
    assert read_at_open == set(ds.indexes)  # xarray builds its indexes; no data variable, no lat2d
    reads.clear()
    got = ds["tas"][2, 10:20, 5:50:7].values
    assert reads == [("tas", (2, slice(10, 20, 1), slice(5, 50, 7)))]
    np.testing.assert_array_equal(got, open_nc(climate / "clim.nc")["tas"][2, 10:20, 5:50:7].values)
    got.flat[0] = 0  # writable, like every backend's data (a raw chunk would give a read-only view)


def test_chunks_are_the_tet_chunks_and_dask_reduces_like_numpy(climate, reads):
    ds = open_tet(climate / "clim.tet", chunks={})
    f = tet.open(climate / "clim.tet")
    truth = open_nc(climate / "clim.nc")
    for name in ("tas", "w", "pr"):
        shape, chunks = f[name].shape, f[name].chunks
        want = tuple(tuple(min(c, n - s) for s in range(0, n, c)) for n, c in zip(shape, chunks))
        assert ds[name].chunks == want, name
        assert ds[name].encoding["preferred_chunks"] == dict(zip(ds[name].dims, chunks))
    # The converter keeps the source chunking (capped at the extent), so the NetCDF file is the truth.
    assert f["tas"].chunks == truth["tas"].encoding["chunksizes"] == (1, 45, 90)
    reads.clear()
    mean = float(ds["tas"].mean().compute())
    assert len(reads) == 6 * 2 * 2 and all(name == "tas" for name, _ in reads)  # one read per chunk
    with netCDF4.Dataset(climate / "clim.nc") as nc:
        values = nc["tas"][:].filled(np.nan).astype(np.float64)
    np.testing.assert_allclose(mean, np.nanmean(values), rtol=1e-6)
    np.testing.assert_allclose(ds["tas"].max(("time", "lon")).values, np.nanmax(values, axis=(0, 2)))


def test_dask_graph_pickles_by_absolute_path(climate, tmp_path, monkeypatch):
    monkeypatch.chdir(climate)
    arr = open_tet("clim.tet", chunks={})["w"].data
    blob = pickle.dumps(arr)
    monkeypatch.chdir(tmp_path)  # a worker elsewhere
    np.testing.assert_array_equal(pickle.loads(blob).compute(), open_nc(climate / "clim.nc")["w"].values)


def test_the_cf_encoding_is_the_sources_with_its_types(climate):
    ds, ref = open_tet(climate / "clim.tet"), open_nc(climate / "clim.nc")
    for name in ("tas", "pr", "counts"):
        assert not {"_FillValue", "scale_factor", "add_offset"} & set(ds[name].attrs)
        for key in ("_FillValue", "scale_factor", "add_offset", "dtype"):
            assert (key in ds[name].encoding) == (key in ref[name].encoding), (name, key)
            if key in ref[name].encoding:
                got, want = ds[name].encoding[key], ref[name].encoding[key]
                assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, (name, key, got, want)
    for name in ("tas", "pr", "lat", "lon", "lat2d"):
        for key in ("units", "long_name"):
            assert ds[name].attrs.get(key) == ref[name].attrs.get(key), (name, key)
    assert ds.encoding["source"] == str(climate / "clim.tet")


def test_a_file_without_typed_attributes_holds_the_encoding_text_back(tmp_path):
    """A file the reference wrote has text attributes only: the CF encoding ones are kept out of
    attrs (and the decoder) and listed as stored."""
    tet.write(tmp_path / "r.tet", {"v": np.arange(4.0)},
              metadata={"datasets": {"v": {"attrs": {"_FillValue": "1e20", "scale_factor": "0.01", "units": "K"}}}})
    var = open_tet(tmp_path / "r.tet")["v"]
    assert var.attrs == {"units": "K"}
    assert var.encoding["tet_source_attrs"] == {"_FillValue": "1e20", "scale_factor": "0.01"}
    np.testing.assert_array_equal(var.values, np.arange(4.0))


def test_writing_back_to_netcdf_round_trips(climate, tmp_path):
    """to_netcdf packs `pr` again with the recorded encoding: the file holds the source's integers,
    which xarray then decodes exactly as it decodes the source (float32 arithmetic, where convert
    rounds the exact product once)."""
    ds = open_tet(climate / "clim.tet")
    ds.to_netcdf(tmp_path / "back.nc")
    with open_nc(tmp_path / "back.nc") as back, open_nc(climate / "clim.nc") as ref:
        xr.testing.assert_identical(back.drop_vars("pr"), ds.drop_vars("pr"))
        xr.testing.assert_identical(back["pr"], ref["pr"])
        assert back["tas"].encoding["chunksizes"] == (1, 45, 90)
    with open_nc(tmp_path / "back.nc", mask_and_scale=False) as back, \
            open_nc(climate / "clim.nc", mask_and_scale=False) as ref:
        assert back["pr"].dtype == ref["pr"].dtype == np.int16
        np.testing.assert_array_equal(back["pr"].values, ref["pr"].values)


def test_file_and_dataset_to_xarray_are_the_backend(climate):
    f = tet.open(climate / "clim.tet")
    xr.testing.assert_identical(f.to_xarray(), open_tet(climate / "clim.tet"))
    assert f.to_xarray(chunks={})["tas"].chunks == open_tet(climate / "clim.tet", chunks={})["tas"].chunks
    # Its own coordinates only (time, y, x and the auxiliary lat2d), as xarray gives the variable.
    xr.testing.assert_identical(f["w"].to_xarray(), open_nc(climate / "clim.nc")["w"])


def test_engine_guessing(climate, tmp_path):
    entry = TesseraBackendEntrypoint()
    renamed = tmp_path / "no_suffix"
    renamed.write_bytes((climate / "clim.tet").read_bytes())
    assert entry.guess_can_open(climate / "clim.tet") and entry.guess_can_open(str(renamed))
    assert entry.guess_can_open("s3://bucket/run/model.tet")
    assert not entry.guess_can_open(climate / "clim.nc")
    assert not entry.guess_can_open(tmp_path / "missing")
    assert not entry.guess_can_open(io.BytesIO(b"TETR"))
    with pytest.raises(tessera.UsageError):
        xr.open_dataset(io.BytesIO(b"TETR"), engine=TesseraBackendEntrypoint)
    xr.testing.assert_identical(open_tet(renamed), open_tet(climate / "clim.tet"))


def test_engine_name_is_registered(climate):
    # Needs the `xarray.backends` entry point: the build tree's tessera-<version>.dist-info
    # (python/CMakeLists.txt) or a pip install (pyproject.toml).
    assert "tessera" in xr.backends.list_engines()
    xr.testing.assert_identical(xr.open_dataset(climate / "clim.tet", engine="tessera"), open_tet(climate / "clim.tet"))


@pytest.mark.parametrize("name", ["large.tet", "multichunk_f16.tet", "generated/labeled.tet", "generated/multi_dataset.tet",
                                  "generated/zstd_f64_3d.tet", "generated/meta_spill.tet"])
def test_conformance_files_index_like_the_independent_decoder(conformance, name):
    truth, _ = read_tet(conformance / "tetration" / name)
    ds = open_tet(conformance / "tetration" / name, decode_cf=False)
    assert set(ds.data_vars) <= set(truth) and set(truth) <= set(ds.variables)
    rng = np.random.default_rng(5)
    for var_name, (array, _) in truth.items():
        var = ds[var_name].variable
        assert var.dtype == array.dtype
        np.testing.assert_array_equal(var.values, array)
        for _ in range(20):  # xarray's indexers: integers, slices, integer arrays
            key = random_key(rng, array.shape, integer_arrays=True)
            want = array[np.ix_(*[np.atleast_1d(np.arange(n)[k]) for k, n in zip(key, array.shape)])]
            got = var[tuple(key)].values  # outer indexing, as xarray's isel
            np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"{var_name}{key}")


def test_hdf5_conversions_get_phony_dimensions(conformance, tmp_path):
    import h5py

    source = conformance / "tetration/sources/h5/groups_3d.h5"
    run_cli("tet", "convert", source, tmp_path / "g.tet")
    ds = tet.open(tmp_path / "g.tet").to_xarray()
    with h5py.File(source) as h5:
        for name in ("aux/scale", "primary/f32", "primary/i64"):
            assert ds[name].dims == tuple(f"phony_dim_{i}" for i in ([0] if name == "aux/scale" else [1, 2, 3]))
            np.testing.assert_array_equal(ds[name].values, h5[name][...])


def test_footer_labels_index_dimensions_without_a_dataset(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    stations = ["A", "B", "C"]
    tet.write(tmp_path / "s.tet", {"t": a, "u": a * 2, "v": a[:, :2]}, metadata={"datasets": {
        "t": {"dim_names": ["time", "station"], "coords": {"station": stations}},
        "u": {"dim_names": ["time", "station"], "coords": {"time": ["1", "2", "3", "4"], "station": stations}},
        "v": {"dim_names": ["time", "pair"], "coords": {"time": ["9", "8", "7", "6"]}}}})
    ds = open_tet(tmp_path / "s.tet")
    assert list(ds.indexes) == ["station"]  # `time` labels disagree between u and v: no index
    assert list(ds["station"].values) == stations
    np.testing.assert_array_equal(ds["u"].sel(station="B").values, a[:, 1] * 2)


def test_conflicting_dimension_lengths_are_a_usage_error_naming_both(tmp_path):
    tet.write(tmp_path / "c.tet", {"a": np.zeros(3), "b": np.zeros(4)},
              metadata={"datasets": {"a": {"dim_names": ["n"]}, "b": {"dim_names": ["n"]}}})
    with pytest.raises(tessera.UnsupportedError, match="'a'.*'b'"):
        open_tet(tmp_path / "c.tet")
    assert tet.open(tmp_path / "c.tet")["b"].to_xarray().shape == (4,)


# ---- typed and global attributes, and the CF encoding convert applied (the footer extension) ----

def test_numeric_attributes_keep_their_type(climate):
    ds, ref = open_tet(climate / "clim.tet"), open_nc(climate / "clim.nc")
    assert ds["tas"].attrs == ref["tas"].attrs


def test_global_attributes_are_kept(climate):
    assert open_tet(climate / "clim.tet").attrs == open_nc(climate / "clim.nc").attrs


def test_integer_fill_values_are_masked(climate):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.testing.assert_equal(open_tet(climate / "clim.tet")["counts"].reset_coords(drop=True),
                                open_nc(climate / "clim.nc")["counts"].reset_coords(drop=True))


def test_keep_fill_values_are_masked(climate, tmp_path):
    run_cli("tet", "convert", climate / "clim.nc", tmp_path / "kept.tet", "--keep-fill")
    assert tet.open(tmp_path / "kept.tet")["tas"][0, 0, 0] == FILL  # what convert kept
    xr.testing.assert_equal(open_tet(tmp_path / "kept.tet")["tas"], open_nc(climate / "clim.nc")["tas"])


def test_mask_and_scale_false_gives_the_stored_values(climate):
    got = open_tet(climate / "clim.tet", mask_and_scale=False)["pr"]
    want = open_nc(climate / "clim.nc", mask_and_scale=False)["pr"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.values, want.values)


# ---- labels through coordinate datasets (any length), in tessera.tet and the query engine ----

def test_labels_resolve_through_coordinate_datasets_longer_than_64(climate):
    f = tet.open(climate / "clim.tet")
    assert len(f["lat"].shape) == 1 and f["lat"].shape[0] == 90 and not f["tas"].labels  # no footer labels
    with netCDF4.Dataset(climate / "clim.nc") as nc:
        lat, lon = nc["lat"][:].data, nc["lon"][:].data
        tas = nc["tas"][:].filled(np.nan)
    i0, i1 = int(np.flatnonzero(lat == -29)[0]), int(np.flatnonzero(lat == 31)[0])
    j0, j1 = int(np.flatnonzero(lon == 100)[0]), int(np.flatnonzero(lon == 200)[0])
    np.testing.assert_array_equal(f["tas"].sel(lat=slice(-29.0, 31), lon=slice(100, 200)), tas[:, i0:i1, j0:j1])
    np.testing.assert_array_equal(f["tas"].sel(lat=-29), tas[:, i0, :])
    doc = {"dataset": "tas", "mean": [],
           "selection": [{}, {"start_label": "-29", "stop_label": "31"}, {"start_label": "100", "stop_label": "200"}]}
    got = f.query(doc)["execution"]["operation_mean"]
    assert got == pytest.approx(float(np.mean(tas[:, i0:i1, j0:j1], dtype=np.float64)), rel=1e-9)
    with pytest.raises(tessera.UsageError, match='unknown coordinate label "-28"'):
        f["tas"].sel(lat=slice(-28, 31))
