"""Helpers shared by the integration tests: the server process, hand-signed requests, waiting
for job states, and validation of responses against the published API description.

Nothing here sleeps for a fixed time to let something happen: every wait polls a condition
with a deadline and fails with the last thing it saw.
"""
import configparser
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.parse

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.credentials

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TY_BUILD_DIR", os.path.join(REPO, "build"))
SERVER_BIN = os.environ.get("TY_SERVER_BIN", os.path.join(BUILD, "bin", "trainyard-server"))
AGENT_BIN = os.environ.get("TY_AGENT_BIN", os.path.join(BUILD, "bin", "trainyard-agent"))
RUNTIME_TAR = os.environ.get(
    "TY_RUNTIME_TAR", os.path.join(BUILD, "runtime-image", "trainyard-runtime.tar"))
DOCKER_HOST = os.environ.get("TY_DOCKER_HOST", "unix:///run/trainyard-podman.sock")
RUNTIME_IMAGE = os.environ.get("TY_RUNTIME_IMAGE", "trainyard/runtime:0.1.0")
ENGINE_SH = os.path.join(REPO, "tests", "engine.sh")
AWS_CLI = "/usr/bin/aws" if os.path.exists("/usr/bin/aws") else "aws"
REDIS_SERVER = "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else "redis-server"

TERMINAL = ("Completed", "Failed", "Stopped")
ROLE = "arn:aws:iam::000000000000:role/trainyard"
LOG_GROUP = "/aws/sagemaker/TrainingJobs"


# ---------------------------------------------------------------------------------------------
# small utilities

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout, what, interval=0.1):
    """Polls pred() until it returns something truthy; returns it. Fails after timeout s."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = pred()
        except Exception as e:  # noqa: BLE001 - reported on timeout
            last = e
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def engine_request(method, path, docker_host=DOCKER_HOST, body=None, timeout=10):
    """One request to the container engine's Docker API. Returns (status, body bytes)."""
    if docker_host.startswith("unix://"):
        conn = UnixHTTPConnection(docker_host[len("unix://"):], timeout=timeout)
    elif docker_host.startswith("tcp://"):
        hp = docker_host[len("tcp://"):]
        host, port = hp.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    else:
        raise ValueError(docker_host)
    try:
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=hdrs)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def engine_ping(docker_host=DOCKER_HOST):
    try:
        status, body = engine_request("GET", "/_ping", docker_host, timeout=3)
        return status == 200 and body.strip() == b"OK"
    except OSError:
        return False


def agent_ids_of(pid, argv=()):
    """What a trainyard process's agents are called: "--id X" when given, and the default
    "<hostname>-<pid>-" prefix (agent.c) of the agents it starts on its own."""
    ids = [f"{socket.gethostname()}-{pid}-"]
    argv = list(argv)
    if "--id" in argv[:-1]:
        ids.append(argv[argv.index("--id") + 1])
    return ids


def job_networks(job, docker_host=DOCKER_HOST):
    """The engine's networks labelled trainyard.job=<job> (the agent names them
    trainyard-<deployment>-<job>: reap.h), as the engine lists them."""
    status, body = engine_request("GET", "/v1.41/networks", docker_host)
    assert status == 200, body[:200]
    return [n for n in json.loads(body) if (n.get("Labels") or {}).get("trainyard.job") == job]


def job_containers(job, docker_host=DOCKER_HOST):
    """Job's containers on the engine, running or not: those labelled trainyard.job=<job>, and
    the sandbox of a one-host job that was its agent's spare (labelled trainyard.spare, not with
    the job: named trainyard-<deployment>-<job>-algo-1-net, docs/job-sandbox.md)."""
    out = []
    for label in (f"trainyard.job={job}", "trainyard.spare=1"):
        q = urllib.parse.quote(json.dumps({"label": [label]}))
        status, body = engine_request("GET", f"/v1.41/containers/json?all=1&filters={q}",
                                      docker_host)
        assert status == 200, body[:300]
        out += [c for c in json.loads(body)
                if label != "trainyard.spare=1"
                or any(n.endswith(f"-{job}-algo-1-net") for n in c.get("Names", []))]
    return out


