"""An S3 endpoint on loopback for the bucket tests: s3rver (npm, from tests/remote/node's lock
file) stores the objects and answers the S3 API; in front of it a checking proxy written here
verifies every request's SigV4 signature with botocore's signer (an implementation independent of
libcurl's) and refuses what a real bucket would refuse:

- a signature that does not match (403 SignatureDoesNotMatch), an unknown key (403
  InvalidAccessKeyId), an unsigned request to a private bucket (403 AccessDenied);
- listings are cut into pages of `page_size` keys, so continuation tokens are exercised;
- s3rver's delimited listings find a common prefix only when an object sits directly below it
  (`a/1/` is missed when every object is deeper, as in a hive): the proxy answers delimited
  listings itself from s3rver's full (undelimited) listing, grouped as S3 groups them;
- s3rver reads a suffix range (`bytes=-N`, which S3 answers with the last N bytes) as `bytes=0-N`:
  the proxy rewrites it to the explicit range of the last N bytes, as S3 would serve it;
- s3rver ignores `If-None-Match: *` on PutObject and CompleteMultipartUpload (conditional create):
  the proxy answers 412 PreconditionFailed when the object exists, checking and writing under one
  lock so that of two racing conditional creates exactly one wins; other If-None-Match values on
  a write are refused as S3 refuses them (501 NotImplemented);
- s3rver keeps no account of multipart uploads beyond their part files: the proxy tracks every
  upload it sees initiated (key, upload id, initiation time, each part's size and ETag) and
  * answers NoSuchUpload (404) to UploadPart, CompleteMultipartUpload and AbortMultipartUpload
    with an upload id that is unknown, aborted or already completed;
  * refuses a CompleteMultipartUpload as S3 does: InvalidPart (a listed part was not uploaded or
    its ETag differs), InvalidPartOrder (part numbers not ascending), EntityTooSmall (a part other
    than the last is under 5 MiB);
  * implements AbortMultipartUpload (204; s3rver's part files are deleted) and
    ListMultipartUploads (in-progress uploads of a bucket, optionally under a prefix, one page),
    which s3rver lacks;
- a body whose SHA-256 differs from the signed x-amz-content-sha256 is refused (400
  XAmzContentSHA256Mismatch), as S3 refuses it;
- `fail_writes(status, times, after)` answers writes with 503/500 or resets their connection, and
  `write_delay` slows each write down, for the tests of retries and of writers killed mid-upload;
  `latency` delays every request and `upload_bandwidth` paces request bodies per connection (the
  emulated network of bench/bench_remote_write.py);
- request bodies sent with `Transfer-Encoding: chunked` are decoded and passed on with a
  Content-Length.

The proxy counts the requests it passed (method, path, query, Range), including those it answers
itself, which is how the tests compare request counts with the local CountingStore's.
Everything listens on 127.0.0.1 only and is stopped by `close()`.
"""
import dataclasses
import datetime
import hashlib
import http.client
import http.server
import itertools
import os
import pathlib
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
import urllib.parse
from xml.etree import ElementTree

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

REPO = pathlib.Path(__file__).resolve().parents[2]
NODE_DIR = REPO / "tests" / "remote" / "node"
S3RVER = NODE_DIR / "node_modules" / "s3rver" / "bin" / "s3rver.js"

ACCESS_KEY = "TESSERATESTKEY"
SECRET_KEY = "tessera/test+secret=key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MIN_PART_SIZE = 5 * 1024 * 1024  # S3's floor for every part of a multipart upload but the last
MAX_CHUNKS = 1_000_000            # bound on the chunks of one `Transfer-Encoding: chunked` body
S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"


def _error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()


