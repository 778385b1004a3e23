"""The Slurm executor end to end (label "slurm"): trainyard-server, trainyard-agent --executor
slurm, the test cluster of cluster.sh (the ctest fixture "slurm": slurmctld, two slurmd,
slurmrestd) and the test engine, driven with boto3 as a user would.

Each job is one Slurm job whose launchers (trainyard-launch, started by srun) run the hosts'
containers on the engine and report to the agent. Cases: a 1-host job completes with its
model, logs and metrics; a failing job's FailureReason is its failure file; a 2-host job, one
log stream per host; StopTrainingJob; MaxRuntimeInSeconds; an instance type mapped to a
partition that does not exist is a ClientError that names it. After each, nothing of the job is
left on the engine.

Environment: TY_SLURM_CLUSTER_ENV (cluster.sh's cluster.env), TY_LAUNCHER, and the integration
suite's TY_SERVER_BIN, TY_AGENT_BIN, TY_RUNTIME_TAR, TY_DOCKER_HOST.
"""
import http.cookiejar
import json
import os
import sys
import urllib.parse
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import tyhelpers as H  # noqa: E402

CLUSTER_ENV = os.environ.get("TY_SLURM_CLUSTER_ENV", "")
LAUNCHER = os.environ.get("TY_LAUNCHER", os.path.join(H.BUILD, "bin", "trainyard-launch"))


def _cluster():
    env = {}
    with open(CLUSTER_ENV) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            env[k] = v
    return env


def _runtime_image():
    """The runtime image on the engine, imported from its tarball when missing (the nodes'
    launchers run it, as the local agent would have imported it)."""
    repo, tag = H.RUNTIME_IMAGE.rsplit(":", 1)
    st, _ = H.engine_request("GET", f"/v1.41/images/{H.RUNTIME_IMAGE}/json")
    if st == 200:
        return
    q = urllib.parse.urlencode([("fromSrc", "-"), ("repo", repo), ("tag", tag),
                                ("changes", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                                            "/usr/bin:/sbin:/bin"), ("changes", "WORKDIR /")])
    with open(H.RUNTIME_TAR, "rb") as f:
        st, body = H.engine_request("POST", f"/v1.41/images/create?{q}", body=f.read(),
                                    timeout=300)
    assert st == 200, body


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A server (no agent of its own) and one Slurm agent, shared by the module's tests."""
    if not CLUSTER_ENV or not os.path.exists(CLUSTER_ENV):
        pytest.fail(f"no cluster: TY_SLURM_CLUSTER_ENV={CLUSTER_ENV!r}")
    cl = _cluster()
    d = str(tmp_path_factory.mktemp("slurm-exec"))
    started = []

    def start(argv, **kw):
        p = H.Proc(argv, **kw)
        started.append(p)
        return p

    _runtime_image()
    redis_url = H.private_redis(start, os.path.join(d, "redis"))
    # the nodes reach the server and the agent at SLURM_HOST_ADDR (10.213.0.254 on the netns
    # cluster, where each node has an address of its own)
    host = cl.get("SLURM_HOST_ADDR", "127.0.0.1")
    port = H.free_port()
    bind = "127.0.0.1" if host == "127.0.0.1" else "0.0.0.0"
    s = H.Server(os.path.join(d, "server"), agents=0, port=port,
                 extra=["--redis", redis_url, "--listen", f"{bind}:{port}"]).start()
    started.append(s.proc)
    imap = os.path.join(d, "map.json")
    with open(imap, "w") as f:
        json.dump({"ml.c5.xlarge": {"partition": "nosuch"}, "*": {"partition": "debug"}}, f)
    argv = [H.AGENT_BIN, "--executor", "slurm", "--redis", redis_url,
                   "--docker-host", H.DOCKER_HOST, "--data-dir", os.path.join(d, "agent"),
                   "--id", "it-slurm-agent", "--slots", "8", "--stop-grace", "5",
                   "--heartbeat-ttl", "5", "--endpoint-url", f"http://{host}:{port}",
                   "--slurm-url", cl["SLURM_REST_URL"], "--slurm-jwt-key", cl["SLURM_JWT_KEY"],
                   "--slurm-instance-map", imap, "--slurm-launcher", LAUNCHER,
                   "--launch-listen", f"{host}:{H.free_port()}",
                   "--slurm-node-docker-host", H.DOCKER_HOST, "--slurm-node-staging-dir",
                   os.path.join(cl["SLURM_JOBS_DIR"], "launch-staging"),
                   "--slurm-workdir", cl["SLURM_JOBS_DIR"]]
    agents = []

    def start_agent():
        a = start(argv, log_path=os.path.join(d, f"agent-{len(agents) + 1}.log"))
        a.wait_line("event=agent.started", 60)
        agents.append(a)
        return a

    start_agent()
    yield s, agents, start_agent
    for p in reversed(started):
        p.kill()


