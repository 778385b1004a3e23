"""Two trainyard-agent processes sharing one external Redis behind a pure API server; one agent
is killed with SIGKILL while it holds a job and others wait in the queue."""
import json
import os

import tyhelpers as H


def _healthz_agents(s):
    """Agents /healthz reports: embedded ones ("agents") and every agent with a live heartbeat
    in Redis ("live_agents", where the server has that member)."""
    status, body = s.healthz()
    h = json.loads(body)
    return list(h.get("agents", [])) + list(h.get("live_agents", []))


def _held(agent):
    jobs = agent.get("jobs")
    if isinstance(jobs, list):
        return [j if isinstance(j, str) else j.get("name") or j.get("TrainingJobName") for j in jobs]
    return None


def test_two_agents_one_killed(make_server, procs, workdir):
    for b in (H.AGENT_BIN, H.SERVER_BIN):
        assert os.access(b, os.X_OK), f"{b} missing"
    d = os.path.join(workdir, "two-agents")
    redis_url = H.private_redis(procs, d)
    s = make_server(agents=0, extra=["--redis", redis_url])
    agents = {}
    for aid in ("it-agent-a", "it-agent-b"):
        ad = os.path.join(d, aid)
        os.makedirs(ad)
        agents[aid] = procs([H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST,
                             "--data-dir", ad, "--id", aid, "--stop-grace", "2",
                             "--slots", "1", "--heartbeat-ttl", "2",
                             "--runtime-image-tar", H.RUNTIME_TAR],
                            log_path=os.path.join(d, aid + ".log"))
    H.wait_for(lambda: {a.get("id") for a in _healthz_agents(s)} >= set(agents), 90,
               "both agents in /healthz")

    sm = s.client()
    names = [H.unique(f"two-{i}") for i in range(6)]
    for n in names:
        sm.create_training_job(**H.job_request(n, "echo started; sleep 3; echo done"))

    def two_running():
        ds = {n: sm.describe_training_job(TrainingJobName=n) for n in names}
        running = [n for n, x in ds.items() if x["SecondaryStatus"] in ("Downloading", "Training")]
        return ds if len(running) >= 2 else None

    H.wait_for(two_running, 120, "two jobs running at once (one per agent)", interval=0.2)
    held_by_a = None
    for a in _healthz_agents(s):
        if a.get("id") == "it-agent-a":
            held_by_a = _held(a)
    victim = agents["it-agent-a"]
    victim.kill()  # SIGKILL: no clean shutdown, its heartbeat simply stops
    assert victim.p.returncode == -9
    # jobs still Starting now were at most claimed by the dead agent, never started by it
    queued = [n for n in names
              if sm.describe_training_job(TrainingJobName=n)["SecondaryStatus"] == "Starting"]
    assert queued, "every job was taken before the kill; the test needs some queued"

    # the dead agent drops out of /healthz once its heartbeat expires
    H.wait_for(lambda: "it-agent-a" not in {a.get("id") for a in _healthz_agents(s)}, 60,
               "the killed agent to leave /healthz")
    final = {n: H.wait_job(sm, n, timeout=180) for n in names}
    statuses = {n: x["TrainingJobStatus"] for n, x in final.items()}
    assert all(st in H.TERMINAL for st in statuses.values()), statuses
    # jobs that were still queued never ran on the dead agent: the survivor completes them
    for n in queued:
        assert statuses[n] == "Completed", (n, final[n].get("FailureReason"), statuses)
    if held_by_a is not None:
        for n in names:
            if n not in held_by_a:
                assert statuses[n] == "Completed", (n, final[n].get("FailureReason"), held_by_a)
    assert agents["it-agent-b"].p.poll() is None, "the surviving agent died:\n" + agents["it-agent-b"].tail()
    # the survivor is still healthy and takes new work
    n = H.unique("two-after")
    sm.create_training_job(**H.job_request(n, "true"))
    assert H.wait_job(sm, n, timeout=120)["TrainingJobStatus"] == "Completed"


def test_agent_restarted_under_same_id_resumes_its_job(make_server, procs, workdir):
    """An agent killed and started again at once under the same --id: its heartbeat key is still
    alive (TTL 60 s), so no other agent would reclaim the job for minutes; the agent itself takes
    back what its earlier run claimed and the container it started, which completes the job:
    the script runs once."""
    d = os.path.join(workdir, "same-id")
    redis_url = H.private_redis(procs, d)
    s = make_server(agents=0, extra=["--redis", redis_url])
    argv = [H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST,
            "--data-dir", os.path.join(d, "agent"), "--id", "it-same-id", "--stop-grace", "2",
            "--slots", "1", "--heartbeat-ttl", "60", "--runtime-image-tar", H.RUNTIME_TAR]
    first = procs(argv, log_path=os.path.join(d, "agent-1.log"))
    sm = s.client()
    name = H.unique("sameid")
    sm.create_training_job(**H.job_request(name, "echo started; sleep 4; echo done"))
    H.wait_job(sm, name, statuses=("InProgress",), secondary=("Training",), timeout=120)
    first.kill()
    second = procs(argv, log_path=os.path.join(d, "agent-2.log"))
    d2 = H.wait_job(sm, name, timeout=90)
    assert d2["TrainingJobStatus"] == "Completed", d2.get("FailureReason")
    assert "Restarting" not in [t["Status"] for t in d2["SecondaryStatusTransitions"]]
    logs = s.client("logs")
    streams = logs.describe_log_streams(logGroupName=H.LOG_GROUP,
                                        logStreamNamePrefix=name + "/")["logStreams"]
    assert len(streams) == 1, streams  # one attempt, one stream
    msgs = [e["message"] for e in H.log_events(logs, streams[0]["logStreamName"])[0]]
    assert msgs.count("started") == 1 and msgs.count("done") == 1, msgs
    assert second.p.poll() is None, second.tail()