def _error_response(status: int, code: str, message: str):
    """(status, headers, body) of an S3 error answered by the proxy itself."""
    return status, [("Content-Type", "application/xml")], _error(code, message)


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _read_chunked(rfile) -> bytes:
    """The decoded body of a `Transfer-Encoding: chunked` request (RFC 9112 §7.1); trailers are
    read and dropped. Raises ValueError on malformed framing."""
    body = bytearray()
    for _ in range(MAX_CHUNKS):
        line = rfile.readline(65537)
        if not line.endswith(b"\n"):
            raise ValueError("truncated chunk size line")
        size = int(line.split(b";", 1)[0].strip(), 16)  # ValueError when not hex
        if size < 0:
            raise ValueError("negative chunk size")
        if size == 0:
            for _ in range(1000):  # trailer fields, up to the empty line
                if rfile.readline(65537) in (b"\r\n", b"\n", b""):
                    return bytes(body)
            raise ValueError("too many trailer fields")
        data = rfile.read(size)
        if len(data) != size or rfile.readline(65537) not in (b"\r\n", b"\n"):
            raise ValueError("truncated chunk")
        body += data
    raise ValueError("too many chunks")


@dataclasses.dataclass
class _Upload:
    """A multipart upload the proxy saw initiated and that is neither completed nor aborted."""
    bucket: str
    key: str
    upload_id: str
    initiated: datetime.datetime
    seq: int  # initiation order, to sort uploads initiated within the same clock tick
    parts: dict = dataclasses.field(default_factory=dict)  # part number -> (size, ETag without quotes)


