"""Writing to s3:// (and gs://) buckets: every writer command given a bucket output puts the
objects its local run writes, byte for byte, through the S3 emulator of tests/python/bucket_server.py
(SigV4 checked by botocore, payload hashes checked, multipart uploads and conditional creates as S3
does them). The commit protocol of docs/commit-protocols.md holds: a dataset is visible only once
its commit object is written; a second writer is refused while a write lock exists; a writer killed
mid-upload leaves the old version or nothing, plus objects `tessera remote cleanup` removes; a
rerun then succeeds; injected 503s and resets are retried.
"""
import json
import os
import pathlib
import re
import signal
import subprocess
import time

import numpy as np
import pytest

import tessera

from bucket_server import boto3_client, bucket_objects, s3_env, serve_bucket

BUCKET = "tessera-out"
PART = 5 << 20


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    yield from serve_bucket(tmp_path_factory.mktemp("s3w"), BUCKET)


@pytest.fixture
def env(s3, tmp_path):
    s3.write_delay = 0.0
    s3.reset_counts()
    staging = tmp_path / "staging"
    staging.mkdir()
    return s3_env(s3.url, SOURCE_DATE_EPOCH="1700000000", TESSERA_UPLOAD_PART_SIZE=str(PART),
                  TESSERA_STAGING_DIR=str(staging))


def run(args, env, check=True, timeout=300):
    proc = subprocess.run([str(tessera.cli_path()), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=timeout)
    if check:
        assert proc.returncode == 0, f"tessera {' '.join(map(str, args))}: {proc.stderr}"
    return proc


def objects(s3, prefix):
    """{key relative to prefix: bytes} of every object below s3://BUCKET/prefix (boto3 listing)."""
    return bucket_objects(s3, BUCKET, prefix)


def local_objects(root: pathlib.Path):
    """{key: bytes} of a local output as a store sees it: names starting with '.' (a writer's lock
    file) are not objects."""
    out = {}
    for p in sorted(root.rglob("*")):
        key = p.relative_to(root).as_posix()
        if p.is_file() and not any(part.startswith(".") for part in key.split("/")):
            out[key] = p.read_bytes()
    return out


def puts(s3):
    return [r for r in s3.requests if r[0] == "PUT"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, conformance):
    """An h5ad file of counts, a CSV of points and the conformance sample.tet."""
    import anndata
    import pandas as pd
    import scipy.sparse

    root = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(3)
    counts = scipy.sparse.random(600, 40, density=0.2, format="csr", random_state=5, dtype=np.float32)
    counts.data = np.ceil(counts.data * 20)
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["T", "B", "NK"], 600))},
                       index=[f"c{i}" for i in range(600)])
    anndata.AnnData(X=counts, obs=obs).write_h5ad(root / "counts.h5ad")
    lat = rng.uniform(10.0, 10.5, 3000)
    lon = rng.uniform(20.0, 20.5, 3000)
    value = rng.normal(100.0, 5.0, 3000)
    with open(root / "points.csv", "w") as f:
        f.write("lat,lon,h\n")
        for row in zip(lat, lon, value):
            f.write("%.6f,%.6f,%.4f\n" % row)
    with open(root / "north.csv", "w") as f:  # other shards than points.csv
        f.write("lat,lon,h\n")
        for row in zip(lat + 40.0, lon - 120.0, value):
            f.write("%.6f,%.6f,%.4f\n" % row)
    return {"h5ad": root / "counts.h5ad", "csv": root / "points.csv", "north": root / "north.csv",
            "tet": conformance / "tetration" / "sample.tet"}


