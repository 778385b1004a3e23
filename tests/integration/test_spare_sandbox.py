"""The agent's spare sandbox (control-plane/agent/spare.h): a one-host job starts in a sandbox made
ahead, renamed for the job; nothing of it outlives the job; a dead agent's spare, taken or not,
is removed by whoever is left (a live agent's sweep, the server's janitor)."""
import json
import os
import urllib.parse

import tyhelpers as H


def _containers(label):
    q = urllib.parse.quote(json.dumps({"label": [label]}))
    status, body = H.engine_request("GET", f"/v1.41/containers/json?all=1&filters={q}")
    assert status == 200, body[:300]
    return json.loads(body)


def _spares(agent):
    return [c for c in _containers("trainyard.spare=1")
            if c["Labels"].get("trainyard.agent") == agent]


def _agent(procs, d, redis_url, server, aid):
    ad = os.path.join(d, aid)
    os.makedirs(ad)
    return procs([H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST,
                  "--data-dir", ad, "--id", aid, "--stop-grace", "2", "--slots", "2",
                  "--heartbeat-ttl", "2", "--endpoint-url", server.url,
                  "--runtime-image-tar", H.RUNTIME_TAR], log_path=ad + ".log")


def test_a_one_host_job_starts_in_the_agents_spare(make_server, procs, workdir):
    """The job's first instruction finds the relay in a network namespace of its own (lo only)
    that was made before the job was created; the job ends with no container of its name left,
    and the agent makes its next spare."""
    d = os.path.join(workdir, "spare-one")
    redis_url = H.private_redis(procs, d)
    s = make_server(agents=0, extra=["--redis", redis_url])
    agent = _agent(procs, d, redis_url, s, "it-spare-one")
    H.wait_for(lambda: len(_spares("it-spare-one")) == 1, 90, "the agent's spare")
    spare_id = _spares("it-spare-one")[0]["Id"]
    sm = s.client()
    name = H.unique("spare")
    fetch = ('wget -q -O - --header "Authorization: $AWS_CONTAINER_AUTHORIZATION_TOKEN" '
             '"$AWS_CONTAINER_CREDENTIALS_FULL_URI"')
    script = f'echo "HOST $(hostname) NETS $(ls /sys/class/net | tr "\\n" " ")"; {fetch}; echo'
    sm.create_training_job(**H.job_request(name, script))
    desc = H.wait_job(sm, name, timeout=120)
    logs = s.client("logs")
    streams = logs.describe_log_streams(logGroupName=H.LOG_GROUP,
                                        logStreamNamePrefix=name + "/")["logStreams"]
    lines = [e["message"].rstrip("\n")
             for e in H.log_events(logs, streams[0]["logStreamName"])[0]]
    assert desc["TrainingJobStatus"] == "Completed", (desc.get("FailureReason"), lines[-10:])
    log = open(agent.log_path).read()
    assert f"event=agent.sandbox.spare job={name} host=algo-1 container={spare_id[:12]}" in log, \
        log[-3000:]
    assert "HOST algo-1 NETS lo " in lines, lines
    assert any('"AccessKeyId"' in l for l in lines), lines  # the relay answered at once
    H.wait_for(lambda: H.job_containers(name) == [], 30, f"no container of {name} left")
    H.wait_for(lambda: [c["Id"] for c in _spares("it-spare-one")] not in ([], [spare_id]), 30,
               "a new spare")
    assert len(_spares("it-spare-one")) == 1


def test_a_dead_agents_spares_are_removed(make_server, procs, workdir):
    """An agent SIGKILLed while its job runs in its spare leaves that sandbox (named for the job,
    without the job's label) and its next spare. The job, stopped with no agent alive, is ended
    by the server's janitor, which removes the job's sandbox by its name; another agent started
    then removes the unused spare, and keeps its own."""
    d = os.path.join(workdir, "spare-dead")
    redis_url = H.private_redis(procs, d)
    s = make_server(agents=0, extra=["--redis", redis_url])
    victim = _agent(procs, d, redis_url, s, "it-spare-victim")
    H.wait_for(lambda: len(_spares("it-spare-victim")) == 1, 90, "the agent's spare")
    sm = s.client()
    name = H.unique("sparedead")
    sm.create_training_job(**H.job_request(name, "trap 'exit 143' TERM; sleep 600 & wait"))
    H.wait_job(sm, name, statuses=("InProgress",), secondary=("Training",), timeout=120)
    assert f"event=agent.sandbox.spare job={name} " in open(victim.log_path).read()
    # the job's sandbox carries the job's name, and its next spare is made
    H.wait_for(lambda: len(_spares("it-spare-victim")) == 2, 60, "the next spare")
    victim.kill()
    sm.stop_training_job(TrainingJobName=name)
    desc = H.wait_job(sm, name, timeout=120)
    assert desc["TrainingJobStatus"] == "Stopped", desc.get("FailureReason")
    H.wait_for(lambda: H.job_containers(name) == [], 60, f"no container of {name} left")
    assert len(_spares("it-spare-victim")) == 1  # the unused one: no job names it
    survivor = _agent(procs, d, redis_url, s, "it-spare-survivor")
    H.wait_for(lambda: _spares("it-spare-victim") == [], 60, "the dead agent's spares removed")
    assert "event=agent.leftover.spare" in open(survivor.log_path).read(), survivor.tail()
    H.wait_for(lambda: len(_spares("it-spare-survivor")) == 1, 60, "the survivor's own spare")
