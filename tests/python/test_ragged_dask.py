"""tessera.ragged.leaves_to_dask on a two-process distributed.LocalCluster: per-leaf reductions
over a multi-leaf store built with ragged.build equal the serial loop over ragged.leaves."""
import numpy as np
import pytest

from tessera import ragged

distributed = pytest.importorskip("distributed")


def observations_per_leaf(field):
    """A custom per-leaf function (runs on a worker): (shard, Σ weights, cells, max rows)."""
    weights = 0.0
    cells = 0
    rows = 0
    for _, digest in field.cells():
        weights += float(digest[:, 1].sum(dtype=np.float64))
        cells += 1
        rows = max(rows, len(digest))
    return {"leaf": field.leaf, "weights": weights, "cells": cells, "max_rows": rows}


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 3000
    root = tmp_path_factory.mktemp("dask") / "hive"
    report = ragged.build(root, lat=rng.uniform(40, 60, n), lon=rng.uniform(30, 40, n), value=rng.normal(20, 3, n),
                          cell_order=8, shard_order=2, threads=1)
    assert 2 <= len(report["leaves"]) <= 4
    return root, report


@pytest.mark.filterwarnings("ignore:make_current is deprecated:DeprecationWarning")
# distributed 2022.12 starts the scheduler's HTTP server on :8787 even with dashboard_address=None
# and warns when another cluster holds that port
@pytest.mark.filterwarnings("ignore:Port .* is already in use:UserWarning")
def test_leaves_to_dask_on_a_local_cluster_equals_the_serial_loop(hive):
    root, report = hive
    paths = ragged.leaves(root)
    serial_default = [ragged.summarize(ragged.open(p)) for p in paths]
    serial_custom = [observations_per_leaf(ragged.open(p, "h_tdigest")) for p in paths]
    assert sum(s["weight"] for s in serial_default) == 3000

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        bag = ragged.leaves_to_dask(root)
        assert bag.npartitions == len(paths)
        got_default = bag.compute(scheduler=client.get)
        got_custom = ragged.leaves_to_dask(root, observations_per_leaf, field="h_tdigest").compute(scheduler=client.get)
        total = ragged.leaves_to_dask(root).pluck("weight").sum().compute(scheduler=client.get)
        # tasks ran in the worker processes, not here
        pids = set(client.run(lambda: __import__("os").getpid()).values())
        assert len(pids) == 2

    assert got_default == serial_default
    assert got_custom == serial_custom
    assert total == 3000
    assert [s["weight"] for s in got_default] == [float(l["observations"]) for l in report["leaves"]]
