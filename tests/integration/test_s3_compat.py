"""S3 behaviour that clients and conformance suites rely on, beyond test_s3.py: SigV2 (boto3's
default presigned URLs in us-east-1, `aws s3 presign`, the "AWS key:signature" header) under the
same IAM authorization as SigV4, and the answers AWS gives for FetchOwner, EncodingType=url,
empty user metadata, X-Amz-Expires, repeated and checksummed multipart completion,
CreateBucket of an owned bucket; partNumber reads, user metadata bytes, conditional writes,
CRC32/CRC32C/SHA-1 composites, a part sent twice, upload owners and keys that are not UTF-8.
Buckets are named cpt-* and s3g-*.
"""
import base64
import email.utils
import hashlib
import hmac
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
from botocore.exceptions import ClientError

import tyhelpers as H


@pytest.fixture(scope="module")
def s3server(workdir):
    """A server of this module's own, API only (no agents)."""
    s = H.Server(os.path.join(workdir, "s3-compat"), agents=0)
    s.start()
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()


@pytest.fixture(scope="module")
def s3(s3server):
    return s3server.client("s3", region="us-east-1", s3={"addressing_style": "path"})


@pytest.fixture
def bucket(s3):
    name = "cpt-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=name)
    return name


def xml_code(body):
    b = body.decode()
    return b[b.index("<Code>") + 6:b.index("</Code>")] if "<Code>" in b else None


def raw(server, method, path, headers=None, body=b""):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# SigV2

def test_boto3_default_presigned_url_is_sigv2_and_works(s3, bucket):
    s3.put_object(Bucket=bucket, Key="a b/c+d.txt", Body=b"hello v2")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "a b/c+d.txt"},
                                    ExpiresIn=120)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert set(q) >= {"AWSAccessKeyId", "Signature", "Expires"}, url
    assert urllib.request.urlopen(url).read() == b"hello v2"
    # a sub-resource is signed too (response-* overrides)
    url = s3.generate_presigned_url("get_object", Params={
        "Bucket": bucket, "Key": "a b/c+d.txt", "ResponseContentType": "text/x-v2"},
        ExpiresIn=120)
    r = urllib.request.urlopen(url)
    assert r.read() == b"hello v2" and r.headers["Content-Type"] == "text/x-v2"
    # tampering with the key, the expiry or the signature is refused
    for bad in (url.replace("c%2Bd", "c%2Be"),
                url.replace("Expires=", "Expires=1"),
                url.replace("Signature=", "Signature=A")):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(bad)
        assert e.value.code == 403, bad
        assert xml_code(e.value.read()) in ("SignatureDoesNotMatch", "AccessDenied"), bad


def test_sigv2_presigned_put_and_expiry(s3, bucket, s3server):
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "up"},
                                    ExpiresIn=120)
    req = urllib.request.Request(url, data=b"put via v2", method="PUT",
                                 headers={"Content-Type": ""})
    assert urllib.request.urlopen(req).status == 200
    assert s3.get_object(Bucket=bucket, Key="up")["Body"].read() == b"put via v2"
    # a URL whose Expires is past: 403 AccessDenied "Request has expired"
    creds = botocore.credentials.Credentials(*s3server.credentials())
    req = botocore.awsrequest.AWSRequest(method="GET", url=f"{s3server.url}/{bucket}/up")
    signer = botocore.auth.HmacV1QueryAuth(creds, expires=-10)
    signer.add_auth(req)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req.url)
    body = e.value.read()
    assert e.value.code == 403 and xml_code(body) == "AccessDenied", body
    assert b"Request has expired" in body


def test_aws_cli_presign(aws_cli, s3server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="cli.txt", Body=b"from cli presign")
    p = aws_cli("s3", "presign", f"s3://{bucket}/cli.txt", "--expires-in", "60", srv=s3server,
                check=True)
    url = p.stdout.strip()
    # the CLI's form depends on its version (SigV2 in older ones, SigV4 in Debian's): both work
    assert "AWSAccessKeyId=" in url or "X-Amz-Signature=" in url, url
    assert urllib.request.urlopen(url).read() == b"from cli presign"


