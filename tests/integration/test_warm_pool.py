"""Managed warm pools: ResourceConfig.KeepAlivePeriodInSeconds keeps a job's instance
(its sandbox: the network namespace) on its agent; a matching job of the same account and role
reuses it with a fresh container and a fresh /opt/ml; WarmPoolStatus (Available, InUse, Reused,
Terminated), UpdateTrainingJob of the period, ListTrainingJobs WarmPoolStatusEquals.
A private server with one agent, so that the matching job meets the pool. Job names start wp-."""
import json
import os
import time
import urllib.parse

import botocore.exceptions
import pytest

import tyhelpers as H

# job A leaves files everywhere it may write; job B looks for them
WRITE = ("for d in /opt/ml /opt/ml/model /opt/ml/output/data /tmp /var/tmp; do "
         "echo a-secret > $d/wp-secret || exit 3; done; echo WROTE")
CHECK = ("sleep 1; echo FOUND=$(find /opt/ml /tmp /var/tmp -name 'wp-secret*' 2>/dev/null | wc -l)"
         " HOST=$(hostname)")


def _wp(d):
    return d.get("WarmPoolStatus") or {}


def _wait_wp(sm, name, status, timeout=30):
    def one():
        d = sm.describe_training_job(TrainingJobName=name)
        return d if _wp(d).get("Status") == status else None
    return H.wait_for(one, timeout, f"{name}'s warm pool {status}")


def _sandboxes(job):
    f = urllib.parse.quote(json.dumps({"label": [f"trainyard.job={job}", "trainyard.sandbox=1"]}))
    st, body = H.engine_request("GET", f"/containers/json?all=1&filters={f}")
    assert st == 200, body
    return json.loads(body)


def _lines(logs, name):
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    return [e["message"] for e in H.log_events(logs, stream)[0]]


