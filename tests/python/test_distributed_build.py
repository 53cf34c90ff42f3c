"""tessera.ragged.build(..., client=) on a two-process distributed.LocalCluster: the leaves are
built by Dask tasks (`ragged build --leaves-only` on the workers) and the hive is committed once
(`--commit-leaves`); the store is byte for byte the single build's, in a directory and in a bucket
(the S3 emulator of bucket_server.py), and a worker killed while its task writes still gives the
complete, identical store after Dask runs the task again."""
import json
import os
import pathlib
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import tessera
from tessera import ragged

from bucket_server import bucket_objects, s3_env, serve_bucket

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

BUCKET = "tessera-dist"
# Shard order 3 over a quarter of the sphere: a few dozen leaves, several per task.
OPTIONS = dict(cell_order=9, shard_order=3, stats=True, delta=200, threads=1)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    yield from serve_bucket(tmp_path_factory.mktemp("s3d"), BUCKET)


@pytest.fixture(scope="module")
def client(s3, tmp_path_factory):
    """Two worker processes that inherit the bucket settings and a fixed SOURCE_DATE_EPOCH (so
    timestamps agree between the builds compared)."""
    staging = tmp_path_factory.mktemp("staging")
    env = s3_env(s3.url, SOURCE_DATE_EPOCH="1700000000", TESSERA_STAGING_DIR=str(staging))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        # A killed worker's replacement must register before the cluster gives up on it; under a
        # loaded machine a fresh worker process can take longer than the default 15 s to start.
        with dask.config.set({"distributed.deploy.lost-worker-timeout": "600s"}), \
                distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                         host="127.0.0.1") as cluster, distributed.Client(cluster) as c:
            yield c
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(7)
    n = 60_000
    lat = rng.uniform(-10, 80, n)
    lon = rng.uniform(-100, 0, n)
    value = rng.normal(100, 15, n)
    time_ns = (1_600_000_000 + rng.integers(0, 10_000_000, n)) * 1_000_000_000
    lat[5], lon[17], value[23] = np.nan, np.inf, np.nan  # refused rows travel too, and are counted
    return dict(lat=lat, lon=lon, value=value, time=time_ns.astype(np.int64), sigma=rng.uniform(0.5, 2, n))


@pytest.fixture(scope="module")
def few(points):
    """The points of a 20° box: a handful of leaves, so that the bucket tests stay quick."""
    box = (points["lon"] > -100) & (points["lon"] < -80) & (points["lat"] > 10) & (points["lat"] < 30)
    box[[5, 17, 23]] = True  # with the refused rows
    return {k: v[box] for k, v in points.items()}


