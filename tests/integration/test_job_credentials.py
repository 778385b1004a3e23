"""Role credentials inside job containers: the agent's relay puts trainyard's API on
127.0.0.1:9911 inside every job host's network namespace (control-plane/agent/relay.h), and the
container gets the standard container credentials provider's variables
(AWS_CONTAINER_CREDENTIALS_FULL_URI + AWS_CONTAINER_AUTHORIZATION_TOKEN) for the job's role.

- boto3 inside a job (an image with Debian's python3 and boto3, assembled offline here) lists
  the bucket its role allows and is denied the one it does not, with credentials from the
  environment alone;
- the token and the credentials minted from it are refused once the job ended (revoked);
- a shell-only job fetches its credentials with the runtime image's busybox wget;
- EnableNetworkIsolation: no relay, no credentials variables.
Job names start with cred-.
"""
import http.client
import json
import os
import uuid

import boto3
import botocore.config
import botocore.exceptions
import pytest

import tyhelpers as H

RELAY_PORT = 9911
CREDS_PATH = "/_trainyard/credentials"
DEFAULT_ROLE = "arn:aws:iam::000000000000:role/trainyard"

# Run in the job by `python3 -c EXEC line...`: ContainerArguments items are single lines.
EXEC = "import sys; exec(chr(10).join(sys.argv[1:]))"


@pytest.fixture(scope="session")
def pyboto(workdir):
    """The python3 + boto3 image, built once and kept in the engine by name."""
    return H.pyboto_image(workdir)


@pytest.fixture(scope="session")
def s3_admin(server):
    return server.client("s3")


def _bucket(s3, prefix):
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def buckets(s3_admin):
    a = _bucket(s3_admin, "cred-allowed")
    b = _bucket(s3_admin, "cred-denied")
    s3_admin.put_object(Bucket=a, Key="hello.txt", Body=b"hi")
    s3_admin.put_object(Bucket=b, Key="secret.txt", Body=b"no")
    return a, b


