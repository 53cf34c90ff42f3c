"""Remote reads through a misbehaving server: `fault_proxy.FaultProxy` in front of a Python origin
serving the conformance data on 127.0.0.1 injects 503/429/5xx bursts, connection resets,
truncated bodies, stalls and latency.

- Faults fewer than the tries (TESSERA_HTTP_RETRIES) are survived: every `.tet` dataset, every
  deltacells row and every ragged cell read through the faults equals the local read, and the
  proxy confirms that every planned fault was injected.
- More faults than tries end in one IoError naming the object's URL, the cause and
  "attempt N of N, giving up"; 403 and 404 end at the first answer (the proxy sees one request).
  A failed read of a `.tet` chunk stays an IoError (a network failure is not a damaged file).
- An object replaced between two reads of an open `.tet` file is refused ("object changed while
  reading"), whether the server honours If-Match or ignores it.
- A `.tet` file under about 1 MiB is read whole when it is opened (one ranged GET), so the faults
  meant for a chunk read after the open use `BIG`, a generated file of 4 MiB whose chunks lie
  outside what the open prefetches.
- A stalled server is cut by TESSERA_HTTP_LOW_SPEED_TIME; those cases run in a child process with
  a generous `timeout=`, so a hang fails the test instead of hanging the suite.

Backoff starts at 100 ms and doubles: bursts stay at 2-3 faults to keep the file fast.
"""
import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tessera
from conftest import REPO, run_cli
from fault_proxy import FaultProxy, Origin, bypass_proxies, environ_without_proxies
from tessera import ragged, tet

TET_FILES = ["sample.tet", "large.tet"]
CELLS = "deltacells/dataset_small"
LEAF = "zagg/tests/data/spec/minimal/1/1/2/1/3/11213.zarr"
FIELD = "6/h_tdigest"
CHILD_TIMEOUT_S = 60  # a child that has not finished by then is hung
BIG = "generated/big.tet"  # 1024 x 1024 f32 in 16 raw chunks of 256 KiB


@pytest.fixture(scope="module")
def served(conformance, tmp_path_factory):
    """The conformance data the tests read, plus BIG (the origin serves only files below its root)."""
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(conformance / "tetration", root / "tetration")
    shutil.copytree(conformance / CELLS, root / CELLS)
    shutil.copytree(conformance / LEAF, root / LEAF)
    (root / BIG).parent.mkdir()
    run_cli("tet", "synth", str(root / BIG), "--dataset", "a:f32:1024x1024:256x256", "--seed", "3")
    return root


@pytest.fixture(scope="module")
def origin(served):
    server = Origin(served)
    yield server
    server.close()


@pytest.fixture(scope="module")
def module_proxy(origin):
    server = FaultProxy(origin.url)
    yield server
    server.close()


@pytest.fixture
def proxy(module_proxy, monkeypatch):
    """The proxy with an empty plan, and enough tries to outlast every burst below."""
    bypass_proxies(monkeypatch)
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "6")
    module_proxy.clear()
    yield module_proxy
    module_proxy.clear()


# ---- what each format reads ---------------------------------------------------------------------

def read_tet(root):
    out = {}
    for name in TET_FILES:
        f = tet.open(f"{root}/tetration/{name}")
        out[name] = {key: f[key][...] for key in f.keys()}
    return out


def read_cells(root):
    with tessera.cells.open(f"{root}/{CELLS}") as c:
        return c.get_batch(list(range(c.n_cells))).toarray()


def read_ragged(root):
    leaf = ragged.open(f"{root}/{LEAF}", FIELD)
    return [leaf.read_cell(i) for i in range(leaf.size)]


READERS = {"tet": read_tet, "cells": read_cells, "ragged": read_ragged}


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    else:
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def local(conformance):
    """Each format's reads from the local files (root without a trailing slash)."""
    root = str(conformance.resolve())
    return {name: read(root) for name, read in READERS.items()}


# ---- retryable faults are survived --------------------------------------------------------------