def test_sigv2_authorization_header(s3server, bucket):
    cl = s3server.client("s3", region="us-east-1", s3={"addressing_style": "path"},
                         signature_version="s3")
    cl.put_object(Bucket=bucket, Key="hdr", Body=b"header v2", Metadata={"k": "v"})
    g = cl.get_object(Bucket=bucket, Key="hdr")
    assert g["Body"].read() == b"header v2" and g["Metadata"] == {"k": "v"}
    assert [o["Key"] for o in cl.list_objects(Bucket=bucket)["Contents"]] == ["hdr"]
    bad = s3server.client("s3", region="us-east-1", s3={"addressing_style": "path"},
                          signature_version="s3",
                          keys=(s3server.credentials()[0], "wrong-secret"))
    with pytest.raises(ClientError) as e:
        bad.get_object(Bucket=bucket, Key="hdr")
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    # a Date more than 15 minutes off: RequestTimeTooSkewed; no Date at all: AccessDenied
    akid, secret = s3server.credentials()
    creds = botocore.credentials.Credentials(akid, secret)
    stale = email.utils.formatdate(time.time() - 3600, usegmt=True)
    sts = f"GET\n\n\n{stale}\n/{bucket}/hdr"
    sig = base64.b64encode(hmac.new(secret.encode(), sts.encode(), "sha1").digest()).decode()
    st, body = raw(s3server, "GET", f"/{bucket}/hdr",
                   {"Date": stale, "Authorization": f"AWS {akid}:{sig}"})
    assert st == 403 and xml_code(body) == "RequestTimeTooSkewed", body
    req = botocore.awsrequest.AWSRequest(method="GET", url=f"{s3server.url}/{bucket}/hdr")
    botocore.auth.HmacV1Auth(creds).add_auth(req)
    st, body = raw(s3server, "GET", f"/{bucket}/hdr",
                   {"Authorization": req.headers["Authorization"]})
    assert st == 403 and xml_code(body) == "AccessDenied", body
    st, body = raw(s3server, "GET", f"/{bucket}/hdr", {"Authorization": "AWS nocolon"})
    assert st == 400 and xml_code(body) == "InvalidArgument", body


def test_sigv2_goes_through_iam(s3server, s3, bucket):
    """A SigV2 request is authorized as its SigV4 twin: an IAM user allowed only to read gets
    its GET and is refused its PUT (AccessDenied), both signed with SigV2."""
    iam = s3server.client("iam", region="us-east-1")
    user = "cpt-" + uuid.uuid4().hex[:8]
    iam.create_user(UserName=user)
    k = iam.create_access_key(UserName=user)["AccessKey"]
    iam.put_user_policy(UserName=user, PolicyName="read", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                       "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
    s3.put_object(Bucket=bucket, Key="r", Body=b"readable")
    keys = (k["AccessKeyId"], k["SecretAccessKey"])
    v2 = s3server.client("s3", region="us-east-1", s3={"addressing_style": "path"},
                         signature_version="s3", keys=keys)
    assert v2.get_object(Bucket=bucket, Key="r")["Body"].read() == b"readable"
    with pytest.raises(ClientError) as e:
        v2.put_object(Bucket=bucket, Key="w", Body=b"x")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    url = v2.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "w"},
                                    ExpiresIn=60)
    with pytest.raises(urllib.error.HTTPError) as e2:
        urllib.request.urlopen(urllib.request.Request(url, data=b"x", method="PUT",
                                                      headers={"Content-Type": ""}))
    assert e2.value.code == 403 and xml_code(e2.value.read()) == "AccessDenied"
    # an unknown key: InvalidAccessKeyId
    ghost = s3server.client("s3", region="us-east-1", s3={"addressing_style": "path"},
                            signature_version="s3", keys=("AKIAGHOSTGHOSTGHOST1", "x"))
    with pytest.raises(ClientError) as e3:
        ghost.get_object(Bucket=bucket, Key="r")
    assert e3.value.response["Error"]["Code"] == "InvalidAccessKeyId"


# ---------------------------------------------------------------------------------------------
# listings, metadata, presigned expiry, CreateBucket

