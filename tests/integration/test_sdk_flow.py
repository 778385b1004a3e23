"""The SageMaker Python SDK v2 Estimator flow, replayed call for call with boto3
(../shared/reference/sdk-flow.md §1-2): script mode with Session(default_bucket=...), fit() with
two channels (one Gzip, one plain FullyReplicated), logs='All' tailing to the end exactly as
Session._logs_for_job does it, model_data read back and downloaded; plus the data plane around
it: AWS's rejection of an empty S3Uri, ShardedByS3Key/ManifestFile channels, bad input failing
the job with a ClientError, OutputDataConfig.CompressionType NONE, checkpoints and the profiler
output path.

The SDK sleeps 5 s before its first DescribeTrainingJob, 10 s between log polls and describes
the job every >= 30 s. Those waits are multiplied by TY_SDK_TIME_SCALE (default 0.3, so that
the suite stays short; 1 replays the SDK's own timing): the order of calls and what each one
reads are the same either way.
"""
import gzip
import hashlib
import io
import json
import os
import tarfile
import time

import boto3
import botocore.config
import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

SCALE = float(os.environ.get("TY_SDK_TIME_SCALE", "0.3"))
REGION = "us-east-1"
ACCOUNT = "000000000000"

# The training program: busybox sh only (the runtime image has no python). It checks each
# channel byte for byte against the digests the test passes as hyperparameters, the decoded
# hyperparameters and the SM_* variables, then writes a model that the test downloads.
TRAIN_SH = r"""#!/bin/sh
set -e
. "$(dirname "$0")/lib/util.sh"
while [ $# -gt 0 ]; do
    case "$1" in
    --plain_digest) PLAIN=$2 ;;
    --gz_digest) GZ=$2 ;;
    --epochs) EPOCHS=$2 ;;
    --name) NAME=$2 ;;
    esac
    shift 2
done
echo "args: epochs=$EPOCHS name=$NAME"
got_plain=$(tree_digest "$SM_CHANNEL_TRAIN")
got_gz=$(tree_digest "$SM_CHANNEL_TRAIN_GZ")
[ "$got_plain" = "$PLAIN" ] || fail "channel train: digest $got_plain, expected $PLAIN"
[ "$got_gz" = "$GZ" ] || fail "channel train_gz: digest $got_gz, expected $GZ"
[ "$NAME" = "abc" ] || fail "hyperparameter name is '$NAME', expected abc (JSON-decoded)"
[ "$EPOCHS" = "3" ] || fail "hyperparameter epochs is '$EPOCHS'"
[ "$SM_CHANNELS" = '["train","train_gz"]' ] || fail "SM_CHANNELS is $SM_CHANNELS"
[ -n "$S3_ENDPOINT_URL" ] || fail "S3_ENDPOINT_URL is not set"
[ -n "$AWS_REGION" ] || fail "AWS_REGION is not set"
echo "inputs verified: train=$got_plain train_gz=$got_gz"
for i in 1 2 3; do echo "epoch $i loss=0.$((9 - i))"; done
mkdir -p "$SM_MODEL_DIR/sub" /opt/ml/output/profiler/system
printf 'model of %s: %s %s\n' "$NAME" "$got_plain" "$got_gz" > "$SM_MODEL_DIR/model.txt"
printf 'weights' > "$SM_MODEL_DIR/sub/w.bin"
printf 'metrics\n' > "$SM_OUTPUT_DATA_DIR/metrics.txt"
printf '{"cpu": 1}\n' > /opt/ml/output/profiler/system/sys.json
echo done
"""

UTIL_SH = r"""tree_digest() {
    (cd "$1" && find . -type f | sort | xargs md5sum | md5sum | cut -d' ' -f1)
}
fail() {
    echo "$*"
    printf '%s' "$*" > /opt/ml/output/failure
    exit 1
}
"""


def tree_digest(files):
    """What `find . -type f | sort | xargs md5sum | md5sum` prints for {relpath: bytes}."""
    lines = "".join(f"{hashlib.md5(files[k]).hexdigest()}  ./{k}\n" for k in sorted(files))
    return hashlib.md5(lines.encode()).hexdigest()


