"""Side by side with xarray on the source: for generated NetCDF4 and HDF5 files covering fill
values, `missing_value`, valid ranges, CF packing (int8, int16, uint16 with float and double
scales), 1-D and 2-D coordinates longer than the footer's 64 labels, time units, and global and
multi-valued attributes, `xr.open_dataset(tet, engine="tessera")` equals `xr.open_dataset(source)`
(values with their NaNs, dims, coordinates, decoded times, attributes, encoding), and the query
engine's folds equal xarray's reductions over the same axes.

Truth: xarray, netCDF4 and h5py from Debian, on the source file."""
import json
import warnings

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr

from tessera._xarray_backend import TesseraBackendEntrypoint

from conftest import run_cli

RNG_SEED = 21
CF_ENCODING = ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar")


def packed(nc, name, dtype, scale, offset, fill, dims, rng):
    """A CF-packed variable: random stored integers (some equal to the fill) and its attributes."""
    info = np.iinfo(dtype)
    shape = tuple(len(nc.dimensions[d]) for d in dims)
    stored = rng.integers(max(info.min, -3000) + 1, min(info.max, 3000), shape).astype(dtype)
    stored.flat[::17] = fill
    v = nc.createVariable(name, dtype, dims, fill_value=dtype(fill))
    v.set_auto_maskandscale(False)
    v.scale_factor = scale
    if offset is not None:
        v.add_offset = offset
    v.units = "K"
    v[:] = stored


def write_netcdf(path):
    rng = np.random.default_rng(RNG_SEED)
    with netCDF4.Dataset(path, "w") as nc:
        nc.title, nc.Conventions = "side by side", "CF-1.8"
        nc.version = np.int16(4)
        nc.bbox = np.array([-60.0, 60.0, 0.0, 360.0])
        nc.sources = "a, b"
        for name, n in (("time", 5), ("lat", 72), ("lon", 96), ("y", 70), ("x", 80)):
            nc.createDimension(name, n)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar, t.standard_name = "days since 1990-01-01 12:00:00", "noleap", "time"
        t[:] = np.array([0.0, 31.0, 59.0, 90.0, 120.5])
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(-88.75, 88.75, 72)
        lon = nc.createVariable("lon", "f8", ("lon",))
        lon.units = "degrees_east"
        lon[:] = np.arange(96) * 3.75
        # A float field with _FillValue, a valid range, and multi-valued attributes.
        tas = rng.normal(285, 9, (5, 72, 96)).astype("f4")
        tas[:, :6, :10] = np.float32(1e20)
        v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=np.float32(1e20), chunksizes=(1, 36, 48))
        v.set_auto_mask(False)
        v.units, v.long_name = "K", "air temperature"
        v.valid_range = np.array([150.0, 350.0], dtype="f4")
        v.flag_values = np.array([1, 2, 4], dtype="i1")
        v.flag_meanings = "low mid high"
        v[:] = tas
        # A double field with a two-valued missing_value and NaN of its own.
        pr = rng.random((5, 72, 96))
        pr[0, 0, :] = -999.0
        pr[1, 2, :] = -1.0
        pr[2, 3, 4] = np.nan
        w = nc.createVariable("pr", "f8", ("time", "lat", "lon"))
        w.set_auto_mask(False)
        w.missing_value = np.array([-999.0, -1.0])
        w[:] = pr
        # CF packing: each integer width, float and double scales, with and without an offset.
        packed(nc, "p_i2_f4", np.int16, np.float32(0.01), np.float32(270.0), -32767, ("time", "lat", "lon"), rng)
        packed(nc, "p_i2_f8", np.int16, 0.005, 250.0, -32767, ("time", "lat", "lon"), rng)
        packed(nc, "p_i1_f4", np.int8, np.float32(0.5), None, -127, ("time", "lat", "lon"), rng)
        packed(nc, "p_u2_f8", np.uint16, 0.002, -10.0, 65535, ("time", "lat", "lon"), rng)
        # 2-D auxiliary coordinates longer than 64 on both axes, named by `coordinates`.
        for name, low, high in (("lat2d", -60, 60), ("lon2d", 0, 360)):
            c = nc.createVariable(name, "f8", ("y", "x"))
            c.units = "degrees_north" if name == "lat2d" else "degrees_east"
            c[:] = rng.uniform(low, high, (70, 80))
        s = nc.createVariable("swath", "f4", ("time", "y", "x"), chunksizes=(1, 35, 40))
        s.coordinates = "lat2d lon2d"
        s[:] = rng.random((5, 70, 80)).astype("f4")


