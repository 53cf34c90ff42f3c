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
