"""Redis outages: a real redis-server (AOF, appendfsync always) is killed with SIGKILL
while N short jobs run and brought back on the same port and data dir after 5, 30 and 120 s; the
standalone agent keeps supervising its containers, buffers what it could not write (its outbox)
and replays it, and retries its uploads. Then the API server is killed with SIGKILL during N jobs
and restarted on the same data dir. Every case counts jobs per terminal state (a `FAULT ...`
line) and checks that none is stranded or ran twice (one run marker per job in its logs), that
the lines and metrics written while Redis was away arrived once, that no container, staging folder, temp file or outbox is left, that each job's model.tar.gz and
the objects acknowledged before the fault are readable, and that /healthz said degraded while
Redis was away and ok after.

One server (API only), one agent and one redis-server serve every case, in order (~5 min)."""
import io
import json
import os
import signal
import tarfile
import time
import urllib.parse

import pytest

import tyhelpers as H

N = 6
SLEEP = 8
MARK = "fr-run-marker"
BUCKET = "fr-outage"


def _containers(names):
    """The engine's containers of these jobs (label trainyard.job), running or not."""
    q = urllib.parse.quote(json.dumps({"label": ["trainyard.job"]}))
    status, body = H.engine_request("GET", f"/containers/json?all=1&filters={q}")
    assert status == 200, body
    return [c for c in json.loads(body)
            if (c.get("Labels") or {}).get("trainyard.job", "") in names]


