"""A query, a Python read, a `tet cat` or a `tet export` of a remote `.tet` file fetches the chunks
ahead of their use: neighbouring chunks merge into few ranged GETs, fetched in parallel, instead of one GET per
chunk at the reader's pace (docs/remote.md). Counted by `fault_proxy.FaultProxy` in front of an `Origin` on 127.0.0.1; the
values are those of the same file read locally."""
import json

import numpy as np
import pytest

from conftest import run_cli
from fault_proxy import FaultProxy, Origin, bypass_proxies
from tessera import tet

ROWS, COLS, CHUNK_ROWS = 2048, 2048, 128  # 16 MiB of f32 in 16 chunks of 1 MiB


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote-tet")
    for codec in ("raw", "zstd"):
        tet.synth(root / f"{codec}.tet", [f"a:f32:{ROWS}x{COLS}:{CHUNK_ROWS}x{COLS}:{codec}"], seed=5)
    origin = Origin(root)
    proxy = FaultProxy(origin.url)
    yield root, proxy
    proxy.close()
    origin.close()


@pytest.fixture
def proxy(served, monkeypatch):
    bypass_proxies(monkeypatch)
    served[1].clear()
    return served[1]


def query(target, document):
    out = run_cli("tet", "query", json.dumps(document), "-t", target, "-x", "--format", "json").stdout
    return json.loads(out)["execution"]


@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_a_whole_file_fold_is_a_few_coalesced_gets_not_one_per_chunk(served, proxy, codec):
    root, _ = served
    document = {"dataset": "a", "mean": [0]}
    want = query(root / f"{codec}.tet", document)
    got = query(f"{proxy.url}/{codec}.tet", document)
    assert got["operation_reduced_mean"] == want["operation_reduced_mean"]
    gets = [r for r in proxy.requests if r.method == "GET"]
    chunks = ROWS // CHUNK_ROWS
    # The open's head and tail, then the 16 chunks (one window) in requests of at most 8 MiB.
    assert len(gets) <= 2 + 3, [r.range for r in gets]
    assert len(gets) < chunks


def test_a_selection_fetches_only_its_chunks(served, proxy):
    root, _ = served
    document = {"dataset": "a", "sum": [], "selection": [{"start": 300, "stop": 700}, {"start": 5, "stop": 900}]}
    want = query(root / "raw.tet", document)
    got = query(f"{proxy.url}/raw.tet", document)
    assert got["operation_sum"] == want["operation_sum"]
    fetched = 0
    for r in proxy.requests:
        if r.method == "GET" and r.range:
            first, last = (int(v) for v in r.range.split("=")[1].split("-"))
            fetched += last - first + 1
    touched = (700 - 1) // CHUNK_ROWS - 300 // CHUNK_ROWS + 1  # chunks 2..5
    assert fetched <= touched * CHUNK_ROWS * COLS * 4 + 2 * 65536 + 4096  # those chunks, the open's ends


@pytest.mark.parametrize("codec", ["raw", "zstd"])
def test_reads_of_many_chunks_are_fetched_ahead_too(served, proxy, codec):
    """`read_box` (Python slicing, xarray, `tet cat`) uses the same read-ahead as a query."""
    root, _ = served
    local = tet.open(root / f"{codec}.tet")["a"]
    remote = tet.open(f"{proxy.url}/{codec}.tet")["a"]
    proxy.clear()
    np.testing.assert_array_equal(remote[100:1900:3, ::7], local[100:1900:3, ::7])
    gets = [r for r in proxy.requests if r.method == "GET"]
    assert len(gets) <= 3, [r.range for r in gets]  # 15 chunks in requests of at most 8 MiB
    proxy.clear()
    out = root / f"{codec}.npy"
    run_cli("tet", "cat", f"{proxy.url}/{codec}.tet", "a", "-o", out)
    np.testing.assert_array_equal(np.load(out), local[...])
    assert len([r for r in proxy.requests if r.method == "GET"]) <= 2 + 3


def test_an_export_of_the_remote_file_reads_ahead_and_equals_the_local_export(served, proxy, tmp_path):
    root, _ = served
    run_cli("tet", "export", root / "zstd.tet", tmp_path / "local.zarr")
    run_cli("tet", "export", f"{proxy.url}/zstd.tet", tmp_path / "remote.zarr")
    local = sorted(p.relative_to(tmp_path / "local.zarr") for p in (tmp_path / "local.zarr").rglob("*") if p.is_file())
    assert local == sorted(p.relative_to(tmp_path / "remote.zarr")
                           for p in (tmp_path / "remote.zarr").rglob("*") if p.is_file())
    for rel in local:
        assert (tmp_path / "remote.zarr" / rel).read_bytes() == (tmp_path / "local.zarr" / rel).read_bytes(), rel
    assert len([r for r in proxy.requests if r.method == "GET"]) <= 2 + 3


def test_a_deep_verify_of_the_remote_file_reads_ahead_and_finds_what_a_local_one_finds(served, proxy):
    """`tet verify --deep` decode-checks every chunk: over the network in a few coalesced GETs, with
    the local file's findings; a damaged chunk in the middle of the file is reported the same way."""
    root, _ = served
    damaged = root / "damaged.tet"
    if not damaged.exists():
        data = bytearray((root / "zstd.tet").read_bytes())
        data[len(data) // 2] ^= 0xFF  # inside one of the 16 compressed chunks
        damaged.write_bytes(bytes(data))
    for name in ("zstd.tet", "raw.tet", "damaged.tet"):
        want = run_cli("tet", "verify", "--deep", "--json", root / name, check=False)
        proxy.clear()
        got = run_cli("tet", "verify", "--deep", "--json", f"{proxy.url}/{name}", check=False)
        assert got.returncode == want.returncode, (name, got.stderr)
        assert json.loads(got.stdout)["findings"] == json.loads(want.stdout)["findings"], name
        gets = [r for r in proxy.requests if r.method == "GET"]
        assert len(gets) <= 2 + 3, (name, [r.range for r in gets])  # the open's ends, 16 chunks in 8 MiB requests
    findings = json.loads(want.stdout)["findings"]
    assert want.returncode == 1 and any(not f["ok"] and f["check"] == "chunk_decode" for f in findings), findings


def test_parallel_consumers_of_many_requests_fetch_each_chunk_once(tmp_path, monkeypatch):
    """A column of chunks 1 MiB apart is 24 requests that do not merge, more than the read-ahead
    keeps at once; the query's two threads take them in order, so none is forgotten before it is
    read and fetched again on its own."""
    bypass_proxies(monkeypatch)
    tet.synth(tmp_path / "wide.tet", ["a:f32:1536x4160:64x64"], seed=9)
    origin = Origin(tmp_path)
    proxy = FaultProxy(origin.url)
    try:
        document = {"dataset": "a", "sum": [], "selection": [{"start": 0, "stop": 1536}, {"start": 0, "stop": 64}]}
        want = query(tmp_path / "wide.tet", document)
        proxy.clear()
        assert query(f"{proxy.url}/wide.tet", document)["operation_sum"] == want["operation_sum"]
        ranges = sorted(tuple(int(v) for v in r.range.split("=")[1].split("-"))
                        for r in proxy.requests if r.method == "GET" and r.range and not r.range.startswith("bytes=-"))
        chunk_gets = [(a, b) for a, b in ranges if b - a + 1 == 64 * 64 * 4]
        assert len(chunk_gets) == 1536 // 64, ranges
        assert len(set(chunk_gets)) == len(chunk_gets), "a chunk was fetched twice"
    finally:
        proxy.close()
        origin.close()
