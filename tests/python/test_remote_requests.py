"""How many requests a remote deltacells read makes, counted by `fault_proxy.FaultProxy` in front
of an `Origin` serving a generated dataset on 127.0.0.1: round trips, not bytes, set the speed of
a remote read, so these counts are the contract that keeps it fast.

- A tile is one GET (no HEAD first), fetched once per epoch.
- Opening an obs shard is a HEAD and one parallel pair of GETs (its leading magic; a tail that
  holds the footer), one GET when the shard is small enough for the two to merge; localizing
  columns of a shard fetches all of their chunks in one coalesced GET when they lie close
  together, instead of one GET per row group and column.
- The values are those of the same dataset read locally.
"""
import collections

import numpy as np
import pytest

from conftest import run_cli
from fault_proxy import FaultProxy, Origin, bypass_proxies
from tessera import cells

N_CELLS, N_GENES, TILE = 2_000, 40, 200
COLUMNS = ["cell_type", "n_counts", "percent_mito"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    import anndata
    import pandas as pd
    import scipy.sparse as sp

    root = tmp_path_factory.mktemp("remote-requests")
    rng = np.random.default_rng(11)
    x = sp.random(N_CELLS, N_GENES, density=0.2, format="csr", random_state=3, dtype=np.float32)
    x.data = rng.integers(1, 30, x.nnz).astype(np.float32)
    obs = pd.DataFrame({
        "cell_type": pd.Categorical(rng.choice([f"type_{i}" for i in range(7)], N_CELLS)),
        "batch": pd.Categorical(rng.choice(["a", "b"], N_CELLS)),
        "n_counts": np.asarray(x.sum(axis=1)).ravel().astype(np.float32),
        "percent_mito": rng.random(N_CELLS).astype(np.float32) * 20,
    }, index=[f"cell_{i}" for i in range(N_CELLS)])
    h5ad = root / "in.h5ad"
    anndata.AnnData(X=x, obs=obs, var=pd.DataFrame(index=[f"g{i}" for i in range(N_GENES)])).write_h5ad(h5ad)
    run_cli("cells", "convert", "--h5ad-glob", str(h5ad), "--output", str(root / "ds"), "--tile-size", str(TILE),
            "--obs-tiles-per-file", "4",
            "--quiet")
    return root


@pytest.fixture(scope="module")
def served(dataset):
    origin = Origin(dataset)
    proxy = FaultProxy(origin.url)
    yield proxy
    proxy.close()
    origin.close()


@pytest.fixture
def proxy(served, monkeypatch):
    bypass_proxies(monkeypatch)
    served.clear()
    yield served


def requests_by_object(proxy):
    counts = collections.Counter()
    for seen in proxy.requests:
        counts[(seen.method, seen.path.split("/", 2)[2])] += 1  # the key below /DATASET/
    return counts


def test_an_epoch_fetches_each_tile_with_one_get_and_no_head(proxy, dataset):
    url = f"{proxy.url}/ds"
    with cells.open(url) as remote, cells.open(str(dataset / "ds")) as local:
        assert remote.n_tiles == N_CELLS // TILE
        got = [(c, x.toarray()) for c, x in remote.epoch(300, seed=5)]
        want = [(c, x.toarray()) for c, x in local.epoch(300, seed=5)]
    assert len(got) == len(want)
    for (gc, gx), (wc, wx) in zip(got, want):
        np.testing.assert_array_equal(gc, wc)
        np.testing.assert_array_equal(gx, wx)
    counts = requests_by_object(proxy)
    tiles = {k: n for k, n in counts.items() if k[1].startswith("tiles/")}
    assert all(method == "GET" for method, _ in tiles), f"tiles were opened with a HEAD: {sorted(tiles)}"
    assert sorted(tiles.values()) == [1] * (N_CELLS // TILE), f"a tile was fetched more than once: {tiles}"


def test_a_remote_epoch_keeps_enough_tiles_in_flight_to_cover_the_round_trips(proxy, dataset):
    # Tiles of a few KiB: a remote store gets the deepest default (32 fetches, 34 tiles kept),
    # so all 10 tiles of the epoch are requested at once; a local one keeps 4 and 8.
    url = f"{proxy.url}/ds"
    with cells.open(url) as remote, cells.open(str(dataset / "ds")) as local:
        assert remote.fetch_depth == (32, 34)
        assert local.fetch_depth == (4, 8)
        proxy.latency(0.2)  # every request stays under way long enough to overlap the others
        for _ in remote.epoch(N_CELLS, seed=1):
            pass
    assert proxy.max_in_flight == N_CELLS // TILE, proxy.max_in_flight
    # What the caller sets is kept; what it leaves at 0 is still chosen.
    with cells.open(url, io_threads=2) as remote:
        assert remote.fetch_depth == (2, 34)
    with cells.open(url, io_threads=3, max_prefetch_tiles=5) as remote:
        assert remote.fetch_depth == (3, 5)


def localize_remotely(proxy, dataset, cache):
    with cells.open(f"{proxy.url}/{dataset.name}", cache_dir=str(cache)) as remote:
        remote.obs.localize(COLUMNS)
        got = remote.obs.take(np.arange(remote.n_cells), COLUMNS)
    with cells.open(str(dataset), cache_dir=str(cache) + "-local") as local:
        local.obs.localize(COLUMNS)
        want = local.obs.take(np.arange(local.n_cells), COLUMNS)
    assert got.equals(want)
    counts = requests_by_object(proxy)
    shards = sorted({key for _, key in counts if key.startswith("obs/obs_")})
    assert shards, counts
    return {key: (counts[("HEAD", key)], counts[("GET", key)]) for key in shards}


def test_a_small_obs_shard_is_read_whole_when_it_is_opened(proxy, dataset, tmp_path):
    # Three shards of 4, 4 and 2 tiles, each well under 1 MiB: the head and tail fetched at open
    # are less than 1 MiB apart, so they are one request, the whole shard.
    heads_and_gets = localize_remotely(proxy, dataset / "ds", tmp_path / "cache")
    assert heads_and_gets == {f"obs/obs_000{i}.parquet": (1, 1) for i in range(3)}


@pytest.fixture(scope="module")
def wide_obs(tmp_path_factory):
    """30,000 cells whose one obs shard is about 2 MiB, mostly columns the test does not localize."""
    import anndata
    import pandas as pd
    import scipy.sparse as sp

    root = tmp_path_factory.mktemp("wide-obs")
    rng = np.random.default_rng(5)
    n = 30_000
    x = sp.random(n, 5, density=0.5, format="csr", random_state=4, dtype=np.float32)
    x.data = rng.integers(1, 9, x.nnz).astype(np.float32)
    columns = {
        "cell_type": pd.Categorical(rng.choice([f"type_{i}" for i in range(5)], n)),
        "n_counts": np.asarray(x.sum(axis=1)).ravel().astype(np.float32),
        "percent_mito": rng.random(n).astype(np.float32),
    }
    for i in range(8):  # random doubles do not compress: they put the localized chunks far apart
        columns[f"extra_{i}"] = rng.random(n)
    obs = pd.DataFrame(columns, index=[f"c{i}" for i in range(n)])
    h5ad = root / "in.h5ad"
    anndata.AnnData(X=x, obs=obs, var=pd.DataFrame(index=[f"g{i}" for i in range(5)])).write_h5ad(h5ad)
    run_cli("cells", "convert", "--h5ad-glob", str(h5ad), "--output", str(root / "wide"), "--tile-size", "1000",
            "--obs-tiles-per-file", "30", "--quiet")
    return root


@pytest.fixture
def wide_proxy(wide_obs, monkeypatch):
    bypass_proxies(monkeypatch)
    origin = Origin(wide_obs)
    proxy = FaultProxy(origin.url)
    yield proxy
    proxy.close()
    origin.close()


def test_localizing_columns_of_a_large_shard_is_one_coalesced_get(wide_proxy, wide_obs, tmp_path):
    shard = wide_obs / "wide" / "obs" / "obs_0000.parquet"
    assert shard.stat().st_size > (256 + 1024) * 1024, "the shard must be larger than what its open fetches"
    heads_and_gets = localize_remotely(wide_proxy, wide_obs / "wide", tmp_path / "cache")
    # The open: a HEAD, then the magic and the tail (one parallel pair); the localize: the
    # chunks of 3 columns in 30 row groups, less than 1 MiB apart, as one request.
    assert heads_and_gets == {"obs/obs_0000.parquet": (1, 3)}