# Each writer: (command with OUT where the output goes, whether the output is one object, the
# verify command run on the bucket copy).
WRITERS = {
    "tet synth": (["tet", "synth", "OUT", "--dataset", "a:f32:256x256:64x64:zstd:3"], True, ["tet", "verify"]),
    "tet convert": (["tet", "convert", "{tet}", "OUT", "--codec", "zstd", "--level", "3"], True, ["tet", "verify"]),
    "tet export": (["tet", "export", "{tet}", "OUT"], False, None),
    "cells convert": (["cells", "convert", "--h5ad-glob", "{h5ad}", "--output", "OUT", "--tile-size", "100", "--quiet"],
                      False, ["cells", "verify"]),
    "ragged synth": (["ragged", "synth", "OUT", "--cell-order", "12", "--chunk-order", "10"], False,
                     ["ragged", "verify"]),
    "ragged build": (["ragged", "build", "--input", "{csv}", "--value-col", "h", "--out", "OUT", "--cell-order", "14",
                      "--shard-order", "6", "--stats"], False, ["ragged", "verify"]),
}


def command(name, inputs, out):
    args, _, _ = WRITERS[name]
    return [out if a == "OUT" else a.format(**{k: str(v) for k, v in inputs.items()}) for a in args]


@pytest.mark.parametrize("name", list(WRITERS))
def test_each_writer_puts_exactly_the_objects_of_its_local_run(s3, env, inputs, tmp_path, name):
    single, verify = WRITERS[name][1], WRITERS[name][2]
    local = tmp_path / ("out.tet" if single else "local")  # a .tet records its own file name
    local_run = run(command(name, inputs, str(local)), env)
    prefix = "writers/" + name.replace(" ", "-")
    url = f"s3://{BUCKET}/{prefix}" + ("/out.tet" if single else "")
    remote_run = run(command(name, inputs, url), env)
    remote = objects(s3, prefix)
    # Every writer reports its upload on stderr; the JSON reports also carry it (only when remote).
    assert re.search(rf"uploaded {re.escape(url)}: {len(remote)} object\(s\), "
                     rf"{sum(map(len, remote.values()))} bytes in", remote_run.stderr), remote_run.stderr
    if name in ("tet convert", "ragged build"):
        upload = json.loads(remote_run.stdout)["upload"]
        assert (upload["objects"], upload["bytes"]) == (len(remote), sum(map(len, remote.values())))
        assert "upload" not in json.loads(local_run.stdout)
    if single:
        assert remote == {"out.tet": local.read_bytes()}
    else:
        # Same keys, same bytes (SOURCE_DATE_EPOCH fixes every stamped time); no lock object is left.
        assert remote == local_objects(local)
    assert s3.in_progress_uploads(BUCKET) == []
    if verify:
        run([*verify, url], env)
    if name == "tet convert":  # the report names the bucket object, not the staging file
        assert json.loads(remote_run.stdout)["output"] == url
    assert not list(pathlib.Path(env["TESSERA_STAGING_DIR"]).iterdir()), "the staging directory is removed"


def test_a_large_tet_goes_up_as_parallel_multipart_parts(s3, env, tmp_path):
    local = tmp_path / "big.tet"
    spec = ["--dataset", "a:f32:2048x2048:256x256"]  # 16 MiB: four 5 MiB parts
    run(["tet", "synth", local, *spec], env)
    url = f"s3://{BUCKET}/big/big.tet"
    run(["tet", "synth", url, *spec], env)
    parts = [r for r in puts(s3) if "partNumber=" in r[2]]
    assert len(parts) == 4
    assert objects(s3, "big") == {"big.tet": local.read_bytes()}
    assert s3.in_progress_uploads(BUCKET) == []
    info = run(["tet", "info", url], env).stdout
    assert "2048×2048" in info


def test_an_existing_dataset_is_refused_before_any_upload_and_replaced_with_overwrite(s3, env, inputs, tmp_path):
    url = f"s3://{BUCKET}/replace/ds"
    base = ["cells", "convert", "--h5ad-glob", inputs["h5ad"], "--output", url, "--quiet"]
    run([*base, "--tile-size", "50"], env)
    assert sum(k.startswith("tiles/") for k in objects(s3, "replace/ds")) == 12
    s3.reset_counts()
    again = run([*base, "--tile-size", "200"], env, check=False)
    assert again.returncode == 1
    assert "already exists (it has manifest.json); pass --overwrite" in again.stderr
    assert puts(s3) == []
    run([*base, "--tile-size", "200", "--overwrite"], env)
    local = tmp_path / "local"
    run(["cells", "convert", "--h5ad-glob", inputs["h5ad"], "--output", local, "--quiet", "--tile-size", "200"], env)
    assert objects(s3, "replace/ds") == local_objects(local)  # the 12 old tiles are gone, 3 new ones
    run(["cells", "verify", url], env)


