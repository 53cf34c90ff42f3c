"""A fault-injecting HTTP proxy on loopback, and the origin it sits in front of.

`Origin` serves a directory over HTTP/1.1 the way an object store serves objects: HEAD and GET,
single ranges (`bytes=a-b`, `bytes=a-`, `bytes=-n`) answered 206 with Content-Range, 416 past the
end, a strong ETag and Last-Modified derived from the file's bytes and mtime, and the
preconditions If-Match / If-Unmodified-Since answered 412 when the object changed. Directories
and missing files are 404 (no listings); `honour_preconditions = False` makes it ignore the
preconditions, as some servers do. Overwriting a file under the root replaces the object:
its ETag changes with its bytes.

`FaultProxy` forwards every request to an origin and, following a fault plan set per test,
misbehaves instead of (or while) answering:

- `latency(seconds)` sleeps before each answer; `bandwidth(bytes_per_second)` paces every body;
- `fail(status, times)` answers `times` requests with `status` (503, 429, 500, 502, 504, 403,
  404, ...) and an error body, then passes requests again;
- `reset(times)` closes the connection of `times` requests without answering (an RST);
- `truncate(times)` sends the origin's headers, full Content-Length included, then only part of
  the body, and closes the connection;
- `stall(times)` reads the request and never answers; the handler leaves when the client hangs
  up, the proxy closes or STALL_LIMIT_S passes, so a stalled request ends by the client's timeout.

Every fault takes `ranged_only=True` to hit only GETs carrying a Range header (HEADs and whole
object GETs pass), and `after=k` to let k matching requests through before the fault starts.
Faults are consumed in the order they were planned, one matching request each; a fault's `after`
counts only once the faults planned before it are used up.
`requests` records every request seen (method, path, Range, what was done with it); `count()`
filters it. `clear()` drops the plan, the latency, the bandwidth cap and the records.

Both servers listen on 127.0.0.1 on a free port, use daemon handler threads, bound their
request queue and bodies, and stop with `close()`. Nothing but 127.0.0.1 is ever contacted.
"""
import email.utils
import hashlib
import http.client
import http.server
import os
import pathlib
import re
import select
import socket
import struct
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

HOST = "127.0.0.1"
MAX_BODY = 64 << 20  # bodies the proxy relays are held in memory: refuse anything larger
STALL_LIMIT_S = 120.0  # a stalled handler gives up after this even if the client never does


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64
    allow_reuse_address = True

    def __init__(self, handler, owner):
        self.owner = owner
        super().__init__((HOST, 0), handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    timeout = 60  # an idle kept-alive connection is dropped after this

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass

    def _send(self, status, headers, body=b"", head=False):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)


def _start(server):
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return thread


# ---- origin -------------------------------------------------------------------------------------

_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


def byte_range(spec, size):
    """The (first, last) bytes a `Range` header asks of a `size`-byte object: None for the whole
    object (no header, or one this server does not parse), "unsatisfiable" for a 416."""
    m = _RANGE.match(spec.strip()) if spec else None
    if m is None or (not m.group(1) and not m.group(2)):
        return None
    if m.group(1):
        first = int(m.group(1))
        last = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
    else:
        first, last = max(0, size - int(m.group(2))), size - 1
    return "unsatisfiable" if first >= size or last < first else (first, last)


class _OriginHandler(_Handler):
    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head):
        root: pathlib.Path = self.server.owner.root
        rel = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
        path = (root / rel).resolve()
        if root not in path.parents or not path.is_file():
            self._send(404, [("Content-Type", "text/plain")], b"not found\n", head)
            return
        data = path.read_bytes()
        mtime = path.stat().st_mtime
        etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
        last_modified = email.utils.formatdate(mtime, usegmt=True)
        validators = [("ETag", etag), ("Last-Modified", last_modified), ("Accept-Ranges", "bytes")]
        honour = self.server.owner.honour_preconditions
        if_match = self.headers.get("If-Match") if honour else None
        if if_match is not None and if_match.strip() != "*" and etag not in [t.strip() for t in if_match.split(",")]:
            self._send(412, [("Content-Type", "text/plain")], b"precondition failed\n", head)
            return
        since = self.headers.get("If-Unmodified-Since") if honour else None
        if since is not None:
            try:
                limit = email.utils.parsedate_to_datetime(since).timestamp()
            except (TypeError, ValueError):
                limit = None
            if limit is not None and int(mtime) > limit:
                self._send(412, [("Content-Type", "text/plain")], b"precondition failed\n", head)
                return
        size = len(data)
        wanted = byte_range(self.headers.get("Range"), size)
        if wanted is None:
            self._send(200, validators + [("Content-Type", "application/octet-stream")], data, head)
            return
        if wanted == "unsatisfiable":
            self._send(416, validators + [("Content-Range", f"bytes */{size}")], b"", head)
            return
        first, last = wanted
        self._send(206, validators + [("Content-Type", "application/octet-stream"),
                                      ("Content-Range", f"bytes {first}-{last}/{size}")], data[first:last + 1], head)


