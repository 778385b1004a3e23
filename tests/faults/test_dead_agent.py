"""A job whose agent is gone and no other agent is live: StopTrainingJob still ends it,
through the engine (SIGTERM, the grace, SIGKILL), as Stopped; a running job nobody takes over
fails with a clear reason after --orphan-timeout, never InProgress for ever. Either way its
containers are removed. The server is API-only (--agents 0) and shares the engine with one
standalone agent that is killed with SIGKILL mid-job; the server's janitor takes over."""
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

import tyhelpers as H

GRACE = 3
ORPHAN = 15


def _containers(job):
    q = urllib.parse.quote(json.dumps({"label": [f"trainyard.job={job}"]}))
    status, body = H.engine_request("GET", f"/containers/json?all=1&filters={q}")
    assert status == 200, body
    return json.loads(body)


def _redis(procs, d):
    os.makedirs(d)
    sock = os.path.join(d, "redis.sock")
    procs([H.REDIS_SERVER, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
           "--save", "", "--appendonly", "no", "--dir", d], log_path=os.path.join(d, "redis.log"))
    H.wait_for(lambda: os.path.exists(sock), 20, "redis-server's socket")
    return f"unix://{sock}"


def _setup(make_server, procs, workdir, tag):
    d = os.path.join(workdir, "dead-agent-" + tag)
    redis_url = _redis(procs, d)
    s = make_server(agents=0, extra=["--redis", redis_url, "--stop-grace", str(GRACE),
                                     "--orphan-timeout", str(ORPHAN)])
    ad = os.path.join(d, "agent")
    os.makedirs(ad)
    agent = procs([H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST,
                   "--data-dir", ad, "--staging-dir", os.path.join(d, "staging"),
                   "--id", "fault-agent-" + tag, "--stop-grace", str(GRACE), "--slots", "1",
                   "--heartbeat-ttl", "2", "--runtime-image-tar", H.RUNTIME_TAR],
                  log_path=os.path.join(d, "agent.log"))
    sm = s.client()
    name = H.unique("dead-" + tag)
    sm.create_training_job(**H.job_request(name, "echo started; sleep 600"))
    H.wait_for(lambda: sm.describe_training_job(TrainingJobName=name)["SecondaryStatus"]
               == "Training" and _containers(name), 120, "the job's container running")
    agent.kill()  # SIGKILL: its heartbeat stops, its container keeps running
    assert agent.p.returncode == -9
    assert any(c.get("State") == "running" for c in _containers(name))
    return s, sm, name


def test_stop_with_the_agent_dead(make_server, procs, workdir):
    s, sm, name = _setup(make_server, procs, workdir, "stop")
    t0 = time.monotonic()
    sm.stop_training_job(TrainingJobName=name)
    # taken over once the agent's heartbeat expired and its entry was idle 10 s (the server's
    # heartbeat TTL), then SIGTERM, GRACE, SIGKILL: within grace + 30 s in all
    job = H.wait_job(sm, name, timeout=30 + GRACE + 30)
    took = time.monotonic() - t0
    assert job["TrainingJobStatus"] == "Stopped", job
    assert job["SecondaryStatus"] == "Stopped", job
    assert took <= GRACE + 30, took
    assert _containers(name) == [], _containers(name)
    print(f"stopped {took:.1f} s after StopTrainingJob with its agent dead (grace {GRACE} s)")
    # the server keeps serving, and /healthz says why no job can run now
    try:
        urllib.request.urlopen(s.url + "/healthz", timeout=10)
        raise AssertionError("/healthz answered 200 with no live agent")
    except urllib.error.HTTPError as e:
        assert e.code == 503 and "agents" in json.loads(e.read())["reasons"][0], e


def test_orphaned_job_fails_after_the_timeout(make_server, procs, workdir):
    s, sm, name = _setup(make_server, procs, workdir, "orphan")
    t0 = time.monotonic()
    job = H.wait_job(sm, name, timeout=30 + ORPHAN + GRACE + 40)
    took = time.monotonic() - t0
    assert job["TrainingJobStatus"] == "Failed", job
    assert "no agent took the job over within" in job.get("FailureReason", ""), job
    assert _containers(name) == [], _containers(name)
    print(f"failed {took:.1f} s after its agent died (orphan timeout {ORPHAN} s)")