def sourcedir_targz(files):
    """A tar.gz of the contents of a source_dir, as fw_utils.tar_and_upload_dir builds it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o755 if name.endswith(".sh") else 0o644
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(scope="module", params=["embedded", "external"])
def flow_server(request, server, make_server_module):
    """The server the flow runs against. "embedded": the shared one, objects under its data
    dir. "external": a server started with --s3-endpoint in front of a second trainyard (API
    only) acting as the external store: the SDK's uploads, the channels the agent downloads, the
    model and checkpoints it uploads all live in the store (flow_server.store)."""
    if request.param == "embedded":
        server.store = None
        return server
    store = make_server_module("s3-store", agents=0)
    akid, secret = store.credentials()
    front = make_server_module("s3-front", agents=1, extra=["--s3-endpoint", store.url],
                               env={"TRAINYARD_S3_ACCESS_KEY_ID": akid,
                                    "TRAINYARD_S3_SECRET_ACCESS_KEY": secret})
    front.store = store
    return front


@pytest.fixture(scope="module")
def make_server_module(workdir):
    """Servers of this module's own, stopped (SIGTERM, must exit 0) when the module ends."""
    made = []

    def make(name, **kw):
        s = H.Server(os.path.join(workdir, f"{name}-{os.getpid()}-{len(made)}"), **kw)
        s.start()
        made.append(s)
        return s

    yield make
    for s in reversed(made):
        assert s.stop(timeout=60) == 0, s.proc.tail()


@pytest.fixture(scope="module")
def clients(flow_server):
    server = flow_server
    # (The SDK's logs client retries up to 15 times; here no client retries, so that any
    # error the SDK would paper over shows.)
    return {
        "s3": server.client("s3"),
        "sm": server.client("sagemaker"),
        "logs": server.client("logs"),
        "sts": server.client("sts"),
    }


def _bucket_name(prefix):
    return f"{prefix}-{os.getpid() % 100000}-{int(time.time() * 1000) % 10000000}"


def _sdk_default_bucket(s3, bucket):
    """Session.default_bucket() -> _create_s3_bucket_if_it_does_not_exist: boto3's
    Bucket.creation_date (ListBuckets), then HeadBucket, then CreateBucket on 404."""
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    if bucket in names:
        return "exists"
    try:
        s3.head_bucket(Bucket=bucket)
        return "exists"
    except ClientError as e:
        err = e.response["Error"]
        assert err["Code"] == "404" and err["Message"] == "Not Found", err
    # us-east-1: no CreateBucketConfiguration
    s3.create_bucket(Bucket=bucket)
    return "created"