# Whether a format's reads after the open are ranged GETs (tet chunks, ragged shards) or whole
# objects (cells tiles are read whole).
READS_RANGES = {"tet": True, "cells": False, "ragged": True}


def plan_status(status):
    def plan(p, ranged):
        p.fail(status, 2)                               # at open: the first requests (HEAD or whole GET)
        p.fail(status, 2, ranged_only=ranged, after=1)  # mid-read: a later GET
    return plan


def plan_reset(p, ranged):
    p.reset(2)
    p.reset(2, ranged_only=ranged, after=1)


def plan_truncate(p, ranged):
    p.truncate(2)  # the first GET: a whole object (cells, ragged metadata) or a range (tet)
    p.truncate(2, ranged_only=ranged, after=1)


FAULTS = {"503": plan_status(503), "429": plan_status(429), "500": plan_status(500), "502": plan_status(502),
          "504": plan_status(504), "reset": plan_reset, "truncate": plan_truncate}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("fmt", list(READERS))
def test_retryable_faults_are_survived_with_identical_results(proxy, local, fmt, fault):
    FAULTS[fault](proxy, READS_RANGES[fmt])
    got = READERS[fmt](proxy.url)
    assert proxy.pending() == 0, "not every planned fault was injected"
    assert proxy.count() > proxy.count(action="pass") >= 1
    assert_same(got, local[fmt])


def test_a_slow_server_is_not_a_stalled_one(proxy, conformance, monkeypatch):
    # sample.tet is read whole in one request of 368 bytes: at 60 bytes/s it lasts about 6 s,
    # longer than the 4 s low-speed window, yet moves faster than 1 byte/s, so it must be neither
    # cut nor retried. The window is wide: on a loaded machine the proxy's thread can be kept off
    # the CPU for a second or more, and only a 4 s silence would cut the transfer (a 1 s window
    # did, under load).
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "1")
    monkeypatch.setenv("TESSERA_HTTP_LOW_SPEED_TIME", "4")
    proxy.latency(0.02)
    proxy.bandwidth(60)
    f = tet.open(f"{proxy.url}/tetration/sample.tet")
    local = tet.open(conformance / "tetration" / "sample.tet")
    for key in local.keys():
        np.testing.assert_array_equal(f[key][...], local[key][...])
    assert proxy.count(action="pass") == proxy.count()


# ---- faults outlasting the tries: one clear error -----------------------------------------------

STATUS_TEXT = {503: "HTTP 503", 429: "HTTP 429 Too Many Requests", 500: "HTTP 500", 502: "HTTP 502", 504: "HTTP 504"}


@pytest.mark.parametrize("status", [503, 429, 500])
def test_a_burst_longer_than_the_tries_at_open_is_one_error(proxy, monkeypatch, status):
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "3")
    proxy.fail(status, 3)
    url = f"{proxy.url}/tetration/sample.tet"
    with pytest.raises(tessera.IoError) as err:
        tet.open(url)
    assert str(err.value) == f"{url}: {STATUS_TEXT[status]} (attempt 3 of 3, giving up)"
    assert proxy.count() == 3 and proxy.pending() == 0


def read_error(read):
    """The message of the IoError `read()` raises."""
    with pytest.raises(tessera.IoError) as err:
        read()
    return str(err.value)


def test_a_burst_longer_than_the_tries_mid_read_is_one_error(proxy, monkeypatch):
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "3")
    url = f"{proxy.url}/{BIG}"
    f = tet.open(url)
    proxy.fail(502, 3, ranged_only=True)
    message = read_error(lambda: f["a"].read(threads=1))  # one request at a time takes the burst
    assert f"{url}: HTTP 502 (attempt 3 of 3, giving up)" in message, message
    assert message.count("giving up") == 1
    assert proxy.count(action="status 502") == 3 and proxy.pending() == 0


