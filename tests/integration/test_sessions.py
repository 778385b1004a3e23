"""Role credentials for training jobs (session.h, auth.h): the container credentials endpoint as
botocore's own ContainerProvider reads it, temporary credentials (ASIA keys + session token)
used with boto3 against every service, a missing/wrong/expired session token, revocation, and
SigV4 signatures scoped to the wrong service.

Container tokens are granted and revoked with ty-session-tool (tests/integration/session_tool.c),
which calls the same session_job_grant/session_job_revoke as the agent, on the shared server's
own Redis."""
import datetime
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.credentials
import botocore.exceptions
import pytest

import tyhelpers as H

CRED_PATH = "/_trainyard/credentials"
TOOL = os.environ.get(
    "TY_SESSION_TOOL",
    os.path.join(os.path.dirname(os.path.dirname(H.SERVER_BIN)), "tests", "ty-session-tool"))
NO_RETRY = botocore.config.Config(retries={"max_attempts": 0}, connect_timeout=10, read_timeout=30)


def _redis_url(server):
    return f"unix://{os.path.join(server.data_dir, 'redis', 'redis.sock')}"


def _tool(*args):
    assert os.access(TOOL, os.X_OK), f"{TOOL} missing: build the ty-session-tool target"
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, f"ty-session-tool {args[0]}: {p.returncode} {p.stderr}"
    return p.stdout.strip()


def grant(server, job, role_arn, ttl=3600):
    tok = _tool("grant", _redis_url(server), job, role_arn, str(ttl))
    assert re.fullmatch(r"[0-9a-f]{64}", tok), tok
    return tok


def revoke(server, job):
    """Revokes from another process, as an agent does: the server's principal cache sees it at
    its next look at the auth generation, at most AUTHGEN_POLL_MS (250 ms) after the change
    (the bound is a second), so the caller waits twice that long before expecting a refusal."""
    _tool("revoke", _redis_url(server), job)
    time.sleep(0.5)


@pytest.fixture(scope="module")
def account(server):
    return server.client("sts").get_caller_identity()["Account"]


@pytest.fixture(scope="module")
def role_arn(account):
    """The default execution role every installation has."""
    return f"arn:aws:iam::{account}:role/trainyard"


def fetch(server, token, method="GET"):
    """The credentials endpoint's answer: (status, parsed JSON body)."""
    req = urllib.request.Request(server.url + CRED_PATH, method=method)
    if token is not None:
        req.add_header("Authorization", token)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def client(server, service, creds, token=True, config=NO_RETRY):
    kw = {"aws_access_key_id": creds["AccessKeyId"],
          "aws_secret_access_key": creds["SecretAccessKey"]}
    if token is True:
        kw["aws_session_token"] = creds["Token"]
    elif token:
        kw["aws_session_token"] = token
    return boto3.session.Session().client(service, endpoint_url=server.url, region_name="us-east-1",
                                          config=config, **kw)


def _code(call):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call()
    err = e.value.response["Error"]
    return err["Code"], err.get("Message", ""), e.value.response["ResponseMetadata"]["HTTPStatusCode"]


# The container provider, exactly as inside a job: only the two environment variables, no keys
# anywhere else, Debian's botocore resolving them through its default chain.
PROVIDER_SCRIPT = r"""
import json, sys, boto3, botocore.config
s = boto3.session.Session(region_name="us-east-1")
c = s.get_credentials()
f = c.get_frozen_credentials()
cfg = botocore.config.Config(retries={"max_attempts": 0})
out = {"method": c.method, "akid": f.access_key, "has_token": bool(f.token)}
out["identity"] = s.client("sts", endpoint_url=sys.argv[1], config=cfg).get_caller_identity()
out["identity"].pop("ResponseMetadata", None)
try:
    s.client("s3", endpoint_url=sys.argv[1], config=cfg).list_objects_v2(Bucket=sys.argv[2])
    out["s3"] = "ok"
except Exception as e:
    out["s3"] = getattr(e, "response", {}).get("Error", {}).get("Code", repr(e))
print(json.dumps(out))
"""