def test_a_hive_in_a_bucket_gains_leaves_and_replaces_one_only_with_overwrite(s3, env, inputs, tmp_path):
    url = f"s3://{BUCKET}/hive/h"
    local = tmp_path / "local"
    build = ["ragged", "build", "--value-col", "h", "--cell-order", "14", "--shard-order", "6", "--stats"]
    for csv in (inputs["csv"], inputs["north"]):
        run([*build, "--input", csv, "--out", local], env)
        run([*build, "--input", csv, "--out", url], env)
    both = objects(s3, "hive/h")
    assert both == local_objects(local)
    assert sum(k.endswith(".zarr/zarr.json") for k in both) >= 2
    s3.reset_counts()
    again = run([*build, "--input", inputs["csv"], "--out", url], env, check=False)
    assert again.returncode == 1 and "pass --overwrite to replace it" in again.stderr
    assert [p for p in puts(s3) if not p[1].endswith("/.tessera-write")] == []
    run([*build, "--input", inputs["csv"], "--out", url, "--overwrite"], env)
    run([*build, "--input", inputs["csv"], "--out", local, "--overwrite"], env)
    assert objects(s3, "hive/h") == local_objects(local)
    run(["ragged", "verify", url], env)
    flat = run([*build, "--input", inputs["csv"], "--out", f"s3://{BUCKET}/hive/flat", "--layout", "flat"], env)
    refused = run([*build, "--input", inputs["north"], "--out", f"s3://{BUCKET}/hive/flat", "--layout", "flat",
                   "--overwrite"], env, check=False)
    assert flat.returncode == 0 and refused.returncode == 1
    assert "adding to an existing flat store in a bucket is not supported" in refused.stderr


