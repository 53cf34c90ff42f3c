"""`tessera tet export` of a converted NetCDF file carries its CF encoding as Zarr readers expect it:
typed attribute values, the global attributes on the root group, and none of the encoding
attributes convert already applied, so a CF reader decoding the store gets xarray's values once,
not twice.

Truth: netCDF4 and xarray (Debian) on the source file; the exported store is read by zarrita
(npm), an independent Zarr v3 reader, and its metadata as plain JSON."""
import json
import pathlib
import subprocess
import warnings

import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import run_cli

NODE_DIR = pathlib.Path(__file__).resolve().parents[1] / "zarr" / "node"
FILL = np.float32(1e20)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("cf_export")
    rng = np.random.default_rng(11)
    with netCDF4.Dataset(d / "src.nc", "w") as nc:
        nc.title = "CF export"
        nc.version = np.int32(2)
        nc.bounds = np.array([-90.0, 90.0])
        nc.createDimension("time", 4)
        nc.createDimension("x", 70)  # longer than the footer's 64 labels
        x = nc.createVariable("x", "f8", ("x",))
        x.units = "m"
        x[:] = np.arange(70) * 1.5
        tas = rng.normal(280, 10, (4, 70)).astype("f4")
        tas[1, :5] = FILL
        t = nc.createVariable("tas", "f4", ("time", "x"), fill_value=FILL)
        t.set_auto_mask(False)
        t.units = "K"
        t.valid_range = np.array([150.0, 350.0], dtype="f4")
        t.flag_values = np.array([1, 2, 4], dtype="i1")
        t.nan_marker = np.float64(np.nan)
        t[:] = tas
        packed = rng.integers(-3000, 3000, (4, 70)).astype("i2")
        packed[2, 10:20] = -32767
        p = nc.createVariable("p", "i2", ("time", "x"), fill_value=np.int16(-32767))
        p.scale_factor, p.add_offset = 0.01, 273.15
        p.set_auto_maskandscale(False)
        p[:] = packed
        counts = rng.integers(0, 50, (4, 70)).astype("i4")
        counts[0, :3] = -1
        c = nc.createVariable("counts", "i4", ("time", "x"), fill_value=np.int32(-1))
        c.set_auto_mask(False)
        c[:] = counts
    run_cli("tet", "convert", d / "src.nc", d / "src.tet")
    run_cli("tet", "export", d / "src.tet", d / "out.zarr")
    return d


def metadata(store, path=""):
    return json.loads((store / path / "zarr.json").read_text())


def zarrita_values(store, names):
    """Each array's stored values as zarrita reads them (float64; integers exact at these sizes)."""
    proc = subprocess.run(["node", str(NODE_DIR / "read_dense.mjs"), str(store), *names], capture_output=True,
                          text=True, timeout=300, check=True)
    out = json.loads(proc.stdout)
    return {name: np.array([float(v) for v in out[name]["values"]]).reshape(out[name]["shape"]) for name in names}


def cf_decode(values, attributes):
    """What a CF reader of Zarr v3 does with one array (xarray's rule for v3 stores): the
    `_FillValue` attribute marks missing values, then `scale_factor` / `add_offset` unpack."""
    out = np.array(values, dtype=np.float64)
    if "_FillValue" in attributes:
        out[values == float(attributes["_FillValue"])] = np.nan
    return out * attributes.get("scale_factor", 1.0) + attributes.get("add_offset", 0.0)


def test_a_cf_reader_of_the_export_gets_xarrays_values_decoded_once(exported):
    store = exported / "out.zarr"
    names = ["tas", "p", "counts", "x"]
    got = zarrita_values(store, names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_dataset(exported / "src.nc") as ref:
            for name in names:
                meta = metadata(store, name)
                decoded = cf_decode(got[name], meta["attributes"])
                np.testing.assert_allclose(decoded, ref[name].values.astype(np.float64), rtol=1e-6, equal_nan=True,
                                           err_msg=name)
            assert np.isnan(ref["tas"].values).sum() == 5 and np.isnan(ref["p"].values).sum() == 10


def test_applied_encoding_attributes_leave_and_the_fill_value_follows_the_values(exported):
    store = exported / "out.zarr"
    tas, p, counts = (metadata(store, n) for n in ("tas", "p", "counts"))
    # Float fills became NaN on convert: no _FillValue attribute, NaN as the Zarr fill value.
    assert "_FillValue" not in tas["attributes"] and tas["fill_value"] == "NaN"
    # The packed variable was unpacked: none of its encoding attributes is left to apply again.
    assert not {"_FillValue", "scale_factor", "add_offset"} & set(p["attributes"]) and p["fill_value"] == "NaN"
    assert p["data_type"].startswith("float")
    # An integer variable keeps its fill: attribute and Zarr fill value agree, as a number.
    assert counts["attributes"]["_FillValue"] == -1 and counts["fill_value"] == -1
    assert counts["data_type"] == "int32"


def test_attributes_keep_their_types_and_the_global_ones_go_to_the_root_group(exported):
    store = exported / "out.zarr"
    attrs = metadata(store, "tas")["attributes"]
    with netCDF4.Dataset(exported / "src.nc") as nc:
        v = nc["tas"]
        assert attrs["units"] == v.units
        assert attrs["valid_range"] == v.valid_range.tolist()  # float32 values, exactly widened
        assert attrs["flag_values"] == v.flag_values.tolist()
        assert attrs["nan_marker"] == "NaN"
        root = metadata(store)["attributes"]
        assert root["title"] == nc.title and root["version"] == int(nc.version)
        assert root["bounds"] == nc.bounds.tolist()
        assert "tetration_export" in root
    assert metadata(store, "tas")["dimension_names"] == ["time", "x"]