def tree(root: pathlib.Path):
    """{key: bytes} of a store directory; names starting with '.' (the build lock) are not objects."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def bucket(s3, prefix):
    return bucket_objects(s3, BUCKET, prefix)


def comparable(report):
    return {k: v for k, v in report.items() if k not in ("elapsed_seconds", "tasks", "tasks_resent", "upload", "store")}


def test_tasks_get_about_a_million_rows_and_their_workers_threads(client):
    from tessera import _cli, _tasks

    # one per thread for every million rows a thread would get, between one and four per thread
    assert _tasks.default_partitions(60_000, 2, 1_000_000) == 2
    assert _tasks.default_partitions(3_000_000, 2, 1_000_000) == 2
    assert _tasks.default_partitions(3_000_000, 1, 1_000_000) == 3
    assert _tasks.default_partitions(100_000_000, 2, 1_000_000) == 8
    assert _tasks.default_partitions(20, 2, 8) == 2
    # a task's CLI runs on its worker's threads (one here), unless the caller set them
    assert client.submit(_tasks.worker_threads, pure=False).result() == 1
    assert _cli.with_default(["--x"], "--threads", 1) == ["--x", "--threads", "1"]
    assert _cli.with_default(["--threads", "3"], "--threads", 1) == ["--threads", "3"]


def test_the_cli_does_not_inherit_the_nannys_malloc_trim(client, tmp_path, monkeypatch):
    """A LocalCluster puts MALLOC_TRIM_THRESHOLD_ into its starter's environment (and its
    workers'): the CLI the package runs must not take it (it triples a build's page faults)."""
    import sys

    from tessera import _cli

    assert os.environ.get("MALLOC_TRIM_THRESHOLD_")  # set by the module's LocalCluster
    dump = tmp_path / "cli"
    dump.write_text(f"#!{sys.executable}\nimport json, os\nprint(json.dumps(dict(os.environ)))\n")
    dump.chmod(0o755)
    monkeypatch.setattr(tessera, "cli_path", lambda: dump)
    env = json.loads(_cli.run(["anything"]).stdout)
    assert "MALLOC_TRIM_THRESHOLD_" not in env and env["TESSERA_ERROR_KIND"] == "1"


def test_the_default_shard_order_is_the_clis():
    from tessera import _ragged_distributed

    text = subprocess.run([str(tessera.cli_path()), "ragged", "build", "--help"], capture_output=True,
                          text=True).stdout
    assert f"shard order (default {_ragged_distributed.DEFAULT_SHARD_ORDER})" in text


def test_a_distributed_build_writes_the_single_builds_bytes(client, points, tmp_path):
    serial = ragged.build(tmp_path / "serial", **points, **OPTIONS)
    dist = ragged.build(tmp_path / "dist", **points, **OPTIONS, client=client)
    assert dist["tasks"] > 1 and serial["shards_written"] > dist["tasks"]
    assert comparable(dist) == comparable(serial)
    assert serial["rows"]["rejected_by_reason"] == {"non_finite_coordinate": 2, "non_finite_value": 1}
    assert tree(tmp_path / "dist") == tree(tmp_path / "serial")
    # the tasks ran on the workers: two of them, neither this process
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids
    assert len(ragged.leaves(tmp_path / "dist")) == serial["shards_written"]


def test_adding_leaves_and_refusing_committed_ones_as_the_single_build_does(client, points, tmp_path):
    west = points["lon"] < -50
    half = {k: v[west] for k, v in points.items()}
    rest = {k: v[~west] for k, v in points.items()}
    for name, c in (("serial", None), ("dist", client)):
        ragged.build(tmp_path / name, **half, **OPTIONS, client=c)
    before = tree(tmp_path / "dist")
    with pytest.raises(tessera.UsageError, match="a committed leaf already exists"):
        ragged.build(tmp_path / "dist", **points, **OPTIONS, client=client)
    assert tree(tmp_path / "dist") == before  # refused before any task ran
    # the other half of the sphere's shards (those east of -50° not already built) are added
    shards_west = set(ragged.cell_of(half["lat"][np.isfinite(half["lat"])], half["lon"][np.isfinite(half["lat"])],
                                     OPTIONS["shard_order"]))
    east_cells = ragged.cell_of(np.nan_to_num(rest["lat"]), np.nan_to_num(rest["lon"], posinf=0.0),
                                OPTIONS["shard_order"])
    new = ~np.isin(east_cells, list(shards_west))
    more = {k: v[new] for k, v in rest.items()}
    for name, c in (("serial", None), ("dist", client)):
        ragged.build(tmp_path / name, **more, **OPTIONS, client=c)
    assert tree(tmp_path / "dist") == tree(tmp_path / "serial")
    # overwrite replaces what exists, as the single build does
    for name, c in (("serial", None), ("dist", client)):
        ragged.build(tmp_path / name, **points, **OPTIONS, overwrite=True, client=c)
    assert tree(tmp_path / "dist") == tree(tmp_path / "serial")


def test_options_a_distributed_build_cannot_honour_are_refused(client, points, tmp_path):
    with pytest.raises(tessera.UsageError, match="strict"):
        ragged.build(tmp_path / "s", **points, **OPTIONS, strict=True, client=client)
    with pytest.raises(tessera.UsageError, match="flat"):
        ragged.build(tmp_path / "f", **points, **OPTIONS, layout="flat", client=client)
    assert not (tmp_path / "s").exists() and not (tmp_path / "f").exists()


def test_a_distributed_build_into_a_bucket_puts_the_single_builds_objects(client, s3, few, tmp_path):
    serial = ragged.build(tmp_path / "serial", **few, **OPTIONS)
    dist = ragged.build(f"s3://{BUCKET}/hive", **few, **OPTIONS, client=client)
    assert comparable(dist) == comparable(serial)
    assert dist["upload"]["objects"] > 0
    assert bucket(s3, "hive") == tree(tmp_path / "serial")
    assert not any(k.endswith(".tessera-write") for k in bucket(s3, "hive"))
    assert s3.in_progress_uploads(BUCKET) == []


def tessera_children(worker_pids):
    """(pid, parent) of the `tessera ragged build --leaves-only` processes the workers started."""
    return process_children(worker_pids, b"--leaves-only")


def process_children(worker_pids, flag):
    """(pid, parent) of the processes the workers started whose command line has `flag`."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent in worker_pids and flag in cmdline:
            found.append((int(entry.name), parent))
    return found


