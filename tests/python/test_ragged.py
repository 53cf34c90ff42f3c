"""tessera.ragged against independent truth: the zagg conformance fixtures' expected values,
zagg's own read_tensors goldens, a numpy + zstandard/numcodecs decode of the raw shard objects,
healpy cell ids of built stores, and the CLI's verify.
"""
import gc
import json
import pathlib
import pickle
import shutil
import warnings

import numpy as np
import pytest

import tessera
from tessera import ragged

from conftest import run_cli

FIXTURES = ("minimal", "kitchen_sink", "flux", "temporal", "column")
SHARD_LEAF = "1/1/2/1/3/11213.zarr"


@pytest.fixture(scope="session")
def spec_dir(conformance) -> pathlib.Path:
    return conformance / "zagg" / "tests" / "data" / "spec"


@pytest.fixture(scope="session")
def strata(conformance) -> pathlib.Path:
    return conformance / "zagg" / "moczarr" / "tests" / "data"


def leaf_of(spec_dir, fixture):
    return spec_dir / fixture / SHARD_LEAF


def expected_of(spec_dir, fixture):
    return json.loads((spec_dir / f"{fixture}.expected.json").read_text())


def vlen_arrays(leaf: pathlib.Path, group="6"):
    """Array names of the leaf group whose data type is variable_length_bytes."""
    out = []
    for arr in sorted((leaf / group).iterdir()):
        meta = json.loads((arr / "zarr.json").read_text()) if (arr / "zarr.json").is_file() else {}
        if meta.get("data_type") == "variable_length_bytes":
            out.append(arr.name)
    return out


def expected_rows(value, element_words):
    if element_words:
        return np.array([int(w) for w in value], dtype=np.uint64)
    return np.array(value, dtype=np.float64).astype(np.float32).reshape(-1, 2)


# ---- an independent decoder of the raw objects: numpy + zstandard + numcodecs ----
def decode_vlen_array(array_dir: pathlib.Path):
    """Every cell of a sharded (or per-chunk) vlen array as a list of bytes, by the byte recipes."""
    import numcodecs
    import zstandard

    meta = json.loads((array_dir / "zarr.json").read_text())
    n = meta["shape"][0]
    object_cells = meta["chunk_grid"]["configuration"]["chunk_shape"][0]
    codec = meta["codecs"][0]
    cells = [b""] * n
    vlen = numcodecs.VLenBytes()
    dctx = zstandard.ZstdDecompressor()

    def inner_chunk(raw: bytes, chunk_cells: int):
        items = vlen.decode(dctx.decompress(raw, max_output_size=1 << 24))
        assert len(items) == chunk_cells
        return items

    for obj in (array_dir / "c").iterdir():
        o = int(obj.name)
        data = obj.read_bytes()
        if codec["name"] == "sharding_indexed":
            chunk_cells = codec["configuration"]["chunk_shape"][0]
            k = object_cells // chunk_cells
            index = np.frombuffer(data[-(16 * k + 4):-4], dtype="<u8").reshape(k, 2)
            for j, (offset, nbytes) in enumerate(index):
                if offset == 2**64 - 1 and nbytes == 2**64 - 1:
                    continue
                items = inner_chunk(data[offset:offset + nbytes], chunk_cells)
                for i, item in enumerate(items):
                    cells[o * object_cells + j * chunk_cells + i] = bytes(item)
        else:
            for i, item in enumerate(inner_chunk(data, object_cells)):
                cells[o * object_cells + i] = bytes(item)
    return cells