def reap_agent_containers(ids, docker_host=DOCKER_HOST):
    """Removes the containers and job networks of agents whose id is in ids (or starts with one
    ending in "-"): test hygiene for agents killed with their whole deployment (Redis included),
    whose leftovers no surviving agent can tell apart from another deployment's. Training
    containers go before the sandboxes whose network they share. Best effort."""
    def ours(agent):
        return any(agent == i or (i.endswith("-") and agent.startswith(i)) for i in ids)

    try:
        q = urllib.parse.urlencode({"all": "1",
                                    "filters": json.dumps({"label": ["trainyard.agent"]})})
        status, body = engine_request("GET", f"/v1.41/containers/json?{q}", docker_host)
        if status != 200:
            return
        mine = [c for c in json.loads(body) if ours(c.get("Labels", {}).get("trainyard.agent", ""))]
        mine.sort(key=lambda c: "trainyard.sandbox" in c.get("Labels", {}))
        for c in mine:
            engine_request("DELETE", f"/v1.41/containers/{c['Id']}?force=1&t=0", docker_host,
                           timeout=30)
        deps = {c["Labels"].get("trainyard.deployment") for c in mine}
        for job in {c["Labels"].get("trainyard.job") for c in mine} - {None}:
            for n in job_networks(job, docker_host):
                if n["Labels"].get("trainyard.deployment") in deps:
                    engine_request("DELETE", f"/v1.41/networks/{n['Id']}", docker_host, timeout=30)
    except (OSError, ValueError, AssertionError):
        pass


def private_redis(procs, d):
    """A redis-server of the test's own on a unix socket in d (created), started through the
    procs fixture. Returns its URL."""
    os.makedirs(d)
    sock = os.path.join(d, "redis.sock")
    procs([REDIS_SERVER, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
           "--save", "", "--appendonly", "no", "--dir", d], log_path=os.path.join(d, "redis.log"))
    wait_for(lambda: os.path.exists(sock), 20, "redis-server's socket")
    return f"unix://{sock}"


def procs_mentioning(text):
    """pids of processes whose command line contains text (read-only /proc scan)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and text in cmd:
            out.append(int(d))
    return out


# ---------------------------------------------------------------------------------------------
# processes

class Proc:
    """A child process whose stderr/stdout are collected into a log file and a line list."""

    def __init__(self, argv, env=None, log_path=None, ready_marker=None):
        self.argv = argv
        self.lines = []
        self._cond = threading.Condition()
        self.ready_marker = ready_marker
        self.log_path = log_path
        self._log = open(log_path, "a") if log_path else None
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.p = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()

    def _pump(self):
        for raw in self.p.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            if self._log:
                self._log.write(line + "\n")
                self._log.flush()
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def pid(self):
        return self.p.pid

    def wait_line(self, substr, timeout):
        """Waits until a line containing substr was printed. Fails if the process exits first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    if substr in line:
                        return line
                if self.p.poll() is not None and not self._t.is_alive():
                    raise AssertionError(
                        f"{self.argv[0]} exited with {self.p.returncode} before printing "
                        f"{substr!r}:\n{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{self.argv[0]} did not print {substr!r} within {timeout}s:\n{self.tail()}")
                self._cond.wait(min(left, 0.2))

    def wait_exit(self, timeout):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.argv[0]} still running after {timeout}s:\n{self.tail()}")
        self._t.join(5)
        return rc

    def signal(self, sig):
        if self.p.poll() is None:
            self.p.send_signal(sig)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)

    def tail(self, n=40):
        with self._cond:
            return "\n".join(self.lines[-n:])