class BucketServer:
    """s3rver behind the SigV4-checking proxy. `url` is the endpoint to give AWS_ENDPOINT_URL."""

    def __init__(self, scratch: pathlib.Path, page_size: int = 3, public_buckets=()):
        node = shutil.which("node")
        if node is None or not S3RVER.is_file():
            raise RuntimeError(f"s3rver is not installed (npm ci --prefix {NODE_DIR})")
        self.page_size = page_size
        self.public_buckets = set(public_buckets)
        self.requests = []  # (method, path, query, range) of every request passed on
        self.refused = []   # (code, path) of every request refused
        self._lock = threading.Lock()        # guards requests, refused and _uploads
        self._write_lock = threading.Lock()  # makes a conditional create's check-and-write atomic
        self._uploads = {}                   # upload id -> _Upload, for the uploads in progress
        self._upload_seq = itertools.count()
        self._write_faults = []              # [status or "reset", times, after] planned by fail_writes
        self.write_delay = 0.0               # seconds each write waits before it is performed
        self.latency = 0.0                   # seconds every request waits (an emulated round trip)
        self.upload_bandwidth = 0.0          # bytes/s a request body is taken at (0: no limit)
        self._in_flight = 0                  # requests being handled
        self.max_in_flight = 0               # the most handled at once since reset_counts
        self._last_activity = 0.0            # monotonic time a connection or request last began or ended
        self._store = scratch / "s3rver"     # s3rver's --directory (its filesystem store)
        self._backend_port = free_port()
        (scratch / "s3rver").mkdir(parents=True, exist_ok=True)
        self._proc = subprocess.Popen(
            # s3rver makes continuation tokens with DES, which OpenSSL 3 keeps in its legacy provider.
            [node, "--openssl-legacy-provider", str(S3RVER), "--address", "127.0.0.1", "--port", str(self._backend_port),
             "--directory", str(scratch / "s3rver"), "--silent", "--no-vhost-buckets"],
            stdout=subprocess.DEVNULL, stderr=open(scratch / "s3rver.log", "wb"))
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self._backend_port), timeout=1).close()
                break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self._proc.kill()
                    raise RuntimeError("s3rver did not start: " + (scratch / "s3rver.log").read_text(errors="replace"))
                time.sleep(0.02)
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def close(self):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._proc.terminate()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()

    def fail_writes(self, status=503, times=1, after=0):
        """The next `times` writes (PUT, POST, DELETE) after `after` more are answered `status`
        (503 or 500) instead of being performed; status "reset" closes their connection unanswered."""
        with self._lock:
            self._write_faults.append([status, times, after])

    def clear_write_faults(self):
        with self._lock:
            self._write_faults.clear()

    def take_write_fault(self):
        """The fault planned for this write (a status, "reset"), or None."""
        with self._lock:
            while self._write_faults:
                fault = self._write_faults[0]
                if fault[2] > 0:
                    fault[2] -= 1
                    return None
                if fault[1] > 0:
                    fault[1] -= 1
                    return fault[0]
                self._write_faults.pop(0)
            return None

    def _touch(self):
        with self._lock:
            self._last_activity = time.monotonic()

    def wait_idle(self, timeout=30.0, settle=0.25):
        """Waits until no request is being handled and none has started or ended for `settle`
        seconds: a killed client's last requests, including those still in a socket buffer when
        it died, have all been performed."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if self._in_flight == 0 and time.monotonic() - self._last_activity >= settle:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self._in_flight} request(s) still in flight after {timeout} s")
            time.sleep(0.01)

    def reset_counts(self):
        with self._lock:
            self.requests.clear()
            self.refused.clear()
            self.max_in_flight = self._in_flight

    def in_progress_uploads(self, bucket):
        """[(key, upload id)] of the multipart uploads in progress in `bucket`, as
        ListMultipartUploads orders them (by key, then initiation)."""
        with self._lock:
            uploads = sorted((u for u in self._uploads.values() if u.bucket == bucket), key=lambda u: (u.key, u.seq))
        return [(u.key, u.upload_id) for u in uploads]

    def _backend(self, method, target, body=None, headers=None):
        """(status, headers, body) of one request to s3rver."""
        conn = http.client.HTTPConnection("127.0.0.1", self._backend_port, timeout=60)
        try:
            conn.request(method, target, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    def _backend_get(self, target):
        status, _, data = self._backend("GET", target)
        return status, data

    def delimited_listing(self, bucket, query):
        """(status, XML) of a ListObjectsV2 with delimiter '/', from s3rver's undelimited listing."""
        prefix = query.get("prefix", "")
        keys, token = [], None
        for _ in range(10_000):  # bounded: a test bucket has far fewer pages
            q = {"list-type": "2", "prefix": prefix, "max-keys": "1000"}
            if token:
                q["continuation-token"] = token
            status, body = self._backend_get(f"/{bucket}?{urllib.parse.urlencode(q)}")
            if status != 200:
                return status, body
            root = ElementTree.fromstring(body)
            keys += [c.findtext("{*}Key") for c in root.findall("{*}Contents")]
            if root.findtext("{*}IsTruncated") != "true":
                break
            token = root.findtext("{*}NextContinuationToken")
        entries = sorted({("p", k[:len(prefix) + k[len(prefix):].index("/") + 1]) if "/" in k[len(prefix):] else ("k", k)
                          for k in keys}, key=lambda e: e[1])
        start = int(query.get("continuation-token", "0") or 0)
        page = entries[start:start + self.page_size]
        more = start + self.page_size < len(entries)
        esc = _xml_escape
        xml = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
               f"<Name>{bucket}</Name><Prefix>{esc(prefix)}</Prefix><Delimiter>/</Delimiter>",
               f"<KeyCount>{len(page)}</KeyCount><MaxKeys>{self.page_size}</MaxKeys>",
               f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>"]
        if more:
            xml.append(f"<NextContinuationToken>{start + self.page_size}</NextContinuationToken>")
        for kind, name in page:
            xml.append(f"<Contents><Key>{esc(name)}</Key></Contents>" if kind == "k"
                       else f"<CommonPrefixes><Prefix>{esc(name)}</Prefix></CommonPrefixes>")
        xml.append("</ListBucketResult>")
        return 200, "".join(xml).encode()

    def _object_size(self, target):
        """The size of the object at `target` (a path without query), None when s3rver has none."""
        conn = http.client.HTTPConnection("127.0.0.1", self._backend_port, timeout=60)
        try:
            conn.request("HEAD", target)
            resp = conn.getresponse()
            resp.read()
            return int(resp.getheader("Content-Length")) if resp.status == 200 else None
        finally:
            conn.close()

    # ---- writes: conditional create, multipart uploads ------------------------------------
    # Each returns (status, headers, body): s3rver's answer, or the proxy's own.

    def conditional_put(self, path, target, body, headers):
        """PutObject with `If-None-Match: *`: 412 when the object exists, else s3rver stores it.
        The check and the write hold the write lock, so racing conditional creates (PutObject or
        CompleteMultipartUpload) of one key see each other."""
        with self._write_lock:
            if self._object_size(path) is not None:
                return _error_response(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
            return self._backend("PUT", target, body, headers)

    def initiate_upload(self, bucket, key, target, body, headers):
        """CreateMultipartUpload, passed to s3rver; the upload id it answers is tracked."""
        status, resp_headers, data = self._backend("POST", target, body, headers)
        if status == 200:
            upload_id = ElementTree.fromstring(data).findtext("{*}UploadId")
            upload = _Upload(bucket, key, upload_id, datetime.datetime.now(datetime.timezone.utc), next(self._upload_seq))
            with self._lock:
                self._uploads[upload_id] = upload
        return status, resp_headers, data

    def _find_upload(self, bucket, key, upload_id):
        """The tracked upload `upload_id` of bucket/key, None when there is none (S3 answers
        NoSuchUpload when the id belongs to another key too)."""
        with self._lock:
            upload = self._uploads.get(upload_id)
        return upload if upload is not None and (upload.bucket, upload.key) == (bucket, key) else None

    def upload_part(self, bucket, key, query, target, body, headers):
        """UploadPart: NoSuchUpload for an upload not in progress, else s3rver stores the part
        and its size and ETag are recorded for the completion's checks."""
        upload = self._find_upload(bucket, key, query["uploadId"])
        if upload is None:
            return _error_response(404, "NoSuchUpload", "The specified upload does not exist.")
        try:
            number = int(query.get("partNumber", ""))
        except ValueError:
            number = 0
        if not 1 <= number <= 10_000:
            return _error_response(400, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive")
        status, resp_headers, data = self._backend("PUT", target, body, headers)
        if status == 200:
            etag = dict((k.lower(), v) for k, v in resp_headers).get("etag", "").strip('"')
            with self._lock:
                upload.parts[number] = (len(body or b""), etag)
        return status, resp_headers, data

    def complete_upload(self, bucket, key, upload_id, path, target, body, headers, if_none_match):
        """CompleteMultipartUpload, checked as S3 checks it before s3rver assembles the object;
        with `If-None-Match: *` (if_none_match) 412 when the object exists. The upload is
        forgotten once s3rver has stored the object."""
        with self._write_lock:  # one completion at a time; atomic with conditional creates
            upload = self._find_upload(bucket, key, upload_id)
            if upload is None:
                return _error_response(404, "NoSuchUpload", "The specified upload does not exist.")
            try:
                listed = [(int(p.findtext("{*}PartNumber")), (p.findtext("{*}ETag") or "").strip().strip('"'))
                          for p in ElementTree.fromstring(body or b"").findall("{*}Part")]
            except (ElementTree.ParseError, TypeError, ValueError):
                listed = []
            if not listed:
                return _error_response(400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
            with self._lock:
                parts = dict(upload.parts)
            for number, etag in listed:
                if number not in parts or etag and etag != parts[number][1]:
                    return _error_response(400, "InvalidPart", "One or more of the specified parts could not be found.")
            numbers = [n for n, _ in listed]
            if any(a >= b for a, b in zip(numbers, numbers[1:])):
                return _error_response(400, "InvalidPartOrder", "The list of parts was not in ascending order.")
            if any(parts[n][0] < MIN_PART_SIZE for n in numbers[:-1]):
                return _error_response(400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
            if if_none_match and self._object_size(path) is not None:
                return _error_response(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
            status, resp_headers, data = self._backend("POST", target, body, headers)
            if status == 200 and b"<Error>" not in data:
                with self._lock:
                    self._uploads.pop(upload_id, None)
            return status, resp_headers, data

    def abort_upload(self, bucket, key, upload_id):
        """AbortMultipartUpload (s3rver has none): forgets the upload and deletes the part files
        s3rver's filesystem store keeps in <directory>/<bucket>/._S3rver_uploads/<upload id>/."""
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None or (upload.bucket, upload.key) != (bucket, key):
                return _error_response(404, "NoSuchUpload", "The specified upload does not exist.")
            del self._uploads[upload_id]
        uploads_dir = self._store / bucket / "._S3rver_uploads"
        part_dir = uploads_dir / upload_id
        if part_dir.parent == uploads_dir:  # the id came from s3rver (hex), but stay inside the store
            shutil.rmtree(part_dir, ignore_errors=True)
        return 204, [], b""

    def list_uploads(self, bucket, query):
        """ListMultipartUploads (s3rver has none): the uploads in progress in `bucket` whose key
        starts with the `prefix` parameter, as one page (delimiter and markers are not supported)."""
        if self._backend("HEAD", f"/{urllib.parse.quote(bucket)}")[0] != 200:
            return _error_response(404, "NoSuchBucket", "The specified bucket does not exist")
        prefix = query.get("prefix", "")
        url_encoded = query.get("encoding-type") == "url"
        enc = (lambda t: urllib.parse.quote(t, safe="/")) if url_encoded else _xml_escape
        with self._lock:
            uploads = sorted((u for u in self._uploads.values() if u.bucket == bucket and u.key.startswith(prefix)),
                             key=lambda u: (u.key, u.seq))
        xml = ['<?xml version="1.0" encoding="UTF-8"?>', f'<ListMultipartUploadsResult xmlns="{S3_NS}">',
               f"<Bucket>{_xml_escape(bucket)}</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>",
               f"<Prefix>{enc(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>"]
        if url_encoded:
            xml.append("<EncodingType>url</EncodingType>")
        for u in uploads:
            initiated = u.initiated.strftime("%Y-%m-%dT%H:%M:%S.") + f"{u.initiated.microsecond // 1000:03d}Z"
            xml.append(f"<Upload><Key>{enc(u.key)}</Key><UploadId>{u.upload_id}</UploadId>"
                       f"<StorageClass>STANDARD</StorageClass><Initiated>{initiated}</Initiated></Upload>")
        xml.append("</ListMultipartUploadsResult>")
        return 200, [("Content-Type", "application/xml")], "".join(xml).encode()

    # ---- the checking proxy --------------------------------------------------------------

    def check_signature(self, method, path, headers):
        """None when the request may pass, else (S3 error code, message)."""
        auth = headers.get("Authorization")
        bucket = urllib.parse.urlsplit(path).path.lstrip("/").split("/", 1)[0]
        if auth is None:
            if bucket in self.public_buckets:
                return None
            return ("AccessDenied", "Anonymous access is not allowed to this bucket")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return ("InvalidArgument", "Unsupported Authorization Type")
        fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 "):].split(","))
        key_id, date, region, service, terminal = fields["Credential"].split("/")
        if key_id != ACCESS_KEY:
            return ("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
        signed = fields["SignedHeaders"].split(";")
        if "host" not in signed or "x-amz-date" not in signed and "date" not in signed:
            return ("AccessDenied", "host and x-amz-date must be signed")
        request = AWSRequest(method=method, url=f"http://{headers['Host']}{path}",
                             headers={h: headers.get(h, "") for h in signed})
        request.context["timestamp"] = headers.get("X-Amz-Date", "")
        if not request.context["timestamp"].startswith(date) or terminal != "aws4_request":
            return ("AuthorizationHeaderMalformed", "credential scope does not match the request date")
        signer = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), service, region)
        canonical = signer.canonical_request(request)
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        if expected != fields["Signature"]:
            return ("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.")
        return None

    def _handler_class(self):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as separate writes: without TCP_NODELAY the body waits for
            # the client's delayed ACK of the headers, 40 ms per request.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def _refuse(self, code, message):
                with server._lock:
                    server.refused.append((code, self.path))
                body = _error(code, message)
                self.send_response(403 if code != "InvalidArgument" else 400)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _send(self, status, headers, data):
                """Answers (status, headers, body): s3rver's response (hop-by-hop headers
                dropped) or the proxy's own."""
                self.send_response(status)
                for k, v in headers:
                    if k.lower() not in ("connection", "transfer-encoding", "content-length", "keep-alive"):
                        self.send_header(k, v)
                if self.command == "HEAD":
                    self.send_header("Content-Length", dict((k.lower(), v) for k, v in headers).get("content-length", "0"))
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _read_body(self):
                """The request body (None when empty), decoded when sent chunked."""
                coding = self.headers.get("Transfer-Encoding")
                if coding is not None:
                    if coding.split(",")[-1].strip().lower() != "chunked":
                        raise ValueError(f"unsupported Transfer-Encoding {coding}")
                    return _read_chunked(self.rfile) or None
                length = int(self.headers.get("Content-Length") or 0)
                if not length:
                    return None
                if not server.upload_bandwidth:
                    return self.rfile.read(length)
                # An emulated link: the body is taken at most `upload_bandwidth` bytes/s.
                parts, start = [], time.monotonic()
                while length:
                    part = self.rfile.read(min(length, 256 << 10))
                    if not part:
                        break
                    parts.append(part)
                    length -= len(part)
                    ahead = sum(map(len, parts)) / server.upload_bandwidth - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(ahead)
                return b"".join(parts)

            def _forward(self):
                try:
                    body = self._read_body()
                except ValueError as e:
                    self.close_connection = True  # the framing is lost: no further request on it
                    return self._send(*_error_response(400, "IncompleteBody", str(e)))
                problem = server.check_signature(self.command, self.path, self.headers)
                if problem:
                    return self._refuse(*problem)
                parts = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
                if self.command == "GET" and ("list-type", "2") in query and not any(k == "max-keys" for k, _ in query):
                    query.append(("max-keys", str(server.page_size)))
                with server._lock:
                    server.requests.append((self.command, parts.path, parts.query, self.headers.get("Range")))
                claimed = self.headers.get("x-amz-content-sha256", "")
                if re.fullmatch(r"[0-9a-f]{64}", claimed) and hashlib.sha256(body or b"").hexdigest() != claimed:
                    return self._send(*_error_response(400, "XAmzContentSHA256Mismatch",
                                                       "The provided 'x-amz-content-sha256' header does not match what was computed."))
                if self.command in ("PUT", "POST", "DELETE"):
                    fault = server.take_write_fault()
                    if fault == "reset":
                        self.close_connection = True
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        return
                    if fault is not None:
                        return self._send(*_error_response(fault, "ServiceUnavailable" if fault == 503 else "InternalError",
                                                           "injected fault"))
                    if server.write_delay:
                        time.sleep(server.write_delay)
                if server.latency:
                    time.sleep(server.latency)
                target = parts.path + ("?" + urllib.parse.urlencode(query) if query else "")
                q = dict(query)
                bucket, _, key = urllib.parse.unquote(parts.path).lstrip("/").partition("/")
                method = self.command
                if method == "GET" and q.get("list-type") == "2" and q.get("delimiter") == "/":
                    status, data = server.delimited_listing(bucket, q)
                    return self._send(status, [("Content-Type", "application/xml")], data)
                if method == "GET" and not key and "uploads" in q:
                    return self._send(*server.list_uploads(bucket, q))
                # s3rver checks no v4 signatures (that is this proxy's job): pass it unsigned. It
                # ignores If-None-Match on writes, which the proxy answers itself (below).
                drop = {"authorization", "host", "x-amz-security-token", "connection", "expect", "transfer-encoding"}
                if method in ("PUT", "POST"):
                    drop.add("if-none-match")
                forwarded = {k: v for k, v in self.headers.items() if k.lower() not in drop}
                if body is not None:
                    forwarded["Content-Length"] = str(len(body))
                if_none_match = self.headers.get("If-None-Match") if method in ("PUT", "POST") else None
                if if_none_match is not None and if_none_match.strip() != "*":
                    return self._send(*_error_response(501, "NotImplemented", "A header you provided implies functionality that is not implemented"))
                if key and "uploadId" in q:
                    if method == "PUT":
                        return self._send(*server.upload_part(bucket, key, q, target, body, forwarded))
                    if method == "POST":
                        return self._send(*server.complete_upload(bucket, key, q["uploadId"], parts.path, target, body,
                                                                  forwarded, if_none_match is not None))
                    if method == "DELETE":
                        return self._send(*server.abort_upload(bucket, key, q["uploadId"]))
                if key and method == "POST" and "uploads" in q:
                    return self._send(*server.initiate_upload(bucket, key, target, body, forwarded))
                if key and method == "PUT" and not query and if_none_match is not None:
                    return self._send(*server.conditional_put(parts.path, target, body, forwarded))
                if (forwarded.get("Range") or "").startswith("bytes=-"):
                    size = server._object_size(target)
                    if size is not None:
                        n = int(forwarded["Range"][len("bytes=-"):])
                        forwarded["Range"] = f"bytes={max(0, size - n)}-{size - 1}" if size else "bytes=0-"
                self._send(*server._backend(method, target, body, forwarded))

            def setup(self):
                super().setup()
                server._touch()  # a new connection: requests may follow

            def _counted(self):
                with server._lock:
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                    server._last_activity = time.monotonic()
                try:
                    self._forward()
                finally:
                    with server._lock:
                        server._in_flight -= 1
                        server._last_activity = time.monotonic()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _counted

        return Handler


def boto3_client(endpoint: str):
    """An independent S3 client (boto3) signed with the test key, path-style."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, config=Config(s3={"addressing_style": "path"}))


def upload_tree(client, bucket: str, local: pathlib.Path, prefix: str) -> int:
    """Uploads every file below `local` to s3://bucket/prefix/…; returns the number of objects."""
    n = 0
    for path in sorted(local.rglob("*")):
        if path.is_file():
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(local).as_posix()}", Body=path.read_bytes())
            n += 1
    return n


def s3_env(endpoint: str, **extra) -> dict:
    """The environment a tessera process reads the emulator with (no profile files of the user)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GS_", "GOOGLE_", "STORAGE_EMULATOR"))}
    env.update(AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               AWS_REGION="us-east-1", AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull,
               TESSERA_HTTP_RETRIES="2")
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def serve_bucket(scratch: pathlib.Path, bucket: str, page_size: int = 50):
    """A pytest fixture body: a BucketServer in `scratch` with `bucket` created, closed afterwards
    (the test fails, not skips, when the emulator is not installed)."""
    import pytest

    try:
        server = BucketServer(scratch, page_size=page_size)
    except RuntimeError as e:
        pytest.fail(str(e))
    boto3_client(server.url).create_bucket(Bucket=bucket)
    yield server
    server.close()


def bucket_objects(server, bucket: str, prefix: str) -> dict:
    """{key relative to prefix: bytes} of every object below s3://bucket/prefix (boto3 listing)."""
    client = boto3_client(server.url)
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            out[o["Key"][len(prefix) + 1:]] = client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
    return out