def run_provider(server, token, bucket, extra_env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_CONTAINER_CREDENTIALS_FULL_URI": server.url + CRED_PATH,
                "AWS_CONTAINER_AUTHORIZATION_TOKEN": token,
                "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent",
                "AWS_EC2_METADATA_DISABLED": "true"})
    env.update(extra_env or {})
    p = subprocess.run([sys.executable, "-c", PROVIDER_SCRIPT, server.url, bucket], env=env,
                       capture_output=True, text=True, timeout=60)
    return p


@pytest.fixture(scope="module")
def bucket(server):
    name = "h3sess-bucket"
    s3 = server.client("s3")
    try:
        s3.create_bucket(Bucket=name)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    s3.put_object(Bucket=name, Key="hello.txt", Body=b"hello")
    return name


def test_container_provider_gets_role_credentials(server, account, role_arn, bucket):
    job = H.unique("h3sess-prov")
    tok = grant(server, job, role_arn)
    p = run_provider(server, tok, bucket)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["method"] == "container-role"
    assert re.fullmatch(r"ASIA[A-Z0-9]{16}", out["akid"]), out
    assert out["has_token"]
    ident = out["identity"]
    assert ident["Arn"] == f"arn:aws:sts::{account}:assumed-role/trainyard/{job}"
    assert ident["Account"] == account
    role_id = server.client("iam").get_role(RoleName="trainyard")["Role"]["RoleId"]
    assert ident["UserId"] == f"{role_id}:{job}", ident
    assert out["s3"] == "ok"  # the default role may use S3
    revoke(server, job)