@pytest.fixture(scope="session")
def bucket_role(server, buckets):
    """A role whose only policy allows s3 on bucket A (CreateRole + PutRolePolicy)."""
    a, _ = buckets
    iam = server.client("iam")
    name = f"cred-role-{uuid.uuid4().hex[:8]}"
    trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject", "s3:PutObject"],
        "Resource": [f"arn:aws:s3:::{a}", f"arn:aws:s3:::{a}/*"]}]}
    try:
        arn = iam.create_role(RoleName=name,
                              AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        iam.put_role_policy(RoleName=name, PolicyName="only-a",
                            PolicyDocument=json.dumps(policy))
    except botocore.exceptions.ClientError as e:
        pytest.skip(f"IAM roles not available on this server yet: {e}")
    return arn


def _job(server, sm, name, image, entry, args=None, role=DEFAULT_ROLE, **extra):
    req = H.job_request(name, "true", RoleArn=role, **extra)
    req["AlgorithmSpecification"] = {"TrainingImage": image, "TrainingInputMode": "File",
                                     "ContainerEntrypoint": entry}
    if args:
        req["AlgorithmSpecification"]["ContainerArguments"] = args
    sm.create_training_job(**req)
    return H.wait_job(sm, name, timeout=240)


def _log_lines(logs, name):
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    events, _ = H.log_events(logs, stream)
    return [e["message"] for e in events]


def _tagged(lines, tag):
    """The JSON after 'TAG ' of the first such line."""
    for l in lines:
        if l.startswith(tag + " "):
            return json.loads(l[len(tag) + 1:])
    raise AssertionError(f"no {tag} line in the job's log:\n" + "\n".join(lines[-40:]))


def _get_creds(server, token):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", CREDS_PATH, headers={"Authorization": token})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


# The job's script: plain boto3 from the environment. Debian's boto3 1.26 predates
# AWS_ENDPOINT_URL support, so the endpoint is passed from that variable explicitly; the
# credentials come from the container provider alone (no keys anywhere).
BOTO_SCRIPT = [
    "import os, json, boto3, botocore.exceptions",
    "env = {k: v for k, v in os.environ.items() if k.startswith('AWS_') or k == 'S3_ENDPOINT_URL'}",
    "print('ENV ' + json.dumps(env), flush=True)",
    "sess = boto3.session.Session()",
    "c = sess.get_credentials()",
    "f = c.get_frozen_credentials()",
    "print('CREDS ' + json.dumps([c.method, f.access_key, f.secret_key, f.token]), flush=True)",
    "s3 = sess.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL'])",
    "keys = [o['Key'] for o in s3.list_objects_v2(Bucket=os.environ['CRED_ALLOWED'])['Contents']]",
    "print('ALLOWED ' + json.dumps(keys), flush=True)",
    "try:",
    "    s3.list_objects_v2(Bucket=os.environ['CRED_DENIED'])",
    "    print('DENIED ' + json.dumps('not denied'), flush=True)",
    "except botocore.exceptions.ClientError as e:",
    "    print('DENIED ' + json.dumps(e.response['Error']['Code']), flush=True)",
]


def _boto_job(server, sm, pyboto, buckets, role):
    a, b = buckets
    name = H.unique("cred-boto")
    # the agent uploads the model with the job's role too: the output goes to the allowed bucket;
    # the whole allowed bucket is the job's channel, so that a job with the default role (whose
    # credentials reach only what the job owns) may list it too
    d = _job(server, sm, name, pyboto, ["python3", "-c", EXEC], BOTO_SCRIPT, role=role,
             Environment={"CRED_ALLOWED": a, "CRED_DENIED": b},
             InputDataConfig=[{"ChannelName": "all", "DataSource": {"S3DataSource": {
                 "S3DataType": "S3Prefix", "S3Uri": f"s3://{a}/"}}}],
             OutputDataConfig={"S3OutputPath": f"s3://{a}/output"})
    return name, d


def _check_env(env, token_expected=True):
    assert env["AWS_ENDPOINT_URL"] == f"http://127.0.0.1:{RELAY_PORT}"
    assert env["S3_ENDPOINT_URL"] == env["AWS_ENDPOINT_URL"]
    assert env["AWS_REGION"] == env["AWS_DEFAULT_REGION"]
    assert "AWS_ACCESS_KEY_ID" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    if token_expected:
        assert env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] == \
            f"http://127.0.0.1:{RELAY_PORT}{CREDS_PATH}"
        assert len(env["AWS_CONTAINER_AUTHORIZATION_TOKEN"]) == 64


def test_boto3_in_job_allowed_and_denied(server, sm, logs, pyboto, buckets, bucket_role):
    """What done means: boto3 in a job lists the bucket its role allows and is denied
    the one it does not; afterwards the token and its credentials are refused (revoked)."""
    a, b = buckets
    name, d = _boto_job(server, sm, pyboto, buckets, bucket_role)
    lines = _log_lines(logs, name)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), lines[-30:])
    env = _tagged(lines, "ENV")
    _check_env(env)
    method, akid, secret, stoken = _tagged(lines, "CREDS")
    assert method == "container-role"
    assert akid.startswith("ASIA")
    assert _tagged(lines, "ALLOWED") == ["hello.txt"]
    assert _tagged(lines, "DENIED") == "AccessDenied"
    # the job ended: its token and the credentials minted from it no longer work
    status, body = _get_creds(server, env["AWS_CONTAINER_AUTHORIZATION_TOKEN"])
    assert status == 403, (status, body)
    s3 = boto3.session.Session().client(
        "s3", endpoint_url=server.url, region_name=server.region, aws_access_key_id=akid,
        aws_secret_access_key=secret, aws_session_token=stoken,
        config=botocore.config.Config(retries={"max_attempts": 0}))
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.list_objects_v2(Bucket=a)
    assert e.value.response["Error"]["Code"] in (
        "InvalidAccessKeyId", "ExpiredToken", "InvalidToken", "AccessDenied"), e.value.response


