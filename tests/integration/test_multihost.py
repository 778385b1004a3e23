"""InstanceCount > 1: one container per host (algo-1..algo-N) on a network of the job's own,
each with its own /opt/ml, resourceconfig.json, SM_CURRENT_HOST, log stream and share of a
ShardedByS3Key channel (object i of the sorted keys goes to host i mod N), while a
FullyReplicated channel reaches every host whole. One failing host fails the job and stops the
others. Runs against the embedded store and through --s3-endpoint (test_s3.py's pair).
"""
import gzip
import io
import json
import os
import tarfile
import time

import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

SHARDS = {f"part-{i:02d}.csv": f"row {i}\n".encode() * (i + 1) for i in range(7)}
REPLICATED = {"words.txt": b"alpha beta gamma\n" * 300}

# (A Gzip channel keeps each object's name, .gz included, with its bytes decoded.)
# Every host checks its inputs against what the test expects of it (passed as hyperparameters:
# the sorted file names of its shard and the md5 of the replicated file), then algo-2 sends a
# line to algo-1 over the job network and algo-1 puts what it got into the model.
SCRIPT = r"""
set -e; H=$SM_CURRENT_HOST; echo "host $H of $SM_HOSTS"
cfg=$(cat /opt/ml/input/config/resourceconfig.json); case "$cfg" in *"\"current_host\":\"$H\""*) ;; *) echo "bad resourceconfig $cfg"; exit 3;; esac
mine=$(cd /opt/ml/input/data/shard && ls | tr '\n' ' '); echo "shard $H: $mine"
want=$(sed -n "s/.*\"want_$(echo $H | tr - _)\": *\"\([^\"]*\)\".*/\1/p" /opt/ml/input/config/hyperparameters.json)
[ "$mine" = "$want" ] || { echo "shard of $H is '$mine', expected '$want'" > /opt/ml/output/failure; exit 4; }
rep=$(md5sum /opt/ml/input/data/rep/words.txt.gz | cut -d' ' -f1); echo "replicated $H: $rep"
if [ "$H" = algo-2 ]; then n=0; until echo "hello from algo-2 ($mine)" | nc algo-1 5000; do n=$((n+1)); [ $n -lt 150 ] || exit 5; sleep 0.2; done; echo sent; exit 0; fi
got=$(nc -l -p 5000); echo "algo-1 got: $got"; printf '%s\n%s\n' "$got" "$rep" > /opt/ml/model/from-algo-2.txt
"""


def _channel(name, uri, dist, **extra):
    return {"ChannelName": name, **extra,
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri,
                                            "S3DataDistributionType": dist}}}


def _expected_shards(n):
    keys = sorted(SHARDS)
    return {f"want_algo_{h + 1}": "".join(k + " " for i, k in enumerate(keys) if i % n == h)
            for h in range(n)}


@pytest.fixture(scope="module", params=["embedded", "external"])
def pair(request, server, workdir):
    """(sagemaker client, s3 client, logs client) of the shared server, or of a server in front
    of an external store (a second trainyard)."""
    if request.param == "embedded":
        yield server.client("sagemaker"), server.client("s3"), server.client("logs")
        return
    store = H.Server(os.path.join(workdir, f"mh-store-{os.getpid()}"), agents=0)
    store.start()
    akid, secret = store.credentials()
    front = H.Server(os.path.join(workdir, f"mh-front-{os.getpid()}"), agents=1,
                     extra=["--s3-endpoint", store.url],
                     env={"TRAINYARD_S3_ACCESS_KEY_ID": akid,
                          "TRAINYARD_S3_SECRET_ACCESS_KEY": secret})
    front.start()
    yield front.client("sagemaker"), front.client("s3"), front.client("logs")
    assert front.stop(timeout=60) == 0, front.proc.tail()
    assert store.stop(timeout=60) == 0, store.proc.tail()


@pytest.fixture(scope="module")
def data(pair):
    _, s3, _ = pair
    b = f"mh-{os.getpid() % 100000}-{int(time.time() * 1000) % 10000000}"
    s3.create_bucket(Bucket=b)
    for k, v in SHARDS.items():
        s3.put_object(Bucket=b, Key=f"shard/{k}", Body=v)
    for k, v in REPLICATED.items():
        s3.put_object(Bucket=b, Key=f"rep/{k}.gz", Body=gzip.compress(v))
    return b


