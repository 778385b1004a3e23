"""Racing writers on one multipart upload (issue 35): an acknowledged object is exactly what its
ETag, size and listing say.

A client that retries a part while the first try is still in flight sends two UploadPart calls
for the same part number at once; with 16 HTTP threads the store used to rename one try's file
and record the other's ETag and size, so Complete stored an object whose bytes were one part's,
whose ETag another's and whose listed size a third figure. Here 6 writers race on part 1 of each
of 24 uploads on a server with 16 threads; whatever part wins, the object's bytes, ETag, size,
listing and GetObject by partNumber agree. And a Complete racing an Abort never answers both
with success.
"""
import concurrent.futures
import hashlib
import os

import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

BUCKET = "mpu-race"


def _mp_etag(*parts):
    return hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest() + f"-{len(parts)}"


def test_racing_part_writers_leave_a_true_object(make_server):
    srv = make_server(agents=0, extra=["--threads", "16"])
    s3 = srv.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    bodies = [os.urandom(200 * 1024 + i * 1000) for i in range(6)]
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        for t in range(24):
            key = f"obj-{t}"
            up = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
            list(ex.map(lambda b: s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=1,
                                                 Body=b), bodies))
            listed = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=up)["Parts"]
            assert len(listed) == 1, listed
            etag, size = listed[0]["ETag"], listed[0]["Size"]
            try:
                r = s3.complete_multipart_upload(
                    Bucket=BUCKET, Key=key, UploadId=up,
                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
            except ClientError as e:  # refused is honest; a wrong object is not
                assert e.response["Error"]["Code"] == "InvalidPart", e.response
                continue
            got = s3.get_object(Bucket=BUCKET, Key=key)
            data = got["Body"].read()
            assert data in bodies, f"try {t}: the object's bytes are no part that was sent"
            assert hashlib.md5(data).hexdigest() == etag.strip('"'), f"try {t}: part ETag"
            assert len(data) == size == got["ContentLength"], (t, len(data), size)
            assert r["ETag"].strip('"') == _mp_etag(data), (t, r["ETag"])
            head = s3.head_object(Bucket=BUCKET, Key=key)
            assert head["ContentLength"] == len(data) and head["ETag"] == r["ETag"], head
            lst = s3.list_objects_v2(Bucket=BUCKET, Prefix=key)["Contents"]
            assert [(o["Key"], o["Size"], o["ETag"]) for o in lst] == [(key, len(data), r["ETag"])]
            p1 = s3.get_object(Bucket=BUCKET, Key=key, PartNumber=1)
            assert p1["Body"].read() == data


def test_complete_racing_abort_never_both_succeed(make_server):
    srv = make_server(agents=0, extra=["--threads", "16"])
    s3 = srv.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    body = os.urandom(64 * 1024)
    both = 0
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        for t in range(24):
            key = f"ca-{t}"
            up = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
            etag = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=1,
                                  Body=body)["ETag"]

            def complete():
                try:
                    s3.complete_multipart_upload(
                        Bucket=BUCKET, Key=key, UploadId=up,
                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
                    return True
                except ClientError as e:
                    assert e.response["Error"]["Code"] == "NoSuchUpload", e.response
                    return False

            def abort():
                try:
                    s3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up)
                    return True
                except ClientError as e:
                    assert e.response["Error"]["Code"] == "NoSuchUpload", e.response
                    return False

            fc, fa = ex.submit(complete), ex.submit(abort)
            done_c, done_a = fc.result(), fa.result()
            assert done_c or done_a, t
            both += done_c and done_a
            try:
                s3.head_object(Bucket=BUCKET, Key=key)
                exists = True
            except ClientError:
                exists = False
            assert exists == done_c, (t, done_c, done_a, exists)
    assert both == 0, f"{both} of 24 tries answered both Complete and Abort with success"


def test_completes_with_other_lists_get_no_other_object(make_server):
    """Two Completes at once with different part lists: one wins, the other is NoSuchUpload
    (it used to answer 200 with the winner's object). A retry of the winner's list gets the
    same answer again; concurrent identical Completes both succeed with one ETag."""
    srv = make_server(agents=0, extra=["--threads", "16"])
    s3 = srv.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    bodies = {1: os.urandom(70 * 1024), 2: os.urandom(90 * 1024)}
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        for t in range(12):
            key = f"cc-{t}"
            up = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
            etags = {n: s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=n,
                                       Body=b)["ETag"] for n, b in bodies.items()}

            def complete(n):
                try:
                    return s3.complete_multipart_upload(
                        Bucket=BUCKET, Key=key, UploadId=up,
                        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]}]})["ETag"]
                except ClientError as e:
                    assert e.response["Error"]["Code"] == "NoSuchUpload", e.response
                    return None

            same = t % 2 == 1  # odd tries: both send part 1's list
            f1, f2 = ex.submit(complete, 1), ex.submit(complete, 1 if same else 2)
            r1, r2 = f1.result(), f2.result()
            data = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
            if same:
                assert r1 and r1 == r2, (t, r1, r2)
                assert data == bodies[1]
                continue
            assert (r1 is None) != (r2 is None), (t, r1, r2)
            won = 1 if r1 else 2
            assert data == bodies[won], t
            assert (r1 or r2).strip('"') == _mp_etag(bodies[won])
            assert complete(won) == (r1 or r2)  # a retry of the winning list
            assert complete(3 - won) is None  # the other list, again


