"""Reading s3:// and gs:// buckets: the conformance data is uploaded by boto3 (an independent S3
client) to an S3 emulator on 127.0.0.1 that checks every request's SigV4 signature
(tests/python/bucket_server.py), then read by the `tessera` CLI and the Python module. Every
read gives what the local read gives; listing (which plain HTTP cannot do) works, across pages;
credentials, anonymous access and refusals behave as docs/remote.md says.
"""
import json
import os
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

import tessera
from tessera import ragged, tet

from bucket_server import SECRET_KEY, BucketServer, boto3_client, s3_env, upload_tree

BUCKET = "tessera-data"
PUBLIC = "tessera-public"
HIVE = "zagg/tests/data/spec/minimal"
LEAF = HIVE + "/1/1/2/1/3/11213.zarr"


@pytest.fixture(scope="module")
def s3(conformance, tmp_path_factory):
    try:
        server = BucketServer(tmp_path_factory.mktemp("s3"), page_size=3, public_buckets=[PUBLIC])
    except RuntimeError as e:
        pytest.fail(str(e))
    client = boto3_client(server.url)
    for bucket in (BUCKET, PUBLIC):
        client.create_bucket(Bucket=bucket)
    for rel in ("tetration", "deltacells/dataset_small", "deltacells/tiles", HIVE):
        upload_tree(client, BUCKET, conformance / rel, rel)
    upload_tree(client, PUBLIC, conformance / "tetration", "tetration")
    yield server
    server.close()


def run(args, env, check=True):
    proc = subprocess.run([str(tessera.cli_path()), *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    if check:
        assert proc.returncode == 0, f"tessera {' '.join(map(str, args))}: {proc.stderr}"
    return proc


def same_as_local(s3, conformance, before, rel, after=(), env=None):
    """Runs `tessera BEFORE INPUT AFTER` on the local path and on s3://; the outputs must agree
    once the input's own name is masked."""
    env = env or s3_env(s3.url)
    local_path = str(conformance / rel)
    url = f"s3://{BUCKET}/{rel}"
    local = run([*before, local_path, *after], env, check=False)
    remote = run([*before, url, *after], env, check=False)
    assert remote.returncode == local.returncode, remote.stderr
    absolute = os.path.abspath(local_path)

    def masked(text, name):
        text = text.replace("local:" + absolute, "INPUT").replace(absolute, "INPUT").replace(name, "INPUT")
        return re.sub(r'"([a-z_]*(seconds|second|elapsed)[a-z_]*)": ?[0-9.e+-]+', r'"\1": T', text)

    assert masked(remote.stdout, url) == masked(local.stdout, local_path)
    assert local.returncode == 0 or remote.stderr
    return remote


@pytest.mark.parametrize("name", ["sample.tet", "large.tet", "multichunk_f16.tet"])
def test_tet_commands_read_a_bucket_like_a_file(s3, conformance, name, tmp_path):
    rel = f"tetration/{name}"
    same_as_local(s3, conformance, ["tet", "info", "--json"], rel)
    same_as_local(s3, conformance, ["tet", "verify", "--json", "--deep"], rel)
    same_as_local(s3, conformance, ["info"], rel)


@pytest.mark.parametrize("name", ["sample.tet", "large.tet", "multichunk_f16.tet"])
def test_tet_open_reads_a_bucket_through_the_python_module(s3, conformance, monkeypatch, name):
    for k, v in s3_env(s3.url).items():
        monkeypatch.setenv(k, v)
    local = tet.open(conformance / "tetration" / name)
    remote = tet.open(f"s3://{BUCKET}/tetration/{name}")
    assert remote.keys() == local.keys()
    for key in local.keys():
        np.testing.assert_array_equal(remote[key][...], local[key][...])


def test_cells_commands_read_a_bucket_like_a_directory(s3, conformance):
    rel = "deltacells/dataset_small"
    for before, after in ((["cells", "info"], []), (["cells", "info", "--json"], []), (["cells", "verify", "--json"], []),
                          (["cells", "get"], ["9,0,4,4,3"]), (["cells", "epoch"], ["--batch-size", "3", "--seed", "5", "--json"])):
        same_as_local(s3, conformance, before, rel, after)
    same_as_local(s3, conformance, ["cells", "info"], "deltacells/tiles/basic_5x10_2chunks.dct")


def test_cells_open_reads_rows_and_obs(s3, monkeypatch, tmp_path):
    import anndata
    import scipy.sparse

    rng = np.random.default_rng(7)
    counts = scipy.sparse.random(600, 30, density=0.2, format="csr", random_state=7, dtype=np.float32)
    counts.data = np.ceil(counts.data * 20)
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["T", "B", "NK"], 600)),
                        "age": rng.integers(20, 80, 600)}, index=[f"c{i}" for i in range(600)])
    (tmp_path / "runs").mkdir()
    anndata.AnnData(X=counts, obs=obs).write_h5ad(tmp_path / "runs" / "r1.h5ad")
    run(["cells", "convert", "--h5ad-glob", str(tmp_path / "runs" / "*.h5ad"), "--output", str(tmp_path / "ds"),
         "--tile-size", "200", "--quiet"], s3_env(s3.url))
    upload_tree(boto3_client(s3.url), BUCKET, tmp_path / "ds", "generated/with_obs")
    for k, v in s3_env(s3.url).items():
        monkeypatch.setenv(k, v)
    local_cache, remote_cache = tmp_path / "local-cache", tmp_path / "remote-cache"
    with tessera.cells.open(tmp_path / "ds", cache_dir=local_cache) as a, \
            tessera.cells.open(f"s3://{BUCKET}/generated/with_obs", cache_dir=remote_cache) as b:
        assert (b.n_cells, b.n_genes) == (a.n_cells, a.n_genes)
        rows = list(range(a.n_cells))[::-1]
        np.testing.assert_array_equal(b.get_batch(rows).toarray(), a.get_batch(rows).toarray())
        # obs columns localize from the bucket into a cache keyed by the obs fingerprint (spec
        # §6.9), the same directory name a local copy of the dataset uses.
        columns = ["cell_type", "age"]
        a.obs.localize(columns)
        b.obs.localize(columns)
        pd.testing.assert_frame_equal(b.obs.take(rows, columns), a.obs.take(rows, columns))
        assert sorted(p.name for p in remote_cache.iterdir()) == sorted(p.name for p in local_cache.iterdir())


