"""The S3 API (ops/s3.c over objstore.c) with Debian's boto3 and AWS CLI, and hand-built requests
for what those clients do not send over plain http (aws-chunked bodies, chunk signatures).

Every bad request must get S3's error and leave nothing behind: no object, no temp file under
<data-dir>/s3/.ty/tmp, no multipart part once the upload is aborted or completed.
"""
import base64
import binascii
import datetime
import hashlib
import hmac
import http.client
import os
import urllib.parse
import uuid

import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.credentials
import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

MB = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# fixtures and helpers (conftest.py belongs to another module: ours live here)

@pytest.fixture(scope="module", params=["embedded", "external"])
def s3server(workdir, request):
    """A server of this module's own, API only: the shared one runs jobs whose agents write
    artifacts through the store, and these tests count the store's temp files.

    "embedded": the server keeps objects under its data dir. "external": the same tests go
    through a server started with --s3-endpoint, in front of a second trainyard acting as the
    external store (s.store): every request is checked by the first, forwarded signed with the
    store's keys, and answered with the store's answer."""
    if request.param == "embedded":
        s = H.Server(os.path.join(workdir, "s3-api"), agents=0)
        s.start()
        s.store = None
        yield s
        assert s.stop(timeout=60) == 0, s.proc.tail()
        return
    store = H.Server(os.path.join(workdir, "s3-store"), agents=0)
    store.start()
    akid, secret = store.credentials()
    s = H.Server(os.path.join(workdir, "s3-front"), agents=0,
                 extra=["--s3-endpoint", store.url],
                 env={"TRAINYARD_S3_ACCESS_KEY_ID": akid, "TRAINYARD_S3_SECRET_ACCESS_KEY": secret})
    s.start()
    s.store = store
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()
    assert store.stop(timeout=60) == 0, store.proc.tail()


@pytest.fixture(scope="module")
def aws_cli_s3(s3server):
    """Debian's AWS CLI against this module's server (as conftest's aws_cli, which is bound to
    the shared server)."""
    import subprocess

    def run(*args, check=False, timeout=120):
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"AWS_SHARED_CREDENTIALS_FILE": s3server.credentials_path,
                    "AWS_CONFIG_FILE": os.path.join(s3server.data_dir, "no-such-aws-config"),
                    "AWS_PAGER": "", "AWS_EC2_METADATA_DISABLED": "true",
                    "AWS_MAX_ATTEMPTS": "1"})
        argv = [H.AWS_CLI, "--endpoint-url", s3server.url, "--region", "us-east-1",
                "--output", "json"] + list(args)
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        if check:
            assert p.returncode == 0, f"{argv} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
        return p

    return run


@pytest.fixture(scope="module")
def s3(s3server):
    return s3server.client("s3", s3={"addressing_style": "path"})


@pytest.fixture(scope="module")
def s3v4(s3server):
    """Presigns with SigV4 (botocore 1.29 presigns S3 with SigV2 unless told)."""
    return s3server.client("s3", s3={"addressing_style": "path"}, signature_version="s3v4")


@pytest.fixture
def bucket(s3):
    name = "it-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=name)
    yield name
    # best effort: empty and delete
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            for o in page.get("Contents", []):
                s3.delete_object(Bucket=name, Key=o["Key"])
        for u in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=name, Key=u["Key"], UploadId=u["UploadId"])
        s3.delete_bucket(Bucket=name)
    except ClientError:
        pass


def s3_dir(s3server):
    """Where the objects are: the external store's dir when the server forwards to one."""
    return os.path.join((s3server.store or s3server).data_dir, "s3")


def tmp_files(s3server):
    """Temp files of uploads in flight, on the server and (external) on the store."""
    out = []
    for srv in (s3server, s3server.store):
        d = os.path.join(srv.data_dir, "s3", ".ty", "tmp") if srv else None
        out += sorted(os.listdir(d)) if d and os.path.isdir(d) else []
    return out


def upload_dirs(s3server):
    d = os.path.join(s3_dir(s3server), ".ty", "mpu")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def code_of(exc_info):
    return exc_info.value.response["Error"]["Code"]