class Redis:
    """A redis-server on a TCP port with its AOF in d, killed and started again by the test."""

    def __init__(self, procs, d):
        self.procs, self.d, self.port = procs, d, H.free_port()
        self.proc = None
        os.makedirs(d, exist_ok=True)

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def start(self):
        self.proc = self.procs([H.REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                                "--save", "", "--appendonly", "yes", "--appendfsync", "always",
                                "--dir", self.d], log_path=os.path.join(self.d, "redis.log"))
        self.proc.wait_line("Ready to accept connections", 20)

    def kill(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.p.wait(10)


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    """Module-wide processes (the per-test fixtures would restart them per case)."""
    import tempfile
    base = tempfile.mkdtemp(prefix="fr-outage-", dir=str(tmp_path_factory.getbasetemp()))
    started = []

    def procs(argv, **kw):
        p = H.Proc(argv, **kw)
        started.append(p)
        return p

    class Rig:
        pass

    g = Rig()
    g.base = base
    g.procs = procs
    g.redis = Redis(procs, os.path.join(base, "redis"))
    g.redis.start()
    g.data = os.path.join(base, "server")
    g.staging = os.path.join(base, "staging")
    g.agent_dir = os.path.join(base, "agent")
    g.server = None

    def start_server():
        g.server = H.Server(g.data, agents=0, port=g.server.port if g.server else None,
                            extra=["--redis", g.redis.url, "--stop-grace", "2"])
        g.server.start()
        g.sm = g.server.client()
        g.s3 = g.server.client("s3")
        g.logs = g.server.client("logs")

    g.start_server = start_server
    start_server()
    os.makedirs(g.agent_dir)

    def start_agent():
        g.agent = procs([H.AGENT_BIN, "--redis", g.redis.url, "--docker-host", H.DOCKER_HOST,
                         "--data-dir", g.agent_dir, "--staging-dir", g.staging,
                         "--s3-dir", os.path.join(g.data, "s3"), "--id", "fr-outage-agent",
                         "--stop-grace", "2", "--slots", str(N), "--overcommit", "16",
                         "--heartbeat-ttl", "5",
                         "--runtime-image-tar", H.RUNTIME_TAR],
                        log_path=os.path.join(base, "agent.log"))
        g.agent.wait_line("event=agent.started", 120)

    g.start_agent = start_agent
    start_agent()
    # an object acknowledged before any fault: it must survive every one of them
    g.s3.create_bucket(Bucket=BUCKET)
    g.s3.put_object(Bucket=BUCKET, Key="before/ack.txt", Body=b"acknowledged before the faults")
    yield g
    for p in reversed(started):
        p.kill()
    if g.server and g.server.proc:
        g.server.kill()
    for pid in H.procs_mentioning(base):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    # the agent was killed with its Redis: its spare sandbox (and anything it ran) is left
    H.reap_agent_containers(["fr-outage-agent"])


def _script(name):
    # the marker line counts the runs of the script (a rerun writes it again, in a new stream)
    return (f"echo {MARK} {name}; sleep {SLEEP}; echo loss=0.25; "
            f"echo trained > /opt/ml/model/weights.txt; "
            f"echo data > /opt/ml/output/data/out.txt; echo finished {name}")


def _submit(g, tag):
    names = [H.unique(f"fr-{tag}") for _ in range(N)]
    for n in names:
        g.sm.create_training_job(**H.job_request(
            n, _script(n), max_runtime=600, output=f"s3://{BUCKET}/out",
            AlgorithmSpecification={"MetricDefinitions": [
                {"Name": "train:loss", "Regex": "loss=([0-9.]+)"}]}))
    return names


def _training(g, names):
    return all(g.sm.describe_training_job(TrainingJobName=n)["SecondaryStatus"] == "Training"
               for n in names)


def _counts(g, names):
    c = {"Completed": 0, "Failed": 0, "Stopped": 0, "InProgress": 0, "Stopping": 0}
    for n in names:
        c[g.sm.describe_training_job(TrainingJobName=n)["TrainingJobStatus"]] += 1
    return c


def _wait_terminal(g, names, timeout):
    deadline = time.monotonic() + timeout
    while True:
        c = _counts(g, names)
        if c["InProgress"] == 0 and c["Stopping"] == 0:
            return c
        if time.monotonic() > deadline:
            return c
        time.sleep(1)


def _runs(g, name):
    """How many times the job's script ran (its marker lines over all its log streams) and how
    many of its last lines (written while Redis was away) reached the logs."""
    r = g.logs.describe_log_streams(logGroupName=H.LOG_GROUP, logStreamNamePrefix=name + "/")
    n = last = 0
    for st in r["logStreams"]:
        events, _ = H.log_events(g.logs, st["logStreamName"])
        n += sum(1 for e in events if e["message"].startswith(f"{MARK} {name}"))
        last += sum(1 for e in events if e["message"] == f"finished {name}")
    return n, last


def _leftovers(g, tag):
    """Staging folders, object store temp files and agent outboxes left behind."""
    left = []
    if os.path.isdir(g.staging):
        left += [os.path.join(g.staging, e) for e in os.listdir(g.staging)
                 if not e.startswith(".")]
    tmp = os.path.join(g.data, "s3", ".ty", "tmp")
    if os.path.isdir(tmp):
        left += [os.path.join(tmp, e) for e in os.listdir(tmp)]
    ob = os.path.join(g.agent_dir, "outbox")
    if os.path.isdir(ob):
        left += [os.path.join(ob, e) for e in os.listdir(ob)]
    return left


def _check(g, label, names, counts, tag):
    line = (f"FAULT {label}: Completed={counts['Completed']} Failed={counts['Failed']} "
            f"Stopped={counts['Stopped']} InProgress={counts['InProgress'] + counts['Stopping']}")
    print(line)
    with open(os.path.join(os.path.dirname(g.base), "fault-counts.txt"), "a") as f:
        f.write(line + "\n")
    failed = {n: g.sm.describe_training_job(TrainingJobName=n).get("FailureReason")
              for n in names
              if g.sm.describe_training_job(TrainingJobName=n)["TrainingJobStatus"] != "Completed"}
    assert counts["Completed"] == len(names), (line, failed, g.agent.tail(60))
    runs = {n: _runs(g, n) for n in names}
    odd = {n: v for n, v in runs.items() if v != (1, 1)}
    assert not odd, ("(script runs, last lines) other than once", odd)
    for n in names:
        d = g.sm.describe_training_job(TrainingJobName=n)
        uri = d["ModelArtifacts"]["S3ModelArtifacts"]
        b, k = uri[len("s3://"):].split("/", 1)
        body = g.s3.get_object(Bucket=b, Key=k)["Body"].read()
        with tarfile.open(fileobj=io.BytesIO(body)) as t:
            assert t.extractfile("weights.txt").read() == b"trained\n", n
        fm = {m["MetricName"]: m["Value"] for m in d.get("FinalMetricDataList", [])}
        assert fm.get("train:loss") == 0.25, (n, d.get("FinalMetricDataList"))
        tr = [x["Status"] for x in d["SecondaryStatusTransitions"]]
        assert tr[-1] == "Completed" and "Uploading" in tr, (n, tr)
    assert g.s3.get_object(Bucket=BUCKET, Key="before/ack.txt")["Body"].read() == \
        b"acknowledged before the faults"
    H.wait_for(lambda: not _containers(names), 30, "no container left")
    H.wait_for(lambda: not _leftovers(g, tag), 30, "no staging folder, temp file or outbox left")


@pytest.mark.parametrize("down_s", [5, 30, 120])
def test_redis_killed_during_jobs(rig, down_s):
    g = rig
    tag = f"r{down_s}"
    names = _submit(g, tag)
    H.wait_for(lambda: _training(g, names), 120, "every job training")
    time.sleep(SLEEP - 3)  # the containers end while Redis is away
    g.redis.kill()
    t0 = time.monotonic()
    st, body = g.server.healthz()
    h = json.loads(body)
    assert st == 503 and h["status"] == "degraded", (st, h)
    assert any(x.startswith("redis") for x in h["reasons"]), h
    time.sleep(max(0.0, down_s - (time.monotonic() - t0)))
    st, _ = g.server.healthz()
    assert st == 503
    g.redis.start()
    H.wait_for(lambda: g.server.healthz()[0] == 200, 30, "/healthz ok after Redis is back")
    counts = _wait_terminal(g, names, 90)
    _check(g, f"redis-down-{down_s}s", names, counts, tag)


def test_redis_killed_as_jobs_start(rig):
    """Redis gone while the agent claims and starts the jobs: a runner that cannot read its job
    leaves the entry pending and the agent, alive, takes its own pending entries again (every
    AGENT_OWN_RESCAN_S = 30 s) once Redis is back; each job runs once."""
    g = rig
    names = _submit(g, "st")
    g.redis.kill()
    assert g.server.healthz()[0] == 503
    time.sleep(20)
    g.redis.start()
    H.wait_for(lambda: g.server.healthz()[0] == 200, 30, "/healthz ok after Redis is back")
    counts = _wait_terminal(g, names, 120)
    _check(g, "redis-down-at-start-20s", names, counts, "st")


def test_agent_killed_while_redis_down(rig):
    """Redis gone, the containers end (the agent's outbox holds their last lines, metrics and
    Uploading), then the agent is killed with SIGKILL; Redis comes back and the agent is started
    again under the same id: it replays the outbox, takes the ended containers' exits from its
    run record (reattach.h) and uploads, without running any script again."""
    g = rig
    names = _submit(g, "ak")
    H.wait_for(lambda: _training(g, names), 120, "every job training")
    g.redis.kill()
    H.wait_for(lambda: not any(c.get("State") == "running" for c in _containers(names)),
               SLEEP + 30, "the containers to end")
    H.wait_for(lambda: len([l for l in g.agent.lines if "transition_buffered" in l
                            and "fr-ak" in l and "secondary=Uploading" in l]) >= N, 30, "every job's Uploading in the outbox")
    g.agent.kill()
    assert os.listdir(os.path.join(g.agent_dir, "outbox")), "no outbox left by the killed agent"
    g.redis.start()
    g.start_agent()
    counts = _wait_terminal(g, names, 120)
    _check(g, "redis-down-agent-killed", names, counts, "ak")


def test_server_killed_during_jobs(rig):
    g = rig
    names = _submit(g, "srv")
    H.wait_for(lambda: _training(g, names), 120, "every job training")
    g.server.kill()  # SIGKILL; the agent and Redis go on
    time.sleep(3)
    g.start_server()  # same data dir and port
    counts = _wait_terminal(g, names, 90)
    _check(g, "server-killed", names, counts, "srv")
    assert g.server.healthz()[0] == 200