class Origin:
    """Serves the directory `root` at `url` (http://127.0.0.1:PORT) until `close()`. With
    `honour_preconditions = False` it serves every read unconditionally, as servers that ignore
    If-Match do."""

    def __init__(self, root):
        self.root = pathlib.Path(root).resolve()
        self.honour_preconditions = True
        self._server = _Server(_OriginHandler, self)
        self.port = self._server.server_address[1]
        self.url = f"http://{HOST}:{self.port}"
        self._thread = _start(self._server)

    def close(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


# ---- fault proxy --------------------------------------------------------------------------------

@dataclass
class _Fault:
    kind: str            # "status", "reset", "truncate" or "stall"
    times: int
    status: int = 0
    ranged_only: bool = False
    after: int = 0       # matching requests to let through first
    keep: float = 0.5    # truncate: the share of the body sent

    def matches(self, method, has_range):
        if self.kind == "truncate" and method != "GET":
            return False  # a HEAD has no body to cut
        return not self.ranged_only or (method == "GET" and has_range)


@dataclass
class Seen:
    method: str
    path: str
    range: str | None
    action: str          # "pass", "status 503", "reset", "truncate", "stall"


@dataclass
class _Plan:
    faults: list = field(default_factory=list)
    latency: float = 0.0
    bandwidth: float | None = None


_HOP = {"server", "date", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection",
        "proxy-authenticate", "proxy-authorization", "host", "content-length"}
_REASON = {403: "Forbidden", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
           502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


class _ProxyHandler(_Handler):
    def do_HEAD(self):
        self._handle()

    def do_GET(self):
        self._handle()

    def _handle(self):
        proxy: FaultProxy = self.server.owner
        proxy._enter()
        try:
            self._answer(proxy)
        finally:
            proxy._leave()

    def _answer(self, proxy):
        has_range = self.headers.get("Range") is not None
        fault, latency, bandwidth = proxy._take(self.command, has_range)
        action = "pass" if fault is None else (f"status {fault.status}" if fault.kind == "status" else fault.kind)
        proxy._record(Seen(self.command, self.path, self.headers.get("Range"), action))
        if latency:
            time.sleep(latency)
        head = self.command == "HEAD"
        if fault is not None and fault.kind == "reset":
            self._reset()
            return
        if fault is not None and fault.kind == "stall":
            self._stall(proxy)
            return
        if fault is not None and fault.kind == "status":
            body = f"injected {fault.status}\n".encode()
            self.send_response(fault.status, _REASON.get(fault.status))
            self.send_header("Content-Type", "text/plain")
            if fault.status in (429, 503):
                self.send_header("Retry-After", "0")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            return
        status, reason, headers, body, length = proxy._forward(self.command, self.path, self.headers)
        self.send_response(status, reason)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if head:
            return
        if fault is not None and fault.kind == "truncate" and body:
            body = body[:min(len(body) - 1, int(len(body) * fault.keep))]
            self._write(body, bandwidth)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._write(body, bandwidth)

    def _write(self, body, bandwidth):
        if not bandwidth:
            self.wfile.write(body)
            return
        step = max(1, int(bandwidth / 20))  # about 20 writes a second
        for i in range(0, len(body), step):
            self.wfile.write(body[i:i + step])
            self.wfile.flush()
            time.sleep(len(body[i:i + step]) / bandwidth)

    def _reset(self):
        # SO_LINGER with a zero timeout makes close() send an RST: the request gets no answer at all.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _stall(self, proxy):
        # Answer nothing; leave when the client hangs up, the proxy closes or STALL_LIMIT_S passes.
        self.close_connection = True
        deadline = time.monotonic() + STALL_LIMIT_S
        while not proxy._closing.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.1)
            if readable:
                try:
                    if not self.connection.recv(4096):
                        return
                except OSError:
                    return


class FaultProxy:
    """Forwards http://127.0.0.1:PORT (`url`) to `origin_url` (itself on 127.0.0.1) with the faults
    planned by `fail`, `reset`, `truncate`, `stall`, `latency` and `bandwidth`."""

    def __init__(self, origin_url):
        parts = urllib.parse.urlsplit(origin_url)
        if parts.scheme != "http" or parts.hostname != HOST:
            raise ValueError(f"the origin must be http://{HOST}:PORT, got {origin_url}")
        self._origin = (HOST, parts.port or 80)
        self._lock = threading.Lock()
        self._plan = _Plan()
        self._closing = threading.Event()
        self.requests: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests under way at once since the last clear()
        self._server = _Server(_ProxyHandler, self)
        self.port = self._server.server_address[1]
        self.url = f"http://{HOST}:{self.port}"
        self._thread = _start(self._server)

    # -- the plan

    def fail(self, status, times=1, *, ranged_only=False, after=0):
        """The next `times` matching requests are answered `status`."""
        self._add(_Fault("status", times, status=status, ranged_only=ranged_only, after=after))

    def reset(self, times=1, *, ranged_only=False, after=0):
        """The next `times` matching requests get their connection reset, unanswered."""
        self._add(_Fault("reset", times, ranged_only=ranged_only, after=after))

    def truncate(self, times=1, *, ranged_only=False, after=0, keep=0.5):
        """The next `times` matching GETs get full headers and `keep` of the body, then a close."""
        self._add(_Fault("truncate", times, ranged_only=ranged_only, after=after, keep=keep))

    def stall(self, times=1, *, ranged_only=False, after=0):
        """The next `times` matching requests are read and never answered."""
        self._add(_Fault("stall", times, ranged_only=ranged_only, after=after))

    def latency(self, seconds):
        with self._lock:
            self._plan.latency = seconds

    def bandwidth(self, bytes_per_second):
        """Caps every body at `bytes_per_second` (None: no cap)."""
        with self._lock:
            self._plan.bandwidth = bytes_per_second

    def pending(self):
        """Faults planned and not yet injected."""
        with self._lock:
            return sum(f.times for f in self._plan.faults)

    def clear(self):
        with self._lock:
            self._plan = _Plan()
            self.requests = []
            self.max_in_flight = self.in_flight

    def count(self, method=None, action=None, ranged=None):
        """Requests seen, optionally only those with this method, this action ("pass",
        "status 503", "reset", ...) or (ranged=True/False) with/without a Range header."""
        with self._lock:
            return sum(1 for r in self.requests
                       if (method is None or r.method == method) and (action is None or r.action == action)
                       and (ranged is None or (r.range is not None) == ranged))

    def close(self):
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # -- used by the handler

    def _add(self, fault):
        if fault.times < 1 or fault.after < 0:
            raise ValueError("times must be positive and after non-negative")
        with self._lock:
            self._plan.faults.append(fault)

    def _take(self, method, has_range):
        with self._lock:
            plan = self._plan
            chosen = None
            for fault in plan.faults:
                if not fault.matches(method, has_range):
                    continue
                if fault.after > 0:
                    fault.after -= 1
                    break  # the first matching fault is still letting requests through
                fault.times -= 1
                chosen = fault
                break
            plan.faults = [f for f in plan.faults if f.times > 0]
            return chosen, plan.latency, plan.bandwidth

    def _enter(self):
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self):
        with self._lock:
            self.in_flight -= 1

    def _record(self, seen):
        with self._lock:
            if len(self.requests) < 100_000:
                self.requests.append(seen)

    def _forward(self, method, path, headers):
        conn = http.client.HTTPConnection(*self._origin, timeout=30)
        try:
            sent = {k: v for k, v in headers.items() if k.lower() not in _HOP}
            conn.request(method, path, headers=sent)
            resp = conn.getresponse()
            body = resp.read(MAX_BODY + 1) if method != "HEAD" else b""
            if len(body) > MAX_BODY:
                raise RuntimeError(f"{path}: body larger than {MAX_BODY} bytes")
            kept = [(k, v) for k, v in resp.getheaders() if k.lower() not in _HOP]
            # A HEAD answer has no body but announces the object's length.
            length = int(resp.getheader("Content-Length") or 0) if method == "HEAD" else len(body)
            return resp.status, resp.reason, kept, body, length
        finally:
            conn.close()


PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def environ_without_proxies():
    """os.environ without proxy variables, so a child process talks to 127.0.0.1 directly."""
    return {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}


def bypass_proxies(monkeypatch):
    """Removes the proxy variables (either case) for one test, so libcurl talks to 127.0.0.1 directly."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