def test_crash_leftovers_are_swept_while_the_server_runs(make_server):
    """A server killed mid-upload leaves a temp file, and one killed between an upload's record
    and its part folder leaves a folder nothing owns: the next server sweeps both (older than
    --s3-orphan-age, here 1 s) at its first S3 request, and leaves a live upload's folder alone.
    Before, temp files went only 24 hours later and such folders never."""
    import http.client
    import subprocess
    import time
    import urllib.parse

    srv = make_server(agents=0, extra=["--s3-orphan-age", "1"])
    s3 = srv.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    live = s3.create_multipart_upload(Bucket=BUCKET, Key="live")["UploadId"]
    s3.upload_part(Bucket=BUCKET, Key="live", UploadId=live, PartNumber=1, Body=b"x" * 1000)
    gone = s3.create_multipart_upload(Bucket=BUCKET, Key="gone")["UploadId"]
    s3.upload_part(Bucket=BUCKET, Key="gone", UploadId=gone, PartNumber=1, Body=b"y" * 1000)
    # the record goes, the folder stays: what a kill between the two steps of an abort leaves
    sock = os.path.join(srv.data_dir, "redis", "redis.sock")
    subprocess.run(["redis-cli", "-s", sock, "DEL", f"ty:s3:mpu:{gone}"], check=True,
                   capture_output=True)
    # a PUT cut short by a kill: its temp file stays
    url = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "big"})
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    conn.putrequest("PUT", u.path + "?" + u.query)
    conn.putheader("Content-Length", str(64 << 20))
    conn.endheaders()
    for _ in range(16):
        conn.send(b"z" * (512 << 10))
    tmpdir = os.path.join(srv.data_dir, "s3", ".ty", "tmp")
    mpudir = os.path.join(srv.data_dir, "s3", ".ty", "mpu")
    H.wait_for(lambda: any(n.startswith("up.") for n in os.listdir(tmpdir)), 10, "a temp file")
    srv.kill()
    conn.close()
    assert any(n.startswith("up.") for n in os.listdir(tmpdir))
    assert os.path.isdir(os.path.join(mpudir, gone))
    time.sleep(2.2)
    s2 = make_server(agents=0, data_dir=srv.data_dir, start=False,
                     extra=["--s3-orphan-age", "1"])
    s2.start(timeout=60)
    s2.client("s3").list_buckets()
    assert [n for n in os.listdir(tmpdir) if n.startswith("up.")] == []
    assert not os.path.exists(os.path.join(mpudir, gone))
    assert os.path.isdir(os.path.join(mpudir, live))
    parts = s2.client("s3").list_parts(Bucket=BUCKET, Key="live", UploadId=live)["Parts"]
    assert [p["PartNumber"] for p in parts] == [1]


def test_hashed_objects_nothing_owns_are_swept(make_server):
    """A key that is not a plain path ("a//b") is stored under .ty/obj/<bucket>/<hh>/<sha256>,
    a name that does not say its key. A kill between such an object's record and its file
    (a delete cut short after the record went, a put before the record came) left bytes there
    that nothing owned, for ever. Now each such file has its key beside it, and the next sweep
    removes the old ones whose record is gone, keeps those a record owns, and keeps a file whose
    key it cannot prove (no tag, or a tag whose key does not hash to the name)."""
    import subprocess
    import time

    srv = make_server(agents=0, extra=["--s3-orphan-age", "1"])
    s3 = srv.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    objdir = os.path.join(srv.data_dir, "s3", ".ty", "obj", BUCKET)

    def hashed(key):
        h = hashlib.sha256(key.encode()).hexdigest()
        return os.path.join(objdir, h[:2], h)

    s3.put_object(Bucket=BUCKET, Key="keep//1", Body=b"kept bytes")
    s3.put_object(Bucket=BUCKET, Key="gone//1", Body=b"orphaned bytes")
    s3.put_object(Bucket=BUCKET, Key="plain/1", Body=b"natural path")
    for k in ("keep//1", "gone//1"):
        assert os.path.isfile(hashed(k)), k
        with open(hashed(k) + ".key", "rb") as f:
            assert f.read() == k.encode()
    # a stray file with a tag that lies about its key, and one with no tag: never proven, kept
    liar = hashed("liar//1")
    os.makedirs(os.path.dirname(liar), exist_ok=True)
    with open(liar, "wb") as f:
        f.write(b"x")
    with open(liar + ".key", "wb") as f:
        f.write(b"keep//1")
    untagged = hashed("untagged//1")
    os.makedirs(os.path.dirname(untagged), exist_ok=True)
    with open(untagged, "wb") as f:
        f.write(b"y")
    # what a kill between the two steps of a delete leaves: the record gone, the file there
    sock = os.path.join(srv.data_dir, "redis", "redis.sock")
    for cmd in (["DEL", f"ty:s3:obj:{BUCKET}/gone//1"], ["ZREM", f"ty:s3:keys:{BUCKET}", "gone//1"]):
        subprocess.run(["redis-cli", "-s", sock, *cmd], check=True, capture_output=True)
    srv.kill()
    time.sleep(2.2)
    s2 = make_server(agents=0, data_dir=srv.data_dir, start=False,
                     extra=["--s3-orphan-age", "1"])
    s2.start(timeout=60)
    c2 = s2.client("s3")
    c2.list_buckets()
    assert not os.path.exists(hashed("gone//1"))
    assert not os.path.exists(hashed("gone//1") + ".key")
    assert os.path.isfile(liar) and os.path.isfile(untagged)
    assert c2.get_object(Bucket=BUCKET, Key="keep//1")["Body"].read() == b"kept bytes"
    assert c2.get_object(Bucket=BUCKET, Key="plain/1")["Body"].read() == b"natural path"
    keys = [o["Key"] for o in c2.list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert sorted(keys) == ["keep//1", "plain/1"]
    # a delete that finishes takes the tag with the file
    c2.delete_object(Bucket=BUCKET, Key="keep//1")
    assert not os.path.exists(hashed("keep//1"))
    assert not os.path.exists(hashed("keep//1") + ".key")