def test_a_burst_longer_than_the_tries_names_the_store_object(proxy, monkeypatch):
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "3")
    proxy.fail(504, 3)
    with pytest.raises(tessera.IoError) as err:
        tessera.cells.open(f"{proxy.url}/{CELLS}")
    assert str(err.value) == f"{proxy.url}/{CELLS}/manifest.json: HTTP 504 (attempt 3 of 3, giving up)"
    assert proxy.count() == 3


def test_resets_outlasting_the_tries_are_one_error(proxy, monkeypatch):
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "3")
    # libcurl itself retries a request once when a reused connection turns out dead, so a try may
    # see two resets: plan more than enough.
    proxy.reset(10)
    url = f"{proxy.url}/{LEAF}"
    with pytest.raises(tessera.IoError) as err:
        ragged.open(url, FIELD).read_cell(0)
    message = str(err.value)
    assert message.startswith(f"{url}/"), message
    assert message.endswith("(attempt 3 of 3, giving up)") and message.count("giving up") == 1


def test_truncated_bodies_outlasting_the_tries_are_one_error(proxy, monkeypatch):
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "2")
    url = f"{proxy.url}/{BIG}"
    f = tet.open(url)
    proxy.truncate(2, ranged_only=True)
    message = read_error(lambda: f["a"].read(threads=1))
    assert f"{url}: " in message, message
    assert message.endswith("(attempt 2 of 2, giving up)") and message.count("giving up") == 1
    assert proxy.count(action="truncate") == 2


# ---- answers that are not retried ---------------------------------------------------------------

@pytest.mark.parametrize("status,text", [(403, "access denied (HTTP 403 Forbidden, attempt 1 of 6)"),
                                         (404, "not found (HTTP 404 Not Found, attempt 1 of 6)")])
def test_403_and_404_are_not_retried(proxy, status, text):
    proxy.fail(status, 5)
    url = f"{proxy.url}/tetration/sample.tet"
    with pytest.raises(tessera.IoError) as err:
        tet.open(url)
    assert str(err.value).startswith(f"{url}: {text}"), str(err.value)
    assert proxy.count() == 1


@pytest.mark.parametrize("status,text", [(403, "access denied (HTTP 403 Forbidden, attempt 1 of 6)"),
                                         (404, "not found (HTTP 404 Not Found, attempt 1 of 6)")])
def test_403_and_404_mid_read_are_not_retried(proxy, status, text):
    url = f"{proxy.url}/{BIG}"
    f = tet.open(url)
    before = proxy.count()
    proxy.fail(status, 5, ranged_only=True)
    message = read_error(lambda: f["a"].read(threads=1))
    assert f"{url}: {text}" in message, message
    assert proxy.count(action=f"status {status}") == 1
    assert proxy.count() - before == proxy.count(action="pass") - before + 1  # the refused request was not sent again


# ---- an object replaced mid-read ----------------------------------------------------------------

@pytest.mark.parametrize("honours_if_match", [True, False])
def test_an_object_replaced_mid_read_is_refused(served, tmp_path, monkeypatch, honours_if_match):
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "6")
    path = tmp_path / BIG
    path.parent.mkdir()
    shutil.copyfile(served / BIG, path)
    server = Origin(tmp_path)
    server.honour_preconditions = honours_if_match
    proxy = FaultProxy(server.url)
    try:
        url = f"{proxy.url}/{BIG}"
        f = tet.open(url)
        local = tet.open(served / BIG)
        np.testing.assert_array_equal(f["a"][0:2], local["a"][0:2])
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF  # same size: only the ETag tells the versions apart
        path.write_bytes(bytes(data))
        message = read_error(lambda: f["a"][300:304])
        assert f"{url}: object changed while reading" in message, message
        assert proxy.count(action="pass") == proxy.count()
    finally:
        proxy.close()
        server.close()


# ---- stalls are bounded by the low-speed timer (in a child process) -------------------------------

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import tessera
    url, local = sys.argv[1], sys.argv[2]
    try:
        f = tessera.tet.open(url)
        ok = all(np.array_equal(f[k][...], tessera.tet.open(local)[k][...]) for k in f.keys())
        print("identical" if ok else "different")
    except tessera.Error as e:
        print(f"{type(e).__name__}: {e}")