def assert_absent(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def signed_request(s3server, method, path, body=b"", headers=None, query="", keys=None,
                   content_sha=None):
    """A SigV4-signed S3 request (botocore signer) sent with http.client; returns
    (status, headers, body). content_sha: the x-amz-content-sha256 to sign (default: the
    body's SHA-256)."""
    akid, secret = keys or s3server.credentials()
    url = s3server.url + path + (("?" + query) if query else "")
    hdrs = dict(headers or {})
    hdrs["X-Amz-Content-SHA256"] = content_sha or hashlib.sha256(body).hexdigest()
    req = botocore.awsrequest.AWSRequest(method=method, url=url, data=body, headers=hdrs)
    creds = botocore.credentials.Credentials(akid, secret)
    botocore.auth.SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    return send(s3server, req.prepare()), req


def send(s3server, prepared):
    u = urllib.parse.urlsplit(prepared.url)
    conn = http.client.HTTPConnection("127.0.0.1", s3server.port, timeout=60)
    try:
        path = u.path + (("?" + u.query) if u.query else "")
        conn.request(prepared.method, path, body=prepared.body, headers=dict(prepared.headers))
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def xml_code(body):
    b = body.decode()
    return b[b.index("<Code>") + 6:b.index("</Code>")] if "<Code>" in b else None


# ---------------------------------------------------------------------------------------------
# buckets

def test_bucket_lifecycle(s3):
    name = "it-life-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=name)
    # us-east-1 answers the owner's second CreateBucket with 200 (409 BucketAlreadyOwnedByYou
    # elsewhere: test_s3_compat.py)
    s3.create_bucket(Bucket=name)
    s3.head_bucket(Bucket=name)
    assert name in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    s3.put_object(Bucket=name, Key="x", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=name)
    assert code_of(e) == "BucketNotEmpty"
    s3.delete_object(Bucket=name, Key="x")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert e.value.response["Error"]["Code"] == "404"
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=name)
    assert code_of(e) == "NoSuchBucket"


def test_create_bucket_location_constraint(s3):
    name = "it-loc-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert s3.get_bucket_location(Bucket=name)["LocationConstraint"] == "eu-west-1"
    r = s3.head_bucket(Bucket=name)
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "eu-west-1"
    s3.delete_bucket(Bucket=name)


@pytest.mark.parametrize("name", ["ab", "UPPER-case", "has_underscore", "-leading", "trailing-",
                                  "double..dot", "192.168.1.1", "x" * 64, "dot.-dash"])
def test_bad_bucket_names(s3server, name):
    s3nv = s3server.client("s3", s3={"addressing_style": "path"}, parameter_validation=False)
    with pytest.raises(ClientError) as e:
        s3nv.create_bucket(Bucket=name)
    assert code_of(e) == "InvalidBucketName"
    assert not os.path.exists(os.path.join(s3_dir(s3server), name))


# ---------------------------------------------------------------------------------------------
# objects

def test_put_get_head_delete(s3, bucket, s3server):
    body = b"hello trainyard" * 100
    r = s3.put_object(Bucket=bucket, Key="dir/obj.txt", Body=body, ContentType="text/plain",
                      Metadata={"Owner": "me", "x": "1"}, ServerSideEncryption="aws:kms",
                      CacheControl="no-cache")
    assert r["ETag"] == '"%s"' % hashlib.md5(body).hexdigest()
    assert r["ServerSideEncryption"] == "aws:kms"
    g = s3.get_object(Bucket=bucket, Key="dir/obj.txt")
    assert g["Body"].read() == body
    assert g["ContentType"] == "text/plain"
    assert g["Metadata"] == {"owner": "me", "x": "1"}
    assert g["CacheControl"] == "no-cache"
    assert g["ServerSideEncryption"] == "aws:kms"
    h = s3.head_object(Bucket=bucket, Key="dir/obj.txt")
    assert h["ContentLength"] == len(body) and h["ETag"] == r["ETag"]
    # the bytes sit at the layout the agent reads: <s3>/<bucket>/<key>
    with open(os.path.join(s3_dir(s3server), bucket, "dir", "obj.txt"), "rb") as f:
        assert f.read() == body
    s3.delete_object(Bucket=bucket, Key="dir/obj.txt")
    assert_absent(s3, bucket, "dir/obj.txt")
    assert not os.path.exists(os.path.join(s3_dir(s3server), bucket, "dir"))
    s3.delete_object(Bucket=bucket, Key="never-existed")  # S3: not an error
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="dir/obj.txt")
    assert code_of(e) == "NoSuchKey"
    assert e.value.response["Error"]["Key"] == "dir/obj.txt"


def test_odd_keys_round_trip(s3, bucket):
    keys = ["a b+c%d?e&f=g#h", "../escape", "./dot", "a//b", "trailing/", "/leading",
            "ünïcødé/ключ/鍵", "x" * 300, "sp ace/" * 10 + "end", "file", "file/child"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    for k in keys:
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == k.encode(), k
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert listed == sorted(keys, key=lambda s: s.encode())


def test_key_too_long(s3, bucket, s3server):
    s3nv = s3server.client("s3", s3={"addressing_style": "path"}, parameter_validation=False)
    before = tmp_files(s3server)
    with pytest.raises(ClientError) as e:
        s3nv.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x" * 1000)
    assert code_of(e) == "KeyTooLongError"
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    assert tmp_files(s3server) == before
    s3.put_object(Bucket=bucket, Key="k" * 1024, Body=b"ok")  # the limit itself is fine


def test_ranges(s3, bucket):
    body = bytes(range(256)) * 40
    s3.put_object(Bucket=bucket, Key="r", Body=body)
    for rng, want, cr in [("bytes=0-9", body[:10], "bytes 0-9/10240"),
                          ("bytes=10000-", body[10000:], "bytes 10000-10239/10240"),
                          ("bytes=-5", body[-5:], "bytes 10235-10239/10240"),
                          ("bytes=10230-99999", body[10230:], "bytes 10230-10239/10240")]:
        g = s3.get_object(Bucket=bucket, Key="r", Range=rng)
        assert g["Body"].read() == want, rng
        assert g["ContentRange"] == cr
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
    for bad in ["bytes=10240-", "bytes=20000-30000"]:
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=bucket, Key="r", Range=bad)
        assert code_of(e) == "InvalidRange"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 416
    # a malformed Range is ignored, as S3 does
    g = s3.get_object(Bucket=bucket, Key="r", Range="bytes=abc")
    assert g["Body"].read() == body


