"""tessera.cells.TorchDataset: ranks x DataLoader workers partition every epoch exactly, batches
equal get_batch, orders depend only on (seed, epoch), torch.distributed provides the rank."""
import os
import socket
import sys

import numpy as np
import pytest
import scipy.sparse

import tessera
import tessera.cells

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """203 cells x 29 genes in 13 tiles of 16, converted from an h5ad written with anndata."""
    import anndata

    root = tmp_path_factory.mktemp("torch")
    rng = np.random.default_rng(11)
    x = scipy.sparse.random(203, 29, density=0.2, format="csr", random_state=11,
                            data_rvs=lambda k: rng.integers(1, 50, k)).astype(np.float32)
    anndata.AnnData(X=x).write_h5ad(root / "a.h5ad")
    tessera.cells.convert(root / "a.h5ad", root / "ds", tile_size=16, no_obs=True, no_var=True).close()
    return root / "ds"


def collect(ds, num_workers):
    """(cells, x) of every batch one rank sees through a DataLoader."""
    loader = DataLoader(ds, batch_size=None, num_workers=num_workers)
    return [(c.numpy(), x) for c, x in loader]


def test_two_ranks_two_workers_partition_the_epoch(dataset):
    truth = tessera.cells.open(dataset)
    seen = []
    per_rank = []
    for rank in range(2):
        ds = tessera.cells.TorchDataset(dataset, 7, seed=3, rank=rank, world_size=2, return_cells=True)
        ds.set_epoch(2)
        batches = collect(ds, num_workers=2)
        assert batches
        per_rank.append(np.concatenate([c for c, _ in batches]))
        for cells, x in batches:
            assert x.layout == torch.sparse_csr and x.shape == (len(cells), 29) and x.dtype == torch.float32
            np.testing.assert_array_equal(x.to_dense().numpy(), truth.get_batch(cells).toarray())
            seen.append(cells)
    seen = np.concatenate(seen)
    assert len(seen) == truth.n_cells and np.sort(seen).tolist() == list(range(truth.n_cells))
    assert not set(per_rank[0]) & set(per_rank[1])
    # the same (seed, epoch) gives the same batches again; another epoch another order
    ds = tessera.cells.TorchDataset(dataset, 7, seed=3, rank=0, world_size=2, return_cells=True)
    ds.set_epoch(2)
    assert np.array_equal(np.concatenate([c for c, _ in collect(ds, 2)]), per_rank[0])
    ds.set_epoch(3)
    other = np.concatenate([c for c, _ in collect(ds, 2)])
    assert not np.array_equal(other, per_rank[0])
    truth.close()


def test_in_process_options(dataset):
    truth = tessera.cells.open(dataset)
    ds = tessera.cells.TorchDataset(dataset, 10, seed=1, dense=True, values="int32", return_cells=True)
    assert ds.partition() == (0, 1, 0, 1) and ds.epoch == 0
    batches = list(ds)
    assert len(batches) == ds.batch_count() == 21
    for cells, x in batches:
        assert x.layout == torch.strided and x.dtype == torch.int32
        np.testing.assert_array_equal(x.numpy(), truth.get_batch(cells, values="int32").toarray())
    first = np.concatenate([c.numpy() for c, _ in batches])
    assert np.sort(first).tolist() == list(range(203))
    again = np.concatenate([c.numpy() for c, _ in ds])
    assert np.array_equal(first, again)
    ds = tessera.cells.TorchDataset(dataset, 10, shuffle=False, drop_last=True)
    xs = list(ds)  # only the tensors without return_cells
    assert len(xs) == 20 and all(x.shape == (10, 29) for x in xs)
    np.testing.assert_array_equal(torch.cat([x.to_dense() for x in xs]).numpy(), truth.get_batch(range(200)).toarray())
    ds.close()
    assert len(list(ds)) == 20  # reopened on the next iteration
    with pytest.raises(tessera.UsageError):
        tessera.cells.TorchDataset(dataset, 10, rank=0)
    with pytest.raises(tessera.UsageError):
        tessera.cells.TorchDataset(dataset, 10, values="float16")
    truth.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _distributed_rank(rank, world_size, port, path, out_dir):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    try:
        ds = tessera.cells.TorchDataset(path, 9, seed=8, return_cells=True)
        assert ds.partition()[:2] == (rank, world_size)
        cells = [c.numpy() for c, _ in ds]
        np.save(os.path.join(out_dir, f"rank{rank}.npy"), np.concatenate(cells) if cells else np.empty(0, np.int64))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_torch_distributed_gloo_two_processes(dataset, tmp_path, monkeypatch):
    import torch.multiprocessing as mp

    # spawned children import tessera (and this module) from the same places as this process
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    mp.spawn(_distributed_rank, args=(2, _free_port(), str(dataset), str(tmp_path)), nprocs=2, join=True)
    parts = [np.load(tmp_path / f"rank{r}.npy") for r in range(2)]
    assert len(parts[0]) and len(parts[1]) and not set(parts[0]) & set(parts[1])
    assert np.sort(np.concatenate(parts)).tolist() == list(range(203))
    # each rank saw exactly what the explicit (rank, world_size) arguments give
    for r in range(2):
        ds = tessera.cells.TorchDataset(dataset, 9, seed=8, rank=r, world_size=2, return_cells=True)
        assert np.array_equal(np.concatenate([c.numpy() for c, _ in ds]), parts[r])


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """300 cells x 80 genes with obs (cells_truth.py), in 10 tiles of 32; the source as AnnData."""
    pytest.importorskip("anndata")
    from cells_truth import read_source, write_source

    root = tmp_path_factory.mktemp("torch-obs")
    write_source(root / "a.h5ad", n_cells=300, n_genes=80, seed=2)
    tessera.cells.convert(root / "a.h5ad", root / "ds", tile_size=32).close()
    return root / "ds", read_source(root / "a.h5ad")