def write_hdf5(path):
    """An HDF5 file as h5py writes one: no dimension scales, CF attributes on the datasets."""
    rng = np.random.default_rng(RNG_SEED + 1)
    with h5py.File(path, "w") as h:
        h.attrs["title"] = "hdf5 side by side"
        h.attrs["levels"] = np.array([1000, 850, 500], dtype="i4")
        v = rng.normal(0, 1, (6, 90)).astype("f4")
        v[2, :7] = -9999.0
        d = h.create_dataset("anomaly", data=v, chunks=(3, 45))
        d.attrs["_FillValue"] = np.float32(-9999.0)
        d.attrs["units"] = "K"
        d.attrs["valid_range"] = np.array([-10.0, 10.0], dtype="f4")
        q = rng.integers(-1000, 1000, (6, 90)).astype("i2")
        q[0, :5] = -32767
        p = h.create_dataset("packed", data=q)
        p.attrs["_FillValue"] = np.int16(-32767)
        p.attrs["scale_factor"] = np.float64(0.001)
        p.attrs["add_offset"] = np.float64(5.0)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("side_by_side")
    write_netcdf(d / "grid.nc")
    write_hdf5(d / "plain.h5")
    for name in ("grid.nc", "plain.h5"):
        run_cli("tet", "convert", d / name, d / (name.split(".")[0] + ".tet"))
    return d


