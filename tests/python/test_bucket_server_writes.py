"""The S3 emulator's writes (tests/python/bucket_server.py) behave as Amazon S3's do where s3rver
alone does not: conditional create (`If-None-Match: *`) on PutObject and
CompleteMultipartUpload, multipart uploads with S3's checks, AbortMultipartUpload,
ListMultipartUploads and chunked request bodies. The client is boto3, signed with the test key,
so every request also passes the proxy's SigV4 check.
"""
import http.client
import itertools
import threading
import urllib.parse

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from bucket_server import ACCESS_KEY, MIN_PART_SIZE, SECRET_KEY, BucketServer, boto3_client

_bucket_names = itertools.count()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("s3-writes")


@pytest.fixture(scope="module")
def server(scratch):
    try:
        server = BucketServer(scratch)
    except RuntimeError as e:
        pytest.fail(str(e))
    yield server
    server.close()


@pytest.fixture
def client(server):
    return boto3_client(server.url)


@pytest.fixture
def bucket(client):
    """A fresh, empty bucket for each test, so uploads left in progress do not leak between tests."""
    name = f"writes-{next(_bucket_names)}"
    client.create_bucket(Bucket=name)
    return name


def if_none_match(client):
    """`client` with a signed `If-None-Match: *` on every PutObject and CompleteMultipartUpload:
    the botocore of Debian 12 predates the IfNoneMatch parameter, so the header is added just
    before signing."""
    def add_header(request, **_):
        request.headers["If-None-Match"] = "*"

    for operation in ("PutObject", "CompleteMultipartUpload"):
        client.meta.events.register(f"before-sign.s3.{operation}", add_header)
    return client


def error_of(excinfo):
    """(HTTP status, S3 error code) of a ClientError."""
    response = excinfo.value.response
    return response["ResponseMetadata"]["HTTPStatusCode"], response["Error"]["Code"]


def start_upload(client, bucket, key, sizes):
    """Initiates a multipart upload of `key` and uploads parts of the given sizes (part i is
    filled with byte i); returns (upload id, the Parts list for completion, the bytes)."""
    upload_id = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts, data = [], b""
    for number, size in enumerate(sizes, start=1):
        body = bytes([number]) * size
        etag = client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body)["ETag"]
        parts.append({"PartNumber": number, "ETag": etag})
        data += body
    return upload_id, parts, data


def test_conditional_put_creates_then_refuses(server, client, bucket):
    cond = if_none_match(boto3_client(server.url))
    cond.put_object(Bucket=bucket, Key="once", Body=b"first")
    with pytest.raises(ClientError) as e:
        cond.put_object(Bucket=bucket, Key="once", Body=b"second")
    assert error_of(e) == (412, "PreconditionFailed")
    assert client.get_object(Bucket=bucket, Key="once")["Body"].read() == b"first"
    # Without the condition a PUT still overwrites.
    client.put_object(Bucket=bucket, Key="once", Body=b"third")
    assert client.get_object(Bucket=bucket, Key="once")["Body"].read() == b"third"
    assert sum(1 for m, p, _, _ in server.requests if m == "PUT" and p == f"/{bucket}/once") == 3


