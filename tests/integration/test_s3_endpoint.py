"""--s3-endpoint: trainyard in front of an external S3-compatible store (here a second trainyard,
API only). test_s3.py and test_sdk_flow.py run whole against such a pair as well; this module
covers what only the external store has: configuration errors, a store that cannot be reached
or refuses the keys, and a model larger than the multipart threshold (64 MiB) uploaded by the
agent in parts.
"""
import hashlib
import io
import os
import subprocess
import tarfile
import time

import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

MB = 1024 * 1024


def _front(make_server, store, keys=None, agents=0, endpoint=None):
    akid, secret = keys or store.credentials()
    return make_server(agents=agents, extra=["--s3-endpoint", endpoint or store.url],
                       env={"TRAINYARD_S3_ACCESS_KEY_ID": akid,
                            "TRAINYARD_S3_SECRET_ACCESS_KEY": secret})


def _startup_failure(argv, env):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                       env={**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
                            **env}, stdin=subprocess.DEVNULL)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    return p.returncode, lines


@pytest.mark.parametrize("endpoint,env,words", [
    ("ftp://127.0.0.1:1", {"TRAINYARD_S3_ACCESS_KEY_ID": "A", "TRAINYARD_S3_SECRET_ACCESS_KEY": "B"},
     ["--s3-endpoint", "http"]),
    ("http://127.0.0.1:1/some/path", {"TRAINYARD_S3_ACCESS_KEY_ID": "A",
                                      "TRAINYARD_S3_SECRET_ACCESS_KEY": "B"}, ["without a path"]),
    ("http://127.0.0.1:1", {}, ["--s3-access-key-id", "AWS_ACCESS_KEY_ID"]),
])
def test_bad_configuration_is_one_clear_line(workdir, endpoint, env, words):
    d = os.path.join(workdir, "s3ep-badcfg")
    rc, lines = _startup_failure([H.SERVER_BIN, "--listen", f"127.0.0.1:{H.free_port()}",
                                  "--data-dir", d, "--agents", "0", "--s3-endpoint", endpoint], env)
    assert rc == 1, lines
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines
    assert H.procs_mentioning(d) == [], "a child process outlived the failed start"