# ---- read_cell ----
@pytest.mark.parametrize("fixture", FIXTURES[:4] + ("strata",))
def test_read_cell_equals_expected_values(spec_dir, strata, fixture):
    if fixture == "strata":
        leaf = strata / "strata_hive" / "4/3/3/1/4/43314.zarr"
        expected = json.loads((strata / "strata_hive.expected.json").read_text())
    else:
        leaf = leaf_of(spec_dir, fixture)
        expected = expected_of(spec_dir, fixture)
    lf = ragged.open(leaf)
    names = vlen_arrays(leaf)
    checked = 0
    for cell in expected["cells"]:
        for name in names:
            if name not in cell:
                continue
            f = lf.field(name)
            words = f.element["is_words"]
            got = lf.read_cell(f"6/{name}", cell["index"])
            want = expected_rows(cell[name], words)
            assert got.dtype == (np.uint64 if words else np.float32)
            assert got.shape == ((len(want),) if words else (len(want), 2))
            # float32 by bit pattern
            np.testing.assert_array_equal(got.view(np.uint64 if words else np.uint32),
                                          want.view(np.uint64 if words else np.uint32))
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize("fixture", ["minimal", "kitchen_sink", "temporal"])
def test_read_cell_equals_an_independent_decode_of_every_cell(spec_dir, fixture):
    leaf = leaf_of(spec_dir, fixture)
    lf = ragged.open(leaf)
    for name in vlen_arrays(leaf):
        truth = decode_vlen_array(leaf / "6" / name)
        f = lf.field(name)
        assert f.size == len(truth) == 16
        for index, payload in enumerate(truth):
            got = f.read_cell(index)
            assert got.tobytes() == payload, (name, index)
            assert got.shape[0] * f.element["row_bytes"] == len(payload)


def test_read_cell_on_the_unsharded_column(spec_dir):
    column = leaf_of(spec_dir, "column").parent / "all.pyramid.zarr"
    groups = expected_of(spec_dir, "column")["column"]["groups"]
    for group, values in groups.items():
        f = ragged.open(column, f"{group}/h_tdigest")
        assert not f.sharded
        truth = decode_vlen_array(column / group / "h_tdigest")
        for i, rows in enumerate(values["h_tdigest"]):
            got = f.read_cell(i)
            np.testing.assert_array_equal(got, expected_rows(rows, False))
            assert got.tobytes() == truth[i]


def test_empty_cell_and_shapes(spec_dir):
    f = ragged.open(leaf_of(spec_dir, "minimal"), "h_tdigest")  # bare name: group implied
    assert f.path == "6/h_tdigest"
    empty = f.read_cell(9)  # chunk 2 is absent
    assert empty.shape == (0, 2) and empty.dtype == np.float32
    assert f.read_cell(np.int64(5)).shape == (5, 2)
    assert f.element["inner_shape"] == (2,) and f.element["is_tdigest"]
    assert f.weights == "counts" and f.gain is None


def test_out_of_range_cell_is_an_index_error_and_a_usage_error(spec_dir):
    lf = ragged.open(leaf_of(spec_dir, "minimal"))
    for bad in (16, -1, 2**63, -(2**70)):
        with pytest.raises(ragged.CellIndexError) as info:
            lf.read_cell("6/h_tdigest", bad)
        assert isinstance(info.value, IndexError)
        assert isinstance(info.value, tessera.UsageError)
        assert "out of range" in str(info.value)
    with pytest.raises(IndexError, match="0..15"):
        ragged.read_cell(leaf_of(spec_dir, "minimal"), "6/h_tdigest", 16)


# ---- read_tensors against zagg's goldens ----
def test_read_tensors_equal_zaggs_goldens(strata):
    leaf = strata / "strata_hive" / "4/3/3/1/4/43314.zarr"
    goldens = strata / "strata_goldens"
    lf = ragged.open(leaf)
    assert lf.has_exact_occupancy()
    for which in ("signal", "noise"):
        blocks = list(lf.read_tensors(f"6/h_tdigest_{which}"))
        tensors = np.stack([t for t, _, _, _ in blocks])
        masks = np.stack([m for _, m, _, _ in blocks])
        windows = np.array([w for _, _, w, _ in blocks], dtype=np.float64)
        mortons = np.array([m for _, _, _, m in blocks], dtype=np.uint64)
        for name, got in (("tensors", tensors), ("masks", masks), ("windows", windows), ("morton", mortons)):
            want = np.load(goldens / f"{which}_{name}.npy")
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=f"{which} {name}")
    (block,) = ragged.read_tensors(leaf, "6/h_tdigest_signal", block_order=4)
    tensor, mask, (offset, gain), morton = block
    np.testing.assert_array_equal(tensor, np.load(goldens / "signal_block_tensor.npy"))
    np.testing.assert_array_equal(mask, np.load(goldens / "signal_block_mask.npy"))
    np.testing.assert_array_equal(np.array([offset, gain]), np.load(goldens / "signal_block_window.npy"))
    assert morton == int(np.load(goldens / "signal_block_morton.npy"))
    assert block.side == 4 and block.order == 4 and block.start == 0 and block.n_bins == 128
    assert block.populated == int((mask == 2).sum()) and block.observed_empty == int((mask == 1).sum())