def test_where_two_workers_yield_the_filtered_cells_with_labels(labelled):
    path, adata = labelled
    obs = adata.obs
    where = {"cell_type": ["T", "NK"], "age": (30, None)}
    want = np.flatnonzero(obs["cell_type"].isin(["T", "NK"]) & (obs["age"] >= 30))
    columns = ["cell_type", "age", "batch_no", "is_doublet", "flag"]
    with tessera.cells.open(path) as truth:
        genes = list(adata.var_names[::7])
        ds = tessera.cells.TorchDataset(path, 9, seed=4, where=where, obs_columns=columns, genes=genes,
                                        return_cells=True)
        orders = []
        for epoch in (0, 1, 0):
            ds.set_epoch(epoch)
            items = list(DataLoader(ds, batch_size=None, num_workers=2))
            cells = np.concatenate([c.numpy() for c, _, _ in items])
            assert np.sort(cells).tolist() == want.tolist()  # each filtered cell once per epoch
            orders.append(cells)
            for c, x, labels in items:
                c = c.numpy()
                assert len(c) <= 9 and x.shape == (len(c), len(genes))
                np.testing.assert_array_equal(x.to_dense().numpy(), adata[c, genes].X.toarray())
                rows = obs.iloc[c]
                assert labels["cell_type"].dtype == torch.int64
                np.testing.assert_array_equal(labels["cell_type"].numpy(), rows["cell_type"].cat.codes.to_numpy())
                np.testing.assert_array_equal(labels["age"].numpy(), rows["age"].to_numpy())
                assert labels["batch_no"].dtype == torch.int16 and labels["is_doublet"].dtype == torch.bool
                np.testing.assert_array_equal(labels["batch_no"].numpy(), rows["batch_no"].to_numpy())
                np.testing.assert_array_equal(labels["is_doublet"].numpy(), rows["is_doublet"].to_numpy())
                np.testing.assert_array_equal(labels["flag"].numpy(),
                                              rows["flag"].to_numpy(dtype=np.float64, na_value=np.nan))
        assert np.array_equal(orders[0], orders[2]) and not np.array_equal(orders[0], orders[1])
        # the same cells as an explicit list; the pair's tiles are those of the unrestricted epoch
        ds = tessera.cells.TorchDataset(path, 9, seed=4, cells=want[::-1], return_cells=True, rank=1, world_size=2)
        tiles = set(truth.epoch(9, seed=4, rank=1, world_size=2).tiles.tolist())
        got = np.concatenate([c.numpy() for c, _ in ds])
        assert set(truth.tile_of(got).tolist()) <= tiles
        assert np.sort(got).tolist() == want[np.isin(truth.tile_of(want), list(tiles))].tolist()
        assert len(list(ds)) == ds.batch_count()


def test_restricted_epoch_options(labelled):
    path, adata = labelled
    cells = np.arange(5, 290, 3)
    ds = tessera.cells.TorchDataset(path, 10, cells=cells, shuffle=False, drop_last=True, dense=True,
                                    transform=lambda x: x * 2, obs_columns="donor")
    items = list(ds)
    assert len(items) == ds.batch_count() == len(cells) // 10
    x = torch.cat([x for x, _ in items]).numpy()
    np.testing.assert_array_equal(x, 2 * adata[cells[:len(x)]].X.toarray()[:, tessera.cells.open(path).gene_order])
    even = tessera.cells.TorchDataset(path, 4, cells=cells, rank=0, world_size=3, even_batches=True)
    counts = [tessera.cells.TorchDataset(path, 4, cells=cells, rank=r, world_size=3).batch_count() for r in range(3)]
    assert even.batch_count() == min(counts) == len(list(even))
    with pytest.raises(tessera.UsageError, match="not both"):
        tessera.cells.TorchDataset(path, 4, cells=cells, where={"donor": "d1"})
    with pytest.raises(tessera.UsageError, match="barcode.*strings"):
        tessera.cells.TorchDataset(path, 4, obs_columns=["barcode"])
    with pytest.raises(tessera.UsageError, match="unknown obs columns"):
        tessera.cells.TorchDataset(path, 4, obs_columns=["nope"])
    with pytest.raises(tessera.UsageError, match="unknown obs columns"):
        tessera.cells.TorchDataset(path, 4, where={"nope": 1})