def test_keys_from_aws_variables(make_server):
    """Without --s3-access-key-id the usual AWS_* variables name the store's keys."""
    store = make_server(agents=0)
    akid, secret = store.credentials()
    front = make_server(agents=0, extra=["--s3-endpoint", store.url],
                        env={"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret})
    s3 = front.client("s3")
    s3.create_bucket(Bucket="via-aws-vars")
    names = [b["Name"] for b in store.client("s3").list_buckets()["Buckets"]]
    # "bucket" is the one tyhelpers.Server.start() makes for job outputs
    assert [n for n in names if n != "bucket"] == ["via-aws-vars"], names


def test_unreachable_store_is_service_unavailable(make_server):
    port = H.free_port()  # nothing listens there
    front = make_server(agents=0, extra=["--s3-endpoint", f"http://127.0.0.1:{port}"],
                        env={"TRAINYARD_S3_ACCESS_KEY_ID": "AKIAEXAMPLE",
                             "TRAINYARD_S3_SECRET_ACCESS_KEY": "secret"})
    s3 = front.client("s3")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="b", Key="k", Body=b"x")
    err = e.value.response["Error"]
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert err["Code"] == "ServiceUnavailable" and f"127.0.0.1:{port}" in err["Message"], err
    # nothing was kept locally: no temp file of the upload remains
    tmp = os.path.join(front.data_dir, "s3", ".ty", "tmp")
    assert not os.path.isdir(tmp) or os.listdir(tmp) == []
    # CreateTrainingJob cannot check its channel: an error that says so, not "no objects"
    sm = front.client("sagemaker")
    req = H.job_request(H.unique("s3ep-down"), "true", output="s3://b/out",
                        InputDataConfig=[{"ChannelName": "train", "DataSource": {"S3DataSource": {
                            "S3DataType": "S3Prefix", "S3Uri": "s3://b/train",
                            "S3DataDistributionType": "FullyReplicated"}}}])
    with pytest.raises(ClientError) as e:
        sm.create_training_job(**req)
    assert "No S3 objects found" not in e.value.response["Error"]["Message"]
    assert f"127.0.0.1:{port}" in e.value.response["Error"]["Message"]


def test_store_refusing_the_keys_answers_as_the_store(make_server):
    store = make_server(agents=0)
    front = _front(make_server, store, keys=("AKIANOTAKEYOFTHESTORE", "wrong"))
    s3 = front.client("s3")
    with pytest.raises(ClientError) as e:
        s3.list_buckets()
    assert e.value.response["Error"]["Code"] == "InvalidAccessKeyId"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # the front's own checks still come first: a bad signature is refused before forwarding
    bad = front.client("s3", keys=(front.credentials()[0], "not-the-secret"))
    with pytest.raises(ClientError) as e:
        bad.list_buckets()
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"


def test_large_model_goes_up_in_parts(make_server):
    """A 70 MiB model: the agent's upload of model.tar.gz crosses the 64 MiB threshold and goes
    to the store as a multipart upload (16 MiB parts), leaving no upload behind."""
    store = make_server(agents=0)
    front = _front(make_server, store, agents=1)
    s3, sm = front.client("s3"), front.client("sagemaker")
    direct = store.client("s3")
    bucket = "bigmodel"
    s3.create_bucket(Bucket=bucket)
    job = H.unique("s3ep-big")
    script = ("head -c 73400320 /dev/urandom > /opt/ml/model/weights.bin && "
              "md5sum /opt/ml/model/weights.bin | cut -d' ' -f1 > /opt/ml/model/weights.md5")
    sm.create_training_job(**H.job_request(job, script, output=f"s3://{bucket}/out"))
    d = H.wait_job(sm, job, timeout=300)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    key = f"out/{job}/output/model.tar.gz"
    head = direct.head_object(Bucket=bucket, Key=key)
    assert head["ETag"].strip('"').endswith("-5"), head["ETag"]  # > 64 MiB in 16 MiB parts
    assert direct.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert len(body) == head["ContentLength"]
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tf:
        weights = tf.extractfile("weights.bin").read()
        want = tf.extractfile("weights.md5").read().decode().strip()
    assert len(weights) == 70 * MB and hashlib.md5(weights).hexdigest() == want


def test_downloads_stream_and_abandoned_ones_end(make_server):
    """GetObject streams through the front as the store sends it; a client that leaves halfway
    ends the transfer (no thread or descriptor left behind) and the server keeps serving."""
    import socket
    import urllib.parse

    store = make_server(agents=0)
    front = _front(make_server, store)
    s3 = front.client("s3", signature_version="s3v4")
    s3.create_bucket(Bucket="stream")
    body = os.urandom(24 * MB)
    s3.put_object(Bucket="stream", Key="big.bin", Body=body)
    assert s3.get_object(Bucket="stream", Key="big.bin")["Body"].read() == body
    r = s3.get_object(Bucket="stream", Key="big.bin", Range="bytes=100-199")
    assert r["ContentLength"] == 100 and r["Body"].read() == body[100:200]

    def pipes_and_threads():
        """The stream's own resources: the pipe between its thread and the client, the thread."""
        d = f"/proc/{front.proc.pid}"
        pipes = 0
        for fd in os.listdir(f"{d}/fd"):
            try:
                pipes += os.readlink(f"{d}/fd/{fd}").startswith("pipe:")
            except OSError:
                pass
        return pipes, len(os.listdir(f"{d}/task"))

    url = urllib.parse.urlsplit(s3.generate_presigned_url(
        "get_object", Params={"Bucket": "stream", "Key": "big.bin"}, ExpiresIn=300))
    def settled():
        """The count once the earlier transfers are over: a response's pipe is closed only after
        its last byte left, which the client may see first."""
        a = pipes_and_threads()
        time.sleep(0.2)
        return a if pipes_and_threads() == a else None

    before = H.wait_for(settled, 20, "the earlier transfers to end")
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", front.port), timeout=10) as c:
            c.sendall(f"GET {url.path}?{url.query} HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n".encode())
            got = c.recv(65536)
            assert got.startswith(b"HTTP/1.1 200"), got[:200]
        # closed after the first bytes of 24 MiB
    H.wait_for(lambda: all(n <= b for n, b in zip(pipes_and_threads(), before)), 30,
               "the abandoned transfers to end")
    assert s3.get_object(Bucket="stream", Key="big.bin")["Body"].read() == body