def test_list_v2_fetch_owner(s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"1")
    assert "Owner" not in s3.list_objects_v2(Bucket=bucket)["Contents"][0]
    c = s3.list_objects_v2(Bucket=bucket, FetchOwner=True)["Contents"][0]
    assert c["Owner"]["ID"], c
    assert s3.list_objects(Bucket=bucket)["Contents"][0]["Owner"]["ID"] == c["Owner"]["ID"]


def test_list_v1_encoding_url_prefix_as_sent(s3, bucket):
    """ListObjects (v1) with encoding-type=url: keys, markers, delimiters and common prefixes are
    encoded, Prefix comes back as sent. boto3 asks for url encoding itself on list_objects and
    then decodes those members but not Prefix, so its user sees every one of them decoded."""
    key = "dir a/b+c&d.txt"
    s3.put_object(Bucket=bucket, Key=key, Body=b"1")
    r = s3.list_objects(Bucket=bucket, Prefix="dir a/")
    assert r["Prefix"] == "dir a/" and [c["Key"] for c in r["Contents"]] == [key], r
    r = s3.list_objects(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["dir a/"]
    r = s3.list_objects_v2(Bucket=bucket, Prefix="dir a/")
    assert r["Prefix"] == "dir a/" and [c["Key"] for c in r["Contents"]] == [key]
    # asked for explicitly, botocore leaves the encoded members to the caller
    r = s3.list_objects(Bucket=bucket, Prefix="dir a/", EncodingType="url")
    assert r["Prefix"] == "dir a/" and [c["Key"] for c in r["Contents"]] == [
        "dir%20a/b%2Bc%26d.txt"], r
    r = s3.list_objects_v2(Bucket=bucket, Prefix="dir a/", EncodingType="url")
    assert r["Prefix"] == "dir%20a/", r


def test_empty_user_metadata_kept(s3, bucket):
    s3.put_object(Bucket=bucket, Key="m", Body=b"1", Metadata={"empty": "", "full": "x"})
    assert s3.head_object(Bucket=bucket, Key="m")["Metadata"] == {"empty": "", "full": "x"}
    assert s3.get_object(Bucket=bucket, Key="m")["Metadata"] == {"empty": "", "full": "x"}


def test_presigned_v4_expires_zero_and_malformed(s3server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="e", Body=b"1")
    # signed by botocore's SigV4 query signer itself (its CRT-backed presigner refuses 0)
    creds = botocore.credentials.Credentials(*s3server.credentials())
    req = botocore.awsrequest.AWSRequest(method="GET", url=f"{s3server.url}/{bucket}/e")
    botocore.auth.S3SigV4QueryAuth(creds, "s3", "us-east-1", expires=0).add_auth(req)
    url = req.url
    v4 = s3server.client("s3", region="us-east-1", s3={"addressing_style": "path"},
                         signature_version="s3v4")
    assert "X-Amz-Expires=0" in url
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url)
    body = e.value.read()
    assert e.value.code == 403 and xml_code(body) == "AccessDenied", body
    # malformed X-Amz-Expires: 400 AuthorizationQueryParametersError, as AWS answers
    good = v4.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "e"},
                                     ExpiresIn=60)
    assert urllib.request.urlopen(good).read() == b"1"
    for bad in ("-1", "abc", "604801"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(good.replace("X-Amz-Expires=60", "X-Amz-Expires=" + bad))
        body = e.value.read()
        assert e.value.code == 400 and \
            xml_code(body) == "AuthorizationQueryParametersError", (bad, body)


def test_create_owned_bucket(s3server, s3, bucket):
    # us-east-1: the owner re-creating its bucket gets 200
    s3.create_bucket(Bucket=bucket)
    # elsewhere: 409 BucketAlreadyOwnedByYou
    w2 = s3server.client("s3", s3={"addressing_style": "path"})
    name = "cpt-" + uuid.uuid4().hex[:12]
    w2.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    with pytest.raises(ClientError) as e:
        w2.create_bucket(Bucket=name,
                         CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    assert e.value.response["Error"]["Code"] == "BucketAlreadyOwnedByYou"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409


# ---------------------------------------------------------------------------------------------
# CloudWatch Logs creation times; a job whose output bucket is missing

def test_log_group_creation_time(s3server):
    logs = s3server.client("logs", region="us-east-1")
    before = int(time.time() * 1000) - 5000
    g = [x for x in logs.describe_log_groups()["logGroups"]
         if x["logGroupName"] == "/aws/sagemaker/TrainingJobs"]
    assert len(g) == 1 and before <= g[0]["creationTime"] <= int(time.time() * 1000) + 5000, g
    time.sleep(0.05)
    again = logs.describe_log_groups(logGroupNamePrefix="/aws/sagemaker")["logGroups"][0]
    assert again["creationTime"] == g[0]["creationTime"]  # stable, not "now" each time


def test_job_with_missing_output_bucket_fails(sm, server):
    name = "cpt-nobucket-" + uuid.uuid4().hex[:8]
    bucket = "cpt-missing-" + uuid.uuid4().hex[:8]
    sm.create_training_job(**H.job_request(name, "echo hi > /opt/ml/model/m.txt",
                                           output=f"s3://{bucket}/out"))
    d = H.wait_job(sm, name, timeout=120)
    assert d["TrainingJobStatus"] == "Failed", d
    assert "The specified bucket does not exist" in d["FailureReason"], d["FailureReason"]
    assert bucket in d["FailureReason"]
    s3 = server.client("s3", region="us-east-1", s3={"addressing_style": "path"})
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket)
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchBucket")


# ---------------------------------------------------------------------------------------------
# multipart: repeated completion, SHA-256 checksums

def test_multipart_sha256_and_repeated_complete(s3, bucket):
    key = "mp/obj"
    p1, p2 = os.urandom(5 * 1024 * 1024), b"the tail"
    d1, d2 = hashlib.sha256(p1).digest(), hashlib.sha256(p2).digest()
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    composite = b64(hashlib.sha256(d1 + d2).digest()) + "-2"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="SHA256")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=p1,
                        ChecksumAlgorithm="SHA256")["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=2, Body=p2,
                        ChecksumAlgorithm="SHA256")["ETag"]
    parts = [{"ETag": e1, "PartNumber": 1, "ChecksumSHA256": b64(d1)},
             {"ETag": e2, "PartNumber": 2, "ChecksumSHA256": b64(d2)}]
    # a wrong whole-object checksum: 400 BadDigest, the upload stays
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                     MultipartUpload={"Parts": parts},
                                     ChecksumSHA256=b64(hashlib.sha256(b"wrong").digest()))
    assert e.value.response["Error"]["Code"] == "BadDigest"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    # a part checksum that is not the part's: InvalidPart
    bad = [dict(parts[0]), parts[1]]
    bad[0]["ChecksumSHA256"] = b64(d2)
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                     MultipartUpload={"Parts": bad})
    assert e.value.response["Error"]["Code"] == "InvalidPart"
    r = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                     MultipartUpload={"Parts": parts}, ChecksumSHA256=composite)
    assert r["ChecksumSHA256"] == composite, r
    # completing it again answers the same result
    again = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                         MultipartUpload={"Parts": parts})
    assert (again["ETag"], again["ChecksumSHA256"]) == (r["ETag"], composite)
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == p1 + p2
    # a plain upload completed twice, too; another key with that id is still NoSuchUpload
    up2 = s3.create_multipart_upload(Bucket=bucket, Key="mp/plain")["UploadId"]
    e = s3.upload_part(Bucket=bucket, Key="mp/plain", UploadId=up2, PartNumber=1,
                       Body=b"x")["ETag"]
    one = {"Parts": [{"ETag": e, "PartNumber": 1}]}
    first = s3.complete_multipart_upload(Bucket=bucket, Key="mp/plain", UploadId=up2,
                                         MultipartUpload=one)
    second = s3.complete_multipart_upload(Bucket=bucket, Key="mp/plain", UploadId=up2,
                                          MultipartUpload=one)
    assert first["ETag"] == second["ETag"] and "ChecksumSHA256" not in second
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp/other", UploadId=up2,
                                     MultipartUpload=one)
    assert ei.value.response["Error"]["Code"] == "NoSuchUpload"