def test_warm_pool_reuse_isolation_update_and_expiry(make_server):
    s = make_server(agents=1, extra=["--stop-grace", "2"])
    sm, logs, iam = s.client("sagemaker"), s.client("logs"), s.client("iam")
    keep = {"ResourceConfig": {"KeepAlivePeriodInSeconds": 60}}

    a = H.unique("wp-a")
    sm.create_training_job(**H.job_request(a, WRITE, **keep))
    d = H.wait_job(sm, a)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert d["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 60
    d = _wait_wp(sm, a, "Available")
    assert d["WarmPoolStatus"]["ResourceRetainedBillableTimeInSeconds"] >= 0
    assert "WROTE" in _lines(logs, a)
    assert len(_sandboxes(a)) == 1, "the retained instance (sandbox) is on the engine"

    # Another role of the same account does not match (tenant isolation): it starts cold, and
    # its own 1 s pool ends by itself.
    role = H.unique("wp-role")
    iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole"}]}))
    pol = iam.get_role_policy(RoleName="trainyard", PolicyName="TrainyardExecution")
    iam.put_role_policy(RoleName=role, PolicyName="exec",
                        PolicyDocument=json.dumps(pol["PolicyDocument"]))
    c = H.unique("wp-c")
    sm.create_training_job(**H.job_request(
        c, CHECK, RoleArn=f"arn:aws:iam::000000000000:role/{role}",
        ResourceConfig={"KeepAlivePeriodInSeconds": 1}))
    d = H.wait_job(sm, c)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert _wp(sm.describe_training_job(TrainingJobName=a))["Status"] == "Available"
    d = _wait_wp(sm, c, "Terminated", timeout=20)
    assert d["WarmPoolStatus"]["ResourceRetainedBillableTimeInSeconds"] >= 1
    assert "ReusedByJob" not in d["WarmPoolStatus"]
    assert _sandboxes(c) == []

    # The matching job reuses A's instance: InUse while it runs, A Reused by it; none of A's
    # files is visible to it.
    b = H.unique("wp-b")
    sm.create_training_job(**H.job_request(b, CHECK, **keep))
    d = H.wait_job(sm, b, statuses=("InProgress", "Completed", "Failed"), secondary=(
        "Training", "Uploading", "Completed", "Failed"))
    if d["TrainingJobStatus"] == "InProgress":
        assert _wp(d) == {"Status": "InUse"}, d
    d = H.wait_job(sm, b)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    out = [l for l in _lines(logs, b) if l.startswith("FOUND=")]
    assert out == ["FOUND=0 HOST=algo-1"], out
    da = sm.describe_training_job(TrainingJobName=a)
    assert da["WarmPoolStatus"]["Status"] == "Reused"
    assert da["WarmPoolStatus"]["ReusedByJob"] == b
    assert da["WarmPoolStatus"]["ResourceRetainedBillableTimeInSeconds"] >= 0
    _wait_wp(sm, b, "Available")
    assert len(_sandboxes(a)) == 1, "B runs in, and retains, A's sandbox"

    names = lambda st: {j["TrainingJobName"] for j in sm.list_training_jobs(  # noqa: E731
        WarmPoolStatusEquals=st, NameContains="wp-", MaxResults=100)["TrainingJobSummaries"]}
    assert a in names("Reused") and b in names("Available") and c in names("Terminated")
    assert b not in names("Reused") and a not in names("Available")

    # UpdateTrainingJob: the period of an Available pool; 0 ends it at once
    sm.update_training_job(TrainingJobName=b, ResourceConfig={"KeepAlivePeriodInSeconds": 0})
    d = _wait_wp(sm, b, "Terminated", timeout=15)
    assert d["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 0
    H.wait_for(lambda: _sandboxes(a) == [], 10, "the sandbox removed")
    for job in (b, c):  # no Available pool: refused
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            sm.update_training_job(TrainingJobName=job,
                                   ResourceConfig={"KeepAlivePeriodInSeconds": 30})
        assert ei.value.response["Error"]["Code"] == "ValidationException"
        assert "Available" in ei.value.response["Error"]["Message"]

    # the model's bounds on the period
    noval = s.client("sagemaker", validate=False)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        noval.create_training_job(**H.job_request(
            H.unique("wp-bad"), "true", ResourceConfig={"KeepAlivePeriodInSeconds": 21601}))
    assert ei.value.response["Error"]["Code"] == "ValidationException"
    assert "resourceConfig.keepAlivePeriodInSeconds" in ei.value.response["Error"]["Message"]


TALK = ('H=$SM_CURRENT_HOST; if [ "$H" = algo-2 ]; then n=0; until echo "hi from $H" | '
        'nc algo-1 5000; do n=$((n+1)); [ $n -lt 100 ] || exit 5; sleep 0.2; done; exit 0; fi; '
        'echo "GOT $(nc -l -p 5000)"')


def _networks(job):
    return H.job_networks(job)


def test_warm_pool_two_hosts_keep_their_network(make_server):
    s = make_server(agents=1, extra=["--stop-grace", "2"])
    sm, logs = s.client("sagemaker"), s.client("logs")
    two = {"ResourceConfig": {"InstanceCount": 2, "KeepAlivePeriodInSeconds": 60}}
    a = H.unique("wp-2a")
    sm.create_training_job(**H.job_request(a, "true", **two))
    assert H.wait_job(sm, a)["TrainingJobStatus"] == "Completed"
    _wait_wp(sm, a, "Available")
    assert len(_sandboxes(a)) == 2 and len(_networks(a)) == 1
    b = H.unique("wp-2b")
    sm.create_training_job(**H.job_request(b, TALK, **two))
    d = H.wait_job(sm, b)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert _wp(sm.describe_training_job(TrainingJobName=a))["ReusedByJob"] == b
    got = [m for st in H.job_stream(logs, b)["logStreams"]
           for m in (e["message"] for e in H.log_events(logs, st["logStreamName"])[0])
           if m.startswith("GOT ")]
    assert got == ["GOT hi from algo-2"], got
    _wait_wp(sm, b, "Available")
    sm.update_training_job(TrainingJobName=b, ResourceConfig={"KeepAlivePeriodInSeconds": 0})
    _wait_wp(sm, b, "Terminated", timeout=15)
    H.wait_for(lambda: _sandboxes(a) == [] and _networks(a) == [], 10,
               "the sandboxes and the network removed")


def test_dead_agents_pool_is_removed_by_a_live_agent(make_server, procs, workdir):
    """An agent killed hard holding a warm pool leaves its sandbox on the engine. Once the pool's
    period (plus three heartbeat TTLs) is over, another agent of the deployment removes it;
    another deployment's container on the same engine, for a job of the same name, is left
    alone."""
    d = os.path.join(workdir, H.unique("wp-dead"))
    redis_url = H.private_redis(procs, os.path.join(d, "redis"))
    s = make_server(agents=0, extra=["--redis", redis_url])
    sm = s.client("sagemaker")

    def agent(aid):
        return procs([H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST,
                      "--data-dir", os.path.join(d, aid), "--staging-dir", os.path.join(d, "stg"),
                      "--s3-dir", os.path.join(s.data_dir, "s3"), "--id", aid,
                      "--endpoint-url", s.url,
                      "--stop-grace", "2", "--heartbeat-ttl", "2",
                      "--runtime-image-tar", H.RUNTIME_TAR],
                     log_path=os.path.join(d, aid + ".log"))

    first = agent("it-wp-dead-a")
    first.wait_line("event=agent.started", 120)
    a = H.unique("wp-dead")
    sm.create_training_job(**H.job_request(a, "echo hi",
                                           ResourceConfig={"KeepAlivePeriodInSeconds": 1}))
    assert H.wait_job(sm, a)["TrainingJobStatus"] == "Completed"
    _wait_wp(sm, a, "Available")
    first.kill()  # SIGKILL: the pool's sandbox stays, and nobody will end it
    assert len(_sandboxes(a)) == 1

    # Another deployment's leftover on the same engine, for a job of the same name (job names
    # are unique only within a deployment): ended here, and its agent unknown here.
    foreign = H.unique("wp-foreign")
    body = json.dumps({"Image": H.RUNTIME_IMAGE, "Entrypoint": ["sleep"], "Cmd": ["600"],
                       "Labels": {"trainyard.deployment": "0123456789abcdef",
                                  "trainyard.job": a, "trainyard.agent": "it-wp-gone",
                                  "trainyard.sandbox": "1"}})
    st, out = H.engine_request("POST", f"/containers/create?name={foreign}-net", body=body)
    assert st == 201, out
    assert len(_sandboxes(a)) == 2
    try:
        # the pool ended at _warm_since + 1 s; three 2 s TTLs later it is any agent's to remove
        time.sleep(7)
        second = agent("it-wp-dead-b")
        second.wait_line("event=agent.leftover.reap", 60)
        H.wait_for(lambda: len(_sandboxes(a)) == 1, 30, "the dead agent's sandbox removed")
        assert _sandboxes(a)[0]["Labels"]["trainyard.deployment"] == "0123456789abcdef", \
            "another deployment's container was removed"
        assert sm.describe_training_job(TrainingJobName=a)["TrainingJobStatus"] == "Completed"
    finally:
        H.engine_request("DELETE", f"/containers/{foreign}-net?force=1", timeout=30)
