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
  the proxy rewrites it to the explicit range of the last N bytes, as S3 would serve it.

The proxy counts the requests it passed (method, path, query, Range), which is how the tests
compare request counts with the local CountingStore's. Everything listens on 127.0.0.1 only and
is stopped by `close()`.
"""
import http.client
import http.server
import os
import pathlib
import shutil
import socket
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


def _error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()


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
        self._lock = threading.Lock()
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

    def reset_counts(self):
        with self._lock:
            self.requests.clear()
            self.refused.clear()

    def _backend_get(self, target):
        conn = http.client.HTTPConnection("127.0.0.1", self._backend_port, timeout=60)
        try:
            conn.request("GET", target)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

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
        esc = lambda t: t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
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
        conn = http.client.HTTPConnection("127.0.0.1", self._backend_port, timeout=60)
        try:
            conn.request("HEAD", target)
            resp = conn.getresponse()
            resp.read()
            return int(resp.getheader("Content-Length")) if resp.status == 200 else None
        finally:
            conn.close()

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

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                problem = server.check_signature(self.command, self.path, self.headers)
                if problem:
                    return self._refuse(*problem)
                parts = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
                if self.command == "GET" and ("list-type", "2") in query and not any(k == "max-keys" for k, _ in query):
                    query.append(("max-keys", str(server.page_size)))
                with server._lock:
                    server.requests.append((self.command, parts.path, parts.query, self.headers.get("Range")))
                target = parts.path + ("?" + urllib.parse.urlencode(query) if query else "")
                if self.command == "GET" and ("list-type", "2") in query and dict(query).get("delimiter") == "/":
                    status, data = server.delimited_listing(parts.path.strip("/"), dict(query))
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                # s3rver checks no v4 signatures (that is this proxy's job): pass it unsigned.
                drop = {"authorization", "host", "x-amz-security-token", "connection"}
                forwarded = {k: v for k, v in self.headers.items() if k.lower() not in drop}
                suffix = (forwarded.get("Range") or "").startswith("bytes=-")
                if suffix:
                    size = server._object_size(target)
                    if size is not None:
                        n = int(forwarded["Range"][len("bytes=-"):])
                        forwarded["Range"] = f"bytes={max(0, size - n)}-{size - 1}" if size else "bytes=0-"
                conn = http.client.HTTPConnection("127.0.0.1", server._backend_port, timeout=60)
                try:
                    conn.request(self.command, target, body=body, headers=forwarded)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length", "keep-alive"):
                        self.send_header(k, v)
                if self.command == "HEAD":
                    self.send_header("Content-Length", resp.getheader("Content-Length", "0"))
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

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