""")


def run_child(proxy, served, name, retries):
    env = environ_without_proxies()
    # A 3 s low-speed window: a stall is cut after 3 s, and an ordinary transfer is cut only by a
    # 3 s silence, which a loaded machine does not impose on a loopback proxy.
    env.update(TESSERA_HTTP_RETRIES=str(retries), TESSERA_HTTP_LOW_SPEED_TIME="3", TESSERA_HTTP_CONNECT_TIMEOUT="3",
               PYTHONPATH=":".join(sys.path))
    url = f"{proxy.url}/{name}"
    proc = subprocess.run([sys.executable, "-c", CHILD, url, str(served / name)],
                          capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return url, proc.stdout.strip()


@pytest.mark.parametrize("where", ["open", "mid-read"])
def test_a_stalled_server_ends_in_an_error(proxy, served, where):
    if where == "open":
        proxy.stall(1)
    else:
        proxy.stall(1, ranged_only=True, after=2)  # after the head and the tail of the open
    url, out = run_child(proxy, served, BIG, retries=1)
    if where == "open":
        assert out.startswith(f"IoError: {url}: "), out
    assert f"{url}: " in out and "too slow" in out, out
    assert out.endswith("(attempt 1 of 1, giving up)") and out.count("giving up") == 1, out
    assert proxy.count(action="stall") == 1


def test_a_stall_is_cut_and_retried(proxy, served):
    proxy.stall(1, ranged_only=True, after=2)
    _, out = run_child(proxy, served, BIG, retries=3)  # one try for the stall, two to spare
    assert out == "identical"
    assert proxy.count(action="stall") == 1 and proxy.pending() == 0


# ---- the CLI ------------------------------------------------------------------------------------

def test_cli_tet_info_json_through_a_503_burst(proxy, conformance):
    env = environ_without_proxies()
    env["TESSERA_HTTP_RETRIES"] = "6"
    local = run_cli("tet", "info", conformance / "tetration" / "large.tet", "--json", env=env, timeout=CHILD_TIMEOUT_S)
    proxy.fail(503, 2)                     # the HEAD
    proxy.fail(503, 2, ranged_only=True)  # the one GET that reads the 23 KB file whole
    remote = run_cli("tet", "info", f"{proxy.url}/tetration/large.tet", "--json", env=env, timeout=CHILD_TIMEOUT_S)
    assert proxy.pending() == 0 and proxy.count(action="status 503") == 4
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert b.pop("path") == f"{proxy.url}/tetration/large.tet"
    a.pop("path")
    assert a == b


# ---- a failed chunk read is an IoError, not a damaged chunk -----------------------------------

@pytest.mark.parametrize("fault", ["503 burst", "403", "replaced"])
def test_a_transport_error_mid_read_of_a_tet_chunk_is_an_io_error(proxy, origin, monkeypatch, tmp_path, fault):
    monkeypatch.setenv("TESSERA_HTTP_RETRIES", "2")
    url = f"{proxy.url}/{BIG}"
    if fault == "replaced":
        (tmp_path / BIG).parent.mkdir()
        shutil.copyfile(origin.root / BIG, tmp_path / BIG)
        server = Origin(tmp_path)
        url = f"{server.url}/{BIG}"
    try:
        f = tet.open(url)
        if fault == "503 burst":
            proxy.fail(503, 2, ranged_only=True)  # RETRIES=2: the first chunk request gives up
        elif fault == "403":
            proxy.fail(403, 1, ranged_only=True)
        else:
            path = tmp_path / BIG
            data = bytearray(path.read_bytes())
            data[-1] ^= 0xFF
            path.write_bytes(bytes(data))
        with pytest.raises(tessera.IoError):
            f["a"].read(threads=1)
    finally:
        if fault == "replaced":
            server.close()