# ---------------------------------------------------------------------------------------------
# The gaps ceph/s3-tests found after the first round: partNumber reads, user metadata bytes,
# conditional writes, multipart checksums beyond SHA-256, a part sent twice, upload owners and
# keys that are not UTF-8. Buckets are named s3g-*.

@pytest.fixture
def gbucket(s3):
    name = "s3g-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=name)
    return name


def with_headers(client, op, headers):
    """Registers a hook that adds headers to client's op (as a client that knows them would)."""
    def add(params, **_):
        params["headers"].update(headers)
    client.meta.events.register(f"before-call.s3.{op}", add)
    return add


def test_get_and_head_part_number(s3, gbucket):
    key = "parts.bin"
    p1, p2 = os.urandom(5 * 1024 * 1024), b"the last part"
    up = s3.create_multipart_upload(Bucket=gbucket, Key=key)["UploadId"]
    e1 = s3.upload_part(Bucket=gbucket, Key=key, UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=gbucket, Key=key, UploadId=up, PartNumber=2, Body=p2)["ETag"]
    with pytest.raises(ClientError) as e:  # not completed yet: no object
        s3.get_object(Bucket=gbucket, Key=key, PartNumber=1)
    assert e.value.response["Error"]["Code"] == "NoSuchKey"
    etag = s3.complete_multipart_upload(
        Bucket=gbucket, Key=key, UploadId=up,
        MultipartUpload={"Parts": [{"ETag": e1, "PartNumber": 1},
                                   {"ETag": e2, "PartNumber": 2}]})["ETag"]
    total = len(p1) + len(p2)
    for n, first, data in ((1, 0, p1), (2, len(p1), p2)):
        h = s3.head_object(Bucket=gbucket, Key=key, PartNumber=n)
        assert (h["PartsCount"], h["ETag"], h["ContentLength"]) == (2, etag, len(data))
        assert h["ResponseMetadata"]["HTTPStatusCode"] == 206
        g = s3.get_object(Bucket=gbucket, Key=key, PartNumber=n)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206 and g["PartsCount"] == 2
        assert g["ContentRange"] == f"bytes {first}-{first + len(data) - 1}/{total}"
        assert g["Body"].read() == data and g["ETag"] == etag
    # a part the object does not have: 400 InvalidPart (what ceph/s3-tests expect of S3)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=gbucket, Key=key, PartNumber=3)
    assert e.value.response["Error"]["Code"] == "InvalidPart"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=gbucket, Key=key, PartNumber=1, Range="bytes=0-1")
    assert e.value.response["Error"]["Code"] == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=gbucket, Key=key, PartNumber=10001)
    assert e.value.response["Error"]["Code"] == "InvalidArgument"
    # a simple object is its own part 1
    put = s3.put_object(Bucket=gbucket, Key="simple", Body=b"body")
    g = s3.get_object(Bucket=gbucket, Key="simple", PartNumber=1)
    assert g["Body"].read() == b"body" and g["ETag"] == put["ETag"] and "PartsCount" not in g
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=gbucket, Key="simple", PartNumber=2)
    assert e.value.response["Error"]["Code"] == "InvalidPart"
    # an object written over the multipart one has no parts left
    s3.put_object(Bucket=gbucket, Key=key, Body=b"replaced")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=gbucket, Key=key, PartNumber=2)
    assert e.value.response["Error"]["Code"] == "InvalidPart"


