"""Fixtures for trainyard's integration tests: a live trainyard-server (its own Redis child,
the real container engine), boto3 clients pointed at it, the AWS CLI, and per-test servers for
tests that restart or kill things.

Environment (set by tests/integration/CMakeLists.txt; defaults point into ./build):
  TY_SERVER_BIN, TY_AGENT_BIN, TY_RUNTIME_TAR  the binaries and the runtime image tarball
  TY_DOCKER_HOST                               engine URL (unix:///run/trainyard-podman.sock)
  TY_KEEP=1                                    keep data dirs and logs under /tmp/ty-it-*

When no container engine answers the run exits with 77, which ctest reports as skipped
(scripts/test.sh and .ci/run start the engine with tests/engine.sh first, so there it runs).
"""
import os
import shutil
import subprocess
import tempfile

import pytest

import tyhelpers as H

ENGINE_MISSING_RC = 77


def pytest_sessionstart(session):
    # The engine is started by whoever runs the suite (scripts/test.sh and .ci/run call
    # tests/engine.sh); a test run never leaves a service of its own behind.
    if not H.engine_ping():
        pytest.exit(f"no container engine answers at {H.DOCKER_HOST} (start one with "
                    "tests/engine.sh): integration tests skipped", returncode=ENGINE_MISSING_RC)


def pytest_report_header(config):
    v = H.RESPONSE_VALIDATOR
    return [f"trainyard-server: {H.SERVER_BIN}", f"engine: {H.DOCKER_HOST}",
            f"responses validated against: {v.source or 'nothing (no openapi/ or api/ yet)'}"]


@pytest.fixture(scope="session")
def workdir():
    d = tempfile.mkdtemp(prefix="ty-it-", dir="/tmp")
    yield d
    if not os.environ.get("TY_KEEP"):
        shutil.rmtree(d, ignore_errors=True)


def _need_binaries(*paths):
    for p in paths:
        if not os.access(p, os.X_OK):
            pytest.fail(f"{p} is missing: build trainyard first (cmake --build build)")


@pytest.fixture(scope="session")
def server(workdir):
    """The shared server: 2 embedded agents of 4 slots each (jobs run side by side), stop
    grace 2 s."""
    _need_binaries(H.SERVER_BIN)
    s = H.Server(os.path.join(workdir, "main"), agents=2, extra=["--stop-grace", "2", "--slots", "4"])
    s.start()
    yield s
    try:
        rc = s.stop(timeout=60)
    finally:
        _retire(s)
    assert rc == 0, f"server exited with {rc} on SIGTERM:\n{s.proc.tail()}"


@pytest.fixture(scope="session")
def sm(server):
    return server.client("sagemaker")


@pytest.fixture(scope="session")
def sm_noval(server):
    """A SageMaker client without botocore's client-side parameter validation, so that
    invalid requests reach the server."""
    return server.client("sagemaker", parameter_validation=False)


@pytest.fixture(scope="session")
def logs(server):
    return server.client("logs")


@pytest.fixture
def make_server(workdir, request):
    """Factory for servers private to one test; each is SIGKILLed at teardown if still up."""
    made = []

    def make(agents=1, extra=(), env=None, start=True, data_dir=None, **kw):
        _need_binaries(H.SERVER_BIN)
        d = data_dir or tempfile.mkdtemp(prefix=request.node.name[:20] + "-", dir=workdir)
        s = H.Server(d, agents=agents, extra=extra, env=env, **kw)
        made.append(s)
        if start:
            s.start()
        return s

    yield make
    for s in made:
        _retire(s)


def _retire(s):
    """Stops a test's server (SIGTERM, then SIGKILL) and reaps what it left behind: a server
    killed hard leaves its redis-server child running, holding the data dir."""
    if s.proc is not None and s.proc.p.poll() is None:
        try:
            s.stop(timeout=20)
        except AssertionError:
            s.kill()
    for pid in H.procs_mentioning(s.data_dir):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    H.reap_agent_containers([i for pid in getattr(s, "pids", []) for i in H.agent_ids_of(pid)])


@pytest.fixture
def procs():
    """Other child processes (agents, redis-server) started by a test; killed at teardown."""
    started = []

    def start(argv, **kw):
        p = H.Proc(argv, **kw)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()
    H.reap_agent_containers([i for p in started for i in H.agent_ids_of(p.p.pid, p.argv)])


@pytest.fixture(autouse=True)
def _responses_match_api_description():
    """Fails the test when a SageMaker response it received does not match the API description."""
    start = len(H.RESPONSE_VALIDATOR.errors)
    yield
    errs = H.RESPONSE_VALIDATOR.errors[start:]
    assert not errs, (f"responses do not match {H.RESPONSE_VALIDATOR.source}:\n  "
                      + "\n  ".join(errs[:20]))


