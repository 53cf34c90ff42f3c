"""A sweep of a ragged column in a bucket, stored as one object per inner chunk (`--unsharded`),
fetches several objects ahead of the one it decodes, not one at a time (docs/remote.md): against
the S3 emulator on 127.0.0.1 with 50 ms added to every request, `ragged hashes` has more than two
requests in flight at once, and it computes the local leaf's content hashes; so has
`ragged verify` and `read_tensors`, which gives the local leaf's blocks."""
import json
import os
import subprocess

import numpy as np
import pytest

import tessera
from tessera import ragged

from bucket_server import BucketServer, boto3_client, s3_env, upload_tree
from conftest import run_cli

BUCKET = "sweep-data"


@pytest.fixture(scope="module")
def leaf(tmp_path_factory):
    """The fullest leaf of a hive of 4^8-cell leaves in inner chunks of 256 cells, one object each."""
    root = tmp_path_factory.mktemp("unsharded")
    rng = np.random.default_rng(4)
    n = 20_000
    columns = root / "columns"
    columns.mkdir()
    for name, data in (("lat", rng.uniform(-71.0, -69.0, n)), ("lon", rng.uniform(8.0, 14.0, n)),
                       ("height", rng.normal(1000.0, 40.0, n))):
        np.save(columns / f"{name}.npy", data)
    report = json.loads(run_cli("ragged", "build", "--input", columns, "--out", root / "hive", "--value-col", "height",
                                "--cell-order", "12", "--shard-order", "4", "--chunk-order", "8", "--unsharded",
                                "--threads", "1").stdout)
    fullest = max(report["leaves"], key=lambda leaf: leaf["cells_with_data"])
    return root / "hive" / fullest["leaf"]


def test_a_sweep_of_an_unsharded_column_keeps_several_objects_in_flight(leaf, tmp_path, monkeypatch):
    objects = [p for p in leaf.rglob("*") if p.is_file() and "h_tdigest" in p.parts and "c" in p.parts]
    assert len(objects) >= 20
    try:
        server = BucketServer(tmp_path / "s3", page_size=100)
    except RuntimeError as e:
        pytest.fail(str(e))
    try:
        client = boto3_client(server.url)
        client.create_bucket(Bucket=BUCKET)
        upload_tree(client, BUCKET, leaf, "leaf.zarr")
        want = run_cli("ragged", "hashes", leaf).stdout
        server.latency = 0.05
        server.reset_counts()
        env = s3_env(server.url)
        got = subprocess.run([str(tessera.cli_path()), "ragged", "hashes", f"s3://{BUCKET}/leaf.zarr"],
                             capture_output=True, text=True, env=env, timeout=300)
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout.replace(f"s3://{BUCKET}/leaf.zarr", "LEAF")) == \
            json.loads(want.replace(str(leaf), "LEAF"))
        assert server.max_in_flight >= 3, server.max_in_flight
        server.reset_counts()
        checked = subprocess.run([str(tessera.cli_path()), "ragged", "verify", f"s3://{BUCKET}/leaf.zarr"],
                                 capture_output=True, text=True, env=env, timeout=300)
        assert checked.returncode == 0, checked.stderr
        assert json.loads(checked.stdout)["ok"]
        assert server.max_in_flight >= 3, server.max_in_flight

        # The tensor reader's sweep, in this process.
        for key in [k for k in os.environ if k.startswith(("AWS_", "GS_", "GOOGLE_", "STORAGE_EMULATOR"))]:
            monkeypatch.delenv(key)
        for key, value in s3_env(server.url).items():
            if key.startswith(("AWS_", "TESSERA_")):
                monkeypatch.setenv(key, value)

        def tensors(target):
            field = ragged.open(target, "12/h_tdigest")
            return [(b.tensor.copy(), b.mask.copy(), (b.morton, b.start, b.offset, b.gain))
                    for b in field.read_tensors(fit="degrade_resolution", threads=1)]

        local = tensors(leaf)
        server.reset_counts()
        remote = tensors(f"s3://{BUCKET}/leaf.zarr")
        assert len(remote) == len(local) > 0
        for (t, m, where), (t0, m0, where0) in zip(remote, local):
            np.testing.assert_array_equal(t, t0)
            np.testing.assert_array_equal(m, m0)
            assert where == where0
        assert server.max_in_flight >= 3, server.max_in_flight
    finally:
        server.close()