def test_racing_conditional_puts_let_exactly_one_win(server, bucket):
    clients = [if_none_match(boto3_client(server.url)) for _ in range(2)]
    for round_ in range(5):
        key = f"race/{round_}"
        barrier = threading.Barrier(len(clients))
        outcomes = [None] * len(clients)

        def put(i):
            barrier.wait(timeout=30)
            try:
                clients[i].put_object(Bucket=bucket, Key=key, Body=f"writer {i}".encode())
                outcomes[i] = "won"
            except ClientError as e:
                outcomes[i] = e.response["Error"]["Code"]

        threads = [threading.Thread(target=put, args=(i,)) for i in range(len(clients))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert sorted(outcomes) == ["PreconditionFailed", "won"], outcomes
        winner = outcomes.index("won")
        assert clients[0].get_object(Bucket=bucket, Key=key)["Body"].read() == f"writer {winner}".encode()


def test_multipart_upload_of_two_parts_completes(server, client, bucket):
    upload_id, parts, data = start_upload(client, bucket, "big/object", [MIN_PART_SIZE, 1234])
    assert server.in_progress_uploads(bucket) == [("big/object", upload_id)]
    client.complete_multipart_upload(Bucket=bucket, Key="big/object", UploadId=upload_id,
                                     MultipartUpload={"Parts": parts})
    assert client.get_object(Bucket=bucket, Key="big/object")["Body"].read() == data
    assert server.in_progress_uploads(bucket) == []
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    # A completed upload is gone: completing it again is NoSuchUpload.
    with pytest.raises(ClientError) as e:
        client.complete_multipart_upload(Bucket=bucket, Key="big/object", UploadId=upload_id,
                                         MultipartUpload={"Parts": parts})
    assert error_of(e) == (404, "NoSuchUpload")


def test_a_small_part_before_the_last_is_entity_too_small(server, client, bucket):
    upload_id, parts, _ = start_upload(client, bucket, "small", [MIN_PART_SIZE - 1, 10])
    with pytest.raises(ClientError) as e:
        client.complete_multipart_upload(Bucket=bucket, Key="small", UploadId=upload_id,
                                         MultipartUpload={"Parts": parts})
    assert error_of(e) == (400, "EntityTooSmall")
    # As on S3 the upload stays in progress and no object was made.
    assert server.in_progress_uploads(bucket) == [("small", upload_id)]
    with pytest.raises(ClientError) as e:
        client.head_object(Bucket=bucket, Key="small")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # A single small part is the last part: allowed.
    upload_id, parts, data = start_upload(client, bucket, "single", [10])
    client.complete_multipart_upload(Bucket=bucket, Key="single", UploadId=upload_id, MultipartUpload={"Parts": parts})
    assert client.get_object(Bucket=bucket, Key="single")["Body"].read() == data


def test_completion_checks_the_listed_parts(client, bucket):
    upload_id, parts, _ = start_upload(client, bucket, "checked", [MIN_PART_SIZE, 10])
    for listed, code in (([parts[1], parts[0]], "InvalidPartOrder"),
                         ([parts[0], {"PartNumber": 3, "ETag": parts[1]["ETag"]}], "InvalidPart"),
                         ([parts[0], {"PartNumber": 2, "ETag": '"0123456789abcdef0123456789abcdef"'}], "InvalidPart")):
        with pytest.raises(ClientError) as e:
            client.complete_multipart_upload(Bucket=bucket, Key="checked", UploadId=upload_id,
                                             MultipartUpload={"Parts": listed})
        assert error_of(e) == (400, code)


def test_abort_forgets_the_upload_and_its_parts(server, scratch, client, bucket):
    upload_id, parts, _ = start_upload(client, bucket, "aborted", [100])
    part_dir = scratch / "s3rver" / bucket / "._S3rver_uploads" / upload_id
    assert (part_dir / "1").is_file()  # where s3rver keeps the parts, which abort must delete
    assert [u["UploadId"] for u in client.list_multipart_uploads(Bucket=bucket)["Uploads"]] == [upload_id]
    server.reset_counts()
    assert client.abort_multipart_upload(Bucket=bucket, Key="aborted", UploadId=upload_id)[
        "ResponseMetadata"]["HTTPStatusCode"] == 204
    assert ("DELETE", f"/{bucket}/aborted", f"uploadId={upload_id}", None) in server.requests
    assert not part_dir.exists()
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert server.in_progress_uploads(bucket) == []
    for call in (lambda: client.upload_part(Bucket=bucket, Key="aborted", UploadId=upload_id, PartNumber=2, Body=b"x"),
                 lambda: client.complete_multipart_upload(Bucket=bucket, Key="aborted", UploadId=upload_id,
                                                          MultipartUpload={"Parts": parts}),
                 lambda: client.abort_multipart_upload(Bucket=bucket, Key="aborted", UploadId=upload_id)):
        with pytest.raises(ClientError) as e:
            call()
        assert error_of(e) == (404, "NoSuchUpload")
    assert len(server.requests) == 5  # the abort, the listing and the three refused requests


def test_unknown_upload_ids_are_no_such_upload(client, bucket):
    with pytest.raises(ClientError) as e:
        client.upload_part(Bucket=bucket, Key="k", UploadId="0123456789abcdef", PartNumber=1, Body=b"x")
    assert error_of(e) == (404, "NoSuchUpload")
    # An upload id is valid for its own key only.
    upload_id, _, _ = start_upload(client, bucket, "k", [])
    with pytest.raises(ClientError) as e:
        client.upload_part(Bucket=bucket, Key="other", UploadId=upload_id, PartNumber=1, Body=b"x")
    assert error_of(e) == (404, "NoSuchUpload")


def test_list_multipart_uploads_filters_by_prefix_and_sorts(server, client, bucket):
    ids = {}
    for key in ("a/2", "b/1", "a/1", "a/2", "a/10"):
        ids.setdefault(key, []).append(start_upload(client, bucket, key, [])[0])
    expected = [(key, upload_id) for key in sorted(ids) for upload_id in ids[key]]
    assert server.in_progress_uploads(bucket) == expected

    def listed(**kwargs):
        result = client.list_multipart_uploads(Bucket=bucket, **kwargs)
        assert result["IsTruncated"] is False
        for upload in result.get("Uploads", []):
            assert upload["Initiated"].tzinfo is not None  # parsed as an ISO 8601 timestamp
        return [(u["Key"], u["UploadId"]) for u in result.get("Uploads", [])]

    assert listed() == expected
    assert listed(Prefix="a/") == [e for e in expected if e[0].startswith("a/")]
    assert listed(Prefix="a/1") == [("a/1", ids["a/1"][0]), ("a/10", ids["a/10"][0])]
    assert listed(Prefix="c") == []
    assert ("GET", f"/{bucket}", "uploads&prefix=a%2F", None) in server.requests
    with pytest.raises(ClientError) as e:
        client.list_multipart_uploads(Bucket="no-such-bucket")
    assert error_of(e) == (404, "NoSuchBucket")


def test_conditional_complete_refuses_an_existing_object(server, client, bucket):
    cond = if_none_match(boto3_client(server.url))
    upload_id, parts, data = start_upload(client, bucket, "made-once", [MIN_PART_SIZE, 5])
    cond.complete_multipart_upload(Bucket=bucket, Key="made-once", UploadId=upload_id, MultipartUpload={"Parts": parts})
    assert client.get_object(Bucket=bucket, Key="made-once")["Body"].read() == data
    upload_id, parts, _ = start_upload(client, bucket, "made-once", [7])
    with pytest.raises(ClientError) as e:
        cond.complete_multipart_upload(Bucket=bucket, Key="made-once", UploadId=upload_id,
                                       MultipartUpload={"Parts": parts})
    assert error_of(e) == (412, "PreconditionFailed")
    assert client.get_object(Bucket=bucket, Key="made-once")["Body"].read() == data
    client.abort_multipart_upload(Bucket=bucket, Key="made-once", UploadId=upload_id)


def test_a_chunked_body_is_stored_whole(server, client, bucket):
    body = bytes(range(256)) * 1000
    url = f"{server.url}/{bucket}/chunked"
    request = AWSRequest(method="PUT", url=url, data=body)
    S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", "us-east-1").add_auth(request)
    headers = dict(request.headers.items())
    headers["Transfer-Encoding"] = "chunked"
    netloc = urllib.parse.urlsplit(url).netloc
    conn = http.client.HTTPConnection(netloc, timeout=60)
    try:
        chunks = (body[i:i + 10_000] for i in range(0, len(body), 10_000))
        conn.request("PUT", f"/{bucket}/chunked", body=chunks, headers=headers, encode_chunked=True)
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        resp.read()
    finally:
        conn.close()
    assert client.get_object(Bucket=bucket, Key="chunked")["Body"].read() == body
