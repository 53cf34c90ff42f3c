"""`tessera tet convert` keeps every attribute with its type, and the file's global attributes, in
the footer's tessera extension: checked against what h5py and netCDF4 themselves read from the
source, and the CLI's `verify --deep` against a flipped byte in a converted file.

The truth is h5py / netCDF4 (Debian's) on the source file."""
import json

import h5py
import netCDF4
import numpy as np
import pytest

import tessera
from tessera import tet

from conftest import run_cli


def same_value(got, want):
    """Equal values of the same kind: str, list of str, or numpy values of the same dtype."""
    if isinstance(want, bytes):
        want = want.decode()
    if isinstance(want, str):
        return got == want
    want = np.asarray(want)
    if want.dtype.kind in "OSU":
        return list(np.ravel(got)) == [w.decode() if isinstance(w, bytes) else w for w in np.ravel(want)]
    got = np.asarray(got)
    return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=True)


def test_hdf5_attributes_keep_their_types(tmp_path):
    src = tmp_path / "typed.h5"
    with h5py.File(src, "w") as f:
        f.attrs["title"] = "typed attributes"
        f.attrs["version"] = np.int32(3)
        f.attrs["bounds"] = np.array([-90.0, 90.0])
        v = f.create_dataset("v", data=np.arange(12, dtype="f4").reshape(3, 4))
        v.attrs["units"] = "K"
        v.attrs["valid_range"] = np.array([0.0, 400.0], dtype="f4")
        v.attrs["flag_values"] = np.array([1, 2, 4], dtype="i1")
        v.attrs["big"] = np.uint64(2**64 - 1)
        v.attrs["nan"] = np.float64(np.nan)
        v.attrs["on"] = np.bool_(True)
        v.attrs["names"] = np.array([b"a", b"bc"])
        v.attrs["long"] = "x" * 5000  # past the footer's 1024-byte strings
        for i in range(80):  # past its 64 attributes per dataset
            v.attrs[f"extra{i}"] = np.int16(i)
    run_cli("tet", "convert", src, tmp_path / "typed.tet")
    f = tet.open(tmp_path / "typed.tet")
    with h5py.File(src, "r") as h:
        assert set(f.attrs) == set(h.attrs)
        for name, want in h.attrs.items():
            assert same_value(f.attrs[name], want), (name, f.attrs[name], want)
        typed = f["v"].typed_attrs
        assert set(typed) == set(h["v"].attrs)
        for name, want in h["v"].attrs.items():
            assert same_value(typed[name], want), (name, typed[name], want)
    assert len(f["v"].attrs) == 64  # the reference-visible text attributes keep their limits
    assert f["v"].encoding.source_dtype == np.float32 and f["v"].encoding.applied == ()


def test_netcdf_packing_is_recorded_as_applied(tmp_path):
    src = tmp_path / "packed.nc"
    with netCDF4.Dataset(src, "w") as nc:
        nc.Conventions = "CF-1.8"
        nc.createDimension("x", 5)
        p = nc.createVariable("p", "i2", ("x",), fill_value=np.int16(-1))
        p.scale_factor, p.add_offset = 0.5, 10.0
        p.set_auto_maskandscale(False)
        p[:] = np.array([0, 1, 2, -1, 4], dtype="i2")
        c = nc.createVariable("c", "i4", ("x",), fill_value=np.int32(-9))
        c[:] = np.array([1, -9, 3, 4, 5], dtype="i4")
    run_cli("tet", "convert", src, tmp_path / "packed.tet")
    f = tet.open(tmp_path / "packed.tet")
    assert f.attrs == {"Conventions": "CF-1.8"}
    p = f["p"]
    assert p.encoding.source_dtype == np.int16
    assert set(p.encoding.applied) == {"_FillValue", "scale_factor", "add_offset"}
    assert p.typed_attrs["scale_factor"] == 0.5 and p.typed_attrs["scale_factor"].dtype == np.float64
    np.testing.assert_array_equal(p[:], [10.0, 10.5, 11.0, np.nan, 12.0])
    # An integer variable keeps its values and its fill, which is not applied.
    assert f["c"].encoding.applied == ()
    assert f["c"].typed_attrs["_FillValue"] == -9 and f["c"].typed_attrs["_FillValue"].dtype == np.int32
    np.testing.assert_array_equal(f["c"][:], [1, -9, 3, 4, 5])