def _console_page(s, path):
    """The console page at path, as a user with every SageMaker right signed in sees it."""
    user = "sx-console"
    iam = s.client("iam")
    try:
        iam.create_user(UserName=user)
        iam.create_login_profile(UserName=user, Password="Sx-console-Passw0rd")
        iam.put_user_policy(UserName=user, PolicyName="all", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["sagemaker:*", "logs:*", "s3:*"],
                 "Resource": "*"}]}))
    except iam.exceptions.EntityAlreadyExistsException:
        pass
    jar = http.cookiejar.CookieJar()
    op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    body = urllib.parse.urlencode({"account": "000000000000", "username": user,
                                   "password": "Sx-console-Passw0rd"}).encode()
    op.open(urllib.request.Request(s.url + "/console/login", data=body), timeout=30).read()
    return op.open(s.url + path, timeout=30).read().decode()


def _nothing_left(job):
    H.wait_for(lambda: not H.job_containers(job), 60, f"no container of {job} left")


def _messages(s, job):
    logs = s.client("logs")
    streams = logs.describe_log_streams(logGroupName=H.LOG_GROUP,
                                        logStreamNamePrefix=job + "/")["logStreams"]
    return {st["logStreamName"]: [e["message"] for e in
                                  H.log_events(logs, st["logStreamName"])[0]]
            for st in streams}


def test_one_host_completes_with_its_model(slurm):
    s, agents, _ = slurm
    sm = s.client()
    name = H.unique("sx-one")
    sm.create_training_job(**H.job_request(
        name, "echo hello from $SM_CURRENT_HOST; echo 'loss=0.25'; echo oops >&2; "
              "echo weights > /opt/ml/model/w.txt",
        AlgorithmSpecification={"MetricDefinitions": [{"Name": "loss",
                                                       "Regex": "loss=([0-9.]+)"}]}))
    d = H.wait_job(sm, name, timeout=180)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), agents[-1].tail())
    secondary = [t["Status"] for t in d["SecondaryStatusTransitions"]]
    assert secondary[:1] == ["Starting"] and secondary[-3:] == ["Training", "Uploading",
                                                                  "Completed"], secondary
    starting = d["SecondaryStatusTransitions"][0]
    assert starting["StatusMessage"].startswith("Submitted to Slurm as job "), starting
    uri = d["ModelArtifacts"]["S3ModelArtifacts"]
    assert uri == f"s3://bucket/prefix/{name}/output/model.tar.gz", uri
    s3 = s.client("s3", s3={"addressing_style": "path"})
    assert s3.head_object(Bucket="bucket", Key=uri[len("s3://bucket/"):])["ContentLength"] > 0
    assert d["TrainingStartTime"] <= d["TrainingEndTime"]
    msgs = _messages(s, name)
    assert len(msgs) == 1, msgs
    lines = next(iter(msgs.values()))
    assert "hello from algo-1" in lines and "oops" in lines, lines
    assert any(l.startswith("trainyard: Submitted to Slurm as job ") for l in lines), lines
    assert [m["Value"] for m in d.get("FinalMetricDataList", [])] == [0.25], d
    # the console's job page says where it ran: the Slurm job, its partition and node
    slurm_id = next(l for l in lines if l.startswith("trainyard: Submitted to Slurm as job "))
    slurm_id = slurm_id.split("job ")[1].split(",")[0]
    page = _console_page(s, f"/console/jobs/{name}")
    assert f"<dt>Runs on</dt><dd>Slurm job {slurm_id}, partition debug, nodes n" in page, page
    _nothing_left(name)


def test_failure_file_is_the_reason(slurm):
    s, _, _ = slurm
    sm = s.client()
    name = H.unique("sx-fail")
    sm.create_training_job(**H.job_request(
        name, "echo bad input data > /opt/ml/output/failure; exit 3"))
    d = H.wait_job(sm, name, timeout=180)
    assert d["TrainingJobStatus"] == "Failed", d
    assert d["FailureReason"] == "bad input data", d["FailureReason"]
    assert "ModelArtifacts" not in d or not d["ModelArtifacts"].get("S3ModelArtifacts"), d
    _nothing_left(name)