# A job run with the default role, as a hostile tenant would write it: what it owns works, and
# every other tenant's data and logs are refused (issue 36, finding 1). PutLogEvents is not
# served (the agent writes a job's logs), so the log checks read.
SCOPED_SCRIPT = [
    "import os, json, boto3, botocore.exceptions",
    "sess = boto3.session.Session()",
    "ep = os.environ['AWS_ENDPOINT_URL']",
    "s3 = sess.client('s3', endpoint_url=ep)",
    "import urllib.request, urllib.error",
    "from botocore.auth import SigV4Auth",
    "from botocore.awsrequest import AWSRequest",
    # the image's botocore has no logs model: CloudWatch Logs' JSON protocol, signed by hand
    "def logs(op, body):",
    "    r = AWSRequest(method='POST', url=ep + '/', data=json.dumps(body), headers={'X-Amz-Target': 'Logs_20140328.' + op, 'Content-Type': 'application/x-amz-json-1.1'})",
    "    SigV4Auth(sess.get_credentials().get_frozen_credentials(), 'logs', os.environ['AWS_REGION']).add_auth(r)",
    "    try:",
    "        with urllib.request.urlopen(urllib.request.Request(ep + '/', data=r.body if isinstance(r.body, bytes) else r.body.encode(), headers=dict(r.headers.items()), method='POST')) as f:",
    "            return json.loads(f.read() or b'{}')",
    "    except urllib.error.HTTPError as e:",
    "        raise botocore.exceptions.ClientError({'Error': {'Code': json.loads(e.read()).get('__type', '').split('#')[-1]}}, op)",
    "job = os.environ['TRAINING_JOB_NAME']",
    "a, b = os.environ['CRED_ALLOWED'], os.environ['CRED_DENIED']",
    "G = '/aws/sagemaker/TrainingJobs'",
    "def try_(tag, f):",
    "    try:",
    "        r = f()",
    "        print(tag + ' ' + json.dumps(['ok', r]), flush=True)",
    "    except botocore.exceptions.ClientError as e:",
    "        print(tag + ' ' + json.dumps(['err', e.response['Error']['Code']]), flush=True)",
    "try_('OWN_LIST', lambda: [o['Key'] for o in s3.list_objects_v2(Bucket=a, Prefix='train/')['Contents']])",
    "try_('OWN_GET', lambda: s3.get_object(Bucket=a, Key='train/x.csv')['Body'].read().decode())",
    "try_('OWN_PUT', lambda: s3.put_object(Bucket=a, Key='output/' + job + '/extra.txt', Body=b'x') and 1)",
    "try_('OWN_LOG', lambda: len(logs('DescribeLogStreams', {'logGroupName': G, 'logStreamNamePrefix': job + '/'})['logStreams']))",
    "try_('OTHER_GET', lambda: s3.get_object(Bucket=b, Key='secret.txt')['Body'].read().decode())",
    "try_('OTHER_LIST', lambda: [o['Key'] for o in s3.list_objects_v2(Bucket=b).get('Contents', [])])",
    "try_('ROOT_LIST', lambda: [o['Key'] for o in s3.list_objects_v2(Bucket=a).get('Contents', [])])",
    "try_('OTHER_PUT', lambda: s3.put_object(Bucket=a, Key='output/other-job/model.tar.gz', Body=b'x') and 1)",
    "try_('OTHER_LOG', lambda: len(logs('GetLogEvents', {'logGroupName': G, 'logStreamName': os.environ['VICTIM_STREAM']})['events']))",
]