def test_copy_and_delete_objects(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"copy me", Metadata={"a": "1"})
    r = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == '"%s"' % hashlib.md5(b"copy me").hexdigest()
    g = s3.get_object(Bucket=bucket, Key="dst")
    assert g["Body"].read() == b"copy me" and g["Metadata"] == {"a": "1"}
    s3.copy_object(Bucket=bucket, Key="dst2", CopySource=f"{bucket}/src",
                   MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="text/x")
    g = s3.get_object(Bucket=bucket, Key="dst2")
    assert g["Metadata"] == {"b": "2"} and g["ContentType"] == "text/x"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="src", CopySource={"Bucket": bucket, "Key": "src"})
    assert code_of(e) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource={"Bucket": bucket, "Key": "nope"})
    assert code_of(e) == "NoSuchKey"
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "src"}, {"Key": "dst"},
                                                             {"Key": "missing"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["dst", "missing", "src"]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["dst2"]


# ---------------------------------------------------------------------------------------------
# listing

def test_listing_delimiter_and_pagination(s3, bucket):
    keys = [f"logs/2026/{d:02d}/part-{i}" for d in range(1, 4) for i in range(3)] + \
        ["logs/readme", "data/a", "data/b", "top1", "top2"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["data/", "logs/"]
    assert [o["Key"] for o in r["Contents"]] == ["top1", "top2"]
    assert r["KeyCount"] == 4
    r = s3.list_objects_v2(Bucket=bucket, Prefix="logs/2026/", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == [f"logs/2026/{d:02d}/" for d in (1, 2, 3)]
    assert "Contents" not in r
    # pages of 2 with a delimiter: prefixes count as entries and are never repeated
    seen, token = [], None
    while True:
        kw = dict(Bucket=bucket, Delimiter="/", Prefix="logs/", MaxKeys=1)
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw)
        seen += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        seen += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert seen == ["logs/2026/", "logs/readme"]
    # the paginator over everything, 4 keys a page
    got = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                              PaginationConfig={"PageSize": 4}):
        assert page["KeyCount"] <= 4
        got += [o["Key"] for o in page.get("Contents", [])]
    assert got == sorted(keys)
    r = s3.list_objects_v2(Bucket=bucket, StartAfter="logs/2026/02/part-2")
    assert [o["Key"] for o in r["Contents"]][:2] == ["logs/2026/03/part-0", "logs/2026/03/part-1"]
    # ListObjects v1 with markers
    got, marker = [], ""
    while True:
        r = s3.list_objects(Bucket=bucket, Marker=marker, MaxKeys=5)
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        marker = r["Contents"][-1]["Key"]
    assert got == sorted(keys)
    assert s3.list_objects_v2(Bucket=bucket, Prefix="nothing/")["KeyCount"] == 0


# ---------------------------------------------------------------------------------------------
# multipart

def test_multipart_50mb_and_ranged_download(s3, bucket, s3server, tmp_path):
    src = tmp_path / "big.bin"
    data = os.urandom(50 * MB)
    src.write_bytes(data)
    from boto3.s3.transfer import TransferConfig
    cfg = TransferConfig(multipart_threshold=8 * MB, multipart_chunksize=8 * MB)
    s3.upload_file(str(src), bucket, "big/50mb.bin", Config=cfg)
    h = s3.head_object(Bucket=bucket, Key="big/50mb.bin")
    assert h["ContentLength"] == len(data)
    parts = [data[i:i + 8 * MB] for i in range(0, len(data), 8 * MB)]
    want = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    assert h["ETag"] == f'"{want}-{len(parts)}"'
    # ranged download, compared byte for byte
    got = bytearray()
    step = 7 * MB + 123
    for off in range(0, len(data), step):
        end = min(off + step, len(data)) - 1
        got += s3.get_object(Bucket=bucket, Key="big/50mb.bin",
                             Range=f"bytes={off}-{end}")["Body"].read()
    assert bytes(got) == data
    dst = tmp_path / "down.bin"
    s3.download_file(bucket, "big/50mb.bin", str(dst), Config=cfg)
    assert dst.read_bytes() == data
    assert upload_dirs(s3server) == [] and tmp_files(s3server) == []


def test_upload_part_copy_and_managed_copy(s3, bucket, s3server):
    """UploadPartCopy (whole source and byte ranges), as boto3's managed copy and `aws s3 cp`
    between S3 URIs use it above 8 MB."""
    src = os.urandom(12 * MB + 123)
    s3.put_object(Bucket=bucket, Key="src.bin", Body=src)
    mpu = s3.create_multipart_upload(Bucket=bucket, Key="joined.bin")
    uid = mpu["UploadId"]
    p1 = s3.upload_part_copy(Bucket=bucket, Key="joined.bin", UploadId=uid, PartNumber=1,
                             CopySource={"Bucket": bucket, "Key": "src.bin"},
                             CopySourceRange=f"bytes=0-{6 * MB - 1}")
    p2 = s3.upload_part_copy(Bucket=bucket, Key="joined.bin", UploadId=uid, PartNumber=2,
                             CopySource={"Bucket": bucket, "Key": "src.bin"},
                             CopySourceRange=f"bytes={6 * MB}-{len(src) - 1}")
    assert p1["CopyPartResult"]["ETag"].strip('"') == hashlib.md5(src[:6 * MB]).hexdigest()
    p3 = s3.upload_part_copy(Bucket=bucket, Key="joined.bin", UploadId=uid, PartNumber=3,
                             CopySource=f"{bucket}/src.bin")  # whole object, string form
    for bad in ("bytes=5-2", "bytes=0", f"bytes=0-{len(src)}"):
        with pytest.raises(ClientError) as e:
            s3.upload_part_copy(Bucket=bucket, Key="joined.bin", UploadId=uid, PartNumber=4,
                                CopySource={"Bucket": bucket, "Key": "src.bin"},
                                CopySourceRange=bad)
        assert code_of(e) == "InvalidArgument", bad
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="joined.bin", UploadId=uid, PartNumber=4,
                            CopySource={"Bucket": bucket, "Key": "no-such-source"})
    assert code_of(e) == "NoSuchKey"
    parts = [{"PartNumber": i + 1, "ETag": p["CopyPartResult"]["ETag"]}
             for i, p in enumerate((p1, p2, p3))]
    s3.complete_multipart_upload(Bucket=bucket, Key="joined.bin", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    got = s3.get_object(Bucket=bucket, Key="joined.bin")["Body"].read()
    assert got == src + src
    # boto3's managed copy: multipart with UploadPartCopy above its 8 MB threshold
    s3.copy({"Bucket": bucket, "Key": "src.bin"}, bucket, "managed.bin")
    h = s3.head_object(Bucket=bucket, Key="managed.bin")
    assert h["ETag"].strip('"').endswith("-2"), h["ETag"]
    assert s3.get_object(Bucket=bucket, Key="managed.bin")["Body"].read() == src
    assert upload_dirs(s3server) == [] and tmp_files(s3server) == []


def test_multipart_errors_leave_nothing(s3, bucket, s3server):
    key = "mp/bad"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    p1 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=b"a" * (5 * MB))
    p2 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=2, Body=b"b" * 100)
    p3 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=3, Body=b"c" * 100)
    listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=up)["Parts"]
    assert [(p["PartNumber"], p["Size"]) for p in listed] == [(1, 5 * MB), (2, 100), (3, 100)]
    assert up in [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket)["Uploads"]]

    def complete(parts):
        with pytest.raises(ClientError) as e:
            s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                         MultipartUpload={"Parts": parts})
        return code_of(e)

    # truncated: a part that was never uploaded
    assert complete([{"PartNumber": 1, "ETag": p1["ETag"]},
                     {"PartNumber": 4, "ETag": p3["ETag"]}]) == "InvalidPart"
    assert complete([{"PartNumber": 1, "ETag": p2["ETag"]}]) == "InvalidPart"
    assert complete([{"PartNumber": 2, "ETag": p2["ETag"]},
                     {"PartNumber": 1, "ETag": p1["ETag"]}]) == "InvalidPartOrder"
    assert complete([{"PartNumber": 2, "ETag": p2["ETag"]},
                     {"PartNumber": 3, "ETag": p3["ETag"]}]) == "EntityTooSmall"
    assert_absent(s3, bucket, key)
    s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=up)
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key=key, UploadId=up)
    assert code_of(e) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=b"x")
    assert code_of(e) == "NoSuchUpload"
    assert_absent(s3, bucket, key)
    assert upload_dirs(s3server) == [] and tmp_files(s3server) == []
    # a good one: 5 MiB + a short last part
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ContentType="application/x-y",
                                    Metadata={"m": "v"})["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1,
                        Body=b"a" * (5 * MB))["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=2, Body=b"tail")["ETag"]
    r = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert r["ETag"].endswith('-2"')
    g = s3.get_object(Bucket=bucket, Key=key)
    assert g["ContentType"] == "application/x-y" and g["Metadata"] == {"m": "v"}
    assert g["Body"].read() == b"a" * (5 * MB) + b"tail"
    assert upload_dirs(s3server) == [] and tmp_files(s3server) == []


# ---------------------------------------------------------------------------------------------
# integrity: checksums, Content-MD5, payload hashes, aws-chunked bodies

def test_checksums_verified_and_returned(s3, bucket, s3server):
    body = b"checksum me" * 1000
    sha = base64.b64encode(hashlib.sha256(body).digest()).decode()
    crc = base64.b64encode(binascii.crc32(body).to_bytes(4, "big")).decode()
    r = s3.put_object(Bucket=bucket, Key="ck", Body=body, ChecksumSHA256=sha)
    assert r["ChecksumSHA256"] == sha
    g = s3.get_object(Bucket=bucket, Key="ck", ChecksumMode="ENABLED")
    assert g["ChecksumSHA256"] == sha and g["Body"].read() == body
    (st, hd, _), _ = signed_request(s3server, "PUT", f"/{bucket}/ck32", body,
                                    headers={"x-amz-checksum-crc32": crc})
    assert st == 200 and hd.get("x-amz-checksum-crc32") == crc
    before = tmp_files(s3server)
    bad = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="ck-bad", Body=body, ChecksumSHA256=bad)
    assert code_of(e) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5-bad", Body=body,
                      ContentMD5=base64.b64encode(hashlib.md5(b"other").digest()).decode())
    assert code_of(e) == "BadDigest"
    (st, _, b), _ = signed_request(s3server, "PUT", f"/{bucket}/crc-bad", body,
                                   headers={"x-amz-checksum-crc32": "AAAAAA=="})
    assert st == 400 and xml_code(b) == "BadDigest"
    for k in ("ck-bad", "md5-bad", "crc-bad"):
        assert_absent(s3, bucket, k)
    assert tmp_files(s3server) == before