def test_two_hosts_reach_each_other_by_name(slurm):
    """A 2-host job, one node each: algo-2 connects to algo-1 by name over TCP (each host in its
    node's network, /etc/hosts naming the nodes' addresses), and each host has its stream."""
    s, _, _ = slurm
    sm = s.client()
    name = H.unique("sx-two")
    script = ("echo I am $SM_CURRENT_HOST;if [ $SM_CURRENT_HOST = algo-1 ];then timeout 60 "
              "nc -l -p 5000 >/tmp/g;echo got: $(cat /tmp/g);else for i in $(seq 100);do "
              "echo hi from algo-2|timeout 5 nc algo-1 5000&&break;sleep .2;done;fi")
    sm.create_training_job(**H.job_request(
        name, script,
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 2, "VolumeSizeInGB": 1}))
    d = H.wait_job(sm, name, timeout=180)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), _messages(s, name))
    msgs = _messages(s, name)
    assert sorted(k.split("/")[1].rsplit("-", 1)[0] for k in msgs) == ["algo-1", "algo-2"], msgs
    for stream, lines in msgs.items():
        host = stream.split("/")[1].rsplit("-", 1)[0]
        assert f"I am {host}" in lines, (stream, msgs)
        if host == "algo-1":
            assert "got: hi from algo-2" in lines, msgs
    _nothing_left(name)


def test_stop(slurm):
    s, _, _ = slurm
    sm = s.client()
    name = H.unique("sx-stop")
    sm.create_training_job(**H.job_request(
        name, "trap 'echo got TERM; echo w > /opt/ml/model/w.txt; exit 0' TERM; echo waiting; "
              "while :; do sleep 0.2; done"))
    H.wait_job(sm, name, statuses=("InProgress",), secondary=("Training",), timeout=180)
    sm.stop_training_job(TrainingJobName=name)
    d = H.wait_job(sm, name, timeout=120)
    assert d["TrainingJobStatus"] == "Stopped", d
    lines = next(iter(_messages(s, name).values()))
    assert "got TERM" in lines, lines
    assert d["ModelArtifacts"]["S3ModelArtifacts"].endswith(f"/{name}/output/model.tar.gz"), d
    _nothing_left(name)


def test_max_runtime(slurm):
    s, _, _ = slurm
    sm = s.client()
    name = H.unique("sx-maxrt")
    sm.create_training_job(**H.job_request(name, "echo waiting; while :; do sleep 0.2; done",
                                           max_runtime=5))
    d = H.wait_job(sm, name, timeout=180)
    assert d["TrainingJobStatus"] == "Stopped", d
    assert d["SecondaryStatus"] == "MaxRuntimeExceeded", d
    assert (d["TrainingEndTime"] - d["TrainingStartTime"]).total_seconds() >= 5, d
    _nothing_left(name)


def test_unknown_partition_is_a_client_error(slurm):
    s, _, _ = slurm
    sm = s.client()
    name = H.unique("sx-nopart")
    sm.create_training_job(**H.job_request(name, "echo never", instance_type="ml.c5.xlarge"))
    d = H.wait_job(sm, name, timeout=60)
    assert d["TrainingJobStatus"] == "Failed", d
    assert d["FailureReason"].startswith("ClientError:"), d["FailureReason"]
    assert "nosuch" in d["FailureReason"], d["FailureReason"]


def test_agent_restarted_mid_job_follows_it(slurm):
    """The agent SIGKILLed while its job trains: a new agent of the same id follows the same
    Slurm job (its record, the launch token, the launchers' reports from where they were made
    durable) and the script runs once; the launchers' lines meanwhile are kept and sent again."""
    s, agents, start_agent = slurm
    sm = s.client()
    name = H.unique("sx-restart")
    sm.create_training_job(**H.job_request(
        name, "echo started; sleep 12; echo done; echo w > /opt/ml/model/w.txt"))
    H.wait_job(sm, name, statuses=("InProgress",), secondary=("Training",), timeout=180)
    H.wait_for(lambda: "started" in next(iter(_messages(s, name).values()), []), 60,
               "the job's first line")
    agents[-1].kill()
    start_agent()
    d = H.wait_job(sm, name, timeout=180)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), agents[-1].tail())
    msgs = _messages(s, name)
    assert len(msgs) == 1, msgs
    lines = next(iter(msgs.values()))
    assert lines.count("started") == 1 and lines.count("done") == 1, lines
    assert sum(l.startswith("trainyard: Submitted to Slurm as job ") for l in lines) == 1, lines
    assert any(l.startswith("trainyard: the agent restarted and follows Slurm job ")
               for l in lines), lines
    assert d["ModelArtifacts"]["S3ModelArtifacts"].endswith(f"/{name}/output/model.tar.gz"), d
    _nothing_left(name)
