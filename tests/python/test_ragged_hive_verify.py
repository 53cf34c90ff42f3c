"""`tessera ragged verify` and `ragged hashes` on a hive root: every leaf the walk finds is checked
on its own, a damaged leaf is reported and the others are still verified, and the exit status says
whether any leaf failed. Truth: the leaves the Python walk lists, the damage the test itself does,
and each intact leaf's own hashes."""
import json
import pathlib

import numpy as np
import pytest

from tessera import ragged

from conftest import run_cli


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    """A hive of at least eight leaves (points over the whole sphere, shard order 1)."""
    rng = np.random.default_rng(11)
    n = 4000
    lat = np.degrees(np.arcsin(rng.uniform(-1.0, 1.0, n)))
    lon = rng.uniform(-180.0, 180.0, n)
    root = tmp_path_factory.mktemp("hive") / "hive"
    ragged.build(root, lat=lat, lon=lon, value=rng.normal(0.0, 1.0, n), cell_order=6, shard_order=1, threads=1)
    leaves = ragged.leaves(root, method="walk")
    assert len(leaves) >= 8
    return root, leaves


def chunk_objects(leaf):
    return sorted(p for p in pathlib.Path(leaf).rglob("*") if p.is_file() and p.parent.name == "c")


@pytest.fixture
def damaged(hive, tmp_path):
    """A copy of the hive with one leaf's shard index bit-flipped and another leaf's root zarr.json cut."""
    import shutil

    source, leaves = hive
    root = tmp_path / "hive"
    shutil.copytree(source, root)
    copied = [str(root / pathlib.Path(p).relative_to(source)) for p in leaves]
    flipped, cut = copied[2], copied[5]
    chunk = chunk_objects(flipped)[0]
    data = bytearray(chunk.read_bytes())
    data[-10] ^= 0xFF  # inside the shard index, which carries a CRC-32C
    chunk.write_bytes(bytes(data))
    meta = pathlib.Path(cut) / "zarr.json"
    meta.write_bytes(meta.read_bytes()[:40])
    return root, copied, flipped, cut


def test_an_intact_hive_verifies_leaf_by_leaf(hive):
    root, leaves = hive
    proc = run_cli("ragged", "verify", root)
    report = json.loads(proc.stdout)
    assert report["kind"] == "hive" and report["ok"] is True and report["failed"] == 0
    assert sorted(leaf["path"] for leaf in report["leaves"]) == sorted(leaves)
    assert all(leaf["checked"]["hashes"] == "ok" and leaf["checked"]["chunks"] > 0 for leaf in report["leaves"])
    text = run_cli("ragged", "verify", root, "--text").stdout
    assert text == f"ok: {root} ({len(leaves)} leaves, 0 failed)\n"
    assert ragged.verify(root)["ok"] is True


def test_a_damaged_leaf_is_reported_and_the_others_verified(damaged):
    root, leaves, flipped, cut = damaged
    proc = run_cli("ragged", "verify", root, check=False)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    by_path = {leaf["path"]: leaf for leaf in report["leaves"]}
    assert sorted(by_path) == sorted(leaves)
    assert {p for p, leaf in by_path.items() if not leaf["ok"]} == {flipped, cut}
    assert report["ok"] is False and report["failed"] == 2
    assert any(f["rule"] == "chunk" for f in by_path[flipped]["failures"])
    assert any(f["rule"] == "metadata" for f in by_path[cut]["failures"])
    for path in set(leaves) - {flipped, cut}:
        assert by_path[path]["checked"]["hashes"] == "ok" and not by_path[path]["failures"]

    text = run_cli("ragged", "verify", root, "--text", check=False)
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert lines[-1] == f"failed: {root} ({len(leaves)} leaves, 2 failed)"
    assert {line.split(": ")[0].split(".zarr/")[0] + ".zarr" for line in lines[:-1]} == {f"FAIL {flipped}", f"FAIL {cut}"}
    assert ragged.verify(root)["failed"] == 2


def test_hashes_of_a_hive_root(hive, damaged):
    root, leaves = hive
    listed = json.loads(run_cli("ragged", "hashes", root).stdout)["leaves"]
    assert sorted(leaf["path"] for leaf in listed) == sorted(leaves)
    for leaf in listed:
        assert leaf["combined"] == ragged.open(leaf["path"]).hashes()["combined"]
    verified = json.loads(run_cli("ragged", "hashes", root, "--verify").stdout)
    assert verified["outcome"] == "ok" and {leaf["outcome"] for leaf in verified["leaves"]} == {"ok"}

    root, leaves, flipped, cut = damaged
    proc = run_cli("ragged", "hashes", root, "--verify", check=False)
    assert proc.returncode == 1
    by_path = {leaf["path"]: leaf for leaf in json.loads(proc.stdout)["leaves"]}
    assert sorted(by_path) == sorted(leaves)
    assert {p for p, leaf in by_path.items() if leaf["outcome"] != "ok"} == {flipped, cut}
    assert by_path[cut]["outcome"] == "error" and "zarr.json" in by_path[cut]["error"]
    refused = run_cli("ragged", "hashes", root, "--verify", "--expected", pathlib.Path(flipped).parent / "stats.json", check=False)
    assert refused.returncode == 2 and "--expected" in refused.stderr
