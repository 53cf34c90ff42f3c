"""tessera.cells.to_dask: one sparse block per tile, computed on a two-process LocalCluster and with
the threaded scheduler, against the serial answer from get_batch."""
import pickle

import numpy as np
import pytest
import scipy.sparse

import tessera
import tessera.cells

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """157 cells x 23 genes in 10 tiles of 16."""
    import anndata

    root = tmp_path_factory.mktemp("dask")
    rng = np.random.default_rng(5)
    x = scipy.sparse.random(157, 23, density=0.25, format="csr", random_state=5,
                            data_rvs=lambda k: rng.integers(1, 1000, k)).astype(np.float32)
    anndata.AnnData(X=x).write_h5ad(root / "a.h5ad")
    tessera.cells.convert(root / "a.h5ad", root / "ds", tile_size=16, no_obs=True, no_var=True).close()
    return root / "ds"


def cell_totals(block):
    return np.asarray(block.sum(axis=1), dtype=np.float64).ravel()


def test_blocks_are_tiles(dataset, conformance):
    with tessera.cells.open(dataset) as ds:
        serial = ds.get_batch(range(ds.n_cells)).toarray()
        tile_cells = tuple(int(c) for c in ds.tile_cells)
    x = tessera.cells.to_dask(dataset)
    assert x.shape == (157, 23) and x.chunks == (tile_cells, (23,)) and x.dtype == np.float32
    assert isinstance(x._meta, scipy.sparse.csr_matrix)
    # tasks carry the path and parameters only, never an open dataset
    assert len(pickle.dumps(dict(x.__dask_graph__()))) < 4000
    block = x.blocks[3].compute(scheduler="sync")
    assert isinstance(block, scipy.sparse.csr_matrix)
    np.testing.assert_array_equal(block.toarray(), serial[48:64])
    # threaded scheduler: the whole array, and a per-cell computation
    whole = x.compute(scheduler="threads")
    np.testing.assert_array_equal(whole.toarray(), serial)
    totals = x.map_blocks(cell_totals, drop_axis=1, dtype=np.float64).compute(scheduler="threads")
    np.testing.assert_array_equal(totals, serial.sum(axis=1))
    ints = tessera.cells.to_dask(dataset, values="int32")
    assert ints.dtype == np.int32 and ints.name != x.name
    np.testing.assert_array_equal(ints[20:40].compute(scheduler="sync").toarray(), serial[20:40])
    small = tessera.cells.to_dask(conformance / "deltacells" / "dataset_small", verify_crc=False)
    assert small.chunks == ((4, 4, 2), (6,))
    with pytest.raises(tessera.UsageError):
        tessera.cells.to_dask(dataset, values="float64")


def test_local_cluster_per_cell_totals(dataset):
    with tessera.cells.open(dataset) as ds:
        serial = np.asarray(ds.get_batch(range(ds.n_cells)).sum(axis=1)).ravel()
        gene_totals = np.asarray(ds.get_batch(range(ds.n_cells)).sum(axis=0)).ravel()
    x = tessera.cells.to_dask(dataset)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        totals = x.map_blocks(cell_totals, drop_axis=1, dtype=np.float64)
        np.testing.assert_array_equal(client.compute(totals).result(), serial)
        # per-tile partial gene sums, reduced on the cluster
        partial = x.map_blocks(lambda b: np.asarray(b.sum(axis=0)).reshape(1, -1), dtype=np.float64,
                               chunks=((1,) * x.numblocks[0], (x.shape[1],)))
        np.testing.assert_array_equal(partial.sum(axis=0).compute(), gene_totals)
        # both worker processes took part
        assert len(client.scheduler_info()["workers"]) == 2


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_sum_and_mean_equal_scipy_on_the_source(tmp_path, scheduler):
    """x.sum / x.mean over either axis (dask passes keepdims and tuple axes to every block) against
    scipy on the source's X, in the source gene order restored with gene_order."""
    pytest.importorskip("anndata")
    from cells_truth import read_source, write_source

    write_source(tmp_path / "a.h5ad", n_cells=150, n_genes=60, seed=4)
    tessera.cells.convert(tmp_path / "a.h5ad", tmp_path / "ds", tile_size=16, no_obs=True).close()
    source = read_source(tmp_path / "a.h5ad").X
    with tessera.cells.open(tmp_path / "ds") as ds:
        stored = source[:, ds.gene_order]  # the dataset's columns are in stored order
    x = tessera.cells.to_dask(tmp_path / "ds")
    for axis in (0, 1, None):
        got = x.sum(axis=axis).compute(scheduler=scheduler)
        np.testing.assert_array_equal(np.ravel(got), np.ravel(np.asarray(stored.sum(axis=axis))))
        # counts sum exactly in float32; the mean is their sum over a count (float32 rounding)
        got = x.mean(axis=axis).compute(scheduler=scheduler)
        np.testing.assert_allclose(np.ravel(got), np.ravel(np.asarray(stored.mean(axis=axis))), rtol=1e-6)
    assert x.sum(axis=0).shape == (60,) and x.mean(axis=1).shape == (150,)
    whole = x.compute(scheduler=scheduler)
    assert isinstance(whole, scipy.sparse.csr_matrix) and (whole != stored).nnz == 0
    # a block is a csr_matrix whose sum keeps scipy's result unless numpy's keepdims is given
    block = x.blocks[0].compute(scheduler="sync")
    assert isinstance(block.sum(axis=0), np.matrix)
    assert block.sum(axis=(0,), keepdims=True).shape == (1, 60)
    assert pickle.loads(pickle.dumps(block)).shape == block.shape


def test_local_cluster_reductions(dataset):
    with tessera.cells.open(dataset) as ds:
        serial = ds.get_batch(range(ds.n_cells))
    x = tessera.cells.to_dask(dataset)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster):
        np.testing.assert_array_equal(x.sum(axis=0).compute(), np.asarray(serial.sum(axis=0)).ravel())
        np.testing.assert_allclose(x.mean(axis=1).compute(), np.asarray(serial.mean(axis=1)).ravel(), rtol=1e-6)
