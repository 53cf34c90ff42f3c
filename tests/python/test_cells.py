"""tessera.cells against independent truth: the conformance dataset's expected answers, a small
numpy/zstandard decoder of the tile format written from the spec (deltacells.md §2), and AnnData
files written here and converted with `tessera.cells.convert`."""
import json
import os
import pathlib
import pickle
import shutil
import struct
import subprocess
import sys
import threading
import zlib

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

import tessera
import tessera.cells

# ---- an independent decoder (spec §2: header, chunk table, indptr, byte-planar u16 streams) ----


def decode_tile(buf: bytes):
    """(indptr, indices, values) of one tile, versions 1 and 2, straight from the spec."""
    import zstandard

    assert buf[:8] == b"DELTACEL"
    version, flags, n_cells, nnz, n_genes, n_chunks, indptr_off, total, crc, _ = struct.unpack_from("<IIQQIIQQII", buf, 8)
    assert flags == 0 and total == len(buf) and zlib.crc32(buf[64:total]) == crc
    entry = 64 if version == 1 else 96
    indptr = np.frombuffer(buf, "<i8", n_cells + 1, indptr_off).astype(np.int64)
    indices = np.zeros(nnz, np.int64)
    values = np.zeros(nnz, np.int64)
    dctx = zstandard.ZstdDecompressor()

    def frame(off, length):
        return dctx.decompress(buf[off:off + length])

    for k in range(n_chunks):
        f = struct.unpack_from("<" + "Q" * (entry // 8), buf, 64 + k * entry)
        cell_lo, cell_hi, nnz_lo, nnz_hi = f[:4]
        n = nnz_hi - nnz_lo
        streams = []
        for off, length in ((f[4], f[5]), (f[6], f[7])):
            raw = np.frombuffer(frame(off, length), np.uint8)
            assert raw.size == 2 * n
            streams.append(raw[:n].astype(np.int64) | (raw[n:].astype(np.int64) << 8))
        gaps, vals = streams
        gexc = {}
        if version == 2:
            for off, length, which in ((f[8], f[9], "v"), (f[10], f[11], "g")):
                if length:
                    raw = np.frombuffer(frame(off, length), "<u4")
                    pos, pay = raw[: raw.size // 2], raw[raw.size // 2:]
                    if which == "v":
                        vals[pos] = pay
                    else:
                        gexc = dict(zip(pos.tolist(), pay.tolist()))
        for r in range(cell_lo, cell_hi):
            s, e = indptr[r] - nnz_lo, indptr[r + 1] - nnz_lo
            idx = np.cumsum(gaps[s:e])
            for p, add in gexc.items():
                if s <= p < e:
                    idx[p - s:] += add
            indices[nnz_lo + s: nnz_lo + e] = idx
        values[nnz_lo:nnz_hi] = vals
    assert (indices < n_genes).all()
    return indptr, indices, values


def decode_dataset(root: pathlib.Path) -> np.ndarray:
    """The whole stored matrix (dense, stored gene order) from manifest.json and the tile files."""
    manifest = json.loads((root / "manifest.json").read_text())
    rows = []
    for t in range(len(manifest["tile_cells"])):
        indptr, indices, values = decode_tile((root / "tiles" / f"tile_{t:06d}.dct").read_bytes())
        dense = np.zeros((len(indptr) - 1, manifest["n_genes"]), np.int64)
        for r in range(len(indptr) - 1):
            dense[r, indices[indptr[r]:indptr[r + 1]]] = values[indptr[r]:indptr[r + 1]]
        rows.append(dense)
    return np.vstack(rows)


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(conformance):
    return conformance / "deltacells" / "dataset_small"


@pytest.fixture(scope="module")
def expected(conformance):
    return json.loads((conformance / "deltacells" / "expected_dataset_small.json").read_text())


def write_h5ad(path: pathlib.Path, n_cells=230, n_genes=37, seed=0):
    """Random counts (one above 65,535, some empty cells) and an obs table with every column kind
    and missing values; a nullable string column is added with h5py (anndata 0.8 cannot write it)."""
    import anndata
    import h5py

    rng = np.random.default_rng(seed)
    x = scipy.sparse.random(n_cells, n_genes, density=0.15, format="csr", random_state=seed,
                            data_rvs=lambda k: rng.integers(1, 300, k)).astype(np.float32)
    x = x.tolil()
    x[5, 3] = 100000
    x[7, :] = 0
    x = x.tocsr()
    x.eliminate_zeros()
    names = [f"cell-{i}" for i in range(n_cells)]
    obs = pd.DataFrame(index=names)
    obs["cell_type"] = pd.Categorical(rng.choice(["T", "B", "NK", None], n_cells), categories=["T", "B", "NK", "Müller glia"])
    obs["age"] = rng.normal(40, 10, n_cells)
    obs.loc[obs.index[::9], "age"] = np.nan
    obs["n_umi"] = rng.integers(0, 10**6, n_cells).astype(np.int64)
    obs["score"] = rng.random(n_cells).astype(np.float32)
    obs["is_doublet"] = rng.random(n_cells) < 0.3
    obs["flag"] = pd.array(rng.choice([True, False, None], n_cells), dtype="boolean")
    obs["barcode"] = [f"AC{i:06d}" for i in range(n_cells)]
    var = pd.DataFrame(index=[f"g{j}" for j in range(n_genes)])
    anndata.AnnData(X=x, obs=obs, var=var).write_h5ad(path)
    note = np.array([None if i % 4 == 0 else f"note {i} ü" for i in range(n_cells)], dtype=object)
    with h5py.File(path, "r+") as f:
        g = f["obs"].create_group("note")
        g.attrs["encoding-type"] = "nullable-string-array"
        g.attrs["encoding-version"] = "0.1.0"
        g.create_dataset("values", data=np.array(["" if v is None else v for v in note], dtype=object),
                         dtype=h5py.string_dtype())
        g.create_dataset("mask", data=np.array([v is None for v in note]))
        f["obs"].attrs["column-order"] = list(f["obs"].attrs["column-order"]) + ["note"]
    obs["note"] = note
    obs["obs_names"] = np.array(names, dtype=object)
    return x.toarray().astype(np.int64), obs, np.array(var.index)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("cells")
    x, obs, var_names = write_h5ad(root / "a.h5ad")
    ds = tessera.cells.convert(str(root / "*.h5ad"), root / "ds", tile_size=32, obs_tiles_per_file=3, chunks=2)
    ds.close()
    return {"root": root, "path": root / "ds", "x": x, "obs": obs, "var_names": var_names,
            "cache": root / "cache"}


def open_converted(c, **options):
    return tessera.cells.open(c["path"], cache_dir=c["cache"], **options)


# ---- the conformance dataset ----------------------------------------------------------------


def test_small_metadata(small, expected):
    with tessera.cells.open(small) as ds:
        assert (ds.n_cells, ds.n_genes, ds.n_tiles, ds.tile_size, ds.version) == (10, 6, 3, 4, 1)
        assert ds.shape == (10, 6) and len(ds) == 10
        assert ds.limits.dtype == np.uint64 and ds.limits.tolist() == expected["limits"]
        assert ds.tile_cells.tolist() == [4, 4, 2]
        assert ds.var_names == expected["var_names_stored_order"]
        assert ds.gene_order.dtype == np.int32 and ds.gene_order.tolist() == expected["gene_order"]
        assert [ds.tile_of(int(c)) for c in expected["tile_of"]] == list(expected["tile_of"].values())
        assert ds.tile_of(np.arange(10)).tolist() == list(expected["tile_of"].values())
        assert [ds.tile_bounds(t) for t in range(3)] == [(0, 4), (4, 8), (8, 10)]
        assert not ds.has_obs
        with pytest.raises(tessera.UsageError):
            ds.tile_bounds(3)
        with pytest.raises(tessera.UsageError):
            ds.obs


def test_small_get_batch_matches_expected(small, expected):
    dense = np.array(expected["stored_matrix_dense"])
    with tessera.cells.open(small) as ds:
        for key, want in expected["get_batch"].items():
            cells = [int(c) for c in key.split(",")]
            indptr, indices, values = ds.get_batch(cells, values="int32", format="raw")
            assert (indptr.dtype, indices.dtype, values.dtype) == (np.int64, np.int32, np.int32)
            assert indptr.tolist() == want["indptr"]
            assert indices.tolist() == want["indices"]
            assert values.tolist() == want["values"]
            x = ds.get_batch(cells)
            assert isinstance(x, scipy.sparse.csr_matrix) and x.dtype == np.float32 and x.shape == (len(cells), 6)
            np.testing.assert_array_equal(x.toarray(), dense[cells])
            assert ds.batch_nnz(cells) == len(want["values"])
        assert ds.get_batch([]).shape == (0, 6)
        np.testing.assert_array_equal(ds.get_batch(slice(2, 9)).toarray(), dense[2:9])
        np.testing.assert_array_equal(ds.get_batch(7).toarray(), dense[[7]])


def test_small_equals_independent_decode(small, expected):
    truth = decode_dataset(small)
    np.testing.assert_array_equal(truth, np.array(expected["stored_matrix_dense"]))
    # the stored matrix is the source matrix with its columns in gene order
    source = np.array(expected["source_matrix_dense_source_gene_order"])
    np.testing.assert_array_equal(truth, source[:, expected["gene_order"]])
    with tessera.cells.open(small, verify_crc=False, max_cached_tiles=1) as ds:
        cells = np.random.default_rng(1).integers(0, 10, 50)
        np.testing.assert_array_equal(ds.get_batch(cells, values="int32").toarray(), truth[cells])


def test_raw_arrays_own_library_buffers(small):
    with tessera.cells.open(small) as ds:
        arrays = ds.get_batch([9, 0, 4, 4, 3], format="raw")
        again = ds.get_batch([9, 0, 4, 4, 3], format="raw")
    for a, b in zip(arrays, again):
        # the owner is the capsule holding the library's vector, not another array: no copy
        assert a.base is not None and not isinstance(a.base, np.ndarray)
        assert type(a.base).__name__ == "PyCapsule"
        assert not a.flags.owndata and a.flags.writeable and a.flags.aligned and a.flags.c_contiguous
        assert a.ctypes.data != b.ctypes.data  # every batch has its own buffers
    arrays[2][:] = 0  # writable, and writing does not touch later batches
    assert again[2].sum() > 0
    del again
    # a csr_matrix shares the value and index buffers of the batch
    with tessera.cells.open(small) as ds:
        x = ds.get_batch(range(10))
        for a in (x.data, x.indices):
            while isinstance(a, np.ndarray):  # views of views end at the library's capsule
                a = a.base
            assert type(a).__name__ == "PyCapsule"


def test_dropped_batch_buffers_are_reused_and_live_ones_never_are(converted):
    """Batch vectors return to a pool when Python drops their arrays and the next batch reuses
    them (no fresh mapping per batch); a batch still alive is never written by a later one."""
    with open_converted(converted) as ds:
        first = [ds.get_batch(range(0, 40), format="raw") for _ in range(3)]
        want = [tuple(a.copy() for a in arrays) for arrays in first]
        for cells in (range(50, 90), range(5, 45), range(90, 100)):  # later batches while all three live
            ds.get_batch(cells, format="raw")
        for arrays, copies in zip(first, want):
            for a, b in zip(arrays, copies):
                np.testing.assert_array_equal(a, b)
        addresses = {a.ctypes.data for arrays in first for a in arrays}
        del first, arrays
        reused = ds.get_batch(range(0, 40), format="raw")
        assert {a.ctypes.data for a in reused} <= addresses  # pooled buffers came back
        for a, b in zip(reused, want[0]):
            np.testing.assert_array_equal(a, b)
        # The epoch iterator lends from the same pools.
        seen = [next(iter(ds.epoch(16, seed=1, format="raw")))[1] for _ in range(2)]
        assert seen[0][0].ctypes.data != seen[1][0].ctypes.data


def test_errors_map_to_tessera_types(small):
    with tessera.cells.open(small) as ds:
        with pytest.raises(tessera.UsageError, match=r"cell 10 outside the valid range \[0, 10\)") as e:
            ds.get_batch([0, 10])
        assert isinstance(e.value, ValueError) and isinstance(e.value, tessera.Error)
        with pytest.raises(ValueError):
            ds.get_batch([-1])
        with pytest.raises(tessera.UsageError):
            ds.tile_of(10)
        with pytest.raises(tessera.UsageError):
            ds.get_batch([0.5])
        with pytest.raises(tessera.UsageError):
            ds.get_batch([[0, 1]])
        with pytest.raises(tessera.UsageError):
            ds.get_batch([0], values="float64")
        with pytest.raises(tessera.UsageError):
            ds.get_batch([0], format="coo")
        with pytest.raises(tessera.UsageError):
            ds.prefetch([3])
        with pytest.raises(tessera.UsageError):
            ds.epoch(0)
    with pytest.raises(tessera.UsageError):
        tessera.cells.open(small, io_threads=-1)
    with pytest.raises(tessera.Error):
        tessera.cells.open(small / "tiles")


def test_corrupt_tile_names_the_file(small, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(small, root)
    tile = root / "tiles" / "tile_000001.dct"
    data = bytearray(tile.read_bytes())
    data[-3] ^= 0xFF  # inside the last frame: the CRC check catches it
    tile.write_bytes(bytes(data))
    with tessera.cells.open(root) as ds:
        np.testing.assert_array_equal(ds.get_batch([0, 3]).toarray(), decode_dataset(small)[[0, 3]])
        with pytest.raises(tessera.FormatError, match="tile_000001.dct") as e:
            ds.get_batch([5])
        assert isinstance(e.value, ValueError) and "tile_000001.dct" in e.value.path
    data = bytearray(tile.read_bytes())
    tile.write_bytes(bytes(data[:-1]))  # truncated: total_size no longer matches
    with tessera.cells.open(root, verify_crc=False) as ds:
        with pytest.raises(tessera.FormatError, match="tile_000001.dct"):
            ds.get_batch([4])


def _open_files_under(root: pathlib.Path) -> list:
    root = str(root.resolve())
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(root):
            fds.append(target)
    maps = [line for line in pathlib.Path("/proc/self/maps").read_text().splitlines() if root in line]
    return fds + maps


def test_close_and_context_manager_release_files(converted):
    ds = open_converted(converted)
    ds.prefetch(range(ds.n_tiles))
    ds.get_batch(range(0, ds.n_cells, 7))
    ds.obs.localize(["cell_type", "barcode"])
    ds.obs.take([1, 2, 3], ["cell_type", "barcode"])  # maps the cache files
    assert _open_files_under(converted["cache"])
    ds.close()
    assert _open_files_under(converted["path"]) == [] and _open_files_under(converted["cache"]) == []
    assert ds.closed and ds.n_cells == 230  # metadata stays readable
    with pytest.raises(tessera.UsageError, match="closed"):
        ds.get_batch([0])
    with pytest.raises(tessera.UsageError, match="closed"):
        ds.obs.take([0])
    ds.close()  # twice is harmless
    with open_converted(converted) as ds2:
        epoch = ds2.epoch(10)
        next(epoch)
        ds2.obs.take([0], ["cell_type"])
    assert ds2.closed
    with pytest.raises(tessera.UsageError, match="closed"):
        next(epoch)
    assert _open_files_under(converted["path"]) == [] and _open_files_under(converted["cache"]) == []


# ---- converted AnnData ----------------------------------------------------------------------


def test_convert_round_trip_counts(converted):
    x, var_names = converted["x"], converted["var_names"]
    with open_converted(converted) as ds:
        assert ds.shape == x.shape and ds.version == 2 and ds.n_tiles == 8
        order = ds.gene_order
        assert sorted(order.tolist()) == list(range(x.shape[1]))
        assert ds.var_names == var_names[order].tolist()
        stored = x[:, order]
        # the dataset's tiles decoded independently agree with AnnData's X
        np.testing.assert_array_equal(decode_dataset(converted["path"]), stored)
        rng = np.random.default_rng(7)
        for n in (1, 17, 300):
            cells = rng.integers(0, ds.n_cells, n)  # repeats, any order, across tiles
            got = ds.get_batch(cells, values="int32")
            assert got.dtype == np.int32 and got.shape == (n, x.shape[1])
            np.testing.assert_array_equal(got.toarray(), stored[cells])
            got = ds.get_batch(cells)
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got.toarray(), stored[cells].astype(np.float32))
            assert ds.batch_nnz(cells) == np.count_nonzero(stored[cells])
        assert ds.get_batch([5], values="int32").toarray().max() == 100000
        assert ds.get_batch([7]).nnz == 0
        assert ds.prefetch_cells([0, 100]) >= 0 and ds.prefetch([1, 2]) >= 0
        s = ds.stats()
        assert s["tiles_fetched"] >= 1 and s["tiles_decoded"] >= 1


def test_convert_options_and_errors(converted, tmp_path):
    source = converted["root"] / "a.h5ad"
    with pytest.raises(tessera.LimitError, match="version 2"):  # v1 refuses the count of 100000
        tessera.cells.convert(source, tmp_path / "v1", format_version=1)
    assert not (tmp_path / "v1" / "manifest.json").exists()
    text = tessera.cells.convert([source], tmp_path / "plain", tile_size=100, no_sort_genes=True, no_obs=True,
                                 no_var=True, open_dataset=False)
    assert "done: 3 tiles" in text
    with tessera.cells.open(tmp_path / "plain") as ds:
        assert ds.n_tiles == 3 and not ds.has_obs and ds.gene_order.size == 0
        np.testing.assert_array_equal(ds.get_batch(range(230), values="int32").toarray(), converted["x"])
    with tessera.cells.convert(source, tmp_path / "plain", overwrite=True, obs_exclude=["age", "note"],
                               no_obs_names=True) as ds:
        assert "age" not in ds.obs.columns and "obs_names" not in ds.obs.columns and "barcode" in ds.obs.columns
    with pytest.raises(tessera.Error, match="nothing.h5ad"):
        tessera.cells.convert(str(tmp_path / "nothing.h5ad"), tmp_path / "out")
    assert not (tmp_path / "out" / "manifest.json").exists()
    with pytest.raises(tessera.Error, match="overwrite"):  # a non-empty output without overwrite
        tessera.cells.convert(source, tmp_path / "plain")
    with pytest.raises(tessera.UsageError):
        tessera.cells.convert(source, tmp_path / "out", kind="loom")


def test_obs_take_equals_anndata(converted, tmp_path):
    obs = converted["obs"]
    with tessera.cells.open(converted["path"], cache_dir=tmp_path / "cache") as ds:
        o = ds.obs
        assert o.columns == list(obs.columns)
        schema = o.schema
        assert schema["cell_type"] == {"kind": "category", "type": "int8", "categories": ["T", "B", "NK", "Müller glia"]}
        assert schema["age"]["kind"] == "numeric" and schema["is_doublet"]["kind"] == "bool"
        assert schema["note"]["kind"] == "string" and schema["flag"]["kind"] == "bool"
        fetched = o.localize(["cell_type", "age"])
        assert fetched == ["cell_type", "age"] and o.localize(["age"]) == []
        assert set(o.localized_columns()) == {"cell_type", "age"}
        assert o.cache_dir.startswith(str(tmp_path / "cache"))
        rng = np.random.default_rng(3)
        cells = rng.integers(0, ds.n_cells, 120)
        with pytest.warns(UserWarning):  # columns localized inside take
            got = o.take(cells)
        want = obs.iloc[cells].reset_index(drop=True)
        # numeric columns come back in the stored type unless a touched tile has a missing value
        want["score"] = want["score"].astype(np.float32)
        pd.testing.assert_frame_equal(got, want)
        assert got["flag"].dtype == "boolean" and got["n_umi"].dtype == np.int64
        assert got["note"].isna().sum() == want["note"].isna().sum() > 0
        # a selection without missing ages keeps nothing but values; repeats and order are kept
        few = [1, 1, 0]
        got = o.take(few, ["age", "cell_type", "age"])
        assert list(got.columns) == ["age", "cell_type"]
        pd.testing.assert_frame_equal(got, obs.iloc[few][["age", "cell_type"]].reset_index(drop=True))
        with pytest.raises(tessera.UsageError, match="unknown obs columns"):
            o.take([0], ["nope"])
        with pytest.raises(tessera.UsageError):
            o.take([ds.n_cells], ["age"])


def test_epoch_covers_every_cell_once(converted):
    x = converted["x"]
    with open_converted(converted) as ds:
        stored = x[:, ds.gene_order]
        seen = []
        for rank in range(2):
            for worker in range(2):
                ep = ds.epoch(10, seed=5, epoch=1, rank=rank, world_size=2, worker=worker, num_workers=2)
                batches = list(ep)
                assert len(batches) == ep.batch_count()
                for cells, xb in batches:
                    assert cells.dtype == np.int64 and len(cells) <= 10
                    np.testing.assert_array_equal(xb.toarray(), stored[cells])
                    seen.append(cells)
        seen = np.concatenate(seen)
        assert np.sort(seen).tolist() == list(range(ds.n_cells))
        order = lambda **kw: np.concatenate([c for c, _ in ds.epoch(16, **kw)]).tolist()  # noqa: E731
        assert order(seed=1, epoch=2) == order(seed=1, epoch=2)
        assert order(seed=1, epoch=2) != order(seed=1, epoch=3)
        assert order(shuffle=False) == list(range(ds.n_cells))
        ep = ds.epoch(16, seed=1, format="raw", drop_last=True)
        batches = list(ep)
        assert all(len(c) == 16 for c, _ in batches) and len(batches) == ds.n_cells // 16
        ep.set_epoch(4)
        assert ep.epoch == 4 and sorted(ep.tiles.tolist()) == list(range(ds.n_tiles))
        assert len(list(ep)) == len(batches)


def test_threads_and_pickle(converted):
    x = converted["x"]
    with open_converted(converted) as ds:
        stored = x[:, ds.gene_order]
        errors = []

        def work(seed):
            try:
                cells = np.random.default_rng(seed).integers(0, ds.n_cells, 64)
                for _ in range(5):
                    np.testing.assert_array_equal(ds.get_batch(cells).toarray(), stored[cells])
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        copy = pickle.loads(pickle.dumps(ds))
        with copy:
            assert copy.path == ds.path and copy is not ds
            np.testing.assert_array_equal(copy.get_batch([3, 1]).toarray(), stored[[3, 1]])
            assert copy.obs.cache_dir == ds.obs.cache_dir


def test_import_does_not_load_torch_or_dask():
    code = "import sys, tessera.cells; print([m for m in ('torch', 'dask') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))).stdout
    assert out.strip() == "[]"