def open_both(sources, name, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multiple fill values", as xarray says for missing_value pairs
        source = xr.open_dataset(sources / name, engine="netcdf4", **options).load()
        converted = xr.open_dataset(sources / (name.split(".")[0] + ".tet"), engine=TesseraBackendEntrypoint,
                                    **options).load()
    return converted, source


def same_attribute(got, want):
    """Equal values of the same type (numbers of the same dtype, NaN equal to NaN)."""
    if isinstance(want, (str, np.dtype)):
        return got == want
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind not in "fc":
        return got.dtype == want.dtype and np.array_equal(got, want)
    return got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


def double_packing(encoding):
    """A scale or offset stored as a double: CF (1.11) and xarray from 2024.02 unpack into float64,
    as tessera does; xarray 2023.01 unpacks a variable with a fill value into float32 (compat C13)."""
    return any(np.asarray(encoding[k]).dtype == np.float64 for k in ("scale_factor", "add_offset") if k in encoding)


def assert_same_variable(name, got, want):
    assert got.dims == want.dims, name
    packed = any(k in want.encoding for k in ("scale_factor", "add_offset"))
    if packed and double_packing(want.encoding) and want.dtype == np.float32:
        assert got.dtype == np.float64, (name, got.dtype)
    else:
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if np.issubdtype(want.dtype, np.datetime64) or want.dtype.kind in "iu" or name in want.coords or not packed:
        # Unpacked values are the source's bits (NaN where xarray masks); coordinates exactly.
        np.testing.assert_array_equal(got.values, want.values, err_msg=name)
    else:
        # Packed: both are stored × scale + offset, rounded once into the decoded type.
        np.testing.assert_array_equal(np.isnan(got.values), np.isnan(want.values), err_msg=name)
        np.testing.assert_allclose(got.values, want.values, rtol=np.finfo(want.dtype).eps * 2, err_msg=name)
    assert set(got.attrs) == set(want.attrs), name
    for key, value in want.attrs.items():
        assert same_attribute(got.attrs[key], value), (name, key, got.attrs[key], value)
    for key in CF_ENCODING:
        if key in want.encoding:
            assert same_attribute(got.encoding.get(key), want.encoding[key]), (name, key, got.encoding.get(key),
                                                                              want.encoding[key])


@pytest.mark.parametrize("name", ["grid.nc", "plain.h5"])
@pytest.mark.parametrize("decode_times", [True, False])
def test_the_converted_file_opens_as_the_source_does(sources, name, decode_times):
    got, want = open_both(sources, name, decode_times=decode_times)
    assert dict(got.sizes) == dict(want.sizes)
    assert set(got.data_vars) == set(want.data_vars)
    assert set(got.coords) == set(want.coords) and set(got.indexes) == set(want.indexes)
    assert set(got.attrs) == set(want.attrs)
    for key, value in want.attrs.items():
        assert same_attribute(got.attrs[key], value), (key, got.attrs[key], value)
    for var in [*want.data_vars, *want.coords]:
        assert_same_variable(var, got[var], want[var])
        assert set(got[var].coords) == set(want[var].coords), var


def test_the_cases_cover_what_they_claim(sources):
    _, want = open_both(sources, "grid.nc")
    assert np.issubdtype(want["time"].dtype, np.datetime64) or want["time"].dtype == object  # noleap: cftime
    assert want["lat2d"].shape == (70, 80) and "lat2d" in want["swath"].coords
    assert {want[v].encoding["dtype"] for v in ("p_i2_f4", "p_i2_f8", "p_i1_f4", "p_u2_f8")} == {
        np.dtype("i2"), np.dtype("i1"), np.dtype("u2")}
    assert {double_packing(want[v].encoding) for v in ("p_i2_f4", "p_i2_f8")} == {True, False}
    assert all(np.isnan(want[v].values).any() for v in ("tas", "pr", "p_i2_f4", "p_u2_f8"))


# Engine fold → the numpy reduction of the decoded values. `min` and `max` propagate NaN, as
# numpy's and xarray's `min(skipna=False)` do; the nan_ folds skip it, as xarray does by default.
FOLDS = {"nan_mean": np.nanmean, "nan_std": np.nanstd, "min": np.min, "max": np.max,
         "nan_count": lambda v, axis: np.sum(np.isnan(v), axis=axis), "mean": np.mean}


def engine_fold(path, dataset, op, axes):
    document = {"dataset": dataset, op: list(axes)}
    out = json.loads(run_cli("tet", "query", json.dumps(document), "-t", path, "-x", "--format", "json").stdout)
    execution = out["execution"]
    if not axes:
        value = execution[f"operation_{op}"]
        return np.float64(np.nan if value is None else value)
    values = [np.nan if v is None else v for v in execution[f"operation_reduced_{op}"]]
    return np.asarray(values, dtype=np.float64).reshape(execution["operation_reduced_shape"])


def decoded_by_netcdf4(path, name):
    """netCDF4-python's own mask-and-scale of the source, as float64 with NaN where masked."""
    with netCDF4.Dataset(path) as nc:
        values = nc[name][:]
    return np.ma.filled(np.ma.masked_invalid(values).astype(np.float64), np.nan)


@pytest.mark.parametrize("dataset", ["tas", "pr", "p_i2_f8", "p_u2_f8"])
@pytest.mark.parametrize("axes", [(), (0,), (1, 2)])
def test_engine_folds_equal_xarray_reductions_over_the_same_axes(sources, dataset, axes):
    values = decoded_by_netcdf4(sources / "grid.nc", dataset)
    axis = tuple(axes) if axes else None
    for op, reduce in FOLDS.items():
        got = engine_fold(sources / "grid.tet", dataset, op, axes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # all-NaN slices
            expected = reduce(values, axis=axis)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=0, equal_nan=True, err_msg=f"{dataset} {op} {axes}")
    # xarray's own reductions over the named dimensions: mean() skips NaN by default.
    _, want = open_both(sources, "grid.nc")
    dims = [want[dataset].dims[a] for a in axes] or None
    rtol = 1e-9 if want[dataset].dtype == np.float64 else 1e-6  # xarray 2023.01 unpacks doubles to float32
    np.testing.assert_allclose(engine_fold(sources / "grid.tet", dataset, "nan_mean", axes),
                               want[dataset].mean(dim=dims, dtype=np.float64).values, rtol=rtol)
    np.testing.assert_allclose(engine_fold(sources / "grid.tet", dataset, "max", axes),
                               want[dataset].max(dim=dims, skipna=False).values, rtol=rtol, equal_nan=True)