def test_default_role_job_reaches_only_its_own(server, sm, logs, pyboto, buckets, s3_admin):
    """A job run with the default role (whose policy names every bucket) gets credentials
    limited by a session policy of what the job owns: its channel, its output prefix, its own
    log streams work; another tenant's object, a listing outside its prefixes, another job's
    output and another job's log stream are refused. Before, the job read the other tenant's
    secret.txt and listed every bucket."""
    a, b = buckets
    s3_admin.put_object(Bucket=a, Key="train/x.csv", Body=b"1,2\n")
    victim = H.unique("cred-victim") + "/algo-1-1"
    name = H.unique("cred-scoped")
    d = _job(server, sm, name, pyboto, ["python3", "-c", EXEC], SCOPED_SCRIPT,
             Environment={"CRED_ALLOWED": a, "CRED_DENIED": b, "VICTIM_STREAM": victim},
             InputDataConfig=[{"ChannelName": "train", "DataSource": {"S3DataSource": {
                 "S3DataType": "S3Prefix", "S3Uri": f"s3://{a}/train/"}}}],
             OutputDataConfig={"S3OutputPath": f"s3://{a}/output"})
    lines = _log_lines(logs, name)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), "\n".join(lines[-30:]))
    assert _tagged(lines, "OWN_LIST") == ["ok", ["train/x.csv"]]
    assert _tagged(lines, "OWN_GET") == ["ok", "1,2\n"]
    assert _tagged(lines, "OWN_PUT") == ["ok", 1]
    assert _tagged(lines, "OWN_LOG") == ["ok", 1]  # its own stream's name
    assert _tagged(lines, "OTHER_GET") == ["err", "AccessDenied"]
    assert _tagged(lines, "OTHER_LIST") == ["err", "AccessDenied"]
    assert _tagged(lines, "ROOT_LIST") == ["err", "AccessDenied"]
    assert _tagged(lines, "OTHER_PUT") == ["err", "AccessDenied"]
    assert _tagged(lines, "OTHER_LOG") == ["err", "AccessDeniedException"]
    # and the job's own outputs, written by the agent with the role itself, are all there
    keys = [o["Key"] for o in s3_admin.list_objects_v2(Bucket=a, Prefix=f"output/{name}/")["Contents"]]
    assert f"output/{name}/output/model.tar.gz" in keys and f"output/{name}/extra.txt" in keys


def test_wget_fetches_credentials(server, sm, logs):
    """A shell-only job (the runtime image's busybox wget) fetches its credentials."""
    name = H.unique("cred-wget")
    script = ('wget -q -O - --header "Authorization: $AWS_CONTAINER_AUTHORIZATION_TOKEN" '
              '"$AWS_CONTAINER_CREDENTIALS_FULL_URI"; echo; echo "WGET-RC $?"')
    d = _job(server, sm, name, H.RUNTIME_IMAGE, ["sh", "-c", script])
    lines = _log_lines(logs, name)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), lines[-30:])
    got = [l for l in lines if '"AccessKeyId"' in l]
    assert got, lines[-30:]
    c = json.loads(got[0])
    assert c["AccessKeyId"].startswith("ASIA") and c["Token"] and c["Expiration"]


def test_network_isolation_gets_no_relay(server, sm, logs):
    """EnableNetworkIsolation: no credentials variables and nothing on the relay port."""
    name = H.unique("cred-iso")
    script = ('env | grep -c "^AWS_CONTAINER" ; '
              'wget -q -T 3 -O - http://127.0.0.1:9911/ping >/dev/null 2>&1 && echo REACHED '
              '|| echo NOT-REACHED')
    d = _job(server, sm, name, H.RUNTIME_IMAGE, ["sh", "-c", script],
             EnableNetworkIsolation=True)
    lines = _log_lines(logs, name)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), lines[-30:])
    assert "0" in lines, lines
    assert "NOT-REACHED" in lines and "REACHED" not in lines, lines


