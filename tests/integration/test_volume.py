"""ResourceConfig.VolumeSizeInGB is a disk of the job's own (issue 23, the volume): each host's
/opt/ml is a loop-mounted ext4 volume of that size (control-plane/volume/), so
- `df /opt/ml` in the job shows the volume, and a job that writes past it gets ENOSPC inside
  while the host's disk does not move (before, a 1 GB job wrote 1.5 GiB to the host);
- what the agent stages is bounded by it too: a 1.5 MB sourcedir.tar.gz that unpacks to 1.5 GiB
  fails the job with SageMaker's "Data download failed:Insufficient disk space" before the
  script runs (before, it was unpacked onto the host's disk);
- a volume the agent's disk cannot promise fails fast as capacity;
- nothing is left mounted once a job ends, nor after its agent was killed (the next live
  agent's sweep reaps it).
Skipped where the agent cannot make volumes (not root, no loop devices). Job names vol-*.
"""
import gzip
import io
import json
import os
import tarfile

import pytest

import tyhelpers as H

BUCKET = "bucket"


def _loop_mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f if l.split()[4].startswith(path) and " - ext4 /dev/loop" in l]


@pytest.fixture(scope="module")
def srv(workdir):
    if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
        pytest.skip("job volumes need root and loop devices")
    s = H.Server(os.path.join(workdir, "volumes"), agents=1, extra=["--job-volumes", "loop"])
    s.start()
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()


def _lines(s, name):
    logs = s.client("logs")
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    return [e["message"] for e in H.log_events(logs, stream)[0]]


def test_df_shows_the_volume_and_writes_stop_at_it(srv):
    sm = srv.client()
    name = H.unique("vol-fill")
    host_before = os.statvfs(srv.data_dir)
    script = "\n".join([
        "df -k /opt/ml | tail -1 | awk '{print \"DF \" $2}'",
        "dd if=/dev/zero of=/opt/ml/output/big bs=1M count=1536 2>&1 | head -1",
        "echo \"WROTE $(du -k /opt/ml/output/big | cut -f1)\""])
    sm.create_training_job(**H.job_request(name, script))
    d = H.wait_job(sm, name, timeout=240)
    lines = _lines(srv, name)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), lines[-20:])
    df = int(next(l for l in lines if l.startswith("DF ")).split()[1])
    assert 900 * 1024 < df <= 1024 * 1024, lines  # 1 GiB less ext4's tables
    assert any("No space left on device" in l for l in lines), lines[-20:]
    wrote = int(next(l for l in lines if l.startswith("WROTE ")).split()[1])
    assert wrote <= 1024 * 1024, lines[-10:]
    host_after = os.statvfs(srv.data_dir)
    # the host lost at most the volume's gigabyte meanwhile (other tests may write too)
    assert (host_before.f_bavail - host_after.f_bavail) * host_after.f_frsize < 1.2 * (1 << 30)
    staging = os.path.join(os.path.dirname(srv.data_dir.rstrip("/")),
                           "staging-" + os.path.basename(srv.data_dir.rstrip("/")))
    H.wait_for(lambda: not _loop_mounts_under(staging), 30, "the job's volume unmounted")


def _bomb(size):
    """A sourcedir.tar.gz whose one file unpacks to size bytes of zeros (a few MB packed)."""
    class Zeros(io.RawIOBase):
        def __init__(self, n):
            self.left = n

        def readable(self):
            return True

        def readinto(self, b):
            k = min(len(b), self.left)
            b[:k] = bytes(k)
            self.left -= k
            return k

    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1) as gz:
        with tarfile.open(fileobj=gz, mode="w|") as t:
            t.addfile(tarfile.TarInfo("train.sh"), io.BytesIO(b""))
            info = tarfile.TarInfo("zeros.bin")
            info.size = size
            t.addfile(info, io.BufferedReader(Zeros(size), 1 << 20))
    return out.getvalue()