def test_agent_bad_redis_fails_fast(workdir):
    import subprocess
    p = subprocess.run([H.AGENT_BIN, "--redis", f"redis://127.0.0.1:{H.free_port()}",
                        "--docker-host", H.DOCKER_HOST, "--data-dir", os.path.join(workdir, "agent-x"),
                        "--id", "x"], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert lines and "redis" in lines[-1].lower(), lines


def test_jobs_stopped_in_the_queue_are_skipped_cleanly(make_server, procs, workdir):
    """Jobs stopped before any agent claims them: the agent that later reads their queue entries
    skips each, saying its status, and goes on (it used to log the status from a document it had
    already freed: under ASan, integration_sanitized, that killed the agent)."""
    d = os.path.join(workdir, "stopped-queue")
    redis_url = H.private_redis(procs, d)
    s = make_server(agents=0, extra=["--redis", redis_url])
    sm = s.client()
    names = [H.unique(f"sq-{i}") for i in range(3)]
    for n in names:
        sm.create_training_job(**H.job_request(n, "echo never"))
        sm.stop_training_job(TrainingJobName=n)
    before = {n: sm.describe_training_job(TrainingJobName=n)["TrainingJobStatus"] for n in names}
    assert set(before.values()) <= {"Stopping", "Stopped"}, before
    ad = os.path.join(d, "agent")
    os.makedirs(ad)
    log = os.path.join(d, "agent.log")
    agent = procs([H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST,
                   "--data-dir", ad, "--id", "it-agent-sq", "--stop-grace", "2", "--slots", "2",
                   "--overcommit", "16",
                   "--runtime-image-tar", H.RUNTIME_TAR], log_path=log)
    after = H.unique("sq-after")
    sm.create_training_job(**H.job_request(after, "true"))
    assert H.wait_job(sm, after, timeout=180)["TrainingJobStatus"] == "Completed"
    for n in names:
        assert H.wait_job(sm, n, timeout=60)["TrainingJobStatus"] == "Stopped"
    assert agent.p.poll() is None, "the agent died:\n" + agent.tail()
    with open(log, "rb") as f:
        text = f.read().decode("utf-8")  # valid UTF-8: no bytes of a freed document
    for n in names:
        lines = [l for l in text.splitlines() if f"job={n}" in l and
                 ("agent.job.skipped" in l or "agent.job.stopped_before_start" in l)]
        assert lines, (n, text[-3000:])
        for l in lines:
            if "agent.job.skipped" in l:
                assert l.endswith("status=Stopped"), l


def test_healthz_shows_what_each_job_holds(make_server):
    """/healthz (and the console's agents page, from the same heartbeat) shows per agent what
    its running jobs' containers were given: CPUs, memory and GPUs in use of the host's, and
    each job's share (issue 23: the server shows resources in use and by which job)."""
    s = make_server(agents=1, extra=["--stop-grace", "2"])
    sm = s.client()
    name = H.unique("hold")
    req = H.job_request(name, "sleep 60", instance_type="ml.m5.large")
    req["ResourceConfig"]["VolumeSizeInGB"] = 2
    sm.create_training_job(**req)
    H.wait_job(sm, name, statuses=("InProgress",), secondary=("Training",), timeout=120)

    def holding():
        a = json.loads(s.healthz()[1])["agents"][0]
        return a, [j for j in a.get("holding", []) if j["job"] == name]

    H.wait_for(lambda: holding()[1], 30, "the job in /healthz's holding")
    a, (j,) = holding()
    assert j["instance_type"] == "ml.m5.large" and j["hosts"] == 1, j
    assert j["cpus"] == min(2, a["cpus"]), (j, a["cpus"])  # ml.m5.large: 2 vCPUs, 8 GiB
    assert j["memory_bytes"] == min(8 << 30, a["memory_bytes"]), j
    assert j["gpus"] == 0 and j["volume_gb"] in (0, 2), j
    assert a["in_use"]["cpus"] >= j["cpus"] and a["in_use"]["memory_bytes"] >= j["memory_bytes"]
    sm.stop_training_job(TrainingJobName=name)
    H.wait_job(sm, name, timeout=120)
    H.wait_for(lambda: not holding()[1], 30, "the job gone from /healthz's holding")
    assert holding()[0]["in_use"]["cpus"] == 0