def kill_a_worker_while_its_task_writes(client, ready, timeout=120):
    """SIGKILLs the first worker seen running a task's CLI once `ready()` says writing began;
    returns the killed worker's pid."""
    workers = set(client.run(os.getpid).values())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = tessera_children(workers)
        if children and ready():
            os.kill(children[0][1], signal.SIGKILL)
            return children[0][1]
        time.sleep(0.01)
    raise AssertionError("no task started writing")


@pytest.mark.parametrize("where", ["directory", "bucket"])
def test_a_worker_killed_mid_task_still_gives_the_complete_identical_store(client, s3, points, few, tmp_path,
                                                                            where):
    if where == "bucket":
        points = few
    serial = ragged.build(tmp_path / "serial", **points, **OPTIONS)
    if where == "bucket":
        out, prefix = f"s3://{BUCKET}/killed", "killed"
        s3.reset_counts()
        s3.write_delay = 0.02  # uploads slow enough to be caught halfway
        ready = (lambda: sum(1 for r in s3.requests if r[0] == "PUT") >= 5)
    else:
        # Every task's CLI stops once it has stamped its first leaf (still staged beside the hive)
        # until the test lets it go: a worker is killed while its task holds a half-made leaf.
        out = str(tmp_path / "dist")
        pause = tmp_path / "pause"
        pause.mkdir()
        client.run(lambda: os.environ.update(TESSERA_TEST_PAUSE_AT="ragged.leaf_stamped:1",
                                             TESSERA_TEST_PAUSE_DIR=str(pause)))
        ready = (pause / "ragged.leaf_stamped.reached").exists
    result = {}
    build = threading.Thread(target=lambda: result.update(
        report=ragged.build(out, **points, **OPTIONS, partitions=4, client=client)))
    try:
        build.start()
        killed = kill_a_worker_while_its_task_writes(client, ready)
        if where == "directory":
            (pause / "ragged.leaf_stamped.release").touch()
        build.join(timeout=300)
    finally:
        s3.write_delay = 0.0
        client.run(lambda: [os.environ.pop(k, None) for k in ("TESSERA_TEST_PAUSE_AT", "TESSERA_TEST_PAUSE_DIR")])
    assert not build.is_alive() and "report" in result
    assert comparable(result["report"]) == comparable(serial)
    # the killed worker held the rows of the task it ran (a task runs where its rows were
    # scattered), so the driver sent them again
    assert result["report"]["tasks_resent"] >= 1
    # the CLI the killed worker ran died with it
    assert all(parent != killed for _pid, parent in tessera_children({killed}))
    got = bucket(s3, prefix) if where == "bucket" else tree(pathlib.Path(out))
    assert got == tree(tmp_path / "serial")
    if where == "bucket":
        s3.wait_idle()
        assert s3.in_progress_uploads(BUCKET) == []
    else:  # the killed attempt's spill and staging leaf were removed by the retry and the commit
        assert not [p.name for p in pathlib.Path(out).rglob(".tessera-build-*")]
        assert not list(pathlib.Path(out).rglob("*.zarr.tmp-*"))
    client.wait_for_workers(2, timeout=300)


def test_a_failing_task_raises_its_error(client, points, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "morton_hive.json").write_text("{}")
    with pytest.raises(tessera.Error):
        ragged.build(tmp_path / "taken", **points, **OPTIONS, partitions=4, client=client)
    assert json.loads((tmp_path / "taken" / "morton_hive.json").read_text()) == {}
    # the error is raised once every task has ended: no CLI is still writing
    assert tessera_children(set(client.run(os.getpid).values())) == []


# ---- cells.convert(..., client=) ----

@pytest.fixture(scope="module")
def h5ads(tmp_path_factory):
    """Three h5ad files of counts with categorical obs and a var column: 1,500 cells over 300 genes."""
    import anndata
    import pandas as pd
    import scipy.sparse

    root = tmp_path_factory.mktemp("h5ad")
    rng = np.random.default_rng(11)
    for f, n in enumerate((400, 700, 400)):
        counts = scipy.sparse.random(n, 300, density=0.1, format="csr", random_state=f, dtype=np.float32)
        counts.data = np.ceil(counts.data * 30)
        obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["T", "B", "NK"], n)),
                            "depth": rng.uniform(0, 1, n)}, index=[f"f{f}c{i}" for i in range(n)])
        var = pd.DataFrame({"chrom": rng.choice(["1", "2", "X"], 300)}, index=[f"g{j}" for j in range(300)])
        anndata.AnnData(X=counts, obs=obs, var=var).write_h5ad(root / f"part{f}.h5ad")
    return str(root / "part*.h5ad")


