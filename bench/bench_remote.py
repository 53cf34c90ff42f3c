"""Remote reads through an emulated network, each measured side by side with its reference.

    scripts/bench.sh remote [--repeat R] [--tet-mib M] [--epoch-cells N] [--obs-cells N] [--smoke]

Every request goes to tests/python/fault_proxy.py's `FaultProxy` in front of its `Origin`, both
on 127.0.0.1 in a child process (so their Python threads never compete with the measured process
for a GIL). The proxy adds 50 ms before every answer and paces every body at 150 MB/s per
connection: the emulation the deltacells reference publishes its remote figures with. The
origin here answers a range by reading only that range (the test origin reads and hashes the
whole object per request, which would measure the origin instead of the reader).

0. ceiling: plain `curl` through the proxy (one connection, and N in parallel), the most the
   emulation itself delivers; the Python proxy may not reach 150 MB/s, so the figures below are
   also given relative to it.
1. ragged: `tessera.ragged.open(LEAF_URL, "6/h_tdigest").read_cell(i)` on a fresh handle
   (opened untimed just before) and on a warm one (that already read cells), in multiples of the
   added round trip.
2. tet: `tessera tet query '{"dataset":"v","mean":[]}' -t URL -x -q` over a raw f32 .tet of
   about M MiB (default 256, 64 chunks of 4 MiB) against `curl --parallel --parallel-max N`
   fetching exactly the chunk ranges tessera fetched, where N is the most requests tessera had in
   flight at once (its read-ahead runs several; `--threads` sets a larger N); the local file's
   rate is printed for reference.
3. cells: `tessera cells epoch URL --batch-size 5000 --json` over a converted random dataset
   against the same command on the local directory.
4. obs: `tessera.cells.open(URL, cache_dir=fresh).obs.localize(3 columns)` of a dataset of
   N cells (default 100,000), remote and local.

Each side runs once untimed first (page cache, connections), then the sides alternate which goes
first. Every round prints both figures and their ratio; the medians go into the summary table.
Generated inputs are kept in --data-dir and reused. --smoke runs every figure once on tiny
inputs (seconds) to prove the benchmark runs; its numbers mean nothing.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench_common import Summary, alternate, cells_dataset

REPO = pathlib.Path(__file__).resolve().parents[1]
LATENCY_S = 0.05
BANDWIDTH_BPS = 150e6
LEAF = "zagg/tests/data/spec/minimal/1/1/2/1/3/11213.zarr"
OBS_COLUMNS = ["cell_type", "n_counts", "percent_mito"]


# ---- the emulated network (child process) -------------------------------------------------------

def serve(root: pathlib.Path) -> int:
    """Child process: an origin over `root` behind a FaultProxy. Prints one JSON line with both
    URLs, then answers commands read from stdin one line each (`set LATENCY BANDWIDTH`, `stats`,
    `clear`) until stdin closes."""
    sys.path.insert(0, str(REPO / "tests" / "python"))
    import fault_proxy as fp

    etags = {}
    etag_lock = threading.Lock()

    class RangeOriginHandler(fp._OriginHandler):
        """The test origin's answers, reading only the requested range; the ETag (a hash of the
        whole file) is computed once per file version (path, size, mtime, inode)."""

        def _serve(self, head):
            import email.utils
            import hashlib
            import urllib.parse
            root_dir = self.server.owner.root
            rel = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
            path = (root_dir / rel).resolve()
            if root_dir not in path.parents or not path.is_file():
                self._send(404, [("Content-Type", "text/plain")], b"not found\n", head)
                return
            st = path.stat()
            key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
            with etag_lock:
                etag = etags.get(key)
            if etag is None:
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(8 << 20), b""):
                        h.update(block)
                etag = '"' + h.hexdigest()[:32] + '"'
                with etag_lock:
                    etags[key] = etag
            validators = [("ETag", etag), ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True)),
                          ("Accept-Ranges", "bytes")]
            if_match = self.headers.get("If-Match")
            if if_match is not None and if_match.strip() != "*" and etag not in [t.strip() for t in if_match.split(",")]:
                self._send(412, [("Content-Type", "text/plain")], b"precondition failed\n", head)
                return
            size = st.st_size
            wanted = fp.byte_range(self.headers.get("Range"), size)
            if wanted == "unsatisfiable":
                self._send(416, validators + [("Content-Range", f"bytes */{size}")], b"", head)
                return
            (first, last), status = (wanted, 206) if wanted else ((0, size - 1), 200)
            body = b""
            if not head and last >= first:
                with open(path, "rb") as f:
                    body = os.pread(f.fileno(), last - first + 1, first)
            headers = validators + [("Content-Type", "application/octet-stream")]
            if status == 206:
                headers.append(("Content-Range", f"bytes {first}-{last}/{size}"))
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(last - first + 1 if size else 0))
            self.end_headers()
            if not head:
                self.wfile.write(body)

    origin = fp.Origin(root)
    origin._server.RequestHandlerClass = RangeOriginHandler
    proxy = fp.FaultProxy(origin.url)
    print(json.dumps({"origin": origin.url, "proxy": proxy.url}), flush=True)
    try:
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "set":
                proxy.latency(float(words[1]))
                proxy.bandwidth(float(words[2]) or None)
                reply = {}
            elif words[0] == "clear":
                with proxy._lock:  # the requests only: the emulation's latency and bandwidth stay
                    proxy.requests = []
                    proxy.max_in_flight = proxy.in_flight
                reply = {}
            elif words[0] == "stats":
                with proxy._lock:
                    seen = [[r.method, r.path, r.range] for r in proxy.requests]
                    most = proxy.max_in_flight
                reply = {"requests": seen, "max_inflight": most}
            else:
                reply = {"error": f"unknown command {words[0]}"}
            print(json.dumps(reply), flush=True)
    finally:
        proxy.close()
        origin.close()
    return 0


class Network:
    """The child process serving `root` through the proxy; `url` is the proxy's."""

    def __init__(self, root: pathlib.Path):
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
        self._proc = subprocess.Popen([sys.executable, str(pathlib.Path(__file__).resolve()), "--serve", str(root)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        urls = json.loads(self._proc.stdout.readline())
        self.url, self.origin = urls["proxy"], urls["origin"]

    def _ask(self, line):
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()
        reply = json.loads(self._proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def emulate(self, latency=LATENCY_S, bandwidth=BANDWIDTH_BPS):
        self._ask(f"set {latency} {bandwidth or 0}")

    def clear(self):
        self._ask("clear")

    def stats(self):
        return self._ask("stats")

    def close(self):
        self._proc.stdin.close()
        self._proc.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- helpers ------------------------------------------------------------------------------------

def no_proxy_env():
    return {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}


def timed_run(cmd):
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=no_proxy_env())
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed, proc.stdout


def curl_ranges(url, ranges, parallel):
    """`curl --parallel --parallel-max N` of these byte ranges (inclusive pairs) of `url`."""
    cmd = ["curl", "--silent", "--show-error", "--fail", "--parallel", "--parallel-max", str(parallel)]
    for i, (a, b) in enumerate(ranges):
        if i:
            cmd.append("--next")
        cmd += ["--silent", "--show-error", "--fail", "--range", f"{a}-{b}", "--output", "/dev/null", url]
    return timed_run(cmd)[0]


def mbps(nbytes, seconds):
    return nbytes / seconds / 1e6


# ---- 0. the emulation's own ceiling -------------------------------------------------------------

def bench_ceiling(net, rel_path, size, chunk, parallel, rounds, summary):
    """Plain curl through the proxy: one body of `size` bytes on one connection (with and without
    the 50 ms), and `parallel` chunk-sized bodies at once; MB/s of body bytes."""
    url = f"{net.url}/{rel_path}"
    results = {}
    for label, latency, ranges, par in (
            ("1 connection, no added latency", 0.0, [(0, size - 1)], 1),
            ("1 connection, 50 ms", LATENCY_S, [(0, size - 1)], 1),
            (f"{parallel} connections x chunk, 50 ms", LATENCY_S,
             [(i * chunk, (i + 1) * chunk - 1) for i in range(max(parallel, size // chunk))], parallel)):
        net.emulate(latency, BANDWIDTH_BPS)
        nbytes = sum(b - a + 1 for a, b in ranges)
        curl_ranges(url, ranges, par)
        rates = [mbps(nbytes, curl_ranges(url, ranges, par)) for _ in range(rounds)]
        results[label] = statistics.median(rates)
        print(f"ceiling  {label}: {', '.join(f'{r:.1f}' for r in rates)} MB/s "
              f"(median {results[label]:.1f}, {results[label] / (BANDWIDTH_BPS / 1e6) * 100:.0f} % of the "
              f"{BANDWIDTH_BPS / 1e6:.0f} MB/s cap per connection)")
    one = results["1 connection, no added latency"]
    summary.add("proxy ceiling, curl, 1 connection (MB/s)", f"{one:.1f}", f"{BANDWIDTH_BPS / 1e6:.0f} (cap)",
                one >= 0.95 * BANDWIDTH_BPS / 1e6)
    if one < 0.95 * BANDWIDTH_BPS / 1e6:
        print(f"ceiling  NOTE: the Python proxy delivers {one:.1f} MB/s on one connection, below the "
              f"{BANDWIDTH_BPS / 1e6:.0f} MB/s the emulation asks for; throughput figures are bounded by it.")
    return one


# ---- 1. ragged read_cell ------------------------------------------------------------------------

def bench_ragged(conformance, cells_per_round, rounds, summary):
    import tessera.ragged as ragged

    with Network(conformance) as net:
        net.emulate()
        url = f"{net.url}/{LEAF}"
        warm = ragged.open(url, "6/h_tdigest")
        n = warm.size
        warm.read_cell(0)
        indices = [i % n for i in range(cells_per_round)]

        def fresh_round():
            times = []
            for i in indices:
                f = ragged.open(url, "6/h_tdigest")
                t0 = time.perf_counter()
                f.read_cell(i)
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

        def warm_round():
            times = []
            for i in indices:
                t0 = time.perf_counter()
                warm.read_cell(i)
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

        fresh, warmed = [], []
        for r, a, b in alternate(rounds, fresh_round, warm_round):
            fresh.append(a)
            warmed.append(b)
            print(f"ragged   round {r + 1}: read_cell fresh handle {a * 1e3:.1f} ms ({a / LATENCY_S:.2f} x RTT), "
                  f"warm handle {b * 1e3:.1f} ms ({b / LATENCY_S:.2f} x RTT), fresh/warm {a / b:.3f}")
        # Requests of one read_cell on a warm handle, and of an open.
        net.clear()
        warm.read_cell(indices[-1])
        per_cell = net.stats()["requests"]
        net.clear()
        t0 = time.perf_counter()
        ragged.open(url, "6/h_tdigest")
        open_s = time.perf_counter() - t0
        per_open = net.stats()["requests"]
    mf, mw = statistics.median(fresh) / LATENCY_S, statistics.median(warmed) / LATENCY_S
    gets = sum(1 for m, _, _ in per_cell if m == "GET")
    print(f"ragged   median: fresh {mf:.2f} x RTT, warm {mw:.2f} x RTT (target <= 2.2); one read_cell = "
          f"{len(per_cell)} requests ({gets} GET), one open = {len(per_open)} requests, {open_s * 1e3:.0f} ms")
    summary.add("ragged read_cell, fresh handle (x 50 ms RTT)", f"{mf:.2f}", "<= 2.2", mf <= 2.2)
    summary.add("ragged read_cell, warm handle (x 50 ms RTT)", f"{mw:.2f}", "<= 2.2", mw <= 2.2)
    summary.add("ragged requests per read_cell / per open", f"{len(per_cell)} / {len(per_open)}")


# ---- 2. tet query -------------------------------------------------------------------------------

def tet_file(cli, data_dir, mib, chunk):
    side = max(chunk, int((mib * 2**20 / 4) ** 0.5) // chunk * chunk)
    path = data_dir / f"tet-{side}x{side}-{chunk}.tet"
    if not path.exists():
        subprocess.run([str(cli), "tet", "synth", str(path), "--dataset", f"v:f32:{side}x{side}:{chunk}x{chunk}",
                        "--seed", "3"], check=True, capture_output=True)
    return path, side * side * 4, chunk * chunk * 4


def bench_tet(cli, net, data_dir, mib, chunk, threads, rounds, summary):
    path, nbytes, chunk_bytes = tet_file(cli, data_dir, mib, chunk)
    rel = path.relative_to(data_dir).as_posix()
    url = f"{net.url}/{rel}"
    query = '{"dataset":"v","mean":[]}'
    net.emulate()
    # One untimed run through the proxy records the ranges tessera reads and its concurrency.
    net.clear()
    timed_run([str(cli), "tet", "query", query, "-t", url, "-x", "-q"])
    stats = net.stats()
    ranged = []
    for method, _, spec in stats["requests"]:
        if method == "GET" and spec and spec.startswith("bytes=") and "-" in spec[6:] and not spec.startswith("bytes=-"):
            a, b = spec[6:].split("-")
            if b and int(b) - int(a) + 1 >= chunk_bytes // 2:
                ranged.append((int(a), int(b)))
    fetched = sum(b - a + 1 for a, b in ranged)
    threads = max(threads, stats["max_inflight"])  # the same number of requests in flight as tessera
    print(f"tet      {path.name}: {nbytes / 2**20:.0f} MiB, {nbytes // chunk_bytes} chunks of "
          f"{chunk_bytes / 2**20:g} MiB; tessera sent {len(stats['requests'])} requests, {len(ranged)} chunk GETs "
          f"({fetched / 2**20:.0f} MiB), at most {stats['max_inflight']} at once; curl runs {threads} in parallel")

    def tessera_rate():
        return mbps(nbytes, timed_run([str(cli), "tet", "query", query, "-t", url, "-x", "-q"])[0])

    def curl_rate():
        return mbps(nbytes, curl_ranges(url, ranged, threads))

    pairs = []
    for r, a, b in alternate(rounds, tessera_rate, curl_rate):
        pairs.append((a, b))
        print(f"tet      round {r + 1}: tessera {a:.1f} MB/s, curl --parallel-max {threads} {b:.1f} MB/s, ratio {a / b:.3f}")
    local = []
    timed_run([str(cli), "tet", "query", query, "-t", str(path), "-x", "-q"])
    for _ in range(rounds):
        local.append(mbps(nbytes, timed_run([str(cli), "tet", "query", query, "-t", str(path), "-x", "-q"])[0]))
    ratio = statistics.median(a / b for a, b in pairs)
    t_med, c_med, l_med = (statistics.median(x) for x in ([a for a, _ in pairs], [b for _, b in pairs], local))
    print(f"tet      median tessera/curl: {ratio:.3f} (target >= 0.80); tessera {t_med:.1f} MB/s, curl {c_med:.1f} MB/s, "
          f"local file {l_med:.0f} MB/s")
    summary.add("tet query remote (MB/s)", f"{t_med:.1f}")
    summary.add(f"tet curl --parallel-max {threads}, same ranges (MB/s)", f"{c_med:.1f}")
    summary.add("tet query remote / curl", f"{ratio:.3f}", ">= 0.80", ratio >= 0.8)
    summary.add("tet query local file (MB/s)", f"{l_med:.0f}")
    summary.add("tet query: requests in flight at once", str(stats["max_inflight"]))
    return t_med, c_med


# ---- 3. cells epoch / 4. obs localize -----------------------------------------------------------

def curl_objects(urls, parallel):
    """`curl --parallel --parallel-max N` of these whole objects."""
    cmd = ["curl", "--silent", "--show-error", "--fail", "--parallel", "--parallel-max", str(parallel)]
    for i, url in enumerate(urls):
        if i:
            cmd.append("--next")
        cmd += ["--silent", "--show-error", "--fail", "--output", "/dev/null", url]
    return timed_run(cmd)[0]


def bench_epoch(cli, net, data_dir, ds, batch, rounds, summary):
    """The remote epoch against the same epoch read locally and against the network's own limit
    for its bytes: curl fetching the epoch's tile objects with as many requests in flight as the
    loader had. "When bandwidth allows" is read as: the target is 80 % of the slower of the two,
    since a remote epoch cannot run faster than its tiles arrive."""
    url = f"{net.url}/{ds.relative_to(data_dir).as_posix()}"
    n_cells = json.loads((ds / "manifest.json").read_text())["n_cells"]
    tiles = sorted(p.relative_to(ds).as_posix() for p in (ds / "tiles").rglob("*") if p.is_file())
    net.emulate()
    # One untimed epoch through the proxy records its requests and how many were in flight.
    net.clear()
    timed_run([str(cli), "cells", "epoch", url, "--batch-size", str(batch), "--json"])
    stats = net.stats()
    heads = sum(1 for m, _, _ in stats["requests"] if m == "HEAD")
    in_flight = stats["max_inflight"]

    def rate(where):
        def run():
            out = timed_run([str(cli), "cells", "epoch", where, "--batch-size", str(batch), "--json"])[1]
            return json.loads(out)["cells_per_second"]
        return run

    def network():
        return n_cells / curl_objects([f"{url}/{t}" for t in tiles], in_flight)

    rows = []
    for r, a, b, c in alternate(rounds, rate(url), rate(str(ds)), network):
        rows.append((a, b, c))
        print(f"cells    round {r + 1}: epoch remote {a:,.0f} cells/s, local {b:,.0f} cells/s, network (curl, "
              f"{in_flight} in flight) {c:,.0f} cells/s; remote/local {a / b:.3f}, remote/network {a / c:.3f}")
    remote, local, net_rate = (statistics.median(x[i] for x in rows) for i in range(3))
    ratio = statistics.median(a / b for a, b, _ in rows)
    to_limit = statistics.median(a / min(b, c) for a, b, c in rows)
    allows = statistics.median(c / b for _, b, c in rows)
    print(f"cells    median: remote {remote:,.0f} cells/s (target >= 62,000), local {local:,.0f} cells/s, network "
          f"{net_rate:,.0f} cells/s; remote/local {ratio:.3f}; remote / min(local, network) {to_limit:.3f} "
          f"(target >= 0.80); one epoch = {len(stats['requests'])} requests ({heads} HEAD), at most {in_flight} at once")
    summary.add("cells epoch remote (cells/s)", f"{remote:,.0f}", ">= 62,000", remote >= 62_000)
    summary.add("cells epoch local (cells/s)", f"{local:,.0f}")
    summary.add(f"cells network: curl of the tiles, {in_flight} in flight (cells/s)", f"{net_rate:,.0f}")
    summary.add("cells network / local (bandwidth allows at >= 1)", f"{allows:.3f}")
    summary.add("cells epoch remote / local", f"{ratio:.3f}")
    summary.add("cells epoch remote / min(local, network)", f"{to_limit:.3f}", ">= 0.80", to_limit >= 0.8)


def bench_obs(net, data_dir, ds, rounds, summary):
    import tessera.cells as cells

    url = f"{net.url}/{ds.relative_to(data_dir).as_posix()}"
    net.emulate()

    def localize(where):
        def run():
            with tempfile.TemporaryDirectory(prefix="tessera-bench-obs-") as cache:
                t0 = time.perf_counter()
                d = cells.open(where, cache_dir=cache)
                t1 = time.perf_counter()
                d.obs.localize(OBS_COLUMNS)
                t2 = time.perf_counter()
                d.close()
            return t2 - t0, t2 - t1
        return run

    pairs = []
    for r, a, b in alternate(rounds, localize(url), localize(str(ds))):
        pairs.append((a[0], b[0]))
        print(f"obs      round {r + 1}: open + localize {len(OBS_COLUMNS)} columns remote {a[0]:.3f} s "
              f"(localize alone {a[1]:.3f} s), local {b[0]:.4f} s")
    net.clear()
    localize(url)()
    stats = net.stats()
    n_requests = len(stats["requests"])
    remote = statistics.median(a for a, _ in pairs)
    local = statistics.median(b for _, b in pairs)
    print(f"obs      median: remote {remote:.3f} s = {remote / LATENCY_S:.1f} x RTT (target <= 0.39 s), local "
          f"{local:.4f} s; {n_requests} requests, at most {stats['max_inflight']} at once")
    summary.add("obs open + localize 3 columns remote (s)", f"{remote:.3f}", "<= 0.39", remote <= 0.39)
    summary.add("obs open + localize 3 columns local (s)", f"{local:.4f}")


# ---- main ---------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", type=pathlib.Path, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=pathlib.Path, default=REPO / "build" / "bench-data" / "remote")
    parser.add_argument("--conformance", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("TESSERA_CONFORMANCE_DIR")
                                             or REPO / "tests" / "data" / "conformance"))
    parser.add_argument("--cli", type=pathlib.Path, help="the tessera CLI (default: the package's)")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per figure (default 5)")
    parser.add_argument("--cells-per-round", type=int, default=8, help="read_cell calls per ragged round")
    parser.add_argument("--tet-mib", type=float, default=1024, help="size of the remote .tet (default 1 GiB, the figure of the issue)")
    parser.add_argument("--tet-chunk", type=int, default=1024, help="chunk side (default 1024: 4 MiB chunks)")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="curl's least --parallel-max (default: the CPUs; the tet figure uses at least "
                             "as many as tessera had in flight)")
    parser.add_argument("--epoch-cells", type=int, default=50_000)
    parser.add_argument("--obs-cells", type=int, default=100_000)
    parser.add_argument("--genes", type=int, default=2_000)
    parser.add_argument("--tile-size", type=int, default=5_000)
    parser.add_argument("--batch-size", type=int, default=5_000)
    parser.add_argument("--smoke", action="store_true", help="every figure once on tiny inputs (seconds)")
    parser.add_argument("--only", nargs="+", choices=["ceiling", "ragged", "tet", "cells", "obs"],
                        help="run only these figures")
    args = parser.parse_args()
    if args.serve is not None:
        return serve(args.serve)

    import tessera

    cli = args.cli or tessera.cli_path()
    smoke_dir = None
    if args.smoke:
        smoke_dir = tempfile.TemporaryDirectory(prefix="tessera-bench-remote-smoke-")
        args.data_dir = pathlib.Path(smoke_dir.name)
        args.repeat, args.cells_per_round = 1, 2
        args.tet_mib, args.tet_chunk = 1, 128
        args.epoch_cells = args.obs_cells = 2_000
        args.genes, args.tile_size, args.batch_size = 200, 500, 500
    figures = set(args.only or ["ceiling", "ragged", "tet", "cells", "obs"])
    args.data_dir.mkdir(parents=True, exist_ok=True)
    data_dir = args.data_dir.resolve()
    print(f"tessera {tessera.__version__}, CLI {cli}, {os.cpu_count()} CPUs; emulation {LATENCY_S * 1e3:.0f} ms per "
          f"request, {BANDWIDTH_BPS / 1e6:.0f} MB/s per connection, on 127.0.0.1" + (" (smoke)" if args.smoke else ""))
    summary = Summary(f"Summary (medians over rounds; emulation: {LATENCY_S * 1e3:.0f} ms per request, "
                      f"{BANDWIDTH_BPS / 1e6:.0f} MB/s per connection)")
    t_start = time.perf_counter()
    try:
        if "ragged" in figures:
            bench_ragged(args.conformance, args.cells_per_round, args.repeat, summary)
        need_data = figures & {"ceiling", "tet", "cells", "obs"}
        inputs = {}
        if figures & {"ceiling", "tet"}:
            inputs["tet"] = tet_file(cli, data_dir, args.tet_mib, args.tet_chunk)
        if "cells" in figures:
            inputs["epoch"] = cells_dataset(cli, data_dir, args.epoch_cells, args.genes, args.tile_size)
        if "obs" in figures:
            inputs["obs"] = cells_dataset(cli, data_dir, args.obs_cells, args.genes, args.tile_size)
        if need_data:
            with Network(data_dir) as net:
                if "ceiling" in figures:
                    path, nbytes, chunk_bytes = inputs["tet"]
                    size = min(nbytes, 64 << 20)
                    bench_ceiling(net, path.relative_to(data_dir).as_posix(), size, chunk_bytes, args.threads,
                                  args.repeat, summary)
                if "tet" in figures:
                    bench_tet(cli, net, data_dir, args.tet_mib, args.tet_chunk, args.threads, args.repeat, summary)
                if "cells" in figures:
                    bench_epoch(cli, net, data_dir, inputs["epoch"], args.batch_size, args.repeat, summary)
                if "obs" in figures:
                    bench_obs(net, data_dir, inputs["obs"], args.repeat, summary)
    finally:
        if smoke_dir is not None:
            smoke_dir.cleanup()
    summary.print()
    print(f"\n{time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
