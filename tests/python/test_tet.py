"""tessera.tet against the conformance files, the reference CLI's recorded outputs and an
independent numpy decoder (tet_truth.py)."""
import json
import subprocess
import threading

import numpy as np
import pytest

import tessera
from tessera import tet

from tet_truth import random_key, read_tet

TET_FILES = ["sample.tet", "large.tet", "multichunk_f16.tet", "multichunk_u32.tet", "multichunk_u8.tet",
             "generated/labeled.tet", "generated/multi_dataset.tet", "generated/zstd_f64_3d.tet",
             "generated/qc_f32.tet", "generated/meta_spill.tet"]


@pytest.fixture(scope="module")
def tetdir(conformance):
    return conformance / "tetration"


@pytest.mark.parametrize("name", TET_FILES)
def test_every_dataset_reads_like_the_independent_decoder(tetdir, name):
    truth, footer = read_tet(tetdir / name)
    f = tet.open(tetdir / name)
    assert f.keys() == list(truth)
    for ds_name, (array, info) in truth.items():
        ds = f[ds_name]
        assert ds.shape == array.shape and ds.dtype == array.dtype and ds.chunks == info["chunks"]
        assert ds.codec == {frozenset({0}): "raw", frozenset({1}): "zstd"}.get(frozenset(info["codecs"]), "mixed")
        got = ds[...]
        assert got.dtype == array.dtype
        np.testing.assert_array_equal(got, array)
    if footer is not None:
        assert [row["op"] for row in f.history] == [row["op"] for row in footer["history"]]


@pytest.mark.parametrize("name", ["large.tet", "generated/zstd_f64_3d.tet", "multichunk_u32.tet"])
def test_numpy_basic_indexing_matches_numpy(tetdir, name):
    truth, _ = read_tet(tetdir / name)
    f = tet.open(tetdir / name)
    rng = np.random.default_rng(7)
    for ds_name, (array, _) in truth.items():
        ds = f[ds_name]
        for _ in range(40):
            key = random_key(rng, array.shape)
            np.testing.assert_array_equal(ds[key], array[key], err_msg=f"{ds_name}{key}")
        np.testing.assert_array_equal(ds[..., 0], array[..., 0])
        np.testing.assert_array_equal(ds[1], array[1])
        with pytest.raises(IndexError):
            ds[array.shape[0]]


def test_a_selection_inside_one_raw_chunk_is_a_view_of_the_mapped_file(tetdir):
    path = tetdir / "large.tet"
    truth, _ = read_tet(path)
    f = tet.open(path)
    name = next(n for n in f.keys() if f[n].codec == "raw")
    ds, array = f[name], truth[name][0]
    inner = tuple(slice(0, c) for c in ds.chunks)
    view = ds[inner]
    assert ds.is_view(inner)
    assert not view.flags.writeable and not view.flags.owndata
    np.testing.assert_array_equal(view, array[inner])
    # Strided and single-row selections inside the chunk are views too.
    strided = tuple(slice(0, c, 2) for c in ds.chunks)
    assert ds.is_view(strided)
    np.testing.assert_array_equal(ds[strided], array[strided])
    # Two views of the same chunk share memory: both point into the one mapping.
    assert np.shares_memory(ds[inner], ds[strided])
    # A selection spanning chunks is a fresh, writable array.
    if ds.shape[0] > ds.chunks[0]:
        spanning = ds[: ds.chunks[0] + 1]
        assert spanning.flags.writeable and not ds.is_view(slice(0, ds.chunks[0] + 1))
    # The view stays valid after the File object is gone (it holds the mapping).
    del f, ds
    np.testing.assert_array_equal(view, array[inner])


def test_a_whole_single_chunk_dataset_is_a_view(tmp_path):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    tet.write(tmp_path / "one.tet", {"a": a}, chunks=(4, 6))
    ds = tet.open(tmp_path / "one.tet")["a"]
    whole = ds[...]
    assert ds.is_view() and not whole.flags.owndata
    base = whole.__array_interface__["data"][0]
    assert whole[1:].__array_interface__["data"][0] == base + 6 * 4
    np.testing.assert_array_equal(whole, a)
    assert ds.read(copy=True).flags.owndata