def test_two_hosts_shard_talk_and_write_one_model(pair, data):
    sm, s3, logs = pair
    job = H.unique("mh2")
    hps = {k: v for k, v in _expected_shards(2).items()}
    req = H.job_request(job, SCRIPT, output=f"s3://{data}/out", HyperParameters=hps,
                        InputDataConfig=[
                            _channel("shard", f"s3://{data}/shard/", "ShardedByS3Key"),
                            _channel("rep", f"s3://{data}/rep/", "FullyReplicated",
                                     CompressionType="Gzip")])
    req["ResourceConfig"]["InstanceCount"] = 2
    sm.create_training_job(**req)
    d = H.wait_job(sm, job, timeout=240)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert d["ResourceConfig"]["InstanceCount"] == 2

    # one stream per host, each with its own share and the replicated file whole
    streams = {s["logStreamName"].split("/")[1].rsplit("-", 1)[0]: s["logStreamName"]
               for s in logs.describe_log_streams(logGroupName=H.LOG_GROUP,
                                                  logStreamNamePrefix=job + "/")["logStreams"]}
    assert sorted(streams) == ["algo-1", "algo-2"], streams
    import hashlib
    rep_md5 = hashlib.md5(REPLICATED["words.txt"]).hexdigest()
    text = {}
    for host, stream in streams.items():
        events, _ = H.log_events(logs, stream)
        text[host] = [e["message"] for e in events]
        assert f'host {host} of ["algo-1","algo-2"]' in text[host], text[host]
        assert f"shard {host}: {hps['want_' + host.replace('-', '_')]}" in text[host], text[host]
        assert f"replicated {host}: {rep_md5}" in text[host]
        # download progress went to the host's own stream
        assert any(m.startswith(f"Downloading s3://{data}/shard/") for m in text[host]), text[host]
    assert "sent" in text["algo-2"]

    # the model is algo-1's, with what algo-2 sent it over the network
    body = s3.get_object(Bucket=data, Key=f"out/{job}/output/model.tar.gz")["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tf:
        got = tf.extractfile("from-algo-2.txt").read().decode().splitlines()
    assert got == [f"hello from algo-2 ({hps['want_algo_2']})", rep_md5]


def test_one_failing_host_fails_the_job_and_stops_the_others(pair, data):
    sm, _, _ = pair
    job = H.unique("mhfail")
    script = ('if [ "$SM_CURRENT_HOST" = algo-3 ]; then echo "algo-3 gives up" > '
              '/opt/ml/output/failure; exit 2; fi; trap "exit 143" TERM; sleep 600 & wait')
    req = H.job_request(job, script, output=f"s3://{data}/out")
    req["ResourceConfig"]["InstanceCount"] = 3
    t0 = time.monotonic()
    sm.create_training_job(**req)
    d = H.wait_job(sm, job, timeout=120)
    assert d["TrainingJobStatus"] == "Failed"
    assert d["FailureReason"] == "algo-3 gives up"
    assert time.monotonic() - t0 < 100  # the sleeping hosts were stopped, not waited for
    left = H.engine_request("GET", "/containers/json?all=1")
    assert not [c for c in json.loads(left[1]) if any(job in n for n in c.get("Names", []))]


def test_too_many_hosts_is_a_client_error(pair, data):
    sm, _, _ = pair
    job = H.unique("mhmany")
    req = H.job_request(job, "true", output=f"s3://{data}/out")
    req["ResourceConfig"]["InstanceCount"] = 33
    try:
        sm.create_training_job(**req)
    except ClientError as e:  # the quota may refuse it first
        assert e.response["Error"]["Code"] in ("ResourceLimitExceeded", "ValidationException")
        return
    d = H.wait_job(sm, job, timeout=60)
    assert d["TrainingJobStatus"] == "Failed"
    assert d["FailureReason"].startswith("ClientError: InstanceCount 33 is more than")


# algo-2 tells algo-1, over the job network, which deployment it runs in (the job's DEP).
SAME_NAME = ('if [ "$SM_CURRENT_HOST" = algo-2 ]; then n=0; until echo "hi from $DEP" | nc algo-1 '
             '5000; do n=$((n+1)); [ $n -lt 150 ] || exit 5; sleep 0.2; done; exit 0; fi; '
             'echo "GOT $(nc -l -p 5000) in $DEP"')


def test_two_deployments_on_one_engine_run_a_job_of_the_same_name(make_server):
    """Job names are unique only within a deployment. Two deployments sharing one engine run a
    two-host job of the same name at the same time: each gets a network and containers of its
    own (named with the deployment: reap.h), neither removes or joins the other's, and each
    job's hosts talk only to each other."""
    servers = [make_server(agents=1, extra=["--stop-grace", "2"]) for _ in range(2)]
    name = H.unique("mh-same")
    for i, s in enumerate(servers):
        s.client("sagemaker").create_training_job(**H.job_request(
            name, SAME_NAME, Environment={"DEP": f"dep{i}"},
            ResourceConfig={"InstanceCount": 2}))
    for i, s in enumerate(servers):
        sm, logs = s.client("sagemaker"), s.client("logs")
        d = H.wait_job(sm, name, timeout=180)
        assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
        got = [m for st in H.job_stream(logs, name)["logStreams"]
               for m in (e["message"] for e in H.log_events(logs, st["logStreamName"])[0])
               if m.startswith("GOT ")]
        assert got == [f"GOT hi from dep{i} in dep{i}"], got
    H.wait_for(lambda: H.job_networks(name) == [], 20, "both job networks removed")
