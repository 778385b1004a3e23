"""The data dir's disk full: the server's --data-dir (its private Redis with its AOF,
the object store, the embedded agent's state) on a small tmpfs, filled to the last byte while a
job trains. While it is full the API must answer every call, in AWS's error form for the
writes it cannot keep (no crash, no hung request), and keep answering reads; once space is
freed it must take writes again, every object acknowledged before the fault must read back
byte for byte, and every job acknowledged must end in a terminal state, none stranded. Job
staging stays off the small disk (--staging-dir): the case is the data dir's disk."""
import hashlib
import os
import random
import subprocess
import time

import botocore.exceptions
import pytest

import faultjobs as F
import tyhelpers as H

SIZE_MB = 64
OBJECTS = 20


@pytest.fixture
def small_disk(workdir):
    d = os.path.join(workdir, "ra-disk")
    os.makedirs(d)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m,mode=0755", "tmpfs", d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield d
    finally:
        for pid in H.procs_mentioning(d):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        subprocess.run(["umount", "-l", d], capture_output=True)


def _fill(path):
    """Writes path until the disk refuses a single byte more. Returns the bytes written."""
    n = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            chunk = b"\0" * size
            while True:
                try:
                    w = os.write(fd, chunk)
                except OSError:
                    break
                n += w
                if w < size:
                    break
    finally:
        os.close(fd)
    return n


def _aws_error(call):
    """Runs call; returns None when it succeeded, else (HTTP status, AWS error code). Fails on
    anything that is not an AWS-form error answer (a dropped connection, a timeout)."""
    try:
        call()
        return None
    except botocore.exceptions.ClientError as e:
        code = e.response.get("Error", {}).get("Code")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        assert code, f"an error without an AWS error code: {e.response}"
        return status, code


def test_data_dir_disk_full(small_disk, make_server, workdir):
    s = make_server(agents=1, data_dir=os.path.join(small_disk, "data"),
                    log_path=os.path.join(workdir, "ra-disk-server.log"),
                    extra=["--staging-dir", os.path.join(workdir, "ra-disk-staging"),
                           "--stop-grace", "2"])
    sm, s3 = s.client(), s.client("s3")
    bucket = H.unique("ra-disk").lower()
    s3.create_bucket(Bucket=bucket)
    rnd = random.Random(11)
    kept = {}
    for i in range(OBJECTS):
        body = rnd.randbytes(16384)
        s3.put_object(Bucket=bucket, Key=f"before/{i}", Body=body)
        kept[f"before/{i}"] = hashlib.sha256(body).hexdigest()
    names = [H.unique("ra-disk")]
    sm.create_training_job(**H.job_request(names[0], F.script(6),
                                           output=f"s3://{bucket}/out"))
    H.wait_job(sm, names[0], statuses=("InProgress",), secondary=("Training",), timeout=120)

    filler = os.path.join(small_disk, "filler")
    filled = _fill(filler)
    t_full = time.monotonic()
    errors = {}
    # writes: answered, in AWS's form when refused
    for i in range(3):
        e = _aws_error(lambda: s3.put_object(Bucket=bucket, Key=f"full/{i}",
                                             Body=rnd.randbytes(262144)))
        if e is None:
            kept[f"full/{i}"] = None  # acknowledged: must read back later (checked by size)
        else:
            errors[f"PutObject {e[0]} {e[1]}"] = errors.get(f"PutObject {e[0]} {e[1]}", 0) + 1
    n = H.unique("ra-disk")
    e = _aws_error(lambda: sm.create_training_job(**H.job_request(n, F.script(1),
                                                                 output=f"s3://{bucket}/out")))
    if e is None:
        names.append(n)  # acknowledged: must end
    else:
        errors[f"CreateTrainingJob {e[0]} {e[1]}"] = 1
    # reads go on
    assert sm.describe_training_job(TrainingJobName=names[0])["TrainingJobName"] == names[0]
    assert s3.get_object(Bucket=bucket, Key="before/0")["Body"].read()
    st, _ = s.healthz()
    time.sleep(max(0, 8 - (time.monotonic() - t_full)))  # the job ends while the disk is full
    assert s.proc.p.poll() is None, "the server died on a full disk:\n" + s.proc.tail()
    assert errors, "no write was refused on a full disk: the case did not happen"

    os.unlink(filler)
    t_free = time.monotonic()
    H.wait_for(lambda: _aws_error(lambda: s3.put_object(Bucket=bucket, Key="after/0",
                                                        Body=b"back")) is None,
               30, "PutObject to work again once space is freed", interval=0.5)
    recovered = time.monotonic() - t_free
    last = H.unique("ra-disk")
    H.wait_for(lambda: _aws_error(lambda: sm.create_training_job(
        **H.job_request(last, F.script(1), output=f"s3://{bucket}/out"))) is None,
        30, "CreateTrainingJob to work again", interval=0.5)
    names.append(last)
    final = {n: H.wait_job(sm, n, timeout=180) for n in names}
    lost = 0
    for key, digest in kept.items():
        got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        lost += digest is not None and hashlib.sha256(got).hexdigest() != digest
    F.fault_line("disk-full", final, lost_objects=lost, refused=sum(errors.values()),
                 refused_as=",".join(k.replace(" ", ":") for k in sorted(errors)),
                 healthz_while_full=st, recovered_s=round(recovered, 1), filled_mb=filled >> 20)
    assert lost == 0
    for n, d in final.items():
        assert d["TrainingJobStatus"] in ("Completed", "Failed"), (n, d["TrainingJobStatus"])
        if d["TrainingJobStatus"] == "Failed":
            assert d.get("FailureReason"), n
    assert final[last]["TrainingJobStatus"] == "Completed", final[last].get("FailureReason")
    assert s.proc.p.poll() is None, s.proc.tail()