def start_killable(args, env):
    return subprocess.Popen([str(tessera.cli_path()), *map(str, args)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def kill_after_puts(s3, proc, n, timeout=120):
    deadline = time.monotonic() + timeout
    while len(puts(s3)) < n:
        assert proc.poll() is None, f"the writer ended before {n} PUTs: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "the writer made no progress"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    s3.wait_idle()  # the proxy finishes what the writer had sent before it died


@pytest.mark.parametrize("kill_at", [1, 3, 7])
def test_a_writer_killed_mid_upload_leaves_nothing_visible_and_cleanup_lets_a_rerun_succeed(
        s3, env, inputs, tmp_path, kill_at):
    prefix = f"killed/{kill_at}"
    url = f"s3://{BUCKET}/{prefix}"
    args = ["cells", "convert", "--h5ad-glob", inputs["h5ad"], "--output", url, "--quiet", "--tile-size", "50"]
    s3.write_delay = 0.03
    kill_after_puts(s3, start_killable(args, env), kill_at)
    s3.write_delay = 0.0
    left = objects(s3, prefix)
    assert ".tessera-write" in left and "manifest.json" not in left
    info = run(["cells", "info", url], env, check=False)
    assert info.returncode == 1 and "manifest.json" in info.stderr  # not a dataset: nothing half-written is read
    refused = run(args, env, check=False)
    assert refused.returncode == 1
    assert "another write is in progress, or one was interrupted" in refused.stderr
    assert f"tessera remote cleanup {url}" in refused.stderr
    verify = json.loads(run(["cells", "verify", url, "--json"], env, check=False).stdout)
    assert not verify["ok"] and verify["failure"]["kind"] == "format"
    assert any("a write is running or was interrupted" in w and "tessera remote cleanup" in w
               for w in verify["warnings"])
    dry = json.loads(run(["remote", "cleanup", url, "--dry-run", "--json"], env).stdout)
    assert dry["locked"] and not dry["committed"]
    assert set(dry["removed"]) == set(left) - {".tessera-write"}
    assert objects(s3, prefix) == left  # a dry run changes nothing
    run(["remote", "cleanup", url], env)
    assert objects(s3, prefix) == {}
    run(args, env)
    local = tmp_path / "local"
    run(["cells", "convert", "--h5ad-glob", inputs["h5ad"], "--output", local, "--quiet", "--tile-size", "50"], env)
    assert objects(s3, prefix) == local_objects(local)


def test_an_overwrite_killed_midway_leaves_no_mix_and_a_rerun_replaces_the_dataset(s3, env, inputs, tmp_path):
    prefix = "killed/overwrite"
    url = f"s3://{BUCKET}/{prefix}"
    base = ["cells", "convert", "--h5ad-glob", inputs["h5ad"], "--output", url, "--quiet"]
    run([*base, "--tile-size", "25"], env)  # 24 tiles: the new version's 15 do not cover them
    old = objects(s3, prefix)
    s3.reset_counts()
    s3.write_delay = 0.03
    kill_after_puts(s3, start_killable([*base, "--tile-size", "40", "--overwrite"], env), 5)
    s3.write_delay = 0.0
    left = objects(s3, prefix)
    assert "manifest.json" not in left  # the old version was retracted before any tile was replaced
    assert any(left.get(k) != v for k, v in old.items() if k in left and k != "manifest.json")  # tiles were replaced
    info = run(["cells", "info", url], env, check=False)
    assert info.returncode == 1 and "manifest.json" in info.stderr  # no reader opens old and new tiles together
    run(["remote", "cleanup", url], env)
    assert objects(s3, prefix) == {}
    run([*base, "--tile-size", "40", "--overwrite"], env)
    local = tmp_path / "local"
    run(["cells", "convert", "--h5ad-glob", inputs["h5ad"], "--output", local, "--quiet", "--tile-size", "40"], env)
    assert objects(s3, prefix) == local_objects(local)


def test_a_multipart_upload_killed_midway_keeps_the_old_object_and_cleanup_aborts_it(s3, env, tmp_path):
    url = f"s3://{BUCKET}/mp/big.tet"
    old = tmp_path / "big.tet"  # the name a .tet records must be the object's
    run(["tet", "synth", old, "--dataset", "a:f32:512x512:128x128"], env)
    run(["tet", "synth", url, "--dataset", "a:f32:512x512:128x128"], env)
    s3.reset_counts()
    s3.write_delay = 0.2
    proc = start_killable(["tet", "synth", url, "--dataset", "b:f64:2048x2048:256x256"], dict(env, TESSERA_UPLOAD_PARALLEL="2"))
    kill_after_puts(s3, proc, 2)
    s3.write_delay = 0.0
    assert len(s3.in_progress_uploads(BUCKET)) == 1
    assert objects(s3, "mp") == {"big.tet": old.read_bytes()}  # readers still get the old file whole
    report = json.loads(run(["remote", "cleanup", f"s3://{BUCKET}/mp", "--json"], env).stdout)
    assert [u for u in report["aborted_uploads"]] == ["big.tet"]
    assert s3.in_progress_uploads(BUCKET) == []
    assert objects(s3, "mp") == {"big.tet": old.read_bytes()}


def test_injected_503s_and_resets_are_retried_and_a_lasting_outage_leaves_nothing(s3, env, inputs, tmp_path):
    url = f"s3://{BUCKET}/faults/ds"
    args = ["cells", "convert", "--h5ad-glob", inputs["h5ad"], "--output", url, "--quiet", "--tile-size", "100"]
    retrying = dict(env, TESSERA_HTTP_RETRIES="4")
    s3.fail_writes(503, times=2, after=1)
    s3.fail_writes("reset", times=1, after=2)
    s3.fail_writes(500, times=1, after=1)
    run(args, retrying)
    local = tmp_path / "local"
    run(["cells", "convert", "--h5ad-glob", inputs["h5ad"], "--output", local, "--quiet", "--tile-size", "100"], env)
    assert objects(s3, "faults/ds") == local_objects(local)

    # One request failing on both of its tries (uploads one at a time, so the two faults hit the
    # same request): the write gives up and removes what it wrote, lock included.
    down = f"s3://{BUCKET}/faults/down"
    s3.fail_writes(503, times=2, after=5)
    failed = run([*args[:5], down, *args[6:]], dict(env, TESSERA_UPLOAD_PARALLEL="1"), check=False)
    s3.clear_write_faults()
    assert failed.returncode == 1
    assert "giving up" in failed.stderr
    assert objects(s3, "faults/down") == {}

    # A lasting outage: not even the undo gets through, so the lock stays and names the write;
    # once the store answers again, cleanup removes what is left.
    s3.fail_writes(503, times=100_000, after=4)
    failed = run([*args[:5], down, *args[6:]], env, check=False)
    s3.clear_write_faults()
    assert failed.returncode == 1 and "giving up" in failed.stderr
    assert ".tessera-write" in objects(s3, "faults/down")
    run(["remote", "cleanup", down], env)
    assert objects(s3, "faults/down") == {}
    assert s3.in_progress_uploads(BUCKET) == []


def test_an_http_output_is_refused_and_a_bucket_uri_needs_an_object_name(env):
    r = run(["tet", "synth", "http://127.0.0.1:9/x.tet", "--dataset", "a:f32:8x8:4x4"], env, check=False)
    assert r.returncode == 1 and "plain HTTP(S) has no write requests" in r.stderr
    r = run(["tet", "synth", f"s3://{BUCKET}", "--dataset", "a:f32:8x8:4x4"], env, check=False)
    assert r.returncode == 1 and "names a bucket, not an object" in r.stderr


def test_gs_outputs_go_through_the_xml_api(s3, env, tmp_path):
    gs_env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    gs_env.update(STORAGE_EMULATOR_HOST=s3.url, GS_ACCESS_KEY_ID=env["AWS_ACCESS_KEY_ID"],
                  GS_SECRET_ACCESS_KEY=env["AWS_SECRET_ACCESS_KEY"])
    local = tmp_path / "g.tet"
    run(["tet", "synth", local, "--dataset", "a:f32:64x64:16x16"], env)
    run(["tet", "synth", f"gs://{BUCKET}/gcs/g.tet", "--dataset", "a:f32:64x64:16x16"], gs_env)
    assert objects(s3, "gcs") == {"g.tet": local.read_bytes()}


def test_the_python_writers_take_bucket_outputs(s3, env, inputs, tmp_path, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from tessera import cells, ragged, tet

    rng = np.random.default_rng(11)
    arrays = {"t": rng.normal(size=(600, 3000)).astype(np.float32), "ids": np.arange(5000, dtype=np.uint32)}
    url = f"s3://{BUCKET}/py/arrays.tet"
    size = tet.write(url, arrays, chunks={"t": (100, 3000), "ids": (1000,)}, codec="zstd")
    assert any("partNumber=" in r[2] for r in puts(s3))  # above 5 MiB: a multipart upload
    remote = tet.open(url)
    assert remote.size == size
    for name, a in arrays.items():
        np.testing.assert_array_equal(remote[name][...], a)
    summary = tet.synth(f"s3://{BUCKET}/py/synth.tet", ["a:f32:64x64:16x16"])
    local = tmp_path / "synth.tet"
    tet.synth(local, ["a:f32:64x64:16x16"])
    assert summary["chunks"] == 16
    assert objects(s3, "py")["synth.tet"] == local.read_bytes()

    ds = cells.convert(inputs["h5ad"], f"s3://{BUCKET}/py/cells", tile_size=100)
    import anndata

    source = anndata.read_h5ad(inputs["h5ad"])
    np.testing.assert_array_equal(ds.get_batch(np.arange(600)).toarray(), source.X.toarray()[:, ds.gene_order])

    n = 2000
    report = ragged.build(f"s3://{BUCKET}/py/hive", lat=rng.uniform(0, 1, n), lon=rng.uniform(30, 31, n),
                          value=rng.normal(size=n), cell_order=12, shard_order=5)
    assert report["leaves"] and ragged.verify(f"s3://{BUCKET}/py/hive")["ok"]