def test_two_hosts_each_get_credentials(server, sm, logs):
    """InstanceCount 2: each host has its own relay (in the sandbox that holds its network
    alias) and fetches credentials (test_multihost.py checks that the hosts reach each other)."""
    name = H.unique("cred-two")
    script = ('wget -q -O - --header "Authorization: $AWS_CONTAINER_AUTHORIZATION_TOKEN" '
              '"$AWS_CONTAINER_CREDENTIALS_FULL_URI"; echo')
    d = _job(server, sm, name, H.RUNTIME_IMAGE, ["sh", "-c", script],
             ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 2,
                             "VolumeSizeInGB": 1})
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    streams = H.wait_for(
        lambda: (lambda r: r if len(r["logStreams"]) == 2 else None)(logs.describe_log_streams(
            logGroupName=H.LOG_GROUP, logStreamNamePrefix=name + "/")), 30, "two log streams")
    keys = set()
    for st in streams["logStreams"]:
        events, _ = H.log_events(logs, st["logStreamName"])
        lines = [e["message"] for e in events]
        got = [json.loads(l) for l in lines if '"AccessKeyId"' in l]
        assert got and got[0]["AccessKeyId"].startswith("ASIA"), lines[-20:]
        keys.add(got[0]["AccessKeyId"])
    assert len(keys) == 2  # each fetch mints its own


def test_relay_without_sandbox(make_server, procs, workdir, pyboto, buckets):
    """A standalone agent (--endpoint-url) whose runtime image is missing cannot make sandbox
    containers: it binds the relay right after the training container starts, and boto3
    (whose container provider retries) still gets its credentials."""
    d = os.path.join(workdir, "cred-nosandbox")
    os.makedirs(d)
    sock = os.path.join(d, "redis.sock")
    procs([H.REDIS_SERVER, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
           "--save", "", "--appendonly", "no", "--dir", d], log_path=os.path.join(d, "redis.log"))
    H.wait_for(lambda: os.path.exists(sock), 20, "redis-server's socket")
    s = make_server(agents=0, extra=["--redis", f"unix://{sock}"])
    s3 = s.client("s3")  # this server's store: the shared server's buckets are not here
    a, b = buckets
    for bk in (a, b):
        s3.create_bucket(Bucket=bk)
    s3.put_object(Bucket=a, Key="hello.txt", Body=b"hi")
    agent_log = os.path.join(d, "agent.log")
    agent = procs([H.AGENT_BIN, "--redis", f"unix://{sock}", "--docker-host", H.DOCKER_HOST,
                   "--data-dir", os.path.join(d, "agent"), "--id", "it-cred-nosandbox",
                   "--endpoint-url", s.url, "--runtime-image", "trainyard-test/no-such-image:0",
                   "--s3-dir", os.path.join(s.data_dir, "s3")], log_path=agent_log)
    sm = s.client()
    name, desc = _boto_job(s, sm, pyboto, buckets, DEFAULT_ROLE)
    lines = _log_lines(s.client("logs"), name)
    assert desc["TrainingJobStatus"] == "Completed", (desc.get("FailureReason"), lines[-30:])
    assert "hello.txt" in _tagged(lines, "ALLOWED")
    assert _tagged(lines, "CREDS")[0] == "container-role"
    log = open(agent_log).read()
    assert "event=agent.sandbox.no_image" in log and "event=agent.relay.started" in log, \
        agent.tail()