def test_content_sha256_mismatch(s3, bucket, s3server):
    body = b"payload"
    (st, _, b), _ = signed_request(s3server, "PUT", f"/{bucket}/sha", body,
                                   content_sha=hashlib.sha256(b"not the payload").hexdigest())
    assert st == 400 and xml_code(b) == "XAmzContentSHA256Mismatch"
    assert_absent(s3, bucket, "sha")
    (st, _, _), _ = signed_request(s3server, "PUT", f"/{bucket}/unsigned", body,
                                   content_sha="UNSIGNED-PAYLOAD")
    assert st == 200
    assert s3.get_object(Bucket=bucket, Key="unsigned")["Body"].read() == body


def chunked_body(chunks, trailer=None, sign=None):
    """aws-chunked framing; sign=(key, seed, amz_date, scope) adds chunk signatures."""
    out, prev = b"", sign[1] if sign else None
    empty = hashlib.sha256(b"").hexdigest()
    for c in list(chunks) + [b""]:
        ext = b""
        if sign:
            sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", sign[2], sign[3], prev, empty,
                             hashlib.sha256(c).hexdigest()])
            prev = hmac.new(sign[0], sts.encode(), hashlib.sha256).hexdigest()
            ext = b";chunk-signature=" + prev.encode()
        out += b"%x" % len(c) + ext + b"\r\n" + c
        if c:
            out += b"\r\n"
    if trailer:
        out += trailer.encode() + b"\r\n"
    return out + b"\r\n"