def test_user_metadata_bytes_come_back_unchanged(s3server, s3, gbucket):
    # botocore sends a str header as UTF-8 and reads response headers as ISO-8859-1: the same
    # bytes must come back
    with_headers(s3, "PutObject", {"x-amz-meta-word": "Hello World\xe9"})
    s3.put_object(Bucket=gbucket, Key="utf8", Body=b"x")
    got = s3.head_object(Bucket=gbucket, Key="utf8")["Metadata"]["word"]
    assert got.encode("latin-1") == "Hello World\xe9".encode("utf-8")
    # a value that is not UTF-8 (an ISO-8859-1 byte), sent unsigned beside a signed request
    akid, secret = s3server.credentials()
    req = botocore.awsrequest.AWSRequest(method="PUT", url=f"{s3server.url}/{gbucket}/latin1",
                                         data=b"y")
    req.headers["x-amz-content-sha256"] = hashlib.sha256(b"y").hexdigest()
    botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(akid, secret), "s3",
                              "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection("127.0.0.1", s3server.port, timeout=30)
    try:
        conn.putrequest("PUT", f"/{gbucket}/latin1", skip_accept_encoding=True)
        for k, v in req.headers.items():
            conn.putheader(k, v)
        conn.putheader("x-amz-meta-word", b"caf\xe9")
        conn.putheader("Content-Length", "1")
        conn.endheaders(b"y")
        r = conn.getresponse()
        assert r.status == 200, r.read()
        r.read()
    finally:
        conn.close()
    got = s3.head_object(Bucket=gbucket, Key="latin1")["Metadata"]["word"]
    assert got.encode("latin-1") == b"caf\xe9"
    # a copy keeps them
    s3.copy_object(Bucket=gbucket, Key="copy", CopySource={"Bucket": gbucket, "Key": "latin1"})
    assert s3.head_object(Bucket=gbucket, Key="copy")["Metadata"]["word"] == got