def test_agent_restart_reattaches_sandbox_and_relay(make_server, procs, workdir):
    """An agent SIGKILLed while its job trains leaves the training container and its sandbox;
    started again under the same id it takes both over instead of running the job again (the
    script runs once), binds the relay again in the sandbox, so the container's token still
    gets the role's credentials, and leaves nothing behind once the job completed."""
    d = os.path.join(workdir, "cred-restart")
    os.makedirs(d)
    sock = os.path.join(d, "redis.sock")
    procs([H.REDIS_SERVER, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
           "--save", "", "--appendonly", "no", "--dir", d], log_path=os.path.join(d, "redis.log"))
    H.wait_for(lambda: os.path.exists(sock), 20, "redis-server's socket")
    s = make_server(agents=0, extra=["--redis", f"unix://{sock}"])
    argv = [H.AGENT_BIN, "--redis", f"unix://{sock}", "--docker-host", H.DOCKER_HOST,
            "--data-dir", os.path.join(d, "agent"), "--id", "it-cred-restart",
            "--stop-grace", "2", "--heartbeat-ttl", "60", "--endpoint-url", s.url,
            "--runtime-image-tar", H.RUNTIME_TAR, "--s3-dir", os.path.join(s.data_dir, "s3")]
    first = procs(argv, log_path=os.path.join(d, "agent-1.log"))
    sm = s.client()
    name = H.unique("cred-restart")
    fetch = ('wget -q -O - --header "Authorization: $AWS_CONTAINER_AUTHORIZATION_TOKEN" '
             '"$AWS_CONTAINER_CREDENTIALS_FULL_URI"')
    script = "\n".join([
        "echo RUN-ONCE", fetch + "; echo", "sleep 6",
        "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do " + fetch + " && break; sleep 1; done",
        "echo; echo done"])
    sm.create_training_job(**H.job_request(name, script, RoleArn=DEFAULT_ROLE))
    H.wait_job(sm, name, statuses=("InProgress",), secondary=("Training",), timeout=120)
    H.wait_for(lambda: len(H.job_containers(name)) == 2, 30, "the container and its sandbox")
    before = sorted(c["Id"] for c in H.job_containers(name))
    # the first fetch done, through the first agent's relay, before that agent dies (killed while
    # the fetch is in flight, the relayed connection is reset)
    H.wait_for(lambda: any('"AccessKeyId"' in l for l in _log_lines(s.client("logs"), name)),
               30, "the credentials fetched before the restart")
    first.kill()
    procs(argv, log_path=os.path.join(d, "agent-2.log"))
    H.wait_for(lambda: "event=agent.job.reattached" in open(os.path.join(d, "agent-2.log")).read(),
               30, "the restarted agent to take the job over")
    assert sorted(c["Id"] for c in H.job_containers(name)) == before  # the same two containers
    desc = H.wait_job(sm, name, timeout=120)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    assert "Restarting" not in [t["Status"] for t in desc["SecondaryStatusTransitions"]]
    lines = _log_lines(s.client("logs"), name)
    assert lines.count("RUN-ONCE") == 1, lines[-20:]
    # credentials before the restart and again through the relay bound by the second agent
    assert len([l for l in lines if '"AccessKeyId"' in l]) == 2, lines[-20:]
    assert "done" in lines
    H.wait_for(lambda: H.job_containers(name) == [], 30, f"no container of {name} left")
    log = open(os.path.join(d, "agent-2.log")).read()
    assert "event=agent.relay.started" in log and "event=agent.job.leftover_removed" not in log, \
        log[-3000:]


@pytest.mark.parametrize("listen", ["0.0.0.0", "[::]"])
def test_relay_fence_holds_on_any_listen_address(make_server, listen):
    """A server started as docker/server.Dockerfile starts it (--listen 0.0.0.0:PORT, so its
    embedded agent's endpoint is http://0.0.0.0:PORT), or on [::]: the job's relayed calls still
    come from the job's own loopback address, so the console, /healthz and /metrics are not
    served to it (issue 36, finding 2: they answered 200, and sign-in attempts were counted on
    127.0.0.1)."""
    port = H.free_port()
    s = make_server(agents=1, port=port, extra=["--listen", f"{listen}:{port}"])
    sm = s.client()
    name = H.unique("cred-fence")
    script = ("for p in /console/login /healthz /metrics; do "
              "s=$(printf 'GET %s HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n' "
              "\"$p\" | nc -w 5 127.0.0.1 9911 | head -1 | tr -d '\\r'); echo \"PROBE $p $s\"; done")
    sm.create_training_job(**H.job_request(name, script))
    d = H.wait_job(sm, name, timeout=240)
    lines = _log_lines(s.client("logs"), name)
    assert d["TrainingJobStatus"] == "Completed", (d.get("FailureReason"), lines[-20:])
    probes = {l.split()[1]: l for l in lines if l.startswith("PROBE ")}
    assert set(probes) == {"/console/login", "/healthz", "/metrics"}, lines[-20:]
    for p, l in probes.items():
        assert " 403 " in l + " ", (p, l)
    # the host itself is still served on the same address
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200
    conn.close()