def test_aws_chunked_unsigned_trailer(s3, bucket, s3server):
    data = os.urandom(200000)
    crc = base64.b64encode(binascii.crc32(data).to_bytes(4, "big")).decode()
    chunks = [data[:65536], data[65536:131072], data[131072:]]
    hdrs = {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
            "x-amz-trailer": "x-amz-checksum-crc32", "Content-Type": "application/octet-stream"}
    body = chunked_body(chunks, trailer=f"x-amz-checksum-crc32:{crc}")
    (st, hd, b), _ = signed_request(s3server, "PUT", f"/{bucket}/chunked", body, headers=hdrs,
                                    content_sha="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert st == 200, b
    assert hd["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    g = s3.get_object(Bucket=bucket, Key="chunked", ChecksumMode="ENABLED")
    assert g["Body"].read() == data
    assert g.get("ContentEncoding") is None  # aws-chunked is framing, not the object's
    before = tmp_files(s3server)
    body = chunked_body(chunks, trailer="x-amz-checksum-crc32:AAAAAA==")
    (st, _, b), _ = signed_request(s3server, "PUT", f"/{bucket}/chunked-bad", body, headers=hdrs,
                                   content_sha="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert st == 400 and xml_code(b) == "BadDigest"
    # truncated framing
    body = chunked_body(chunks, trailer=f"x-amz-checksum-crc32:{crc}")[:100000]
    (st, _, b), _ = signed_request(s3server, "PUT", f"/{bucket}/chunked-cut", body, headers=hdrs,
                                   content_sha="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert st == 400 and xml_code(b) == "IncompleteBody"
    for k in ("chunked-bad", "chunked-cut"):
        assert_absent(s3, bucket, k)
    assert tmp_files(s3server) == before


def _signing_key(secret, date, region="us-east-1", service="s3"):
    k = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def _streaming_signed_put(s3server, bucket, key, chunks, tamper=False):
    akid, secret = s3server.credentials()
    now = datetime.datetime.utcnow()
    amz_date, date = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    scope = f"{date}/us-east-1/s3/aws4_request"
    total = sum(len(c) for c in chunks)
    hdrs = {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(total)}
    # the seed signature: sign headers with the streaming payload constant
    req = botocore.awsrequest.AWSRequest(method="PUT", url=f"{s3server.url}/{bucket}/{key}",
                                         data=b"", headers=dict(hdrs))
    req.headers["X-Amz-Content-SHA256"] = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    req.context["timestamp"] = amz_date
    signer = botocore.auth.SigV4Auth(botocore.credentials.Credentials(akid, secret), "s3",
                                     "us-east-1")
    signer._modify_request_before_signing(req)
    canonical = signer.canonical_request(req)
    sts = signer.string_to_sign(req, canonical)
    seed = signer.signature(sts, req)
    signer._inject_signature_to_request(req, seed)
    body = chunked_body(chunks, sign=(_signing_key(secret, date), seed, amz_date, scope))
    if tamper:
        body = body.replace(chunks[0][:16], bytes(16), 1)
    req.data = body
    p = req.prepare()
    p.headers["Content-Length"] = str(len(body))
    return send(s3server, p)


def test_streaming_signed_chunks(s3, bucket, s3server):
    data = os.urandom(150000)
    chunks = [data[:65536], data[65536:131072], data[131072:]]
    st, hd, b = _streaming_signed_put(s3server, bucket, "signed", chunks)
    assert st == 200, b
    assert s3.get_object(Bucket=bucket, Key="signed")["Body"].read() == data
    before = tmp_files(s3server)
    st, _, b = _streaming_signed_put(s3server, bucket, "signed-bad", chunks, tamper=True)
    assert st == 403 and xml_code(b) == "SignatureDoesNotMatch"
    assert_absent(s3, bucket, "signed-bad")
    assert tmp_files(s3server) == before


# ---------------------------------------------------------------------------------------------
# authentication

def test_signature_errors(s3server, bucket):
    akid, secret = s3server.credentials()
    # the last character changed (one secret in 64 already ends in "x": then the "bad" one was
    # the good one and this test failed)
    wrong = secret[:-1] + ("y" if secret.endswith("x") else "x")
    bad = s3server.client("s3", s3={"addressing_style": "path"}, keys=(akid, wrong))
    with pytest.raises(ClientError) as e:
        bad.list_objects_v2(Bucket=bucket)
    err = e.value.response["Error"]
    assert err["Code"] == "SignatureDoesNotMatch"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert err["StringToSign"].startswith("AWS4-HMAC-SHA256\n")
    assert err["CanonicalRequest"].startswith("GET\n/" + bucket)
    unknown = s3server.client("s3", s3={"addressing_style": "path"}, keys=("AKIANOSUCHKEY0000000",
                                                                         "x" * 40))
    with pytest.raises(ClientError) as e:
        unknown.list_buckets()
    assert code_of(e) == "InvalidAccessKeyId"
    conn = http.client.HTTPConnection("127.0.0.1", s3server.port, timeout=10)
    conn.request("GET", f"/{bucket}")
    r = conn.getresponse()
    assert r.status == 403 and xml_code(r.read()) == "AccessDenied"
    conn.close()


def test_presigned_get_put(s3v4, bucket, s3server):
    import urllib.request
    url = s3v4.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre/put"},
                                      ExpiresIn=300)
    req = urllib.request.Request(url, data=b"via presigned put", method="PUT",
                                 headers={"Content-Type": ""})
    assert urllib.request.urlopen(req).status == 200
    url = s3v4.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/put"},
                                      ExpiresIn=300)
    assert urllib.request.urlopen(url).read() == b"via presigned put"
    tampered = url.replace("pre/put", "pre/other")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(tampered)
    assert e.value.code == 403 and xml_code(e.value.read()) == "SignatureDoesNotMatch"


# ---------------------------------------------------------------------------------------------
# files written beside the API (the agent's model.tar.gz) are objects

def test_files_written_by_the_agent_are_served(s3, bucket, s3server):
    p = os.path.join(s3_dir(s3server), bucket, "out", "job-1", "output")
    os.makedirs(p)
    with open(os.path.join(p, "model.tar.gz"), "wb") as f:
        f.write(b"model bytes")
    g = s3.get_object(Bucket=bucket, Key="out/job-1/output/model.tar.gz")
    assert g["Body"].read() == b"model bytes"
    assert g["ETag"] == '"%s"' % hashlib.md5(b"model bytes").hexdigest()
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="out/")["Contents"]]
    assert keys == ["out/job-1/output/model.tar.gz"]
    # a bucket directory made by hand is a bucket, with its files
    hand = "it-hand-" + uuid.uuid4().hex[:8]
    os.makedirs(os.path.join(s3_dir(s3server), hand, "train"))
    with open(os.path.join(s3_dir(s3server), hand, "train", "part-0.csv"), "w") as f:
        f.write("a,b\n")
    assert hand in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=hand)["Contents"]] == ["train/part-0.csv"]