def test_labels_metadata_and_sel(tetdir):
    f = tet.open(tetdir / "generated/labeled.tet")
    ds = f["temperature"]
    assert ds.dim_names == ["time", "station"]
    assert ds.labels["station"] == ["A", "B", "C"]  # the footer's labels
    assert list(ds.coords) == ["time", "station"] and ds.coords["station"].tolist() == ["A", "B", "C"]
    assert ds.attrs["units"] == "K"
    full = ds[...]
    # Query-engine rules: stop label exclusive (tet.md §3.3; the worked example's preview is [4, 5, 7, 8]).
    got = ds.sel(time=slice("2024-01-02", "2024-01-04"), station=slice("B", None))
    np.testing.assert_array_equal(got, full[1:3, 1:])
    np.testing.assert_array_equal(got.ravel(), [4.0, 5.0, 7.0, 8.0])
    np.testing.assert_array_equal(ds.sel(station="C"), full[:, 2])
    with pytest.raises(tessera.UsageError):
        ds.sel(station="Z")


def test_to_xarray_carries_dims_coords_and_attrs(tetdir):
    xr = pytest.importorskip("xarray")
    da = tet.open(tetdir / "generated/labeled.tet")["temperature"].to_xarray()
    assert isinstance(da, xr.DataArray)
    assert da.dims == ("time", "station")
    assert list(da.coords["station"].values) == ["A", "B", "C"]
    assert da.attrs["units"] == "K"
    assert float(da.sel(station="B").sum()) == float(np.asarray(da)[:, 1].sum())


def _reference_queries(conformance):
    entries = json.load(open(conformance / "tetration/expected/reference_cli_outputs.json"))
    return [e for e in entries if e["argv"][:2] == ["tet", "query"] and e["rc"] == 0 and "json" in e["argv"]
            and "-x" in e["argv"] and e["argv"][2].lstrip().startswith("{")]


def test_query_matches_the_reference_cli_outputs(conformance):
    cases = _reference_queries(conformance)
    assert len(cases) >= 30
    for case in cases:
        argv = case["argv"]
        doc, path = argv[2], argv[argv.index("-t") + 1]
        preview = int(argv[argv.index("--preview") + 1]) if "--preview" in argv else 64
        got = tet.query(conformance / "tetration" / path, doc, preview=preview)
        want = json.loads(case["stdout"])
        assert got["operation"] == want["operation"], case["id"]
        assert got["catalog"] == want["catalog"], case["id"]
        for key, value in want["execution"].items():
            # TD-2 (tet.md): the reference returns nulls for reduced nan_mean/nan_std; tessera computes them.
            if not key.startswith("operation_") or key in ("operation_reduced_nan_mean", "operation_reduced_nan_std"):
                continue
            mine = got["execution"][key]
            if isinstance(mine, np.ndarray):
                want_array = np.asarray([np.nan if v is None else v for v in value], dtype=float)
                np.testing.assert_allclose(mine.ravel().astype(float), want_array, rtol=1e-12, err_msg=case["id"])
            else:
                assert mine == pytest.approx(value, rel=1e-12, nan_ok=True), (case["id"], key)


def test_query_reduced_results_are_shaped_numpy_arrays(tetdir):
    f = tet.open(tetdir / "large.tet")
    name = f.keys()[0]
    full = f[name][...].astype(np.float64)
    r = f.query({"dataset": name, "mean": [0]})
    ex = r["execution"]
    assert isinstance(ex["operation_reduced_mean"], np.ndarray)
    assert list(ex["operation_reduced_mean"].shape) == ex["operation_reduced_shape"]
    np.testing.assert_allclose(ex["operation_reduced_mean"], full.mean(axis=0), rtol=1e-12)
    assert f[name].query({"sum": []})["execution"]["operation_sum"] == pytest.approx(full.sum(), rel=1e-12)
    validated = tet.query(None, {"dataset": name, "sum": []})
    assert "execution" not in validated and validated["accepted"] is True
    with pytest.raises(tessera.UsageError) as err:
        tet.query(tetdir / "large.tet", {"dataset": name, "quantile": {"axes": [], "q": 2}})
    assert "validation" in str(err.value)


