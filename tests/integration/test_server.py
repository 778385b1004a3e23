"""The server process: flags and environment, /healthz, startup errors, shutdown, restart."""
import json
import os
import signal
import socket
import subprocess
import time

import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

FLAGS = ["--listen", "--data-dir", "--redis", "--agents", "--docker-host", "--region",
         "--account-id", "--stop-grace", "--runtime-image-tar", "--max-connections",
         "--max-connections-per-client", "--idle-timeout", "--header-timeout", "--body-timeout"]


def test_help_lists_every_flag_and_variable():
    p = subprocess.run([H.SERVER_BIN, "--help"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    out = p.stdout + p.stderr
    for flag in FLAGS:
        assert flag in out, f"--help does not mention {flag}:\n{out}"
        env = "TRAINYARD_" + flag[2:].upper().replace("-", "_")
        assert env in out, f"--help does not mention {env}:\n{out}"


def test_healthz(server):
    status, body = server.healthz()
    assert status == 200, body
    h = json.loads(body)
    assert h["status"] == "ok", h
    assert isinstance(h["redis"], dict) and isinstance(h["engine"], dict), h
    assert isinstance(h["agents"], list) and len(h["agents"]) == 2, h["agents"]
    for a in h["agents"]:
        assert a.get("id"), a
    assert len({a["id"] for a in h["agents"]}) == 2


def _startup_failure(argv, env=None, timeout=30):
    """Runs a server that must fail to start; returns (exit status, non-empty stderr lines)."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    return p.returncode, lines


def _assert_one_clear_line(rc, lines, *words):
    assert rc != 0, lines
    assert lines, "no message at all"
    # the reason is on one line (the last one); nothing like a stack of repeated errors follows
    last = lines[-1].lower()
    assert any(w.lower() in last for w in words), f"last line {lines[-1]!r} does not mention any of {words}"
    assert not any("event=server.ready" in l for l in lines), lines


def test_port_in_use(workdir):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        d = os.path.join(workdir, "portinuse")
        rc, lines = _startup_failure([H.SERVER_BIN, "--listen", f"127.0.0.1:{port}", "--data-dir", d,
                                      "--agents", "0", "--docker-host", H.DOCKER_HOST])
    _assert_one_clear_line(rc, lines, str(port), "in use")
    # the private redis-server it may have started is gone with it
    assert H.procs_mentioning(d) == [], "a child process outlived the failed start"


def test_unreachable_redis(workdir):
    port = H.free_port()
    rc, lines = _startup_failure([H.SERVER_BIN, "--listen", f"127.0.0.1:{H.free_port()}",
                                  "--data-dir", os.path.join(workdir, "noredis"),
                                  "--redis", f"redis://127.0.0.1:{port}", "--agents", "0"])
    _assert_one_clear_line(rc, lines, "redis")


def test_unreachable_docker_host(workdir):
    d = os.path.join(workdir, "nodocker")
    rc, lines = _startup_failure([H.SERVER_BIN, "--listen", f"127.0.0.1:{H.free_port()}",
                                  "--data-dir", d, "--agents", "1",
                                  "--docker-host", "unix:///tmp/no-such-engine.sock"])
    _assert_one_clear_line(rc, lines, "no-such-engine.sock", "engine", "docker")
    assert H.procs_mentioning(d) == [], "a child process outlived the failed start"


def test_bad_flag(workdir):
    rc, lines = _startup_failure([H.SERVER_BIN, "--no-such-flag", "1"])
    _assert_one_clear_line(rc, lines, "--no-such-flag")
    rc, lines = _startup_failure([H.SERVER_BIN, "--agents", "many",
                                  "--data-dir", os.path.join(workdir, "badagents"),
                                  "--listen", f"127.0.0.1:{H.free_port()}"])
    _assert_one_clear_line(rc, lines, "agents")
    rc, lines = _startup_failure([H.SERVER_BIN, "--listen", "not-an-address", "--agents", "0",
                                  "--data-dir", os.path.join(workdir, "badlisten")])
    _assert_one_clear_line(rc, lines, "listen", "not-an-address")


def test_agents_zero_needs_no_engine(make_server):
    """A pure API replica (--agents 0) starts without an engine, and jobs wait in the queue."""
    s = make_server(agents=0, extra=["--docker-host", "unix:///tmp/no-such-engine.sock"])
    sm = s.client()
    name = H.unique("queued")
    sm.create_training_job(**H.job_request(name, "true"))
    d = sm.describe_training_job(TrainingJobName=name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("InProgress", "Starting")
    # what the SDK indexes is there from the start (reference/sdk-flow.md §7)
    trs = d["SecondaryStatusTransitions"]
    assert [t["Status"] for t in trs] == ["Starting"] and trs[0]["StatusMessage"], trs
    assert d["LastModifiedTime"] >= d["CreationTime"]
    assert d["ResourceConfig"]["InstanceCount"] == 1
    assert d["OutputDataConfig"]["KmsKeyId"] == ""
    assert "S3ModelArtifacts" in d["ModelArtifacts"]
    status, body = s.healthz()
    h = json.loads(body)
    assert h["agents"] == [], h


def test_environment_configuration(make_server, workdir):
    """Every flag has a TRAINYARD_* variable; admin keys can be given instead of generated."""
    port = H.free_port()
    d = os.path.join(workdir, "envconf")
    env = {"TRAINYARD_LISTEN": f"127.0.0.1:{port}", "TRAINYARD_DATA_DIR": d,
           "TRAINYARD_AGENTS": "0", "TRAINYARD_ACCOUNT_ID": "123456789012",
           "TRAINYARD_REGION": "eu-central-1",
           "TRAINYARD_ADMIN_ACCESS_KEY_ID": "AKIATRAINYARDTEST001",
           "TRAINYARD_ADMIN_SECRET_ACCESS_KEY": "test-secret-0123456789abcdef"}
    p = H.Proc([H.SERVER_BIN], env=env, log_path=d + ".log")
    try:
        p.wait_line("event=server.ready", 60)
        s = H.Server(d, agents=0, env=env, port=port)
        sm = s.client(region="eu-central-1")
        name = H.unique("acct")
        # the default execution role is the account's own (a role of another account is refused)
        arn = sm.create_training_job(**H.job_request(
            name, "true", RoleArn="arn:aws:iam::123456789012:role/trainyard"))["TrainingJobArn"]
        assert arn == f"arn:aws:sagemaker:eu-central-1:123456789012:training-job/{name}"
        # the wrong secret for the configured key is refused
        bad = s.client(keys=("AKIATRAINYARDTEST001", "nope"), validate=False)
        with pytest.raises(ClientError) as ei:
            bad.describe_training_job(TrainingJobName=name)
        assert ei.value.response["Error"]["Code"] == "InvalidSignatureException"
    finally:
        p.signal(signal.SIGTERM)
        rc = p.wait_exit(30)
    assert rc == 0, p.tail()


def test_account_id_flag(make_server):
    s = make_server(agents=0, extra=["--account-id", "210987654321", "--region", "ap-northeast-1"])
    name = H.unique("acct2")
    arn = s.client(region="ap-northeast-1").create_training_job(
        **H.job_request(name, "true", RoleArn="arn:aws:iam::210987654321:role/trainyard")
    )["TrainingJobArn"]
    assert arn == f"arn:aws:sagemaker:ap-northeast-1:210987654321:training-job/{name}"


def test_sigterm_shuts_down_cleanly(make_server):
    s = make_server(agents=0)
    # answers; degraded (503) only because no agent is live behind this API-only server
    assert s.healthz()[0] == 503
    t0 = time.monotonic()
    rc = s.stop(timeout=30)
    assert rc == 0, s.proc.tail()
    took = time.monotonic() - t0
    assert took < 5, f"an idle API server took {took:.1f}s to stop on SIGTERM"
    # its private redis-server went with it, and the port is free again
    assert H.procs_mentioning(s.data_dir) == [], "redis-server child outlived the server"
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", s.port)) != 0


def test_sigint_shuts_down_cleanly(make_server):
    s = make_server(agents=0)
    rc = s.stop(timeout=30, sig=signal.SIGINT)
    assert rc == 0, s.proc.tail()
    assert H.procs_mentioning(s.data_dir) == []


def test_restart_keeps_jobs_and_credentials(make_server):
    s = make_server(agents=1, extra=["--stop-grace", "2"])
    sm = s.client()
    keys = s.credentials()
    cred_text = open(s.credentials_path).read()
    jobs = {"ok": "echo fine; mkdir -p /opt/ml/model; echo m > /opt/ml/model/m",
            "bad": "printf 'broken on purpose' > /opt/ml/output/failure; exit 1",
            "stop": "echo started; sleep 300"}
    names = {}
    for k, script in jobs.items():
        names[k] = H.unique("rs-" + k)
        sm.create_training_job(**H.job_request(names[k], script,
                                               Tags=[{"Key": "kind", "Value": k}]))
    H.wait_job(sm, names["stop"], statuses=("InProgress",), secondary=("Training",), timeout=120)
    sm.stop_training_job(TrainingJobName=names["stop"])
    before = {k: H.wait_job(sm, n, timeout=150) for k, n in names.items()}
    assert before["ok"]["TrainingJobStatus"] == "Completed", before["ok"].get("FailureReason")
    assert before["bad"]["TrainingJobStatus"] == "Failed"
    assert before["stop"]["TrainingJobStatus"] == "Stopped"
    logs_before = s.client("logs").describe_log_streams(
        logGroupName=H.LOG_GROUP, logStreamNamePrefix=names["ok"] + "/")["logStreams"]

    assert s.stop(timeout=60) == 0, s.proc.tail()
    s2 = make_server(agents=1, data_dir=s.data_dir, port=s.port)
    assert open(s2.credentials_path).read() == cred_text
    assert s2.credentials() == keys
    sm2 = s2.client()
    for k, n in names.items():
        after = sm2.describe_training_job(TrainingJobName=n)
        for d in (before[k], after):
            d.pop("ResponseMetadata", None)
        assert after == before[k], k
        arn = after["TrainingJobArn"]
        assert sm2.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "kind", "Value": k}]
    listed = {x["TrainingJobName"] for x in sm2.list_training_jobs(MaxResults=100)["TrainingJobSummaries"]}
    assert set(names.values()) <= listed
    logs_after = s2.client("logs").describe_log_streams(
        logGroupName=H.LOG_GROUP, logStreamNamePrefix=names["ok"] + "/")["logStreams"]
    assert [x["logStreamName"] for x in logs_after] == [x["logStreamName"] for x in logs_before]
    # and it still runs new jobs
    n = H.unique("rs-new")
    sm2.create_training_job(**H.job_request(n, "true"))
    assert H.wait_job(sm2, n, timeout=150)["TrainingJobStatus"] == "Completed"


def test_restart_with_a_running_job(make_server):
    """A job still running when the server stops is not lost: after the restart it reaches a
    terminal state (the restarted agent picks it up again)."""
    s = make_server(agents=1, extra=["--stop-grace", "2"])
    sm = s.client()
    name = H.unique("rs-run")
    sm.create_training_job(**H.job_request(name, "echo started; sleep 4; echo done"))
    H.wait_job(sm, name, statuses=("InProgress",), secondary=("Training",), timeout=120)
    assert s.stop(timeout=60) == 0, s.proc.tail()
    s2 = make_server(agents=1, extra=["--stop-grace", "2"], data_dir=s.data_dir, port=s.port)
    sm2 = s2.client()
    assert sm2.describe_training_job(TrainingJobName=name)["TrainingJobName"] == name
    d = H.wait_job(sm2, name, timeout=120)
    assert d["TrainingJobStatus"] in H.TERMINAL, d


def test_healthz_degraded_without_redis(make_server, procs, workdir):
    d = os.path.join(workdir, "ext-redis-h")
    os.makedirs(d)
    sock = os.path.join(d, "redis.sock")
    r = procs([H.REDIS_SERVER, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
               "--save", "", "--appendonly", "no", "--dir", d])
    H.wait_for(lambda: os.path.exists(sock), 20, "redis socket")
    s = make_server(agents=1, extra=["--redis", f"unix://{sock}"])
    status, body = s.healthz()
    assert status == 200 and json.loads(body)["status"] == "ok", body
    r.kill()
    def degraded():
        st, b = s.healthz()
        h = json.loads(b)
        return (st, h) if h["status"] == "degraded" else None
    st, h = H.wait_for(degraded, 30, "/healthz to report degraded")
    assert st == 503, st
    assert h["redis"]["ok"] is False, h
    assert any(x.startswith("redis:") for x in h["reasons"]), h


def test_restart_after_server_sigkill(make_server):
    """A crash (SIGKILL) of the server must not keep it from starting again on its data dir:
    its private redis-server goes with it, and what was written before the crash is there."""
    s = make_server(agents=0)
    sm = s.client()
    name = H.unique("crash")
    sm.create_training_job(**H.job_request(name, "true"))
    s.kill()
    assert s.proc.p.returncode == -9
    s2 = make_server(agents=0, data_dir=s.data_dir, start=False)
    s2.start(timeout=60)
    d = s2.client().describe_training_job(TrainingJobName=name)
    assert d["TrainingJobName"] == name


def test_redis_folder_opened_to_others_refuses_to_start(make_server, workdir):
    """The private Redis folder holds the AOF with every key and secret: a server whose folder
    was opened to others (what a job that escaped its sandbox did, issue 35) or replaced by a
    link refuses to start, saying why, and starts again once it is 0700."""
    s = make_server(agents=0)
    s.kill()
    rdir = os.path.join(s.data_dir, "redis")
    assert os.stat(rdir).st_mode & 0o777 == 0o700
    os.chmod(rdir, 0o777)
    argv = [H.SERVER_BIN, "--listen", f"127.0.0.1:{H.free_port()}", "--data-dir", s.data_dir,
            "--agents", "0"]
    rc, lines = _startup_failure(argv)
    _assert_one_clear_line(rc, lines, "0700")
    assert "0777" in lines[-1], lines[-1]
    # a link in its place, to a folder that is 0700 itself, is refused too
    moved = os.path.join(workdir, "redis-moved")
    os.rename(rdir, moved)
    os.chmod(moved, 0o700)
    os.symlink(moved, rdir)
    rc, lines = _startup_failure(argv)
    _assert_one_clear_line(rc, lines, "symbolic link")
    os.unlink(rdir)
    os.rename(moved, rdir)
    s2 = make_server(agents=0, data_dir=s.data_dir, start=False)
    s2.start(timeout=60)
    assert s2.client().list_training_jobs()["TrainingJobSummaries"] is not None