# ---------------------------------------------------------------------------------------------
# the AWS CLI

def test_aws_cli_s3(aws_cli_s3, s3server, tmp_path, s3):
    aws_cli = aws_cli_s3
    name = "it-cli-" + uuid.uuid4().hex[:8]
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("alpha\n")
    big = os.urandom(9 * MB)
    (src / "sub" / "big.bin").write_bytes(big)
    aws_cli("s3", "mb", f"s3://{name}", check=True)
    aws_cli("s3", "cp", str(src / "a.txt"), f"s3://{name}/one/a.txt", check=True)
    aws_cli("s3", "sync", str(src), f"s3://{name}/sync/", check=True)
    ls = aws_cli("s3", "ls", f"s3://{name}/", check=True).stdout
    assert "PRE one/" in ls and "PRE sync/" in ls
    ls = aws_cli("s3", "ls", "--recursive", f"s3://{name}/", check=True).stdout
    assert "sync/sub/big.bin" in ls and str(len(big)) in ls
    dst = tmp_path / "dst"
    aws_cli("s3", "sync", f"s3://{name}/sync/", str(dst), check=True)
    assert (dst / "sub" / "big.bin").read_bytes() == big
    assert (dst / "a.txt").read_text() == "alpha\n"
    url = aws_cli("s3", "presign", f"s3://{name}/one/a.txt", check=True).stdout.strip()
    import urllib.request
    assert urllib.request.urlopen(url).read() == b"alpha\n"
    h = aws_cli("s3api", "head-object", "--bucket", name, "--key", "one/a.txt", check=True)
    assert '"ContentLength": 6' in h.stdout
    bad = aws_cli("s3api", "get-object", "--bucket", name, "--key", "nope", str(tmp_path / "x"))
    assert bad.returncode != 0 and "NoSuchKey" in bad.stderr
    aws_cli("s3", "rm", "--recursive", f"s3://{name}/", check=True)
    aws_cli("s3", "rb", f"s3://{name}", check=True)
    assert name not in aws_cli("s3", "ls", check=True).stdout