def _logs_for_job(sm, logs, job, instance_count):
    """Session.logs_for_job(wait=True) as v2.257.6 does it: returns (description, events seen,
    calls made)."""
    group = H.LOG_GROUP
    calls = []
    positions = {}  # stream -> (timestamp, skip)
    seen = []
    time.sleep(5 * SCALE)  # _wait_until(lambda: describe..., poll=5) sleeps first
    desc = sm.describe_training_job(TrainingJobName=job)
    calls.append("DescribeTrainingJob")
    last_describe = time.monotonic()
    state = "TAILING"
    if desc["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
        state = "JOB_COMPLETE"
    for _ in range(500):
        # _flush_log_streams: DescribeLogStreams on every poll
        streams = logs.describe_log_streams(
            logGroupName=group, logStreamNamePrefix=job + "/", orderBy="LogStreamName",
            limit=min(instance_count, 50))
        calls.append("DescribeLogStreams")
        assert "nextToken" not in streams, "the SDK would loop forever on nextToken"
        names = [s["logStreamName"] for s in streams["logStreams"]]
        for name in names:
            ts, skip = positions.get(name, (0, 0))
            token, count = None, 1
            while count > 0:  # logs.log_stream
                kw = {"nextToken": token} if token is not None else {}
                r = logs.get_log_events(logGroupName=group, logStreamName=name, startTime=ts,
                                        startFromHead=True, **kw)
                calls.append("GetLogEvents")
                token = r["nextForwardToken"]  # indexed with [], must always be there
                events = r["events"]
                count = len(events)
                if count > skip:
                    events, skip_left = events[skip:], 0
                else:
                    events, skip_left = [], skip - count
                skip = skip_left
                for ev in events:
                    seen.append((name, ev["timestamp"], ev["message"]))
                    pts, pskip = positions.get(name, (0, 0))
                    positions[name] = (pts, pskip + 1) if ev["timestamp"] == pts \
                        else (ev["timestamp"], 1)
            ts, skip = positions.get(name, (0, 0))
        if state == "COMPLETE":
            break
        time.sleep(10 * SCALE)
        if state == "JOB_COMPLETE":
            state = "COMPLETE"
        elif time.monotonic() - last_describe >= 30 * SCALE:
            desc = sm.describe_training_job(TrainingJobName=job)
            calls.append("DescribeTrainingJob")
            last_describe = time.monotonic()
            # _train_done: the SDK prints the last transition's message
            last = desc["SecondaryStatusTransitions"][-1]
            assert last["Status"] and "StatusMessage" in last
            if desc["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
                state = "JOB_COMPLETE"
    else:
        raise AssertionError(f"job {job} never finished: {desc.get('TrainingJobStatus')}")
    # _check_job_status
    desc = sm.describe_training_job(TrainingJobName=job)
    calls.append("DescribeTrainingJob")
    return desc, seen, calls


def _check_describe_fields(d, req):
    """Every member the SDK indexes after fit(), in wait and in Estimator.attach."""
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert d["SecondaryStatus"] == "Completed"
    for t in d["SecondaryStatusTransitions"]:
        assert {"Status", "StartTime", "StatusMessage"} <= set(t), t
    statuses = [t["Status"] for t in d["SecondaryStatusTransitions"]]
    for s in ("Starting", "Downloading", "Training", "Uploading", "Completed"):
        assert s in statuses, statuses
    assert d["LastModifiedTime"] and d["CreationTime"]
    assert d["TrainingTimeInSeconds"] >= 1 and d["BillableTimeInSeconds"] >= 1
    assert d["ResourceConfig"]["InstanceCount"] == 1
    assert d["ResourceConfig"]["InstanceType"] == req["ResourceConfig"]["InstanceType"]
    assert d["ResourceConfig"]["VolumeSizeInGB"] == 30
    assert d["RoleArn"] == req["RoleArn"]
    assert d["StoppingCondition"]["MaxRuntimeInSeconds"] == 86400
    assert d["AlgorithmSpecification"]["TrainingInputMode"] == "File"
    assert d["AlgorithmSpecification"]["TrainingImage"] == req["AlgorithmSpecification"]["TrainingImage"]
    assert d["OutputDataConfig"]["S3OutputPath"] == req["OutputDataConfig"]["S3OutputPath"]
    assert d["OutputDataConfig"]["KmsKeyId"] == ""
    assert d["HyperParameters"] == req["HyperParameters"]
    assert d["InputDataConfig"] == req["InputDataConfig"]
    assert d["DebugHookConfig"] == req["DebugHookConfig"]
    assert d["ProfilerConfig"]["S3OutputPath"] == req["ProfilerConfig"]["S3OutputPath"]
    assert d["EnableManagedSpotTraining"] is False
    assert "FailureReason" not in d


def test_sdk_estimator_script_mode_flow(flow_server, clients):
    server = flow_server
    s3, sm, logs = clients["s3"], clients["sm"], clients["logs"]
    bucket = _bucket_name("sdkflow")
    job = H.unique("sdkflow")

    # Session(default_bucket=bucket).default_bucket(): the bucket does not exist yet ...
    assert _sdk_default_bucket(s3, bucket) == "created"
    # ... and a second Session finds it through ListBuckets alone
    assert _sdk_default_bucket(s3, bucket) == "exists"

    # the user's channels, uploaded beforehand
    plain = {"a.csv": b"x,y\n1,2\n", "sub/b.csv": b"3,4\n" * 1000}
    raw_gz = {"g1.csv.gz": b"gz-one\n" * 500, "nested/g2.csv.gz": b"first-member\nsecond\n"}
    for k, v in plain.items():
        s3.put_object(Bucket=bucket, Key=f"data/train/{k}", Body=v)
    # not under data/train-gz: S3Prefix data/train would take those keys too, as on AWS
    s3.put_object(Bucket=bucket, Key="data/gzip/g1.csv.gz", Body=gzip.compress(raw_gz["g1.csv.gz"]))
    # two gzip members, as `cat a.gz b.gz` makes
    s3.put_object(Bucket=bucket, Key="data/gzip/nested/g2.csv.gz",
                  Body=gzip.compress(b"first-member\n") + gzip.compress(b"second\n"))

    # _stage_user_code_in_s3 -> tar_and_upload_dir: one PutObject through upload_file with the
    # SDK's ExtraArgs (aws:kms SSE by default)
    code = sourcedir_targz({"train.sh": TRAIN_SH.encode(), "lib/util.sh": UTIL_SH.encode()})
    code_key = f"{job}/source/sourcedir.tar.gz"
    resource = boto3.session.Session().resource(
        "s3", endpoint_url=server.url, region_name=REGION,
        aws_access_key_id=server.credentials()[0], aws_secret_access_key=server.credentials()[1],
        config=botocore.config.Config(retries={"max_attempts": 0}))
    path = os.path.join(server.data_dir, f"{job}-sourcedir.tar.gz")
    with open(path, "wb") as f:
        f.write(code)
    resource.Object(bucket, code_key).upload_file(path, ExtraArgs={"ServerSideEncryption": "aws:kms"})
    os.unlink(path)
    head = s3.head_object(Bucket=bucket, Key=code_key)
    assert head["ContentLength"] == len(code)

    output_path = f"s3://{bucket}/"
    hps = {  # EstimatorBase._json_encode_hyperparameters
        "epochs": json.dumps(3),
        "name": json.dumps("abc"),
        "plain_digest": json.dumps(tree_digest(plain)),
        "gz_digest": json.dumps(tree_digest(raw_gz)),
        "sagemaker_submit_directory": json.dumps(f"s3://{bucket}/{code_key}"),
        "sagemaker_program": json.dumps("train.sh"),
        "sagemaker_container_log_level": json.dumps(20),
        "sagemaker_job_name": json.dumps(job),
        "sagemaker_region": json.dumps(REGION),
    }
    req = {  # Session.train's request, as traced (sdk-flow.md §1)
        "AlgorithmSpecification": {"TrainingInputMode": "File", "TrainingImage": H.RUNTIME_IMAGE},
        "OutputDataConfig": {"S3OutputPath": output_path},
        "TrainingJobName": job,
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "ResourceConfig": {"VolumeSizeInGB": 30, "InstanceCount": 1, "InstanceType": "ml.m5.xlarge"},
        "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/trainyard",
        "InputDataConfig": [
            {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                             "S3Uri": f"s3://{bucket}/data/train",
                                             "S3DataDistributionType": "FullyReplicated"}},
             "ChannelName": "train"},
            {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                             "S3Uri": f"s3://{bucket}/data/gzip",
                                             "S3DataDistributionType": "FullyReplicated"}},
             "CompressionType": "Gzip", "ChannelName": "train_gz"},
        ],
        "HyperParameters": hps,
        "DebugHookConfig": {"S3OutputPath": output_path, "CollectionConfigurations": []},
        "ProfilerConfig": {"S3OutputPath": output_path, "DisableProfiler": False},
    }
    r = sm.create_training_job(**req)
    assert r["TrainingJobArn"] == f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/{job}"

    d, seen, calls = _logs_for_job(sm, logs, job, req["ResourceConfig"]["InstanceCount"])
    assert calls[0] == "DescribeTrainingJob" and "DescribeLogStreams" in calls
    _check_describe_fields(d, req)
    messages = [m for _, _, m in seen]
    text = "\n".join(messages)
    assert f"Downloading s3://{bucket}/data/train (2 objects, 4.0 KB)" in text, text
    assert f"Downloading s3://{bucket}/data/gzip (2 objects" in text, text
    assert f"Downloading s3://{bucket}/{code_key} into /opt/ml/code" in text, text
    assert "args: epochs=3 name=abc" in messages, text
    assert any(m.startswith("inputs verified: ") for m in messages), text

    # The tailing loop saw every event exactly once: compare with one full read
    stream = H.job_stream(logs, job)["logStreams"][0]["logStreamName"]
    assert stream.startswith(f"{job}/algo-1-")
    events, pages = H.log_events(logs, stream)
    assert [(stream, e["timestamp"], e["message"]) for e in events] == seen
    assert pages[-1]["events"] == [] and pages[-1]["nextForwardToken"]
    # startTime is inclusive: asking from the last event's timestamp returns it again
    last_ts = events[-1]["timestamp"]
    again = logs.get_log_events(logGroupName=H.LOG_GROUP, logStreamName=stream,
                                startTime=last_ts, startFromHead=True)
    assert again["events"] and again["events"][0]["timestamp"] >= last_ts
    assert again["events"][-1]["message"] == events[-1]["message"]

    # Estimator.model_data
    model_uri = d["ModelArtifacts"]["S3ModelArtifacts"]
    assert d["OutputDataConfig"].get("CompressionType", "GZIP") == "GZIP"
    assert model_uri == f"s3://{bucket}/{job}/output/model.tar.gz"
    key = model_uri[len(f"s3://{bucket}/"):]
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tf:
        names = sorted(n for n in tf.getnames())
        assert "model.txt" in names and "sub/w.bin" in names, names
        model = tf.extractfile("model.txt").read().decode()
        assert tf.extractfile("sub/w.bin").read() == b"weights"
    assert model == f"model of abc: {tree_digest(plain)} {tree_digest(raw_gz)}\n"

    # the listing sees the artifacts: output.tar.gz beside the model, profiler output
    listed = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"{job}/")["Contents"]}
    assert {f"{job}/output/model.tar.gz", f"{job}/output/output.tar.gz", code_key,
            f"{job}/profiler-output/system/sys.json"} <= listed, listed
    out = s3.get_object(Bucket=bucket, Key=f"{job}/output/output.tar.gz")["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(out), mode="r:gz") as tf:
        assert tf.extractfile("metrics.txt").read() == b"metrics\n"

    if server.store:  # --s3-endpoint: every byte lives in the external store, none locally
        direct = server.store.client("s3")
        assert direct.get_object(Bucket=bucket, Key=key)["Body"].read() == body
        listed_direct = {o["Key"] for o in
                         direct.list_objects_v2(Bucket=bucket, Prefix=f"{job}/")["Contents"]}
        assert listed_direct == listed
        assert not os.path.exists(os.path.join(server.data_dir, "s3", bucket))


def test_sdk_sts_get_caller_identity(clients):
    """The telemetry path and account_id(): sts.GetCallerIdentity through AWS_ENDPOINT_URL."""
    r = clients["sts"].get_caller_identity()
    assert r["Account"] == ACCOUNT
    assert r["Arn"].startswith(f"arn:aws:iam::{ACCOUNT}:")
    assert r["UserId"]


# ---------------------------------------------------------------------------------------------
# the data plane around the flow


def _job(bucket, name, script, **extra):
    return H.job_request(name, script, output=f"s3://{bucket}/out", **extra)


def _channel(name, uri, dtype="S3Prefix", dist="FullyReplicated", **extra):
    return {"ChannelName": name, **extra,
            "DataSource": {"S3DataSource": {"S3DataType": dtype, "S3Uri": uri,
                                            "S3DataDistributionType": dist}}}


@pytest.fixture(scope="module")
def data_bucket(clients):
    s3 = clients["s3"]
    b = _bucket_name("chan")
    s3.create_bucket(Bucket=b)
    for i in range(5):
        s3.put_object(Bucket=b, Key=f"shard/part-{i}.csv", Body=f"row{i}\n".encode())
    s3.put_object(Bucket=b, Key="shard/", Body=b"")  # a folder marker: no file, no shard slot
    s3.put_object(Bucket=b, Key="m/x.csv", Body=b"x\n")
    s3.put_object(Bucket=b, Key="m/y/z.csv", Body=b"z\n")
    s3.put_object(Bucket=b, Key="m/unlisted.csv", Body=b"no\n")
    s3.put_object(Bucket=b, Key="manifest.json", Body=json.dumps(
        [{"prefix": f"s3://{b}/m/"}, "y/z.csv", "x.csv"]).encode())
    s3.put_object(Bucket=b, Key="bad-manifest.json", Body=b"[1, 2")
    s3.put_object(Bucket=b, Key="notgz/a.csv", Body=b"plain, not gzip\n")
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w:gz") as tf:
        ti = tarfile.TarInfo("../../escape.sh")
        ti.size = 2
        tf.addfile(ti, io.BytesIO(b"x\n"))
    s3.put_object(Bucket=b, Key="evil/sourcedir.tar.gz", Body=evil.getvalue())
    s3.put_object(Bucket=b, Key="ckpt/step-1.ckpt", Body=b"restored-1")
    s3.put_object(Bucket=b, Key="ckpt/deep/step-0.ckpt", Body=b"restored-0")
    return b


def test_create_rejects_channel_without_objects(clients, data_bucket):
    sm = clients["sm"]
    for uri, bucket in ((f"s3://{data_bucket}/no-such-prefix", data_bucket),
                        ("s3://ty-no-such-bucket-xyz/data", "ty-no-such-bucket-xyz")):
        req = _job(data_bucket, H.unique("nodata"), "true",
                   InputDataConfig=[_channel("train", uri)])
        with pytest.raises(ClientError) as ei:
            sm.create_training_job(**req)
        err = ei.value.response["Error"]
        assert err["Code"] == "ValidationException"
        assert err["Message"] == (
            f'No S3 objects found under S3 URL "{uri}" given in input data source. Please '
            f"ensure that the bucket exists in the selected region ({REGION}), that objects "
            f'exist under that S3 prefix, and that the role "{H.ROLE}" has "s3:ListBucket" '
            f'permissions on bucket "{bucket}".')
        with pytest.raises(ClientError):
            sm.describe_training_job(TrainingJobName=req["TrainingJobName"])


def test_channels_sharded_manifest_and_failures(clients, data_bucket):
    """Several jobs side by side: ShardedByS3Key with one instance (everything), a ManifestFile
    channel (only what it lists), and bad input failing with a ClientError."""
    sm, logs = clients["sm"], clients["logs"]
    b = data_bucket
    jobs = {
        "sharded": (_job(b, H.unique("shard"),
                         "cd /opt/ml/input/data/s && find . -type f | sort | tr '\\n' ' '; echo",
                         InputDataConfig=[_channel("s", f"s3://{b}/shard/", dist="ShardedByS3Key",
                                                   InputMode="Pipe")]), "Completed"),
        "manifest": (_job(b, H.unique("manifest"),
                          "cd /opt/ml/input/data/m && find . -type f | sort | tr '\\n' ' '; echo; cat y/z.csv",
                          InputDataConfig=[_channel("m", f"s3://{b}/manifest.json",
                                                    dtype="ManifestFile")]), "Completed"),
        "notgz": (_job(b, H.unique("notgz"), "true",
                       InputDataConfig=[_channel("t", f"s3://{b}/notgz/", CompressionType="Gzip")]),
                  f"ClientError: s3://{b}/notgz/a.csv is not gzip data"),
        "badmanifest": (_job(b, H.unique("badmanifest"), "true",
                             InputDataConfig=[_channel("m", f"s3://{b}/bad-manifest.json",
                                                       dtype="ManifestFile")]),
                        f"ClientError: ManifestFile 's3://{b}/bad-manifest.json' is not valid JSON"),
        "evilcode": (_job(b, H.unique("evilcode"), "true",
                          HyperParameters={
                              "sagemaker_submit_directory": json.dumps(f"s3://{b}/evil/sourcedir.tar.gz"),
                              "sagemaker_program": json.dumps("train.sh")}),
                     "ClientError: sagemaker_submit_directory"),
    }
    for req, _ in jobs.values():
        sm.create_training_job(**req)
    for key, (req, want) in jobs.items():
        name = req["TrainingJobName"]
        d = H.wait_job(sm, name, timeout=180)
        if want == "Completed":
            assert d["TrainingJobStatus"] == "Completed", (key, d.get("FailureReason"))
        else:
            assert d["TrainingJobStatus"] == "Failed", key
            assert d["FailureReason"].startswith(want), (key, d["FailureReason"])
            assert d["SecondaryStatusTransitions"][-1]["Status"] == "Failed"
            continue
        stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
        msgs = [e["message"] for e in H.log_events(logs, stream)[0]]
        text = "\n".join(msgs)
        if key == "sharded":
            assert "./part-0.csv ./part-1.csv ./part-2.csv ./part-3.csv ./part-4.csv " in msgs, text
            assert f"Downloading s3://{b}/shard/ (5 objects, 25 bytes, shard of ShardedByS3Key)" \
                in text, text
            assert "input mode Pipe is delivered as files" in text, text
        else:
            assert "./x.csv ./y/z.csv " in msgs, text  # m/unlisted.csv is not in the manifest
            assert "z" in msgs
    # the traversal went nowhere
    assert not os.path.exists("/escape.sh")


def test_output_uncompressed_checkpoints_profiler(flow_server, clients, data_bucket):
    server = flow_server
    """OutputDataConfig.CompressionType NONE (files under output/model/ and output/data/),
    CheckpointConfig restore before start and upload while running and at the end."""
    s3, sm = clients["s3"], clients["sm"]
    b = data_bucket
    name = H.unique("nocomp")
    script = "\n".join([
        '[ "$(cat /opt/ml/checkpoints/step-1.ckpt)" = restored-1 ] || exit 3',
        '[ "$(cat /opt/ml/checkpoints/deep/step-0.ckpt)" = restored-0 ] || exit 4',
        "mkdir -p /opt/ml/model/sub && printf m1 > /opt/ml/model/m1.txt && printf m2 > /opt/ml/model/sub/m2.txt",
        "printf d1 > /opt/ml/output/data/d1.txt",
        "printf new-2 > /opt/ml/checkpoints/step-2.ckpt",
        "sleep 12",  # one periodic checkpoint upload happens while the job runs
        "printf new-3 > /opt/ml/checkpoints/step-3.ckpt",
    ])
    req = _job(b, name, script,
               OutputDataConfig={"S3OutputPath": f"s3://{b}/out", "CompressionType": "NONE"},
               CheckpointConfig={"S3Uri": f"s3://{b}/ckpt"})
    # Debian's botocore 1.29 predates OutputDataConfig.CompressionType (it can neither send nor
    # read it): a hand-signed request
    r = server.call("CreateTrainingJob", req)
    assert r.status == 200, r
    # while it sleeps, step-2 reaches S3
    H.wait_for(lambda: s3.list_objects_v2(Bucket=b, Prefix="ckpt/step-2").get("KeyCount"), 60,
               "the periodic checkpoint upload")
    d = H.wait_job(sm, name, timeout=180)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    raw = server.call("DescribeTrainingJob", {"TrainingJobName": name}).json
    assert raw["OutputDataConfig"]["CompressionType"] == "NONE"  # what model_data reads
    model_uri = d["ModelArtifacts"]["S3ModelArtifacts"]
    assert model_uri == f"s3://{b}/out/{name}/output/model"
    got = {o["Key"]: s3.get_object(Bucket=b, Key=o["Key"])["Body"].read()
           for o in s3.list_objects_v2(Bucket=b, Prefix=f"out/{name}/")["Contents"]}
    assert got == {f"out/{name}/output/model/m1.txt": b"m1",
                   f"out/{name}/output/model/sub/m2.txt": b"m2",
                   f"out/{name}/output/data/d1.txt": b"d1"}, got
    ck = {o["Key"]: s3.get_object(Bucket=b, Key=o["Key"])["Body"].read()
          for o in s3.list_objects_v2(Bucket=b, Prefix="ckpt/")["Contents"]}
    assert ck["ckpt/step-1.ckpt"] == b"restored-1"
    assert ck["ckpt/deep/step-0.ckpt"] == b"restored-0"
    assert ck["ckpt/step-2.ckpt"] == b"new-2"
    assert ck["ckpt/step-3.ckpt"] == b"new-3"  # the final upload


def test_failed_job_still_uploads_its_profiler_output(clients, data_bucket):
    """The profile of a job that failed is the one most worth reading: it is uploaded too."""
    sm, s3 = clients["sm"], clients["s3"]
    b = data_bucket
    name = H.unique("proffail")
    script = ("mkdir -p /opt/ml/output/profiler/system && echo '{\"cpu\": 99}' > "
              "/opt/ml/output/profiler/system/last.json && echo boom > /opt/ml/output/failure "
              "&& exit 1")
    req = _job(b, name, script, ProfilerConfig={"S3OutputPath": f"s3://{b}/prof"})
    sm.create_training_job(**req)
    d = H.wait_job(sm, name, timeout=120)
    assert d["TrainingJobStatus"] == "Failed" and d["FailureReason"] == "boom"
    body = s3.get_object(Bucket=b, Key=f"prof/{name}/profiler-output/system/last.json")
    assert json.loads(body["Body"].read()) == {"cpu": 99}