class Server:
    """One trainyard-server on a free port with its own data dir."""

    def __init__(self, data_dir, agents=1, extra=(), env=None, port=None, region=None,
                 log_path=None):
        self.data_dir = data_dir
        self.agents = agents
        self.extra = list(extra)
        self.env = dict(env or {})
        self.port = port or free_port()
        self.log_path = log_path or (data_dir.rstrip("/") + ".log")
        self.proc = None
        # the region clients sign for: the one the server serves (--region)
        if region is None and "--region" in self.extra:
            region = self.extra[self.extra.index("--region") + 1]
        self.region = region or self.env.get("TRAINYARD_REGION") or "us-east-1"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def argv(self):
        return [SERVER_BIN, "--listen", f"127.0.0.1:{self.port}", "--data-dir", self.data_dir,
                "--agents", str(self.agents), "--docker-host", DOCKER_HOST,
                "--runtime-image-tar", RUNTIME_TAR] + self.staging_args() + self.ledger_args() \
            + self.extra

    def ledger_args(self):
        """The tests' jobs are mostly sleeping shells, run several at once on a CI machine of
        2 CPUs: their agents promise vCPUs and memory 16 times over (docs/resources.md), unless
        the test declares its own ledger (test_ledger.py)."""
        own = ("--overcommit", "--cpus", "--memory")
        if any(f in self.extra for f in own) or "TRAINYARD_OVERCOMMIT" in self.env:
            return []
        return ["--overcommit", "16"]

    def staging_args(self):
        """Job staging beside the data dir (not inside it: mountinfo must not name the data
        dir), so a test server's leftovers go with its workdir instead of the host default."""
        if "--staging-dir" in self.extra or "TRAINYARD_STAGING_DIR" in self.env:
            return []
        d = self.data_dir.rstrip("/")
        return ["--staging-dir",
                os.path.join(os.path.dirname(d), "staging-" + os.path.basename(d))]

    def start(self, timeout=90):
        os.makedirs(self.data_dir, exist_ok=True)
        self.proc = Proc(self.argv(), env=self.env, log_path=self.log_path)
        self.pids = getattr(self, "pids", []) + [self.proc.p.pid]
        self.proc.wait_line("event=server.ready", timeout)
        # job_request()'s default output bucket: a job whose output bucket is missing fails, as
        # on SageMaker. Best effort (a server may start without Redis, or with other keys).
        try:
            self.client("s3", s3={"addressing_style": "path"}).create_bucket(Bucket="bucket")
        except Exception:  # noqa: BLE001
            pass
        return self

    def stop(self, timeout=30, sig=signal.SIGTERM):
        """Stops the server; returns its exit status."""
        if self.proc is None:
            return None
        self.proc.signal(sig)
        rc = self.proc.wait_exit(timeout)
        return rc

    def kill(self):
        if self.proc is not None:
            self.proc.kill()

    @property
    def credentials_path(self):
        return os.path.join(self.data_dir, "credentials")

    def credentials(self):
        if "TRAINYARD_ADMIN_ACCESS_KEY_ID" in self.env:
            return (self.env["TRAINYARD_ADMIN_ACCESS_KEY_ID"],
                    self.env["TRAINYARD_ADMIN_SECRET_ACCESS_KEY"])
        return read_credentials(self.credentials_path)

    def client(self, service="sagemaker", region=None, keys=None, validate=True, **cfg):
        akid, secret = keys or self.credentials()
        conf = botocore.config.Config(retries={"max_attempts": 0}, connect_timeout=10,
                                      read_timeout=60, **cfg)
        c = boto3.session.Session().client(
            service, endpoint_url=self.url, region_name=region or self.region,
            aws_access_key_id=akid, aws_secret_access_key=secret, config=conf)
        if service == "sagemaker" and validate and RESPONSE_VALIDATOR is not None:
            RESPONSE_VALIDATOR.attach(c)
        return c

    def call(self, op, body, **kw):
        akid, secret = self.credentials()
        kw.setdefault("keys", (akid, secret))
        return raw_call(self.url, op, body, **kw)

    def healthz(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/healthz")
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()


def read_credentials(path):
    cp = configparser.ConfigParser()
    with open(path) as f:
        cp.read_file(f)
    sec = cp["default"]
    return sec["aws_access_key_id"].strip(), sec["aws_secret_access_key"].strip()


# ---------------------------------------------------------------------------------------------
# hand-signed requests

TIMESTAMP_FMT = "%Y%m%dT%H%M%SZ"


class FrozenSigV4Auth(botocore.auth.SigV4Auth):
    """SigV4 header auth with a caller-chosen X-Amz-Date (datetime, UTC)."""

    def __init__(self, credentials, service, region, when):
        super().__init__(credentials, service, region)
        self._when = when

    def add_auth(self, request):
        request.context["timestamp"] = self._when.strftime(TIMESTAMP_FMT)
        self._modify_request_before_signing(request)
        canonical = self.canonical_request(request)
        sts = self.string_to_sign(request, canonical)
        self._inject_signature_to_request(request, self.signature(sts, request))


class BodyKeepingQueryAuth(botocore.auth.SigV4QueryAuth):
    """Presigned (query-string) SigV4 that leaves a JSON body in place.

    botocore's SigV4QueryAuth moves body members into the query string, which only makes sense
    for the query protocol; a JSON 1.1 request presigned by hand keeps its body, whose SHA-256
    is then part of the canonical request like any other request's."""

    def _modify_request_before_signing(self, request):
        data = request.data
        request.data = b""
        super()._modify_request_before_signing(request)
        request.data = data


def target_for(service, op):
    return {"sagemaker": "SageMaker.", "logs": "Logs_20140328."}[service] + op


def build_request(url, op, body, keys=None, region="us-east-1", service="sagemaker",
                  path="/", auth="header", when=None, headers=None, target=True):
    """Returns a prepared botocore AWSPreparedRequest (not sent)."""
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    if isinstance(data, str):
        data = data.encode()
    hdrs = {"Content-Type": "application/x-amz-json-1.1"}
    if target:
        hdrs["X-Amz-Target"] = target_for(service, op)
    hdrs.update(headers or {})
    req = botocore.awsrequest.AWSRequest(method="POST", url=url.rstrip("/") + path, data=data,
                                         headers=hdrs)
    if auth is not None and keys is not None:
        creds = botocore.credentials.Credentials(keys[0], keys[1])
        if auth == "header" and when is None:
            botocore.auth.SigV4Auth(creds, service, region).add_auth(req)
        elif auth == "header":
            FrozenSigV4Auth(creds, service, region, when).add_auth(req)
        elif auth == "query":
            BodyKeepingQueryAuth(creds, service, region, expires=300).add_auth(req)
        else:
            raise ValueError(auth)
    return req.prepare()


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    @property
    def error_type(self):
        if not isinstance(self.json, dict):
            return None
        t = self.json.get("__type")
        if t is None:
            return None
        return t.split("#")[-1].split(":")[0]

    @property
    def message(self):
        if not isinstance(self.json, dict):
            return None
        return self.json.get("message", self.json.get("Message"))

    def __repr__(self):
        return f"<HTTP {self.status} {self.body[:400]!r}>"


def send_prepared(prepared, timeout=30):
    u = urllib.parse.urlsplit(prepared.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        path = u.path + (("?" + u.query) if u.query else "")
        body = prepared.body
        if isinstance(body, str):
            body = body.encode()
        conn.request(prepared.method, path, body=body, headers=dict(prepared.headers.items()))
        r = conn.getresponse()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    finally:
        conn.close()


def raw_call(url, op, body, keys=None, **kw):
    resp = send_prepared(build_request(url, op, body, keys=keys, **kw))
    if RESPONSE_VALIDATOR is not None and kw.get("service", "sagemaker") == "sagemaker" \
            and resp.json is not None:
        RESPONSE_VALIDATOR.check(op, resp.json, resp.status)
    return resp


# ---------------------------------------------------------------------------------------------
# jobs

# ContainerEntrypoint/ContainerArguments items are at most 256 characters matching Java's `.*`
# (no newline): a multi-line script goes one line per argument to a shell that evals them in turn.
RUN_LINES = "for l; do eval \"$l\"; done"


def entrypoint(script):
    if "\n" not in script.strip():
        return {"ContainerEntrypoint": ["sh", "-c", script.strip()]}
    lines = [l for l in script.strip().split("\n") if l.strip()]
    assert all(len(l) <= 256 for l in lines), [l for l in lines if len(l) > 256]
    return {"ContainerEntrypoint": ["sh", "-c", RUN_LINES, "sh"], "ContainerArguments": lines}


def job_request(name, script, instance_type="ml.m5.large", max_runtime=600, output="s3://bucket/prefix",
                **extra):
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {
            "TrainingImage": RUNTIME_IMAGE,
            "TrainingInputMode": "File",
            **entrypoint(script),
        },
        "RoleArn": ROLE,
        "OutputDataConfig": {"S3OutputPath": output},
        "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime},
    }
    for k, v in extra.items():
        if k in req and isinstance(req[k], dict) and isinstance(v, dict):
            req[k] = {**req[k], **v}
        else:
            req[k] = v
    return req


def unique(prefix):
    """A job name unique to this run: prefix-<pid>-<ms>-<n> (within the 63-char limit)."""
    unique.n += 1
    return f"{prefix}-{os.getpid() % 100000}-{int(time.time() * 1000) % 100000000}-{unique.n}"


unique.n = 0


def wait_job(sm, name, statuses=TERMINAL, timeout=120, secondary=None):
    """Polls DescribeTrainingJob until TrainingJobStatus is in statuses (and SecondaryStatus in
    secondary when given). Returns the description."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = sm.describe_training_job(TrainingJobName=name)
        if last["TrainingJobStatus"] in statuses and (
                secondary is None or last.get("SecondaryStatus") in secondary):
            return last
        if time.monotonic() > deadline:
            raise AssertionError(
                f"job {name} not in {statuses}/{secondary} after {timeout}s: "
                f"status={last.get('TrainingJobStatus')} secondary={last.get('SecondaryStatus')} "
                f"transitions={[t.get('Status') for t in last.get('SecondaryStatusTransitions', [])]} "
                f"failure={last.get('FailureReason')}")
        time.sleep(0.2)


def log_events(logs, stream, limit=None, start_from_head=True):
    """Every event of a stream, paging with nextForwardToken until an empty page (as the
    SageMaker SDK does). Returns (events, pages) and checks the token contract on the way."""
    kw = {"logGroupName": LOG_GROUP, "logStreamName": stream, "startFromHead": start_from_head}
    if limit:
        kw["limit"] = limit
    events, pages = [], []
    for _ in range(1000):
        r = logs.get_log_events(**kw)
        assert "nextForwardToken" in r, f"GetLogEvents without nextForwardToken: {r}"
        pages.append(r)
        if not r["events"]:
            return events, pages
        if limit:
            assert len(r["events"]) <= limit
        events.extend(r["events"])
        kw["nextToken"] = r["nextForwardToken"]
    raise AssertionError("GetLogEvents never returned an empty page")


def job_stream(logs, name, timeout=30):
    def one():
        r = logs.describe_log_streams(logGroupName=LOG_GROUP, logStreamNamePrefix=name + "/")
        return r if r["logStreams"] else None
    r = wait_for(one, timeout, f"a log stream for {name}")
    return r


# ---------------------------------------------------------------------------------------------
# response validation against the published API description

class ResponseValidator:
    """Validates SageMaker JSON responses against openapi/openapi.yaml (the REST alias's
    document, generated from api/), else against api/sagemaker.json's botocore shapes.
    Errors are collected; the autouse fixture in conftest.py fails the test that saw them."""

    def __init__(self):
        self.errors = []
        self.source = None
        self.openapi = None
        self.shapes = None
        self.ops = None
        path = os.path.join(REPO, "openapi", "openapi.yaml")
        api = os.path.join(REPO, "api", "sagemaker.json")
        if os.path.exists(path):
            import yaml
            with open(path) as f:
                self.openapi = yaml.safe_load(f)
            self.source = path
        elif os.path.exists(api):
            with open(api) as f:
                doc = json.load(f)
            self.shapes = doc["shapes"]
            self.ops = doc["operations"]
            self.source = api
        self.checked = 0

    def attach(self, client):
        def hook(http_response, parsed, model, **_):
            if not http_response.content:
                return
            try:
                body = json.loads(http_response.content)
            except ValueError:
                self.errors.append(f"{model.name}: response is not JSON: {http_response.content[:200]!r}")
                return
            self.check(model.name, body, http_response.status_code)
        client.meta.events.register("after-call.sagemaker", hook)

    # -- entry point
    def check(self, op, body, status=200):
        errs = []
        if self.openapi is not None:
            schema = self._openapi_response_schema(op, status)
            if schema is None:
                return
            self._validate_schema(schema, body, "$", errs, 0)
        elif self.shapes is not None:
            if status != 200:
                return
            o = self.ops.get(op)
            if not o or "output" not in o:
                return
            self._validate_shape(o["output"]["shape"], body, "$", errs, 0)
        else:
            return
        self.checked += 1
        for e in errs:
            self.errors.append(f"{op} (HTTP {status}): {e}")

    # -- OpenAPI (JSON Schema subset)
    def _ref(self, ref):
        assert ref.startswith("#/"), ref
        node = self.openapi
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _openapi_response_schema(self, op, status=200):
        paths = self.openapi.get("paths", {})
        item = paths.get(f"/sagemaker/{op}")
        if not item:
            return None
        post = item.get("post") or {}
        resp = (post.get("responses") or {}).get(str(status)) or (post.get("responses") or {}).get(status)
        if not resp:
            return None
        if "$ref" in resp:
            resp = self._ref(resp["$ref"])
        content = resp.get("content") or {}
        for ct, media in content.items():
            if "json" in ct and media.get("schema") is not None:
                return media["schema"]
        return None

    def _validate_schema(self, s, v, path, errs, depth):
        if depth > 60:
            return
        if "$ref" in s:
            s = self._ref(s["$ref"])
        for sub in s.get("allOf", []):
            self._validate_schema(sub, v, path, errs, depth + 1)
        for key in ("anyOf", "oneOf"):
            if key in s:
                ok = False
                for sub in s[key]:
                    e2 = []
                    self._validate_schema(sub, v, path, e2, depth + 1)
                    if not e2:
                        ok = True
                        break
                if not ok:
                    errs.append(f"{path}: matches none of {key}")
        t = s.get("type")
        if t is not None:
            types = t if isinstance(t, list) else [t]
            if s.get("nullable"):
                types = types + ["null"]
            if not any(_is_type(v, ty) for ty in types):
                errs.append(f"{path}: {v!r:.80} is not of type {t}")
                return
        if "enum" in s and v not in s["enum"]:
            errs.append(f"{path}: {v!r} not in enum {s['enum']}")
        if "const" in s and v != s["const"]:
            errs.append(f"{path}: {v!r} != const {s['const']!r}")
        # Responses carry "" as AWS's placeholder (KmsKeyId, S3ModelArtifacts of a job that has
        # no model yet): patterns and minimum lengths are checked on non-empty strings only.
        if isinstance(v, str) and v:
            if "minLength" in s and len(v) < s["minLength"]:
                errs.append(f"{path}: length {len(v)} < minLength {s['minLength']}")
            if "maxLength" in s and len(v) > s["maxLength"]:
                errs.append(f"{path}: length {len(v)} > maxLength {s['maxLength']}")
            if "pattern" in s:
                rx = _compile(s["pattern"])
                whole = s.get("x-aws-pattern-match") == "whole value"
                if rx is not None and not (rx.fullmatch(v) if whole else rx.search(v)):
                    errs.append(f"{path}: {v!r} does not match pattern {s['pattern']}")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if "minimum" in s and v < s["minimum"]:
                errs.append(f"{path}: {v} < minimum {s['minimum']}")
            if "maximum" in s and v > s["maximum"]:
                errs.append(f"{path}: {v} > maximum {s['maximum']}")
        if isinstance(v, dict):
            props = s.get("properties") or {}
            for r in s.get("required", []):
                if r not in v:
                    errs.append(f"{path}: required member {r} missing")
            addl = s.get("additionalProperties", True)
            for k, sub in v.items():
                if k in props:
                    self._validate_schema(props[k], sub, f"{path}.{k}", errs, depth + 1)
                elif addl is False:
                    errs.append(f"{path}: unexpected member {k}")
                elif isinstance(addl, dict):
                    self._validate_schema(addl, sub, f"{path}.{k}", errs, depth + 1)
        if isinstance(v, list):
            if "minItems" in s and len(v) < s["minItems"]:
                errs.append(f"{path}: {len(v)} items < minItems {s['minItems']}")
            if "maxItems" in s and len(v) > s["maxItems"]:
                errs.append(f"{path}: {len(v)} items > maxItems {s['maxItems']}")
            if "items" in s:
                for i, sub in enumerate(v):
                    self._validate_schema(s["items"], sub, f"{path}[{i}]", errs, depth + 1)

    # -- botocore shapes (api/sagemaker.json)
    def _validate_shape(self, name, v, path, errs, depth):
        if depth > 60:
            return
        shape = self.shapes[name]
        t = shape["type"]
        if t == "structure":
            if not isinstance(v, dict):
                errs.append(f"{path}: expected object, got {v!r:.80}")
                return
            for r in shape.get("required", []):
                if r not in v:
                    errs.append(f"{path}: required member {r} missing")
            members = shape.get("members", {})
            for k, sub in v.items():
                if k in members:
                    self._validate_shape(members[k]["shape"], sub, f"{path}.{k}", errs, depth + 1)
        elif t == "list":
            if not isinstance(v, list):
                errs.append(f"{path}: expected array, got {v!r:.80}")
                return
            for i, sub in enumerate(v):
                self._validate_shape(shape["member"]["shape"], sub, f"{path}[{i}]", errs, depth + 1)
            self._minmax(shape, len(v), path, errs, "items")
        elif t == "map":
            if not isinstance(v, dict):
                errs.append(f"{path}: expected object (map), got {v!r:.80}")
                return
            for k, sub in v.items():
                self._validate_shape(shape["key"]["shape"], k, f"{path}<key {k}>", errs, depth + 1)
                self._validate_shape(shape["value"]["shape"], sub, f"{path}.{k}", errs, depth + 1)
        elif t == "string":
            if not isinstance(v, str):
                errs.append(f"{path}: expected string, got {v!r:.80}")
                return
            if "enum" in shape and v not in shape["enum"]:
                errs.append(f"{path}: {v!r} not in enum {shape['enum']}")
            if not v:
                return  # "" placeholders: see _validate_schema
            self._minmax(shape, len(v), path, errs, "length")
            if "pattern" in shape:
                rx = _compile(shape["pattern"])
                if rx is not None and not rx.search(v):
                    errs.append(f"{path}: {v!r} does not match pattern {shape['pattern']}")
        elif t in ("integer", "long"):
            if not isinstance(v, int) or isinstance(v, bool):
                errs.append(f"{path}: expected integer, got {v!r}")
                return
            self._minmax(shape, v, path, errs, "value")
        elif t in ("float", "double"):
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                errs.append(f"{path}: expected number, got {v!r}")
                return
            self._minmax(shape, v, path, errs, "value")
        elif t == "boolean":
            if not isinstance(v, bool):
                errs.append(f"{path}: expected boolean, got {v!r}")
        elif t == "timestamp":
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                errs.append(f"{path}: expected epoch seconds (number), got {v!r}")

    @staticmethod
    def _minmax(shape, n, path, errs, what):
        if "min" in shape and n < shape["min"]:
            errs.append(f"{path}: {what} {n} < min {shape['min']}")
        if "max" in shape and n > shape["max"]:
            errs.append(f"{path}: {what} {n} > max {shape['max']}")


_RX = {}


def _compile(p):
    if p not in _RX:
        try:
            _RX[p] = re.compile(p, re.S)
        except re.error:
            _RX[p] = None  # a Java/PCRE-only construct; not checkable with Python's re
    return _RX[p]


def _is_type(v, t):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    return True


RESPONSE_VALIDATOR = ResponseValidator()


# ---------------------------------------------------------------------------------------------
# an image with python3 and boto3, assembled offline from this host's Debian packages

PYBOTO_IMAGE = "trainyard-test/pyboto:1"
_PY_PRUNE = {"test", "idlelib", "tkinter", "ensurepip", "lib2to3", "turtledemo", "pydoc_data",
             "config-3.11-x86_64-linux-gnu", "distutils", "venv", "site-packages", "unittest",
             "curses", "dbm", "sqlite3", "xmlrpc", "wsgiref", "msilib"}
_PY_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six.py",
                "certifi", "requests", "idna", "charset_normalizer", "chardet")
_BOTOCORE_SERVICES = {"s3", "sts", "sagemaker"}


def _ldd(path):
    """The shared libraries path needs (absolute paths as the loader finds them)."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    libs = []
    for line in r.stdout.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def build_pyboto_rootfs(out_tar):
    """Writes a rootfs tarball: /usr/bin/python3 (Debian's), its stdlib (pruned), boto3 with its
    dependencies (botocore's data pruned to s3, sts and sagemaker), the shared libraries ldd
    names, and a static busybox as /bin/sh. Merged-/usr layout (bin, lib, lib64 -> usr/...)."""
    import tarfile
    py = os.path.realpath("/usr/bin/python3")
    stdlib = "/usr/lib/python3.11"
    dist = "/usr/lib/python3/dist-packages"
    files = {}      # path in the image -> host path
    links = {}      # path in the image -> link target
    dirs = {"tmp", "etc", "root", "opt", "opt/ml", "usr/local/bin"}

    def norm(p):
        for d in ("/bin/", "/sbin/", "/lib/", "/lib64/"):
            if p.startswith(d):
                return "usr" + p
        return p.lstrip("/")

    def add_tree(src, dst, prune=(), keep=None):
        for root, ds, fs in os.walk(src):
            rel = os.path.relpath(root, src)
            ds[:] = [d for d in ds if d not in prune and (keep is None or keep(rel, d))]
            for f in fs:
                hp = os.path.join(root, f)
                ip = os.path.normpath(os.path.join(dst, rel, f))
                if f.endswith(".pth"):
                    continue
                if os.path.islink(hp):
                    links[ip] = os.readlink(hp)
                else:
                    files[ip] = hp

    files[norm(py)] = py
    links["usr/bin/python3"] = os.path.basename(py)
    add_tree(stdlib, norm(stdlib), prune=_PY_PRUNE)
    for p in _PY_PACKAGES:
        hp = os.path.join(dist, p)
        if os.path.isdir(hp):
            if p == "botocore":
                def keep(rel, d):
                    return rel != "data" or d in _BOTOCORE_SERVICES
                add_tree(hp, norm(hp), keep=keep)
            else:
                add_tree(hp, norm(hp))
        elif os.path.exists(hp):
            files[norm(hp)] = hp
    files["usr/bin/busybox"] = "/usr/bin/busybox"
    for tool in ("sh", "ls", "cat", "env", "sleep", "wget", "echo"):
        links["usr/bin/" + tool] = "busybox"
    for lib in {l for f in list(files.values()) if f.endswith(".so") or f == py for l in _ldd(f)}:
        real = os.path.realpath(lib)
        files[norm(real)] = real
        if norm(lib) != norm(real):
            links[norm(lib)] = os.path.relpath("/" + norm(real), os.path.dirname("/" + norm(lib)))
    with tarfile.open(out_tar, "w") as t:
        def add_dir(name, mode=0o755):
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode = tarfile.DIRTYPE, mode
            t.addfile(ti)
        seen = set()
        for p in sorted(set(files) | set(links) | dirs):
            parts = p.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if d not in seen:
                    seen.add(d)
                    add_dir(d)
        for d in ("bin", "sbin", "lib", "lib64"):
            ti = tarfile.TarInfo(d)
            ti.type, ti.linkname = tarfile.SYMTYPE, "usr/" + d
            t.addfile(ti)
        for d in sorted(dirs):
            if d not in seen:
                seen.add(d)
                add_dir(d, 0o1777 if d == "tmp" else 0o755)
        for p, target in sorted(links.items()):
            ti = tarfile.TarInfo(p)
            ti.type, ti.linkname = tarfile.SYMTYPE, target
            t.addfile(ti)
        for p, hp in sorted(files.items()):
            ti = t.gettarinfo(hp, arcname=p)
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = "root"
            with open(hp, "rb") as f:
                t.addfile(ti, f)
        passwd = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"
        import io
        ti = tarfile.TarInfo("etc/passwd")
        ti.size = len(passwd)
        t.addfile(ti, io.BytesIO(passwd))


def engine_image_exists(name, docker_host=DOCKER_HOST):
    status, _ = engine_request("GET", f"/v1.41/images/{urllib.parse.quote(name, safe='')}/json",
                               docker_host)
    return status == 200


def pyboto_image(tmpdir, docker_host=DOCKER_HOST):
    """PYBOTO_IMAGE in the engine, built and imported once (kept across runs by its name)."""
    if engine_image_exists(PYBOTO_IMAGE, docker_host):
        return PYBOTO_IMAGE
    tar = os.path.join(tmpdir, "pyboto-rootfs.tar")
    build_pyboto_rootfs(tar)
    repo, tag = PYBOTO_IMAGE.rsplit(":", 1)
    q = urllib.parse.urlencode({"fromSrc": "-", "repo": PYBOTO_IMAGE, "tag": tag})
    with open(tar, "rb") as f:
        status, body = engine_request("POST", f"/v1.41/images/create?{q}", docker_host,
                                      body=f.read(), timeout=600)
    assert status == 200, (status, body[-500:])
    if not engine_image_exists(PYBOTO_IMAGE, docker_host):
        # Podman 4.3 names an import docker.io/<repo>:latest: tag it
        q = urllib.parse.urlencode({"repo": repo, "tag": tag})
        status, body = engine_request("POST", f"/v1.41/images/docker.io%2F{repo.replace('/', '%2F')}"
                                      f"%3Alatest/tag?{q}", docker_host)
        assert status in (200, 201), (status, body)
    assert engine_image_exists(PYBOTO_IMAGE, docker_host)
    os.unlink(tar)
    return PYBOTO_IMAGE