# ---------------------------------------------------------------------------------------------
# STS

def test_sts_get_caller_identity(s3server):
    sts = s3server.client("sts")
    r = sts.get_caller_identity()
    assert r["Account"] == "000000000000"
    assert r["Arn"].startswith("arn:aws:iam::000000000000:")
    assert r["UserId"]


def test_sts_errors_are_xml(s3server):
    akid, secret = s3server.credentials()
    bad = s3server.client("sts", keys=(akid, secret + "x"))
    with pytest.raises(ClientError) as e:
        bad.get_caller_identity()
    assert code_of(e) == "SignatureDoesNotMatch"
    unknown = s3server.client("sts", keys=("AKIANOSUCHKEY0000000", "x" * 40))
    with pytest.raises(ClientError) as e:
        unknown.get_caller_identity()
    assert code_of(e) == "InvalidClientTokenId"
    with pytest.raises(ClientError) as e:
        s3server.client("sts").get_session_token()
    assert code_of(e) == "InvalidAction"


def test_virtual_host_style(s3server, bucket, s3):
    """<bucket>.localhost:<port> names the bucket in the Host header."""
    (st, _, _), _ = signed_request(s3server, "PUT", f"/{bucket}/vh/key", b"via path style")
    assert st == 200
    akid, secret = s3server.credentials()
    req = botocore.awsrequest.AWSRequest(
        method="GET", url=f"http://{bucket}.localhost:{s3server.port}/vh/key",
        headers={"X-Amz-Content-SHA256": hashlib.sha256(b"").hexdigest(),
                 "Host": f"{bucket}.localhost:{s3server.port}"})
    botocore.auth.SigV4Auth(botocore.credentials.Credentials(akid, secret), "s3",
                            "us-east-1").add_auth(req)
    p = req.prepare()
    conn = http.client.HTTPConnection("127.0.0.1", s3server.port, timeout=10)
    conn.request("GET", "/vh/key", headers=dict(p.headers))
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200 and body == b"via path style", body
    conn.close()


def test_presigned_response_overrides(s3v4, s3, bucket):
    import urllib.request
    s3.put_object(Bucket=bucket, Key="dl.bin", Body=b"payload", ContentType="application/x-a")
    url = s3v4.generate_presigned_url("get_object", Params={
        "Bucket": bucket, "Key": "dl.bin", "ResponseContentType": "text/plain",
        "ResponseContentDisposition": 'attachment; filename="x.txt"'}, ExpiresIn=60)
    r = urllib.request.urlopen(url)
    assert r.read() == b"payload"
    assert r.headers["Content-Type"] == "text/plain"
    assert r.headers["Content-Disposition"] == 'attachment; filename="x.txt"'
    assert s3.head_object(Bucket=bucket, Key="dl.bin")["ContentType"] == "application/x-a"