def test_verify_deep_reports_a_flipped_byte_the_codec_does_not_notice(tmp_path):
    src = tmp_path / "v.h5"
    with h5py.File(src, "w") as h:
        h.create_dataset("v", data=np.arange(4096, dtype="f8"), chunks=(512,))
    run_cli("tet", "convert", src, tmp_path / "v.tet")
    f = tet.open(tmp_path / "v.tet")
    assert len(f.chunk_checksums) == 8
    data = bytearray((tmp_path / "v.tet").read_bytes())
    offset = data.index(np.float64(1000.0).tobytes())
    data[offset + 7] ^= 0x01  # a raw f64 of chunk 1: still a number, a different one
    (tmp_path / "bad.tet").write_bytes(bytes(data))
    assert tet.open(tmp_path / "bad.tet")["v"][1000] != 1000.0  # the reader alone cannot tell
    out = run_cli("tet", "verify", "--deep", "--json", tmp_path / "bad.tet", check=False)
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    details = [f.get("detail", "") for f in report["findings"] if not f["ok"]]
    assert any("chunk 1: stored bytes do not match their CRC-32C" in d for d in details), details


def test_reads_opted_in_to_checksums_refuse_the_flipped_chunk_and_only_it(tmp_path):
    src = tmp_path / "v.h5"
    with h5py.File(src, "w") as h:
        h.create_dataset("v", data=np.arange(4096, dtype="f8"), chunks=(512,))
    run_cli("tet", "convert", src, tmp_path / "v.tet")
    data = bytearray((tmp_path / "v.tet").read_bytes())
    data[data.index(np.float64(1000.0).tobytes()) + 7] ^= 0x01  # chunk 1 (elements 512..1023)
    (tmp_path / "bad.tet").write_bytes(bytes(data))
    checked = tet.open(tmp_path / "bad.tet", verify_checksums=True)
    assert checked.verify_checksums and not tet.open(tmp_path / "bad.tet").verify_checksums
    np.testing.assert_array_equal(checked["v"][:512], np.arange(512.0))  # other chunks read as before
    np.testing.assert_array_equal(checked["v"][1024:], np.arange(1024.0, 4096.0))
    for read in (lambda v: v[1000],  # one raw chunk: a view of the file, checked first
                 lambda v: v[500:600],  # across two chunks: decoded
                 lambda v: np.asarray(tet.to_dask(tmp_path / "bad.tet", "v", verify_checksums=True)),
                 lambda v: v.file.to_xarray()["v"].values):
        with pytest.raises(tessera.FormatError, match="chunk 1: stored bytes do not match their CRC-32C"):
            read(checked["v"])
    xr = pytest.importorskip("xarray")
    opened = xr.open_dataset(tmp_path / "bad.tet", engine="tessera", verify_checksums=True, chunks={})
    with pytest.raises(tessera.FormatError, match="chunk 1"):
        opened["v"].values
    assert tet.open(tmp_path / "v.tet", verify_checksums=True)["v"][:].sum() == np.arange(4096.0).sum()
    # The CLI's opt-in: `tet cat --verify-checksums`.
    out = run_cli("tet", "cat", "--verify-checksums", tmp_path / "bad.tet", "v", "-o", tmp_path / "v.npy",
                  check=False)
    assert out.returncode != 0 and "chunk 1: stored bytes do not match their CRC-32C" in out.stderr
    assert not (tmp_path / "v.npy").exists()  # nothing written from a damaged read
    run_cli("tet", "cat", tmp_path / "bad.tet", "v", "-o", tmp_path / "v.npy")
    assert np.load(tmp_path / "v.npy")[1000] != 1000.0