def test_aws_cli_uses_container_credentials(server, account, role_arn, bucket):
    """Debian's AWS CLI, with only the container variables: reads the endpoint, signs with the
    session token, uploads and reads back through S3."""
    job = H.unique("h3sess-cli")
    tok = grant(server, job, role_arn)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_CONTAINER_CREDENTIALS_FULL_URI": server.url + CRED_PATH,
                "AWS_CONTAINER_AUTHORIZATION_TOKEN": tok, "AWS_PAGER": "",
                "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent",
                "AWS_EC2_METADATA_DISABLED": "true", "AWS_MAX_ATTEMPTS": "1"})

    def aws(*args):
        p = subprocess.run([H.AWS_CLI, "--endpoint-url", server.url, "--region", "us-east-1",
                            "--output", "json", *args], env=env, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, f"{args} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
        return p.stdout

    ident = json.loads(aws("sts", "get-caller-identity"))
    assert ident["Arn"] == f"arn:aws:sts::{account}:assumed-role/trainyard/{job}"
    aws("s3api", "put-object", "--bucket", bucket, "--key", f"{job}.txt", "--body", TOOL)
    with open(TOOL, "rb") as f:
        want = f.read()
    got = server.client("s3").get_object(Bucket=bucket, Key=f"{job}.txt")["Body"].read()
    assert got == want
    revoke(server, job)
    env["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = tok  # revoked: no credentials any more
    p = subprocess.run([H.AWS_CLI, "--endpoint-url", server.url, "--region", "us-east-1",
                        "sts", "get-caller-identity"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "403" in p.stderr, p.stderr


def test_endpoint_answer(server, role_arn):
    job = H.unique("h3sess-json")
    tok = grant(server, job, role_arn)
    t0 = datetime.datetime.now(datetime.timezone.utc)
    st, c = fetch(server, tok)
    assert st == 200, c
    assert set(c) == {"AccessKeyId", "SecretAccessKey", "Token", "Expiration", "RoleArn"}
    assert re.fullmatch(r"ASIA[A-Z0-9]{16}", c["AccessKeyId"])
    assert re.fullmatch(r"[A-Za-z0-9+/]{40}", c["SecretAccessKey"])
    assert len(c["Token"]) >= 200
    assert c["RoleArn"] == role_arn
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", c["Expiration"])
    exp = datetime.datetime.strptime(c["Expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)
    assert 3500 <= (exp - t0).total_seconds() <= 3610
    # every call mints fresh credentials (botocore refreshes by calling again)
    st, c2 = fetch(server, tok)
    assert st == 200 and c2["AccessKeyId"] != c["AccessKeyId"]
    # never past the token's own life
    job2 = H.unique("h3sess-short")
    st, c3 = fetch(server, grant(server, job2, role_arn, ttl=120))
    exp3 = datetime.datetime.strptime(c3["Expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)
    assert (exp3 - t0).total_seconds() <= 125
    revoke(server, job)
    revoke(server, job2)


def test_endpoint_refuses_bad_tokens(server, role_arn, bucket):
    for tok in (None, "", "0" * 64, "not-a-token", "A" * 64):
        st, body = fetch(server, tok)
        assert st == 403, (tok, st, body)
        assert body["code"] == "AccessDenied"
    job = H.unique("h3sess-post")
    tok = grant(server, job, role_arn)
    st, body = fetch(server, tok, method="POST")
    assert st == 405
    # botocore's provider with a wrong token fails (after its own retries), no credentials
    p = run_provider(server, "f" * 64, bucket)
    assert p.returncode != 0
    assert "403" in p.stderr and "credentials" in p.stderr.lower(), p.stderr[-2000:]
    revoke(server, job)


def test_session_token_is_required(server, role_arn):
    job = H.unique("h3sess-tok")
    st, c = fetch(server, grant(server, job, role_arn))
    assert st == 200
    wrong = c["Token"][:-4] + ("AAAA" if not c["Token"].endswith("AAAA") else "BBBB")
    for token in (None, wrong):
        code, msg, status = _code(lambda: client(server, "sts", c, token).get_caller_identity())
        assert (code, status) == ("InvalidClientTokenId", 403), (token, code, msg)
        assert msg == "The security token included in the request is invalid."
        code, msg, status = _code(lambda: client(server, "sagemaker", c, token).list_training_jobs())
        assert (code, status) == ("UnrecognizedClientException", 403), (code, msg)
        assert msg == "The security token included in the request is invalid."
        code, msg, status = _code(lambda: client(server, "iam", c, token).list_users())
        assert (code, status) == ("InvalidClientTokenId", 403), (code, msg)
        code, msg, status = _code(lambda: client(server, "s3", c, token).list_buckets())
        assert (code, status) == ("InvalidToken", 400), (code, msg)
        assert msg == "The provided token is malformed or otherwise invalid."
    # with the right one every service accepts the token; the default role then allows only
    # what a job needs (no sagemaker:*, no s3:ListAllMyBuckets): authenticated, then refused
    ident = client(server, "sts", c).get_caller_identity()
    assert ident["Arn"].endswith(f":assumed-role/trainyard/{job}")
    code, msg, status = _code(lambda: client(server, "sagemaker", c).list_training_jobs(
        MaxResults=1))
    assert code == "AccessDeniedException", (code, msg)
    code, msg, status = _code(lambda: client(server, "s3", c).list_buckets())
    assert (code, status) == ("AccessDenied", 403), (code, msg)
    # an IAM user's long-term key with a session token is refused, as AWS does
    akid, secret = server.credentials()
    bogus = {"AccessKeyId": akid, "SecretAccessKey": secret}
    code, msg, status = _code(lambda: client(server, "sts", bogus, c["Token"]).get_caller_identity())
    assert code == "InvalidClientTokenId"
    revoke(server, job)


def test_presigned_url_carries_the_session_token(server, role_arn, bucket):
    job = H.unique("h3sess-pre")
    st, c = fetch(server, grant(server, job, role_arn))
    v4 = NO_RETRY.merge(botocore.config.Config(signature_version="s3v4"))
    url = client(server, "s3", c, config=v4).generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "hello.txt"}, ExpiresIn=300)
    assert "X-Amz-Security-Token=" in url
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == b"hello"
    stripped = re.sub(r"&X-Amz-Security-Token=[^&]*", "", url)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(stripped, timeout=10)
    assert e.value.code in (400, 403)
    revoke(server, job)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    assert e.value.code == 403 and b"InvalidAccessKeyId" in e.value.read()


def test_expired_credentials(server, role_arn):
    job = H.unique("h3sess-exp")
    tok = grant(server, job, role_arn, ttl=4)
    st, c = fetch(server, tok)
    assert st == 200
    exp = datetime.datetime.strptime(c["Expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)
    client(server, "sts", c).get_caller_identity()  # still valid
    H.wait_for(lambda: datetime.datetime.now(datetime.timezone.utc) > exp
               + datetime.timedelta(seconds=1), 10, "the credentials' expiry")
    code, msg, status = _code(lambda: client(server, "sts", c).get_caller_identity())
    assert (code, status) == ("ExpiredToken", 400), (code, msg)
    assert msg == "The security token included in the request is expired"
    code, msg, status = _code(lambda: client(server, "sagemaker", c).list_training_jobs())
    assert (code, status) == ("ExpiredTokenException", 400), (code, msg)
    assert msg == "The security token included in the request is expired"
    code, msg, status = _code(lambda: client(server, "iam", c).list_users())
    assert (code, status) == ("ExpiredToken", 400), (code, msg)
    code, msg, status = _code(lambda: client(server, "s3", c).list_buckets())
    assert (code, status) == ("ExpiredToken", 400), (code, msg)
    # the container token has expired too: no new credentials
    st, body = fetch(server, tok)
    assert st == 403 and "expired" in body["message"]
    revoke(server, job)


def test_revoke_is_immediate(server, role_arn, bucket):
    job = H.unique("h3sess-rev")
    tok = grant(server, job, role_arn)
    st, c1 = fetch(server, tok)
    st, c2 = fetch(server, tok)
    for c in (c1, c2):
        client(server, "sts", c).get_caller_identity()
        client(server, "s3", c).list_objects_v2(Bucket=bucket)
    other = H.unique("h3sess-keep")
    st, kept = fetch(server, grant(server, other, role_arn))
    revoke(server, job)
    for c in (c1, c2):
        code, msg, status = _code(lambda: client(server, "sts", c).get_caller_identity())
        assert (code, status) == ("InvalidClientTokenId", 403)
        code, msg, status = _code(lambda: client(server, "s3", c).list_objects_v2(Bucket=bucket))
        assert (code, status) == ("InvalidAccessKeyId", 403)
        code, msg, status = _code(lambda: client(server, "sagemaker", c).list_training_jobs())
        assert code == "UnrecognizedClientException"
    st, body = fetch(server, tok)
    assert st == 403
    # another job's credentials are untouched
    client(server, "sts", kept).get_caller_identity()
    revoke(server, other)


def test_role_policy_limits_session(server, account, bucket):
    """The session can do what its role allows, nothing more (roles: IAM CreateRole)."""
    iam = server.client("iam")
    name = "h3sess-limited"
    trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}
    try:
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    except iam.exceptions.EntityAlreadyExistsException:
        arn = iam.get_role(RoleName=name)["Role"]["Arn"]
    except botocore.exceptions.ClientError as e:
        if e.response["Error"]["Code"] == "InvalidAction":
            pytest.skip("this server has no IAM roles yet")
        raise
    other = "h3sess-other"
    s3 = server.client("s3")
    try:
        s3.create_bucket(Bucket=other)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    iam.put_role_policy(RoleName=name, PolicyName="one-bucket", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject"],
            "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}))
    job = H.unique("h3sess-role")
    st, c = fetch(server, grant(server, job, arn))
    assert st == 200 and c["RoleArn"] == arn
    assert client(server, "sts", c).get_caller_identity()["Arn"] == \
        f"arn:aws:sts::{account}:assumed-role/{name}/{job}"
    client(server, "s3", c).list_objects_v2(Bucket=bucket)
    code, msg, status = _code(lambda: client(server, "s3", c).list_objects_v2(Bucket=other))
    assert (code, status) == ("AccessDenied", 403)
    code, msg, status = _code(lambda: client(server, "sagemaker", c).list_training_jobs())
    assert code == "AccessDeniedException"
    revoke(server, job)


# ---- SigV4 scope: a signature for one service is refused by another ----

def _signed(server, method, path, service, body=b"", headers=None, query=""):
    akid, secret = server.credentials()
    url = server.url + path + (("?" + query) if query else "")
    req = botocore.awsrequest.AWSRequest(method=method, url=url, data=body, headers=headers or {})
    botocore.auth.SigV4Auth(botocore.credentials.Credentials(akid, secret), service,
                            "us-east-1").add_auth(req)
    return H.send_prepared(req.prepare())


JSON11 = "application/x-amz-json-1.1"


@pytest.mark.parametrize("target,scope,want", [
    ("SageMaker.ListTrainingJobs", "logs", "sagemaker"),
    ("SageMaker.ListTrainingJobs", "s3", "sagemaker"),
    ("SageMaker.ListTrainingJobs", "sts", "sagemaker"),
    ("Logs_20140328.DescribeLogGroups", "sagemaker", "logs"),
    ("Logs_20140328.DescribeLogGroups", "iam", "logs"),
])
def test_scope_json_services(server, target, scope, want):
    r = _signed(server, "POST", "/", scope, b"{}", {"X-Amz-Target": target, "Content-Type": JSON11})
    assert r.status == 403, r
    assert r.error_type == "InvalidSignatureException", r
    assert r.message == f"Credential should be scoped to correct service: '{want}'. "


def test_scope_rest_alias(server):
    r = _signed(server, "POST", "/sagemaker/ListTrainingJobs", "logs", b"{}",
                {"Content-Type": "application/json"})
    assert r.status == 403 and r.error_type == "InvalidSignatureException", r
    ok = _signed(server, "POST", "/sagemaker/ListTrainingJobs", "sagemaker", b"{}",
                 {"Content-Type": "application/json"})
    assert ok.status == 200, ok
    # curl's own signer, right and wrong scope
    akid, secret = server.credentials()
    for svc, want in (("sagemaker", 200), ("logs", 403)):
        p = subprocess.run(
            ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--aws-sigv4",
             f"aws:amz:us-east-1:{svc}", "-u", f"{akid}:{secret}", "-H",
             "Content-Type: application/json", "-d", "{}",
             server.url + "/sagemaker/ListTrainingJobs"], capture_output=True, text=True, timeout=30)
        assert p.stdout == str(want), (svc, p.stdout, p.stderr)


@pytest.mark.parametrize("scope", ["sagemaker", "sts", "iam"])
def test_scope_s3(server, bucket, scope):
    r = _signed(server, "GET", f"/{bucket}", scope, headers={"x-amz-content-sha256":
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})
    assert r.status == 400, r
    assert b"<Code>AuthorizationHeaderMalformed</Code>" in r.body, r
    assert (f"The authorization header is malformed; incorrect service &quot;{scope}&quot;. "
            "This endpoint belongs to &quot;s3&quot;.").encode() in r.body or \
        (f'The authorization header is malformed; incorrect service "{scope}". '
         'This endpoint belongs to "s3".').encode() in r.body, r


@pytest.mark.parametrize("body,scope,want", [
    (b"Action=GetCallerIdentity&Version=2011-06-15", "iam", "sts"),
    (b"Action=GetCallerIdentity&Version=2011-06-15", "sagemaker", "sts"),
    (b"Action=GetCallerIdentity&Version=2011-06-15", "s3", "sts"),
    (b"Action=ListUsers&Version=2010-05-08", "sts", "iam"),
    (b"Action=ListUsers&Version=2010-05-08", "logs", "iam"),
])
def test_scope_query_services(server, body, scope, want):
    r = _signed(server, "POST", "/", scope, body,
                {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    assert r.status == 403, r
    assert b"<Code>SignatureDoesNotMatch</Code>" in r.body, r
    assert f"Credential should be scoped to correct service: &apos;{want}&apos;. ".encode() \
        in r.body or f"Credential should be scoped to correct service: '{want}'. ".encode() \
        in r.body, r


def test_right_scope_still_works(server, bucket):
    """Each service with its own scope, signed by botocore, as the clients do."""
    for body, svc in ((b"Action=GetCallerIdentity&Version=2011-06-15", "sts"),
                      (b"Action=ListUsers&Version=2010-05-08", "iam")):
        r = _signed(server, "POST", "/", svc, body,
                    {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
        assert r.status == 200, r
    r = _signed(server, "POST", "/", "logs", b"{}",
                {"X-Amz-Target": "Logs_20140328.DescribeLogGroups", "Content-Type": JSON11})
    assert r.status == 200, r
    r = _signed(server, "GET", f"/{bucket}", "s3", headers={"x-amz-content-sha256":
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})
    assert r.status == 200, r