def test_concurrent_puts_and_gets_stay_consistent(s3server, bucket):
    """A GET racing a PUT of the same key returns one version whole, with that version's ETag."""
    import threading
    errors = []

    def worker(i):
        cl = s3server.client("s3", s3={"addressing_style": "path"})
        for j in range(25):
            key = ["same", f"own-{i}", "same/child"][j % 3]
            body = os.urandom(1000 + (i * 37 + j) % 5000)
            try:
                cl.put_object(Bucket=bucket, Key=key, Body=body)
                g = cl.get_object(Bucket=bucket, Key=key)
                got = g["Body"].read()
                if g["ETag"].strip('"') != hashlib.md5(got).hexdigest():
                    errors.append(("etag does not match the bytes", key))
            except ClientError as e:  # a concurrent delete is the only acceptable error
                errors.append(repr(e))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    assert tmp_files(s3server) == []


def test_expected_bucket_owner_is_checked(s3, bucket):
    """x-amz-expected-bucket-owner (and x-amz-source-expected-bucket-owner on a copy) naming
    another account is S3's 403 AccessDenied, and nothing is written: the confused-deputy check
    tools send (issue 36, finding 8). Before, both answered 200 and the write happened."""
    me = "000000000000"  # the server's account (--account-id's default)
    other = "111122223333"
    s3.put_object(Bucket=bucket, Key="owned/src", Body=b"src", ExpectedBucketOwner=me)
    assert s3.get_object(Bucket=bucket, Key="owned/src",
                         ExpectedBucketOwner=me)["Body"].read() == b"src"
    for call in (
            lambda: s3.put_object(Bucket=bucket, Key="owned/new", Body=b"x",
                                  ExpectedBucketOwner=other),
            lambda: s3.get_object(Bucket=bucket, Key="owned/src", ExpectedBucketOwner=other),
            lambda: s3.list_objects_v2(Bucket=bucket, ExpectedBucketOwner=other),
            lambda: s3.delete_object(Bucket=bucket, Key="owned/src", ExpectedBucketOwner=other),
            lambda: s3.copy_object(Bucket=bucket, Key="owned/copy",
                                   CopySource={"Bucket": bucket, "Key": "owned/src"},
                                   ExpectedSourceBucketOwner=other)):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "AccessDenied", e.value.response
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="owned/")["Contents"]]
    assert keys == ["owned/src"]


def test_batch_delete_checks_every_key(s3server, s3, bucket):
    """DeleteObjects authorises s3:DeleteObject on each key, as S3 does (issue 37, finding 1:
    the batch was checked once against bucket/* and every key deleted unchecked, so a user
    denied protected/* deleted it with a batch naming it, and one allowed only mine/* deleted
    anywhere). Embedded store: refused keys are AccessDenied entries of Errors and the rest
    are deleted. External store (the request is forwarded whole): one refused key refuses the
    request, and nothing is deleted."""
    import json as _json
    import uuid as _uuid
    iam = s3server.client("iam")
    user = "bd-" + _uuid.uuid4().hex[:8]
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="p", PolicyDocument=_json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "s3:*", "Resource": [
                f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]},
            {"Effect": "Deny", "Action": "s3:DeleteObject",
             "Resource": f"arn:aws:s3:::{bucket}/protected/*"}]}))
    k = iam.create_access_key(UserName=user)["AccessKey"]
    us3 = s3server.client("s3", s3={"addressing_style": "path"},
                          keys=(k["AccessKeyId"], k["SecretAccessKey"]))
    for key in ("protected/a", "open/b", "open/c"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    with pytest.raises(ClientError) as e:
        us3.delete_object(Bucket=bucket, Key="protected/a")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    objs = [{"Key": "protected/a"}, {"Key": "open/b"}]
    if s3server.store is None:
        r = us3.delete_objects(Bucket=bucket, Delete={"Objects": objs})
        assert [d["Key"] for d in r.get("Deleted", [])] == ["open/b"], r
        assert [(x["Key"], x["Code"]) for x in r["Errors"]] == [("protected/a", "AccessDenied")]
        left = ["open/c", "protected/a"]
    else:
        with pytest.raises(ClientError) as e:
            us3.delete_objects(Bucket=bucket, Delete={"Objects": objs})
        assert e.value.response["Error"]["Code"] == "AccessDenied"
        left = ["open/b", "open/c", "protected/a"]
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    assert keys == left, keys
    # a caller with no DeleteObject anywhere deletes nothing, key by key
    iam.put_user_policy(UserName=user, PolicyName="p", PolicyDocument=_json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "s3:DeleteObject",
             "Resource": f"arn:aws:s3:::{bucket}/mine/*"}]}))
    s3.put_object(Bucket=bucket, Key="mine/x", Body=b"x")
    if s3server.store is None:
        r = H.wait_for(lambda: (lambda rr: rr if rr.get("Deleted") else None)(
            us3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "mine/x"},
                                                                 {"Key": "open/c"}]})),
            5, "the new policy in force")
        assert [d["Key"] for d in r["Deleted"]] == ["mine/x"], r
        assert [(x["Key"], x["Code"]) for x in r["Errors"]] == [("open/c", "AccessDenied")]
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    assert "open/c" in keys and "protected/a" in keys
