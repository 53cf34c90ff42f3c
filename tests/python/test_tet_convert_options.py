"""`tet convert` options: `--codec zstd --level L` compresses every chunk (read back equal to
xarray's values, and smaller than the raw file), `--chunks` sets the tile shape for every array of
a rank or for one array by name, `--var` / `--exclude` choose the arrays; wrong names, shapes and
option mixes are usage errors (exit 1, or 2 when the command line itself does not parse) that
name what is wrong and leave no output."""
import json
import subprocess
import warnings

import netCDF4
import numpy as np
import pytest
import xarray as xr

import tessera
from tessera import tet

FILL = np.float32(1e20)


def run(*args):
    return subprocess.run([str(tessera.cli_path()), *map(str, args)], capture_output=True, text=True, timeout=300)


def cli(*args):
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A chunked NetCDF4 file: a float field with `_FillValue` in chunks of (4, 10, 20), a packed
    int16 field, a 2-d field and 1-d coordinates."""
    d = tmp_path_factory.mktemp("convert_options")
    rng = np.random.default_rng(5)
    with netCDF4.Dataset(d / "in.nc", "w") as nc:
        for name, n in (("time", 12), ("lat", 30), ("lon", 40)):
            nc.createDimension(name, n)
            nc.createVariable(name, "f8", (name,))[:] = np.arange(n) * 1.5
        tas = np.round(rng.normal(290, 5, (12, 30, 40)), 1).astype("f4")  # compressible, like real fields
        tas[:, :4, :5] = FILL
        v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=FILL, chunksizes=(4, 10, 20))
        v.set_auto_mask(False)
        v[:] = tas
        pr = nc.createVariable("pr", "i2", ("time", "lat", "lon"))
        pr.scale_factor, pr.add_offset = np.float32(0.01), np.float32(5.0)
        pr[:] = rng.random((12, 30, 40)) * 100
        nc.createVariable("orog", "f4", ("lat", "lon"))[:] = rng.random((30, 40)).astype("f4")
    return d


def xarray_values(path, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_dataset(path) as ds:
            return ds[name].values


def test_zstd_chunks_and_variables(source):
    out = source / "z.tet"
    cli("tet", "convert", source / "in.nc", out, "--codec", "zstd", "--level", "5", "--chunks", "2,15,40",
        "--chunks", "pr=12,30,10", "--var", "tas", "--var", "pr", "--var", "orog")
    f = tet.open(out)
    assert sorted(f.keys()) == ["orog", "pr", "tas"]
    assert f["tas"].chunks == (2, 15, 40) and f["pr"].chunks == (12, 30, 10)
    assert f["orog"].chunks == (30, 40)  # rank 2: not the rank-3 default; the source has no chunks
    for name in ("tas", "pr", "orog"):
        assert f[name].codec == "zstd"
        want = xarray_values(source / "in.nc", name)
        if name == "pr":  # unpacked in double and rounded once, where xarray rounds in float32
            np.testing.assert_allclose(f[name][...], want, rtol=1e-6)
        else:
            np.testing.assert_array_equal(f[name][...], want)
    # Queries fold the compressed chunks as they fold raw ones.
    doc = json.dumps({"dataset": "tas", "nan_mean": []})
    got = json.loads(cli("tet", "query", doc, "-t", out, "-x", "--format", "json"))["execution"]["operation_nan_mean"]
    assert got == pytest.approx(np.nanmean(xarray_values(source / "in.nc", "tas").astype(np.float64)), rel=1e-12)


def test_zstd_is_smaller_than_raw_and_level_matters(source):
    cli("tet", "convert", source / "in.nc", source / "raw.tet")
    cli("tet", "convert", source / "in.nc", source / "z1.tet", "--codec", "zstd", "--level", "1")
    cli("tet", "convert", source / "in.nc", source / "z19.tet", "--codec", "zstd", "--level", "19")
    raw, z1, z19 = ((source / n).stat().st_size for n in ("raw.tet", "z1.tet", "z19.tet"))
    assert z19 <= z1 < raw
    raw_file, z_file = tet.open(source / "raw.tet"), tet.open(source / "z19.tet")
    assert raw_file.keys() == z_file.keys()
    for name in raw_file.keys():
        assert raw_file[name].codec == "raw"
        np.testing.assert_array_equal(z_file[name][...], raw_file[name][...])
        assert z_file[name].chunks == raw_file[name].chunks  # the source's chunking by default


def test_exclude_leaves_arrays_out(source):
    cli("tet", "convert", source / "in.nc", source / "x.tet", "--exclude", "time", "--exclude", "lat",
        "--exclude", "lon")
    assert sorted(tet.open(source / "x.tet").keys()) == ["orog", "pr", "tas"]


@pytest.mark.parametrize("args, rc, message", [
    (["--var", "nosuch"], 1, "no array named nosuch (it has lat, lon, orog, pr, tas, time)"),
    (["--exclude", "tass"], 1, "no array named tass"),
    (["--var", "tas", "--exclude", "tas"], 1, "leave no array to convert"),
    (["--chunks", "0,1,1"], 1, "every extent a positive integer"),
    (["--chunks", "tas=2,x,3"], 1, "every extent a positive integer"),
    (["--chunks", "tas=2,3"], 1, "tas: --chunks gives 2 extents for an array of 3 axes"),
    (["--level", "3"], 1, "--level applies to --codec zstd only"),
    (["--codec", "lz4"], 2, "--codec"),  # refused while parsing the command line
    (["--codec", "zstd", "--level", "23"], 2, "--level"),
])
def test_wrong_options_are_usage_errors(source, args, rc, message):
    out = source / "bad.tet"
    proc = run("tet", "convert", source / "in.nc", out, *args)
    assert proc.returncode == rc, proc.stderr
    assert message in proc.stderr
    assert not out.exists()


def test_a_tet_file_converts_again_to_rechunk_or_recompress(source):
    """`.tet` → `.tet`: the values, attributes and dimension names are kept, every earlier history
    row stays before the new one, and each step's codec and chunks are the ones asked for."""
    cli("tet", "convert", source / "in.nc", source / "step1.tet")
    cli("tet", "convert", source / "step1.tet", source / "step2.tet", "--codec", "zstd", "--chunks", "12,30,40",
        "--exclude", "time")
    cli("tet", "convert", source / "step2.tet", source / "step3.tet", "--chunks", "tas=4,10,20", "--var", "tas",
        "--var", "orog")
    one, two, three = (tet.open(source / f"step{k}.tet") for k in (1, 2, 3))
    assert "time" not in two.keys() and sorted(three.keys()) == ["orog", "tas"]
    assert two["tas"].chunks == (12, 30, 40) and two["tas"].codec == "zstd"
    assert three["tas"].chunks == (4, 10, 20) and three["tas"].codec == "raw"
    assert three["orog"].chunks == two["orog"].chunks
    for name in ("tas", "orog"):
        np.testing.assert_array_equal(three[name][...], one[name][...])
        assert three[name].attrs == one[name].attrs
        assert three[name].dim_names == one[name].dim_names
    assert [(row["op"], row["source"]) for row in three.history] == [("convert", "nc"), ("convert", "tet"),
                                                                      ("convert", "tet")]