def test_conditional_put_and_complete(s3server, gbucket):
    s3 = s3server.client("s3", region="us-east-1", s3={"addressing_style": "path"})
    code = lambda e: (e.value.response["ResponseMetadata"]["HTTPStatusCode"],  # noqa: E731
                      e.value.response["Error"]["Code"])
    hooks = {}

    def cond(op, **h):
        if op in hooks:
            s3.meta.events.unregister(f"before-call.s3.{op}", hooks.pop(op))
        if h:
            hooks[op] = with_headers(s3, op, h)

    cond("PutObject", **{"If-None-Match": "*"})
    first = s3.put_object(Bucket=gbucket, Key="k", Body=b"one")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=gbucket, Key="k", Body=b"two")
    assert code(e) == (412, "PreconditionFailed")
    cond("PutObject", **{"If-None-Match": first})  # AWS takes only "*"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=gbucket, Key="k", Body=b"two")
    assert code(e) == (501, "NotImplemented")
    cond("PutObject", **{"If-Match": '"0123456789abcdef0123456789abcdef"'})
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=gbucket, Key="k", Body=b"two")
    assert code(e) == (412, "PreconditionFailed")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=gbucket, Key="missing", Body=b"two")
    assert code(e) == (404, "NoSuchKey")
    cond("PutObject", **{"If-Match": first})
    second = s3.put_object(Bucket=gbucket, Key="k", Body=b"two")["ETag"]
    cond("PutObject")
    assert s3.get_object(Bucket=gbucket, Key="k")["Body"].read() == b"two"
    # CompleteMultipartUpload: checked before the parts are joined; the upload stays
    up = s3.create_multipart_upload(Bucket=gbucket, Key="k")["UploadId"]
    pe = s3.upload_part(Bucket=gbucket, Key="k", UploadId=up, PartNumber=1, Body=b"mp")["ETag"]
    mp = {"Parts": [{"ETag": pe, "PartNumber": 1}]}
    cond("CompleteMultipartUpload", **{"If-None-Match": "*"})
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=gbucket, Key="k", UploadId=up, MultipartUpload=mp)
    assert code(e) == (412, "PreconditionFailed")
    cond("CompleteMultipartUpload", **{"If-Match": first})
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=gbucket, Key="k", UploadId=up, MultipartUpload=mp)
    assert code(e) == (412, "PreconditionFailed")
    cond("CompleteMultipartUpload", **{"If-Match": second})
    s3.complete_multipart_upload(Bucket=gbucket, Key="k", UploadId=up, MultipartUpload=mp)
    assert s3.get_object(Bucket=gbucket, Key="k")["Body"].read() == b"mp"


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), table-driven; about a second for 5 MiB."""
    crc, t = 0xFFFFFFFF, CRC32C_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize("algo", ["CRC32", "CRC32C", "SHA1"])
def test_multipart_composite_checksums(s3, gbucket, algo):
    import zlib
    fn = {"CRC32": lambda b: zlib.crc32(b).to_bytes(4, "big"),
          "CRC32C": lambda b: crc32c(b).to_bytes(4, "big"),
          "SHA1": lambda b: hashlib.sha1(b).digest()}[algo]
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    key = f"ck-{algo}"
    p1, p2 = os.urandom(5 * 1024 * 1024), b"tail bytes"
    d1, d2 = fn(p1), fn(p2)
    composite = b64(fn(d1 + d2)) + "-2"
    field = f"Checksum{algo}"
    up = s3.create_multipart_upload(Bucket=gbucket, Key=key, ChecksumAlgorithm=algo)["UploadId"]
    e1 = s3.upload_part(Bucket=gbucket, Key=key, UploadId=up, PartNumber=1, Body=p1,
                        **{field: b64(d1)})
    e2 = s3.upload_part(Bucket=gbucket, Key=key, UploadId=up, PartNumber=2, Body=p2,
                        **{field: b64(d2)})
    assert (e1[field], e2[field]) == (b64(d1), b64(d2))
    parts = [{"ETag": e1["ETag"], "PartNumber": 1, field: b64(d1)},
             {"ETag": e2["ETag"], "PartNumber": 2, field: b64(d2)}]
    bad = [dict(parts[0], **{field: b64(d2)}), parts[1]]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=gbucket, Key=key, UploadId=up,
                                     MultipartUpload={"Parts": bad})
    assert e.value.response["Error"]["Code"] == "InvalidPart"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=gbucket, Key=key, UploadId=up,
                                     MultipartUpload={"Parts": parts}, **{field: b64(d1)})
    assert e.value.response["Error"]["Code"] == "BadDigest"
    r = s3.complete_multipart_upload(Bucket=gbucket, Key=key, UploadId=up,
                                     MultipartUpload={"Parts": parts}, **{field: composite})
    assert r[field] == composite
    assert field not in s3.head_object(Bucket=gbucket, Key=key)
    assert s3.head_object(Bucket=gbucket, Key=key, ChecksumMode="ENABLED")[field] == composite
    g = s3.get_object(Bucket=gbucket, Key=key, ChecksumMode="ENABLED")
    assert g[field] == composite and g["Body"].read() == p1 + p2
    again = s3.complete_multipart_upload(Bucket=gbucket, Key=key, UploadId=up,
                                         MultipartUpload={"Parts": parts})
    assert again[field] == composite
    # a copy is one part: the composite is not its checksum
    s3.copy_object(Bucket=gbucket, Key=key + ".copy", CopySource={"Bucket": gbucket, "Key": key})
    assert field not in s3.head_object(Bucket=gbucket, Key=key + ".copy", ChecksumMode="ENABLED")


def test_part_sent_twice_first_finishing_last(s3, gbucket):
    """Part 1 is uploaded twice and the client lists both; the part stored last is the one whose
    ETag matches, and it is the object (not InvalidPartOrder)."""
    key = "twice"
    up = s3.create_multipart_upload(Bucket=gbucket, Key=key)["UploadId"]
    eb = s3.upload_part(Bucket=gbucket, Key=key, UploadId=up, PartNumber=1, Body=b"B" * 8)["ETag"]
    ea = s3.upload_part(Bucket=gbucket, Key=key, UploadId=up, PartNumber=1, Body=b"A" * 8)["ETag"]
    s3.complete_multipart_upload(
        Bucket=gbucket, Key=key, UploadId=up,
        MultipartUpload={"Parts": [{"ETag": eb, "PartNumber": 1},
                                   {"ETag": ea, "PartNumber": 1}]})
    assert s3.get_object(Bucket=gbucket, Key=key)["Body"].read() == b"A" * 8
    # numbers going down are still refused
    up = s3.create_multipart_upload(Bucket=gbucket, Key=key)["UploadId"]
    e1 = s3.upload_part(Bucket=gbucket, Key=key, UploadId=up, PartNumber=1, Body=b"1")["ETag"]
    e2 = s3.upload_part(Bucket=gbucket, Key=key, UploadId=up, PartNumber=2, Body=b"2")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=gbucket, Key=key, UploadId=up,
            MultipartUpload={"Parts": [{"ETag": e2, "PartNumber": 2},
                                       {"ETag": e1, "PartNumber": 1}]})
    assert e.value.response["Error"]["Code"] == "InvalidPartOrder"
    s3.abort_multipart_upload(Bucket=gbucket, Key=key, UploadId=up)


def test_list_uploads_owner_and_initiator(s3, gbucket):
    up = s3.create_multipart_upload(Bucket=gbucket, Key="u")["UploadId"]
    (u,) = s3.list_multipart_uploads(Bucket=gbucket)["Uploads"]
    assert u["UploadId"] == up
    for who in ("Owner", "Initiator"):
        assert u[who]["ID"] and u[who]["DisplayName"], u
    s3.abort_multipart_upload(Bucket=gbucket, Key="u", UploadId=up)


def test_key_not_utf8_is_invalid_uri(s3server, gbucket):
    akid, secret = s3server.credentials()
    date = email.utils.formatdate(usegmt=True)
    sts = f"GET\n\n\n{date}\n/{gbucket}/%FF%FE"
    sig = base64.b64encode(hmac.new(secret.encode(), sts.encode(), "sha1").digest()).decode()
    st, body = raw(s3server, "GET", f"/{gbucket}/%FF%FE",
                   {"Date": date, "Authorization": f"AWS {akid}:{sig}"})
    assert st == 400 and xml_code(body) == "InvalidURI", body
    assert b"parse the specified URI." in body


def test_acl_reads_and_listing_return_data(s3, gbucket):
    """GetObjectAcl/GetBucketAcl answer the owner's FULL_CONTROL (IAM policies decide access);
    ListObjects names the same owner, with each key's ETag, size and LastModified as HEAD."""
    for k in ("bar", "baz", "foo"):
        s3.put_object(Bucket=gbucket, Key=k, Body=k.encode() * 3)
    acl = s3.get_bucket_acl(Bucket=gbucket)
    assert [g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL"]
    assert acl["Grants"][0]["Grantee"]["ID"] == acl["Owner"]["ID"]
    for o in s3.list_objects(Bucket=gbucket)["Contents"]:
        h = s3.head_object(Bucket=gbucket, Key=o["Key"])
        oacl = s3.get_object_acl(Bucket=gbucket, Key=o["Key"])
        assert (o["ETag"], o["Size"]) == (h["ETag"], h["ContentLength"])
        assert o["Owner"] == oacl["Owner"] == acl["Owner"]
        assert abs((o["LastModified"] - h["LastModified"]).total_seconds()) < 1
    with pytest.raises(ClientError) as e:
        s3.get_object_acl(Bucket=gbucket, Key="missing")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"
    with pytest.raises(ClientError) as e:  # writing ACLs is still not served
        s3.put_bucket_acl(Bucket=gbucket, ACL="public-read")
    assert e.value.response["Error"]["Code"] == "NotImplemented"


def test_sse_c_refused_sse_s3_echoed(s3, gbucket):
    """A customer-provided key (SSE-C) is refused with 501 rather than ignored (the bytes would
    be kept unencrypted and served to anyone without the key); SSE-S3 is kept and echoed."""
    key = b"k" * 32
    for call, kw in ((s3.put_object, {"Body": b"secret"}), (s3.create_multipart_upload, {})):
        with pytest.raises(ClientError) as e:
            call(Bucket=gbucket, Key="c", SSECustomerAlgorithm="AES256", SSECustomerKey=key, **kw)
        assert e.value.response["Error"]["Code"] == "NotImplemented"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=gbucket, Key="c")
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")  # nothing was stored
    s3.put_object(Bucket=gbucket, Key="s", Body=b"x", ServerSideEncryption="AES256")
    assert s3.head_object(Bucket=gbucket, Key="s")["ServerSideEncryption"] == "AES256"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=gbucket, Key="s", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
    assert e.value.response["Error"]["Code"] == "NotImplemented"