def test_ragged_reads_and_the_listing_commands_work_on_a_bucket(s3, conformance):
    for field in ("6/h_tdigest", "6/count"):
        for index in ("0", "3"):
            same_as_local(s3, conformance, ["ragged", "cell"], LEAF, [field, index])
    same_as_local(s3, conformance, ["ragged", "cell"], HIVE, ["--shard", "11213", "6/h_tdigest", "1"])
    same_as_local(s3, conformance, ["ragged", "info"], HIVE)
    # These walk the Zarr hierarchy or list chunk objects: impossible over plain HTTP, done with
    # ListObjectsV2 here (the emulator pages listings by 3 keys, so continuation tokens are used).
    s3.reset_counts()
    same_as_local(s3, conformance, ["ragged", "info"], LEAF)
    same_as_local(s3, conformance, ["ragged", "verify"], LEAF)
    same_as_local(s3, conformance, ["ragged", "hashes"], LEAF)
    same_as_local(s3, conformance, ["ragged", "info", "--list-leaves"], HIVE)
    assert any("continuation-token=" in q for _, _, q, _ in s3.requests), "no listing needed a second page"


def test_ragged_open_lists_fields_in_a_bucket(s3, conformance, monkeypatch):
    for k, v in s3_env(s3.url).items():
        monkeypatch.setenv(k, v)
    a = ragged.open(conformance / LEAF, "6/h_tdigest")
    b = ragged.open(f"s3://{BUCKET}/{LEAF}", "6/h_tdigest")
    assert b.size == a.size
    for i in range(a.size):
        np.testing.assert_array_equal(b.read_cell(i), a.read_cell(i))
    assert ragged.open(f"s3://{BUCKET}/{LEAF}").fields() == ragged.open(conformance / LEAF).fields()


def test_read_cell_is_two_gets_on_a_bucket(s3, conformance, monkeypatch):
    for k, v in s3_env(s3.url).items():
        monkeypatch.setenv(k, v)
    leaf = ragged.open(f"s3://{BUCKET}/{LEAF}", "6/h_tdigest")
    leaf.read_cell(0)  # metadata and shard index cached by the open handle
    s3.reset_counts()
    leaf.read_cell(1)
    gets = [r for r in s3.requests if r[0] == "GET"]
    assert len(gets) <= 2, s3.requests


def test_public_bucket_reads_unsigned_and_private_bucket_says_why_it_failed(s3, conformance):
    anonymous = s3_env(s3.url, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None)
    ok = run(["tet", "info", f"s3://{PUBLIC}/tetration/sample.tet"], anonymous)
    assert "sample.tet" in ok.stdout
    denied = run(["tet", "info", f"s3://{BUCKET}/tetration/sample.tet"], anonymous, check=False)
    assert denied.returncode == 1
    assert "access denied (HTTP 403 Forbidden" in denied.stderr
    assert "no AWS credentials were found" in denied.stderr
    forced = run(["tet", "info", f"s3://{BUCKET}/tetration/sample.tet"], s3_env(s3.url, AWS_NO_SIGN_REQUEST="YES"), check=False)
    assert "AWS_NO_SIGN_REQUEST" in forced.stderr


def test_a_wrong_secret_is_refused_by_the_signature_check_and_never_shown(s3):
    wrong = "not-the-secret-key-0123456789"
    env = s3_env(s3.url, AWS_SECRET_ACCESS_KEY=wrong)
    s3.reset_counts()
    r = run(["tet", "info", f"s3://{BUCKET}/tetration/sample.tet"], env, check=False)
    assert r.returncode == 1
    assert "access denied (HTTP 403 Forbidden, attempt 1 of 2)" in r.stderr
    assert ("SignatureDoesNotMatch", f"/{BUCKET}/tetration/sample.tet") in s3.refused
    assert wrong not in r.stderr and SECRET_KEY not in r.stderr


