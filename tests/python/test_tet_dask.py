"""tessera.tet.to_dask on a two-process distributed.LocalCluster: a multi-GiB file reduced by
Dask equals the query engine's answer, and tasks carry only paths."""
import pickle

import numpy as np
import pytest

from tessera import tet

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")


def test_dask_mean_of_a_multi_gib_file_equals_the_query_engine(tmp_path):
    path = tmp_path / "big.tet"
    # 2 GiB of int32 (synthetic integers are cheap to generate), 64 MiB chunk rows.
    tet.synth(path, ["v:i32:16384x32768:512x32768"], seed=9)
    assert path.stat().st_size > 2 * 1024**3
    arr = tet.to_dask(path, "v")
    assert arr.shape == (16384, 32768) and arr.dtype == np.int32
    assert arr.npartitions == 32
    # Tasks pickle to a few hundred bytes: a path, a name and a box, never data or handles.
    graph = dict(arr.__dask_graph__())
    assert max(len(pickle.dumps(task)) for task in graph.values()) < 1000
    engine = tet.query(path, {"dataset": "v", "mean": []})["execution"]["operation_mean"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        mean = float(client.compute(arr.mean()).result())
        # A strided, sliced reduction also agrees with a direct read.
        part = client.compute(arr[100:200:3, 5000:5100].sum()).result()
    assert mean == pytest.approx(engine, rel=1e-12)
    direct = tet.open(path)["v"][100:200:3, 5000:5100].astype(np.int64).sum()
    assert int(part) == int(direct)


def test_to_dask_blocks_equal_the_file_for_a_custom_block_shape(conformance):
    path = conformance / "tetration/generated/zstd_f64_3d.tet"
    f = tet.open(path)
    name = f.keys()[0]
    ds = f[name]
    block = tuple(max(1, c // 2) for c in ds.chunks)
    arr = tet.to_dask(path, name, chunks=block)
    np.testing.assert_array_equal(arr.compute(scheduler="threads"), ds[...])