@pytest.fixture(scope="session")
def aws_cli(server):
    """Runs the AWS CLI (Debian's /usr/bin/aws) against a server with its credentials file."""

    def run(*args, srv=None, region="us-east-1", check=False, timeout=60):
        srv = srv or server
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AWS_") or k in ("AWS_CA_BUNDLE",)}
        env.update({
            "AWS_SHARED_CREDENTIALS_FILE": srv.credentials_path,
            "AWS_CONFIG_FILE": os.path.join(srv.data_dir, "no-such-aws-config"),
            "AWS_PAGER": "",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_MAX_ATTEMPTS": "1",
        })
        argv = [H.AWS_CLI, "--endpoint-url", srv.url, "--region", region, "--output", "json"] \
            + list(args)
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        if check:
            assert p.returncode == 0, f"{argv} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
        return p

    return run


# ---------------------------------------------------------------------------------------------
# jobs submitted once, early, so that they run side by side while other tests proceed

FLEET_SCRIPTS = {
    # completes: config files, environment, 25 numbered log lines, metrics, a model directory
    "complete": r"""
echo "HP:$(tr -d '\n' < /opt/ml/input/config/hyperparameters.json)"
echo "RC:$(tr -d '\n' < /opt/ml/input/config/resourceconfig.json)"
echo "ENV:MYVAR=$MYVAR SM_CURRENT_HOST=$SM_CURRENT_HOST"
i=1
while [ $i -le 25 ]; do echo "line-$i loss=0.$((100 - i)) step=$i"; i=$((i + 1)); done
echo "WARN first warning"
sleep 1
mkdir -p /opt/ml/model/sub
printf 'weights-123' > /opt/ml/model/weights.txt
printf 'nested' > /opt/ml/model/sub/n.txt
echo "WARN second warning"
echo "final acc=0.875"
""",
    "fail_reason": "echo about to fail; printf 'custom failure: bad input' > /opt/ml/output/failure; exit 2",
    "fail_exit": "echo about to fail; exit 3",
    "maxrt": "echo started; sleep 120",
    # channel data staged from the local object store: checked inside the container (exit 7 when
    # wrong) and echoed to the log
    "channel": "d=/opt/ml/input/data/train; [ \"$(cat $d/part-0.csv)\" = \"$(printf 'a,b\\n1,2')\" ] "
               "&& [ \"$(cat $d/part-1.csv)\" = 3,4 ] || exit 7; cat $d/part-0.csv; ls $d | tr '\\n' ' '; echo",
}


@pytest.fixture(scope="session")
def fleet(server, sm):
    """name -> (job name, create response or the exception CreateTrainingJob raised)."""
    out = {}
    # channel data in the local object store, which the agent copies into the container
    chan = os.path.join(server.data_dir, "s3", "inbucket", "train")
    os.makedirs(chan, exist_ok=True)
    with open(os.path.join(chan, "part-0.csv"), "w") as f:
        f.write("a,b\n1,2\n")
    with open(os.path.join(chan, "part-1.csv"), "w") as f:
        f.write("3,4\n")
    extra = {
        "complete": dict(
            HyperParameters={"lr": "0.1", "epochs": "3"},
            Environment={"MYVAR": "hello-env"},
            AlgorithmSpecification={"MetricDefinitions": [
                {"Name": "train:loss", "Regex": "loss=([0-9.]+)"},
                {"Name": "final:acc", "Regex": "acc=([0-9.]+)"}]},
            Tags=[{"Key": "team", "Value": "ml"}]),
        "maxrt": dict(StoppingCondition={"MaxRuntimeInSeconds": 3}),
        "channel": dict(InputDataConfig=[{
            "ChannelName": "train",
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://inbucket/train",
                                            "S3DataDistributionType": "FullyReplicated"}}}]),
    }
    for key, script in FLEET_SCRIPTS.items():
        name = H.unique(key.replace("_", "-"))
        try:
            r = sm.create_training_job(**H.job_request(name, script, **extra.get(key, {})))
            out[key] = (name, r)
        except Exception as e:  # noqa: BLE001 - each test reports its own job's failure
            out[key] = (name, e)
    return out


@pytest.fixture
def fleet_job(fleet):
    def get(key):
        name, r = fleet[key]
        if isinstance(r, Exception):
            pytest.fail(f"CreateTrainingJob for the {key} job failed: {r!r}")
        return name
    return get