CONVERT = dict(tile_size=100, level=3, sort_genes_max_files=2, threads=1, workers=1)


def test_a_distributed_convert_writes_the_single_converts_bytes(client, h5ads, tmp_path):
    tessera.cells.convert(h5ads, tmp_path / "serial", open_dataset=False, **CONVERT)
    ds = tessera.cells.convert(h5ads, tmp_path / "dist", client=client, partitions=4, **CONVERT)
    assert ds.n_cells == 1500
    assert tree(tmp_path / "dist") == tree(tmp_path / "serial")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tessera-tiles-")] == []  # removed
    # an occupied output is refused before any task runs; overwrite replaces it
    with pytest.raises(tessera.UsageError, match="not empty"):
        tessera.cells.convert(h5ads, tmp_path / "dist", client=client, **CONVERT)
    tessera.cells.convert(h5ads, tmp_path / "dist", client=client, overwrite=True, no_sort_genes=True,
                          open_dataset=False, **CONVERT)
    tessera.cells.convert(h5ads, tmp_path / "serial", overwrite=True, no_sort_genes=True, open_dataset=False,
                          **CONVERT)
    assert tree(tmp_path / "dist") == tree(tmp_path / "serial")


def test_a_distributed_convert_into_a_bucket_puts_the_single_converts_objects(client, s3, h5ads, tmp_path):
    tessera.cells.convert(h5ads, tmp_path / "serial", open_dataset=False, **CONVERT)
    tessera.cells.convert(h5ads, f"s3://{BUCKET}/atlas", client=client, open_dataset=False, **CONVERT)
    assert bucket(s3, "atlas") == tree(tmp_path / "serial")


def test_the_commit_refuses_a_tile_encoded_with_other_options(h5ads, tmp_path):
    """The commit step parses every tile the tasks left and checks it against the dataset."""
    cli = str(tessera.cli_path())
    base = ["cells", "convert", "--h5ad-glob", h5ads, "--no-sort-genes", "--tile-size", "100", "--quiet"]
    tiles = tmp_path / "tiles"
    subprocess.run([cli, *base, "--output", str(tiles), "--tiles", "0:15"], check=True)
    other = tmp_path / "other"
    subprocess.run([cli, *base[:-3], "--tile-size", "90", "--quiet", "--output", str(other), "--tiles", "3:4"],
                   check=True)
    os.replace(other / "tiles" / "tile_000003.dct", tiles / "tiles" / "tile_000003.dct")
    proc = subprocess.run([cli, *base, "--output", str(tmp_path / "out"), "--tiles-from", str(tiles)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "tile_000003.dct: a tile of version 2, 300 genes and 90 cells" in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing written


def test_a_worker_killed_mid_convert_still_gives_the_identical_dataset(client, h5ads, tmp_path):
    tessera.cells.convert(h5ads, tmp_path / "serial", open_dataset=False, **CONVERT)
    pause = tmp_path / "pause"
    pause.mkdir()
    client.run(lambda: os.environ.update(TESSERA_TEST_PAUSE_AT="cells.tile_written:1",
                                         TESSERA_TEST_PAUSE_DIR=str(pause)))
    result = {}
    convert = threading.Thread(target=lambda: result.update(ds=tessera.cells.convert(
        h5ads, tmp_path / "dist", client=client, partitions=4, open_dataset=False, **CONVERT)))
    try:
        convert.start()
        workers = set(client.run(os.getpid).values())
        deadline = time.monotonic() + 120
        while not (pause / "cells.tile_written.reached").exists():
            assert time.monotonic() < deadline, "no task wrote a tile"
            time.sleep(0.01)
        os.kill(cells_children(workers)[0][1], signal.SIGKILL)
        (pause / "cells.tile_written.release").touch()
        convert.join(timeout=300)
    finally:
        client.run(lambda: [os.environ.pop(k, None) for k in ("TESSERA_TEST_PAUSE_AT", "TESSERA_TEST_PAUSE_DIR")])
    assert not convert.is_alive() and "ds" in result
    assert tree(tmp_path / "dist") == tree(tmp_path / "serial")
    client.wait_for_workers(2, timeout=300)


def cells_children(worker_pids):
    return process_children(worker_pids, b"--tiles")