def test_remote_agent_relay_names_the_job(make_server, procs, workdir):
    """An agent on another host reaches the server from its own address, so the server could
    not tell its jobs from the agent's host, nor one job from another (issue 36, finding 2's
    remote half). With the agent's --relay-proxy pointed at the server's --proxy-listen, every
    relayed connection opens with a PROXY v1 header naming the job's own address, trusted from
    --proxy-from peers only: the job is fenced as a job (the console, /healthz and /metrics
    403), and a header the job writes itself is never read as one. Played on one host: the
    agent's address is 127.0.0.1, the only --proxy-from peer."""
    d = os.path.join(workdir, "remote-agent")
    redis_url = H.private_redis(procs, d)
    pport = H.free_port()
    s = make_server(agents=0, extra=["--redis", redis_url, "--proxy-listen",
                                     f"127.0.0.1:{pport}", "--proxy-from", "127.0.0.1/32"])
    assert f"proxy_port={pport}" in s.proc.tail(200), s.proc.tail()
    ad = os.path.join(d, "agent")
    os.makedirs(ad)
    procs([H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST, "--data-dir", ad,
           "--id", "it-remote", "--stop-grace", "2", "--slots", "1",
           "--runtime-image-tar", H.RUNTIME_TAR, "--endpoint-url", s.url,
           "--relay-proxy", f"http://127.0.0.1:{pport}"],
          log_path=os.path.join(d, "agent.log"))
    sm = s.client()
    name = H.unique("cred-remote")
    get = r"printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' " + '"$p"'
    script = "\n".join([
        f"for p in /console/login /healthz /metrics; do s=$({get} | nc -w 5 127.0.0.1 9911 "
        "| head -1 | tr -d '\\r'); echo \"PROBE $p $s\"; done",
        r"h='PROXY TCP4 127.0.0.1 127.0.0.1 1 2\r\nGET /healthz HTTP/1.1\r\n'",
        r's=$(printf "${h}Host: x\r\nConnection: close\r\n\r\n" | nc -w 5 127.0.0.1 9911 | head -1)',
        "echo \"SPOOF $(echo \"$s\" | tr -d '\\r')\""])
    sm.create_training_job(**H.job_request(name, script))
    dj = H.wait_job(sm, name, timeout=240)
    lines = _log_lines(s.client("logs"), name)
    assert dj["TrainingJobStatus"] == "Completed", (dj.get("FailureReason"), lines[-20:])
    probes = {l.split()[1]: l for l in lines if l.startswith("PROBE ")}
    assert set(probes) == {"/console/login", "/healthz", "/metrics"}, lines[-20:]
    for p, l in probes.items():
        assert " 403 " in l + " ", (p, l)
    spoofed = [l for l in lines if l.startswith("SPOOF")]
    assert spoofed and " 200" not in spoofed[0] and " 403" not in spoofed[0], lines[-20:]
    # the proxy port serves nobody else: a connection without a header is closed unanswered
    conn = http.client.HTTPConnection("127.0.0.1", pport, timeout=15)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        conn.request("GET", "/healthz")
        conn.getresponse()
    conn.close()
    # and the host itself is still served as the host on the main port
    assert s.healthz()[0] == 200