def test_read_tensors_weight_in_window_matches_numpy(strata):
    leaf = strata / "strata_hive" / "4/3/3/1/4/43314.zarr"
    for block in ragged.read_tensors(leaf, "6/h_tdigest_noise", dtype="float32", bottom=0.0, top=1.0, n_bins=256):
        assert block.tensor.dtype == np.float32 and block.tensor.shape == (2, 2, 256)
        assert abs(block.weight_in_window - float(block.tensor.sum(dtype=np.float64))) < 1e-3


def test_read_tensors_options_and_warnings(spec_dir):
    lf = ragged.open(leaf_of(spec_dir, "minimal"))
    with pytest.raises(tessera.UsageError, match="fit"):
        list(lf.read_tensors("6/h_tdigest", fit="sideways"))
    with pytest.raises(tessera.UsageError):
        lf.read_tensors("6/h_tdigest", n_bins=0)
    with pytest.raises(tessera.LimitError):
        lf.read_tensors("6/h_tdigest", max_block_bytes=100)
    with pytest.raises(tessera.UsageError, match="window"):  # fit raise: the z-window is wider than 4 bins
        lf.read_tensors("6/h_tdigest", n_bins=4, block_order=4)
    (wide,) = lf.read_tensors("6/h_tdigest", n_bins=4, block_order=4, fit="degrade_resolution")
    assert wide.n_bins == 4 and wide.gain > 0.5 and wide.tensor.shape == (4, 4, 4)
    (few,) = lf.read_tensors("6/h_tdigest", block_order=4, fit="collapse_bins", dtype="uint16")
    assert few.tensor.dtype == np.uint16 and few.n_bins < 128 and few.tensor.shape == (4, 4, few.n_bins)
    assert few.offset == wide.offset  # z_lo does not depend on the fit policy
    # a subtree disjoint from the axis yields nothing and warns once
    with pytest.warns(ragged.RaggedWarning, match="subtree_disjoint") as record:
        assert list(lf.read_tensors("6/h_tdigest", subtree="-1")) == []
    assert record[0].message.code == "subtree_disjoint"
    # flux weights cast to an integer dtype
    flux = ragged.open(leaf_of(spec_dir, "flux"), "6/rx_flux")
    assert flux.weights == "flux" and flux.gain == {"name": "spec-fixture-gain", "version": "1"}
    with pytest.warns(ragged.RaggedWarning, match="flux_integer_cast"):
        list(flux.read_tensors(dtype="uint32", fit="degrade_resolution"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        blocks = list(flux.read_tensors(dtype="auto", fit="degrade_resolution"))
    assert all(b.tensor.dtype == np.float32 for b in blocks)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ragged.RaggedWarning)
        with pytest.raises(ragged.RaggedWarning):
            list(lf.read_tensors("6/h_tdigest", subtree="-1"))


@pytest.fixture(scope="module")
def synth_leaf(tmp_path_factory):
    """A synthetic leaf with a few hundred read chunks (`tessera ragged synth`; no stamp)."""
    root = tmp_path_factory.mktemp("synth") / "hive"
    out = json.loads(run_cli("ragged", "synth", root, "--cell-order", "12", "--shard-order", "4", "--chunk-order", "9",
                             "--max-centroids", "40", "--seed", "3", "--shard", "43314").stdout)
    return root / out["leaf"]


def test_read_tensors_streams_the_blocks_of_the_collecting_reader(synth_leaf):
    f = ragged.open(synth_leaf, "12/h_tdigest")
    assert ragged.leaves(synth_leaf.parents[5]) == []  # unstamped: not a committed leaf
    params = (128, 0.5, 0.05, 0.95, "degrade_resolution", "uint32", None, None, 2 << 30, 0)
    collected = f._f.read_tensors(*params)
    streamed = list(f.read_tensors(fit="degrade_resolution"))
    assert len(streamed) == len(collected) > 100
    for got, want in zip(streamed, collected):
        assert got.tensor.tobytes() == want[0].tobytes() and got.mask.tobytes() == want[1].tobytes()
        assert (got.offset, got.gain, got.morton, got.start) == (want[2], want[3], want[4], want[5])
    assert [b.start for b in streamed] == sorted(b.start for b in streamed)
    # two streams interleaved, and streams abandoned early: no hang, no thread left behind
    a = f.read_tensors(fit="degrade_resolution")
    b = f.read_tensors(fit="degrade_resolution", threads=1)
    for x, y in zip(a, b):
        assert x.morton == y.morton
    def abandon(rounds):
        for _ in range(rounds):
            for i, _block in enumerate(f.read_tensors(fit="degrade_resolution")):
                if i == 2:
                    break
            f.read_tensors(fit="degrade_resolution")  # never iterated
        gc.collect()
        return len(list(pathlib.Path("/proc/self/task").iterdir()))

    # After one warm-up round (thread pools of the library and of earlier tests grow lazily), 20
    # more rounds leave the thread count where it was: every stream's reader thread was joined.
    tasks = abandon(1)
    assert abandon(20) <= tasks
    blocks = list(f.read_tensors(fit="degrade_resolution", block_order=6))
    assert len(blocks) == 8 and all(b.side == 64 and b.order == 6 for b in blocks)
    # a block that does not fit, well after the first one: the reader's error reaches the caller
    gains = [b.gain for b in f.read_tensors(fit="degrade_resolution", n_bins=38)]
    assert gains[0] == 0.5 and max(gains) > 0.5
    with pytest.raises(tessera.UsageError, match="fit degrade_resolution"):
        for _block in f.read_tensors(n_bins=38):
            pass


# ---- per-cell sweeps and cell_index ----
def test_read_raw_values_identity_on_the_fixture(spec_dir):
    leaf = leaf_of(spec_dir, "minimal")
    cell5 = next(c for c in expected_of(spec_dir, "minimal")["cells"] if c["index"] == 5)
    records = list(ragged.read_raw_values(leaf, "6/h_tdigest", subtree="1121322"))
    assert len(records) == 1
    for morton, (row, col), values in records:
        assert ragged.to_decimal(morton) == "112132"
        cell = ragged.cell_index(leaf, "6/h_tdigest", morton, row, col)
        assert cell == records[0].index == 5
        assert (ragged.read_cell(leaf, "6/h_tdigest", cell)[:, 0] == values).all()
        np.testing.assert_array_equal(values, np.array([m for m, _ in cell5["h_tdigest"]], np.float32).astype(np.float64))
    with pytest.raises(tessera.UsageError):  # cell 0 holds merged centroids
        list(ragged.read_raw_values(leaf, "6/h_tdigest"))
    with pytest.raises(tessera.UsageError):  # flux
        list(ragged.read_raw_values(leaf_of(spec_dir, "flux"), "6/rx_flux"))


@pytest.mark.parametrize("fixture", ["kitchen_sink", "temporal"])
def test_read_locations_and_times_equal_expected(spec_dir, fixture):
    leaf = leaf_of(spec_dir, fixture)
    expected = expected_of(spec_dir, fixture)["cells"]
    lf = ragged.open(leaf)
    for field in lf.fields():
        f = lf.field(field)
        name = field.split("/")[1]
        if f.locations is None:
            with pytest.raises(tessera.UsageError):
                list(f.read_locations())
            continue
        records = list(f.read_locations())
        want = [c for c in expected if c[f"{name}_locations"]]
        assert [r.index for r in records] == [c["index"] for c in want]
        for (morton, (row, col), words), c in zip(records, want):
            assert ragged.to_decimal(morton) == ragged.to_decimal(int(c["morton"]))[:-1]  # the chunk (order 5)
            assert f.cell_index(morton, row, col) == c["index"]
            np.testing.assert_array_equal(words, expected_rows(c[f"{name}_locations"], True))
            np.testing.assert_array_equal(lf.read_cell(f.locations, c["index"]), words)
        if f.times is not None:
            times = list(f.read_times())
            assert [t.index for t in times] == [c["index"] for c in expected]
            for t, c in zip(times, expected):
                np.testing.assert_array_equal(t.values, expected_rows(c[f"{name}_times"], True))


def test_cell_index_rules(spec_dir):
    f = ragged.open(leaf_of(spec_dir, "minimal"), "6/h_tdigest")
    # chunk 112134 covers cells 12..15; (row, col) = (y, x) of the rank's deinterleave
    assert f.cell_index("112134", 0, 0) == 12
    assert f.cell_index("112134", 1, 1) == 15
    assert f.cell_index("112131", 1, 0) == 2
    assert f.cell_index(ragged.parse_word("112132"), 0, 1) == 5
    for args in (("112134", 2, 0), ("112134", 0, -1), ("11213", 0, 0), ("112133", 0, 0), ("211111", 0, 0)):
        with pytest.raises(tessera.UsageError):
            f.cell_index(*args)
    axis = f.axis()
    assert axis["length"] == 16 and axis["chunk_cells"] == 4 and axis["cell_order"] == 6
    assert axis["root_decimal"] == "11213" and axis["depth"] == 2 and not axis["flat"]


# ---- hashes, stamps, hive discovery ----
@pytest.mark.parametrize("fixture", FIXTURES)
def test_hashes_equal_the_recorded_ones(spec_dir, fixture):
    leaf = leaf_of(spec_dir, fixture)
    assert ragged.open(leaf).hashes() == expected_of(spec_dir, fixture)["content_hashes"]
    column = leaf.parent / "all.pyramid.zarr"
    if (leaf.parent / "all.pyramid.stats.json").is_file():
        recorded = json.loads((leaf.parent / "all.pyramid.stats.json").read_text())["content_hashes"]
        assert ragged.hashes(column) == recorded


def test_hashes_of_the_strata_leaf(strata):
    expected = json.loads((strata / "strata_hive.expected.json").read_text())["content_hashes"]
    assert ragged.hashes(strata / "strata_hive" / "4/3/3/1/4/43314.zarr") == expected


def test_stamp_manifest_and_leaves(spec_dir):
    root = spec_dir / "minimal"
    m = ragged.manifest(root)
    assert (m["spec"], m["cell_order"], m["shard_order"], m["path_grouping"]) == ("morton-hive/1", 6, 4, 1)
    lf = ragged.open(root, shard="11213")
    assert lf.path == str(leaf_of(spec_dir, "minimal")) and lf.shard == "11213"
    stamp = lf.stamp()
    assert stamp["complete"] and stamp["cells_with_data"] == 4 and lf.committed
    assert stamp["coverage"]["box"] == ["112131", "1121322", "1121344", None]
    assert lf.fields() == ["6/h_tdigest"]
    assert ragged.leaves(root) == [str(leaf_of(spec_dir, "minimal"))]  # walk: all.pyramid.zarr skipped
    temporal = spec_dir / "temporal"
    assert ragged.root_coverage(temporal)["shards"] == [ragged.parse_word("11213")]
    assert ragged.leaves(temporal, method="moc") == ragged.leaves(temporal, method="walk") == [str(leaf_of(spec_dir, "temporal"))]
    assert ragged.manifest(leaf_of(spec_dir, "minimal")) is None
    assert ragged.commit_stamp(root) is None
    with pytest.raises(tessera.UsageError):
        ragged.leaves(leaf_of(spec_dir, "minimal"))


# ---- errors ----
def test_bad_field_raises_the_library_error(spec_dir):
    lf = ragged.open(leaf_of(spec_dir, "minimal"))
    with pytest.raises(tessera.Error) as info:
        lf.field("6/no_such_field")
    assert "6/no_such_field" in str(info.value) and "no array metadata" in info.value.message
    with pytest.raises(tessera.FormatError, match="not a zagg-ragged array"):  # a dense array is no ragged field
        lf.field("6/count")
    with pytest.raises(tessera.UsageError):
        lf.field("no_such_field")
    with pytest.raises(tessera.IoError):
        ragged.open(spec_dir / "does-not-exist")
    with pytest.raises(tessera.UsageError):  # no locations binding
        list(lf.read_locations("6/h_tdigest"))


def test_damaged_shard_is_a_format_error(spec_dir, tmp_path):
    leaf = tmp_path / "11213.zarr"
    shutil.copytree(leaf_of(spec_dir, "minimal"), leaf)
    shard = leaf / "6" / "h_tdigest" / "c" / "0"
    shard.chmod(0o644)
    data = bytearray(shard.read_bytes())
    data[-10] ^= 0xFF  # inside the shard index: the CRC-32C no longer matches
    shard.write_bytes(bytes(data))
    f = ragged.open(leaf, "6/h_tdigest")
    with pytest.raises(tessera.FormatError):
        f.read_cell(0)
    with pytest.raises(tessera.FormatError):
        list(f.read_tensors())
    data = bytearray(shard.read_bytes())
    data[-10] ^= 0xFF
    data[0] ^= 0xFF  # chunk 0's zstd frame magic (the frames carry no checksum)
    shard.write_bytes(bytes(data))
    with pytest.raises(tessera.FormatError):
        f.read_cell(0)
    assert f.read_cell(15).shape == (17, 2)  # other chunks still read


def test_concurrent_reads_from_threads(spec_dir):
    from concurrent.futures import ThreadPoolExecutor

    f = ragged.open(leaf_of(spec_dir, "temporal"), "6/h_tdigest")
    serial = [f.read_cell(i).tobytes() for i in range(16)]
    tensors = [b.tensor.tobytes() for b in f.read_tensors()]
    with ThreadPoolExecutor(4) as pool:
        cells = list(pool.map(lambda i: f.read_cell(i % 16).tobytes(), range(400)))
        swept = list(pool.map(lambda _: [b.tensor.tobytes() for b in f.read_tensors(threads=1)], range(20)))
    assert cells == serial * 25
    assert all(s == tensors for s in swept)


# ---- records pickle ----
def test_records_and_fields_pickle(spec_dir):
    leaf = leaf_of(spec_dir, "kitchen_sink")
    rec = next(ragged.read_locations(leaf, "6/h_tdigest_signal"))
    back = pickle.loads(pickle.dumps(rec))
    assert back.index == rec.index and back[:2] == rec[:2] and (back.values == rec.values).all()
    block = next(ragged.read_tensors(leaf, "6/h_tdigest_signal"))
    back = pickle.loads(pickle.dumps(block))
    assert back.start == block.start and back.morton == block.morton and (back.tensor == block.tensor).all()
    f = pickle.loads(pickle.dumps(ragged.open(leaf, "6/h_tdigest_signal")))
    assert f.read_cell(15).shape == (18, 2)


# ---- build ----
def random_points(n, seed, lat=(40.0, 60.0), lon=(30.0, 40.0)):
    rng = np.random.default_rng(seed)
    return rng.uniform(*lat, n), rng.uniform(*lon, n), rng.normal(20.0, 3.0, n)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    lat, lon, value = random_points(3000, 7)
    root = tmp_path_factory.mktemp("built") / "hive"
    report = ragged.build(root, lat=lat, lon=lon, value=value, cell_order=8, shard_order=2,
                          latitude="geodetic-spherical", threads=1)
    return root, report, (lat, lon, value)


def test_walk_finds_leaves_under_grouped_directories(built, tmp_path):
    """With path_grouping 2 a leaf sits below directories of two digits (`12/`); the walk (the
    library's, shared with `ragged info --list-leaves`) must find every leaf the MOC names."""
    source, _, _ = built
    root = tmp_path / "grouped"
    shutil.copytree(source, root)
    manifest_path = root / "morton_hive.json"
    document = json.loads(manifest_path.read_text())
    document["path_grouping"] = 2
    manifest_path.write_text(json.dumps(document))
    moved = []
    for path in ragged.leaves(source):
        shard = ragged.open(path).shard
        old, new = root / pathlib.Path(path).relative_to(source), root / ragged.leaf_path(root, shard)
        new.parent.mkdir(parents=True, exist_ok=True)
        old.rename(new)
        moved.append(str(new))
    assert any(len(part) > 1 for leaf in moved for part in pathlib.Path(leaf).relative_to(root).parts[1:-1])
    assert ragged.leaves(root, method="moc") == ragged.leaves(root, method="walk") == sorted(moved, key=lambda p: ragged.parse_word(ragged.open(p).shard))
    listed = json.loads(run_cli("ragged", "info", root, "--list-leaves").stdout)["leaves"]
    assert sorted(str(root / leaf["path"]) for leaf in listed) == sorted(moved)


def test_build_reads_back_consistent_with_healpy(built):
    import healpy

    root, report, (lat, lon, value) = built
    assert report["rows"]["accepted"] == 3000 and report["rows"]["rejected"] == 0
    paths = ragged.leaves(root)
    assert paths == ragged.leaves(root, method="walk")
    assert [pathlib.Path(p).relative_to(root).as_posix() for p in paths] == [l["leaf"] for l in report["leaves"]]
    assert len(paths) >= 2
    nest = healpy.ang2pix(2**8, lon, lat, nest=True, lonlat=True)
    want_counts = dict(zip(*np.unique(nest, return_counts=True)))
    got_counts, got_values = {}, {}
    for path in paths:
        f = ragged.open(path, "h_tdigest")
        root_start = f.axis()["root_start"]
        for index, rows in f.cells():
            got_counts[root_start + index] = float(rows[:, 1].sum(dtype=np.float64))
            got_values[root_start + index] = rows[:, 0]
    assert got_counts == {int(k): float(v) for k, v in want_counts.items()}
    assert sum(l["observations"] for l in report["leaves"]) == 3000
    assert report["cells_with_data"] == len(want_counts)
    # every cell holds its observations as single-weight centroids, sorted by value
    for cell in list(want_counts)[:200]:
        np.testing.assert_array_equal(got_values[int(cell)], np.sort(value[nest == cell].astype(np.float32)))


def test_build_raw_values_identity_and_verify(built):
    root, report, _ = built
    total = 0
    for path in ragged.leaves(root):
        lf = ragged.open(path)
        for morton, (row, col), values in lf.read_raw_values("8/h_tdigest", threads=1):
            cell = lf.cell_index("8/h_tdigest", morton, row, col)
            assert (lf.read_cell("8/h_tdigest", cell)[:, 0] == values).all()
            total += len(values)
        s = ragged.summarize(lf)
        assert s["weight"] == s["rows"] == next(l["observations"] for l in report["leaves"] if l["leaf"] in path)
        assert s["cells"] == s["cells_with_data"]
        assert lf.hashes()["combined"] == next(l["combined_hash"] for l in report["leaves"] if l["leaf"] in path)
    assert total == 3000
    report = ragged.verify(root)
    assert report["ok"] is True and len(report["leaves"]) == len(ragged.leaves(root))
    for path in ragged.leaves(root):  # the CLI itself, leaf by leaf
        out = json.loads(run_cli("ragged", "verify", path).stdout)
        assert out["ok"] is True and not out["failures"] and out["checked"]["hashes"] == "ok"
    shard = ragged.open(ragged.leaves(root)[0]).shard
    assert ragged.verify(root, shard=shard)["ok"] is True


def test_verify_reports_a_damaged_leaf(spec_dir, tmp_path):
    root = tmp_path / "minimal"
    shutil.copytree(spec_dir / "minimal", root)
    shard = root / SHARD_LEAF / "6" / "h_tdigest" / "c" / "0"
    shard.chmod(0o644)
    data = bytearray(shard.read_bytes())
    data[-10] ^= 0xFF
    shard.write_bytes(bytes(data))
    report = ragged.verify(root / SHARD_LEAF)
    assert report["ok"] is False and any(f["rule"] == "chunk" for f in report["failures"])
    assert ragged.verify(root)["ok"] is False
    with pytest.raises(tessera.Error):
        ragged.verify(tmp_path / "nothing-here")


def test_build_options_and_errors(tmp_path):
    lat, lon, value = random_points(200, 3)
    t = np.datetime64("2020-01-01T00:00:00", "ns") + np.arange(200).astype("timedelta64[s]")
    report = ragged.build(tmp_path / "timed", lat=lat, lon=lon, value=value, time=t, weight=np.full(200, 0.5),
                          gain_name="g", gain_version="1", located=True, cell_order=7, shard_order=2)
    leaf = ragged.open(tmp_path / "timed" / report["leaves"][0]["leaf"], "h_tdigest")
    assert leaf.weights == "flux" and leaf.gain == {"name": "g", "version": "1"}
    assert leaf.locations == "7/h_tdigest_locations" and leaf.times == "7/h_tdigest_times"
    assert sum(len(r.values) for r in leaf.read_times()) > 0
    with pytest.raises(tessera.UsageError):  # gain missing for flux weights (exit 2)
        ragged.build(tmp_path / "bad", lat=lat, lon=lon, value=value, weight=np.ones(200))
    with pytest.raises(tessera.UsageError, match="length"):
        ragged.build(tmp_path / "bad", lat=lat, lon=lon[:10], value=value)
    with pytest.raises(tessera.Error):  # committed leaves without overwrite
        ragged.build(tmp_path / "timed", lat=lat, lon=lon, value=value, cell_order=7, shard_order=2)
    bad = value.copy()
    bad[5] = np.nan
    report = ragged.build(tmp_path / "nan", lat=lat, lon=lon, value=bad, cell_order=7, shard_order=2)
    assert report["rows"]["rejected_by_reason"] == {"non_finite_value": 1}
    with pytest.raises(tessera.FormatError, match="row 6"):
        ragged.build(tmp_path / "strict", lat=lat, lon=lon, value=bad, strict=True, cell_order=7, shard_order=2)