def test_staging_is_bounded_by_the_volume(srv):
    sm, s3 = srv.client(), srv.client("s3")
    body = _bomb(1536 << 20)
    assert len(body) < 16 << 20
    name = H.unique("vol-bomb")
    s3.put_object(Bucket=BUCKET, Key=f"code/{name}.tar.gz", Body=body)
    sm.create_training_job(**H.job_request(name, "echo SCRIPT-RAN", HyperParameters={
        "sagemaker_submit_directory": json.dumps(f"s3://{BUCKET}/code/{name}.tar.gz"),
        "sagemaker_program": json.dumps("train.sh")}))
    d = H.wait_job(sm, name, timeout=240)
    assert d["TrainingJobStatus"] == "Failed", d["TrainingJobStatus"]
    assert d["FailureReason"].startswith(
        "ClientError: Data download failed:Insufficient disk space"), d["FailureReason"]
    assert "1 GB volume" in d["FailureReason"], d["FailureReason"]
    assert not any("SCRIPT-RAN" in l for l in _lines(srv, name))


def test_a_volume_the_disk_cannot_hold_fails_fast(srv):
    if os.statvfs(srv.data_dir).f_bavail * os.statvfs(srv.data_dir).f_frsize > (16384 << 30):
        pytest.skip("more than 16 TiB free: every volume fits")
    sm = srv.client()
    name = H.unique("vol-huge")
    req = H.job_request(name, "echo SCRIPT-RAN")
    req["ResourceConfig"]["VolumeSizeInGB"] = 16384
    sm.create_training_job(**req)
    d = H.wait_job(sm, name, timeout=120)
    assert d["TrainingJobStatus"] == "Failed"
    assert d["FailureReason"].startswith("CapacityError: Unable to provision requested ML "
                                         "compute capacity"), d["FailureReason"]
    assert "16384 GB" in d["FailureReason"]


def test_a_dead_agents_volume_is_reaped(make_server, procs, workdir):
    """An agent killed hard leaves its job's volume mounted; once the job has ended (here
    stopped by the server, no agent being live), any live agent sharing the staging root
    unmounts and deletes it in its next sweep, as leftover containers are removed."""
    if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
        pytest.skip("job volumes need root and loop devices")
    d = os.path.join(workdir, "vol-reap")
    redis_url = H.private_redis(procs, d)
    staging = os.path.join(d, "staging")
    s = make_server(agents=0, extra=["--redis", redis_url, "--stop-grace", "2"])

    def agent(aid):
        ad = os.path.join(d, aid)
        os.makedirs(ad, exist_ok=True)
        return procs([H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST,
                      "--data-dir", ad, "--staging-dir", staging, "--id", aid, "--stop-grace",
                      "2", "--slots", "1", "--heartbeat-ttl", "2", "--job-volumes", "loop",
                      "--runtime-image-tar", H.RUNTIME_TAR],
                     log_path=os.path.join(d, aid + ".log"))

    first = agent("it-vol-a")
    sm = s.client()
    name = H.unique("vol-dead")
    sm.create_training_job(**H.job_request(name, "sleep 120"))
    H.wait_job(sm, name, statuses=("InProgress",), secondary=("Training",), timeout=120)
    assert len(_loop_mounts_under(staging)) == 1
    first.kill()
    sm.stop_training_job(TrainingJobName=name)  # the server stops it: no agent is live
    dj = H.wait_job(sm, name, timeout=120)
    assert dj["TrainingJobStatus"] == "Stopped", dj["TrainingJobStatus"]
    assert len(_loop_mounts_under(staging)) == 1  # nobody has swept yet
    agent("it-vol-b")
    H.wait_for(lambda: not _loop_mounts_under(staging), 60, "the dead agent's volume reaped")
    assert not [f for f in os.listdir(staging) if any(
        x.endswith(".img") for x in os.listdir(os.path.join(staging, f)))]