def test_profiles_and_session_tokens(s3, tmp_path):
    (tmp_path / "credentials").write_text(f"[science]\naws_access_key_id = {s3_env(s3.url)['AWS_ACCESS_KEY_ID']}\n"
                                          f"aws_secret_access_key = {SECRET_KEY}\naws_session_token = tok\n")
    (tmp_path / "config").write_text(f"[profile science]\nregion = eu-west-1\nendpoint_url = {s3.url}\n")
    env = s3_env(s3.url, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None, AWS_REGION=None, AWS_ENDPOINT_URL=None,
                 AWS_PROFILE="science", AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"),
                 AWS_CONFIG_FILE=str(tmp_path / "config"))
    local = run(["tet", "info", "--json", os.path.join(os.path.dirname(__file__), "..", "data", "conformance", "tetration", "sample.tet")], env)
    r = run(["tet", "info", "--json", f"s3://{BUCKET}/tetration/sample.tet"], env)
    assert {k: v for k, v in json.loads(r.stdout).items() if k != "path"} == \
        {k: v for k, v in json.loads(local.stdout).items() if k != "path"}
    missing = run(["tet", "info", f"s3://{BUCKET}/tetration/sample.tet"], {**env, "AWS_PROFILE": "nobody"}, check=False)
    assert missing.returncode != 0 and "AWS profile 'nobody'" in missing.stderr


def test_missing_objects_and_buckets_are_named(s3):
    env = s3_env(s3.url)
    r = run(["tet", "info", f"s3://{BUCKET}/tetration/no_such.tet"], env, check=False)
    assert r.returncode == 1 and "no_such.tet: not found (HTTP 404" in r.stderr
    r = run(["cells", "info", f"s3://{BUCKET}/deltacells/nothing_here"], env, check=False)
    assert r.returncode == 1 and "manifest.json" in r.stderr
    r = run(["ragged", "verify", "s3://no-such-bucket/x.zarr"], env, check=False)
    assert r.returncode == 1 and "no root zarr.json" in r.stdout + r.stderr
    r = run(["tet", "info", "s3://Bad_Bucket/x.tet"], env, check=False)
    assert r.returncode != 0 and "is not a bucket name" in r.stderr


def test_gs_uris_read_through_the_xml_api_with_hmac_keys(s3, conformance):
    env = s3_env(s3.url, AWS_ENDPOINT_URL=None, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None,
                 STORAGE_EMULATOR_HOST=s3.url, GS_ACCESS_KEY_ID=s3_env(s3.url)["AWS_ACCESS_KEY_ID"],
                 GS_SECRET_ACCESS_KEY=SECRET_KEY)
    local = run(["tet", "info", "--json", conformance / "tetration" / "sample.tet"], env)
    remote = run(["tet", "info", "--json", f"gs://{BUCKET}/tetration/sample.tet"], env)
    assert json.loads(remote.stdout)["path"] == f"gs://{BUCKET}/tetration/sample.tet"
    assert {k: v for k, v in json.loads(remote.stdout).items() if k != "path"} == \
        {k: v for k, v in json.loads(local.stdout).items() if k != "path"}
    hashes_local = run(["ragged", "hashes", conformance / LEAF], env)
    hashes_remote = run(["ragged", "hashes", f"gs://{BUCKET}/{LEAF}"], env)
    assert hashes_remote.stdout == hashes_local.stdout


def test_dask_helpers_open_the_bucket_objects_in_their_tasks(s3, conformance, monkeypatch):
    """tet.to_dask, cells.to_dask and ragged.leaves_to_dask take bucket URIs; each task opens the
    object itself (the synchronous scheduler runs them here, in this process's environment)."""
    import dask

    for k, v in s3_env(s3.url).items():
        monkeypatch.setenv(k, v)
    with dask.config.set(scheduler="synchronous"):
        local = tet.open(conformance / "tetration" / "large.tet")
        name = local.keys()[0]
        arr = tet.to_dask(f"s3://{BUCKET}/tetration/large.tet", name)
        np.testing.assert_array_equal(arr.compute(), local[name][...])
        x = tessera.cells.to_dask(f"s3://{BUCKET}/deltacells/dataset_small")
        with tessera.cells.open(conformance / "deltacells" / "dataset_small") as ds:
            np.testing.assert_array_equal(np.asarray(x.sum(axis=0).compute()).ravel(),
                                          np.asarray(ds.get_batch(list(range(ds.n_cells))).sum(axis=0)).ravel())
        s3.reset_counts()
        remote = ragged.leaves_to_dask(f"s3://{BUCKET}/{HIVE}", method="walk").compute()
        assert len(remote) == len(ragged.leaves_to_dask(conformance / HIVE, method="walk").compute()) > 0