def test_writer_round_trip_with_metadata_and_every_dtype(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {}
    for dt in ["<f4", "<f8", "<i4", "<i8", "|u1", "<u2", "<i2", "<u4", "<f2", "<u8"]:
        arrays[f"x_{np.dtype(dt).name}"] = (rng.standard_normal((13, 7, 5)) * 100).astype(dt)
    meta = {"file": {"tool": "pytest"},
            "datasets": {"x_float32": {"attrs": {"units": "m"}, "dim_names": ["t", "y", "x"],
                                       "coords": {"t": [f"d{i}" for i in range(13)]}}}}
    path = tmp_path / "all.tet"
    tet.write(path, arrays, chunks=(4, 3, 5), codec="zstd", metadata=meta)
    truth, footer = read_tet(path)
    for name, a in arrays.items():
        np.testing.assert_array_equal(truth[name][0], a)
        assert truth[name][1]["codecs"] == {1}
    assert footer["metadata"]["datasets"]["x_float32"]["coords"]["t"]["labels"][2] == "d2"
    f = tet.open(path)
    assert f.file_metadata["tool"] == "pytest"
    assert f["x_float32"].sel(t=slice("d3", "d5")).shape == (2, 7, 5)
    # The CLI verifies what the Python writer produced.
    from conftest import run_cli
    assert "ok" in run_cli("tet", "verify", path).stdout.lower()


def test_streaming_writer_chunk_rows_and_abort(tmp_path):
    a = np.arange(10 * 6, dtype=np.int32).reshape(10, 6)
    path = tmp_path / "rows.tet"
    with tet.Writer(path) as w:
        i = w.add_dataset("a", np.int32, a.shape, (4, 4), codec="raw")
        assert w.chunk_rows(i) == 3
        for row in range(3):
            w.write_chunk_row(i, row, a[row * 4:(row + 1) * 4])
    np.testing.assert_array_equal(tet.open(path)["a"][...], a)
    # A failure inside the block aborts: the existing file is untouched.
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        with tet.Writer(path) as w:
            w.add_dataset("b", np.int32, a.shape, (4, 4))
            raise RuntimeError("stop")
    assert path.read_bytes() == before
    with pytest.raises(tessera.UsageError):
        with tet.Writer(tmp_path / "bad.tet") as w:
            i = w.add_dataset("a", np.int32, a.shape, (4, 4))
            w.write_dataset(i, a[:5])
    assert not (tmp_path / "bad.tet").exists()
    with pytest.raises(tessera.UsageError):
        tet.Writer(tmp_path / "x.tet").add_dataset("c", np.complex64, (2,), (2,))


def test_synth_matches_the_cli(tmp_path):
    spec = ["t:f32:64x48:16x16:zstd:3", "n:i16:33:8"]
    tet.synth(tmp_path / "py.tet", spec, seed=11, at="1700000000", source="s.tet")
    from conftest import run_cli
    run_cli("tet", "synth", tmp_path / "cli.tet", "--dataset", spec[0], "--dataset", spec[1], "--seed", "11")
    a, b = tet.open(tmp_path / "py.tet"), tet.open(tmp_path / "cli.tet")
    for name in ["t", "n"]:
        np.testing.assert_array_equal(a[name][...], b[name][...])


def test_errors_map_to_typed_exceptions(tmp_path, tetdir):
    with pytest.raises(tessera.IoError) as err:
        tet.open(tmp_path / "missing.tet")
    assert isinstance(err.value, OSError) and "missing.tet" in str(err.value)
    damaged = tmp_path / "damaged.tet"
    data = bytearray((tetdir / "sample.tet").read_bytes())
    data[0:4] = b"XXXX"
    damaged.write_bytes(bytes(data))
    with pytest.raises(tessera.FormatError) as err:
        tet.open(damaged)
    assert isinstance(err.value, ValueError) and err.value.path == str(damaged)
    # plan.tet carries filler where its footer JSON should be: the reader refuses it (the
    # planner-only CLI paths accept it), naming the structure.
    with pytest.raises(tessera.FormatError) as err:
        tet.open(tetdir / "plan.tet")
    assert err.value.structure == "history footer"
    truncated = tmp_path / "truncated.tet"
    truncated.write_bytes((tetdir / "large.tet").read_bytes()[:500])
    with pytest.raises(tessera.FormatError):
        tet.open(truncated)
    with pytest.raises(KeyError):
        tet.open(tetdir / "sample.tet")["nope"]


def test_reads_release_the_gil(tmp_path):
    """While one thread decodes a large zstd dataset, the main thread keeps running Python code:
    with the GIL held across the read it would not get to run until the read ended."""
    path = tmp_path / "big.tet"
    tet.synth(path, ["v:i32:2048x8192:256x8192:zstd:1"], seed=5)
    ds = tet.open(path)["v"]
    done = threading.Event()
    ticks_during_read = []

    def reader():
        ds.read(threads=1)
        done.set()

    t = threading.Thread(target=reader)
    t.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
    t.join()
    ticks_during_read.append(ticks)
    assert ticks_during_read[0] > 1000


_REDUCTIONS = ["sum", "mean", "min", "max", "count", "var", "std", "product", "norm_l1", "norm_l2", "all_finite",
               "any_nan", "any_inf", "arg_min", "arg_max", "median", "nan_count", "inf_count", "nan_mean", "nan_std"]


@pytest.mark.parametrize("op", _REDUCTIONS)
def test_query_arrays_equal_the_cli_json_values(tmp_path, op):
    """The extension hands reduced results to Python as numpy arrays, not as JSON text: they must
    be what the CLI's JSON says, value for value and of the kind np.asarray makes of that JSON
    (bools, integers, floats with null as NaN), except that ±inf, which JSON writes as null,
    stays ±inf."""
    rng = np.random.default_rng(11)
    data = rng.normal(size=(6, 8, 5)).astype(np.float32)
    data[1, 2, 3] = np.nan
    data[4, :, 0] = np.nan
    data[2, 5, 1] = np.inf
    data[3, 6, 2] = -np.inf
    path = tmp_path / "nan.tet"
    with tet.Writer(path) as w:
        w.write_dataset(w.add_dataset("v", np.float32, data.shape, (3, 4, 5)), data)
    for axes in ([0], [1, 2]):
        doc = {"dataset": "v", op: axes}
        cli = subprocess.run([str(tessera.cli_path()), "tet", "query", json.dumps(doc), "-t", str(path), "-x",
                              "--format", "json", "--preview", "0"], capture_output=True, text=True, check=True)
        execution = json.loads(cli.stdout)["execution"]
        key = next(k for k in execution if k.startswith("operation_reduced_") and k != "operation_reduced_shape")
        want = np.asarray([np.nan if v is None else v for v in execution[key]])
        got = tet.query(path, doc, preview=0)["execution"][key]
        assert got.dtype.kind == want.dtype.kind, (op, axes, got.dtype, want.dtype)
        assert got.shape == tuple(execution["operation_reduced_shape"]), (op, axes)
        flat = got.ravel()
        infinite = np.isinf(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, bool)
        np.testing.assert_array_equal(np.where(infinite, np.nan, flat), want, err_msg=f"{op} {axes}")
        if op in ("max", "min", "sum") and axes == [0]:
            assert infinite.any(), "the data's infinities reach this result"


@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<i4", "<i8", "|u1", "<u2", "<i2", "<u4", "<u8", "<f2"])
def test_query_previews_are_the_stored_values(tmp_path, dtype):
    """A preview is the selection's first values in the dataset's own dtype: infinities and NaN
    stay what they are (JSON can only write null for them), extremes of every integer type
    survive, and an f16 preview, which the response carries as binary16 bit patterns, reads as
    the numbers those patterns encode."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        data = np.array([1.5, -0.0, np.inf, -np.inf, np.nan, np.finfo(dt).max, np.finfo(dt).tiny, 3.0], dtype=dt)
    else:
        info = np.iinfo(dt)
        data = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1, 7, 9], dtype=dt)
    data = data.reshape(2, 4)
    path = tmp_path / "p.tet"
    with tet.Writer(path) as w:
        w.write_dataset(w.add_dataset("v", dt, data.shape, (2, 2)), data)
    tag = {"f": "f", "i": "i", "u": "u"}[dt.kind] + str(dt.itemsize * 8)
    preview = tet.query(path, {"dataset": "v"}, preview=8)["execution"][f"{tag}_preview"]
    assert preview.dtype == dt.newbyteorder("=")
    np.testing.assert_array_equal(preview, data.ravel())
    if dt.kind == "f":
        assert np.signbit(preview[1]) and np.isposinf(preview[2]) and np.isneginf(preview[3])
