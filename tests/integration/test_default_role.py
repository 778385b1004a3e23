"""Least privilege by default: the default execution role role/trainyard
does what a job does (its data in S3, its logs, its metrics) and nothing else: no sagemaker:*
(not CreatePresignedDomainUrl as another user's profile, not another job's
DescribeTrainingJob), no IAM, no bucket administration. The README walkthrough's per-user
role (role/alice-exec, s3 on alice* only) reaches alice's buckets and not bob's, and alice may
pass it but not role/trainyard. A start that finds the old broad default policy byte for byte
narrows it; an admin-edited one is kept.

Role credentials are granted with ty-session-tool (tests/integration/session_tool.c), which
calls the same session_job_grant as the agent does for a job's container: the credentials a
job's code gets. One private server without agents; names are dr-*, alice*, bob*.
"""
import json
import os
import re
import subprocess
import time

import boto3
import botocore.config
import botocore.exceptions
import pytest

import tyhelpers as H

ACCOUNT = "000000000000"
DEFAULT = f"arn:aws:iam::{ACCOUNT}:role/trainyard"
TOOL = os.environ.get(
    "TY_SESSION_TOOL",
    os.path.join(os.path.dirname(os.path.dirname(H.SERVER_BIN)), "tests", "ty-session-tool"))
NO_RETRY = botocore.config.Config(retries={"max_attempts": 0}, connect_timeout=10, read_timeout=30)
OLD_POLICY = ('{"Version":"2012-10-17","Statement":[{"Sid":"TrainyardExecution","Effect":'
              '"Allow","Action":["s3:*","logs:*","sagemaker:*"],"Resource":"*"}]}')
TRUST = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
    "Action": "sts:AssumeRole"}]}


@pytest.fixture(scope="module")
def srv(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "default-role"), agents=0)
    s.start()
    s3 = s.client("s3", s3={"addressing_style": "path"})
    for b in ("alice-data", "bob-data"):
        s3.create_bucket(Bucket=b)
        s3.put_object(Bucket=b, Key="train/x.csv", Body=b"1,2\n")
    yield s
    rc = s.stop(timeout=60)
    assert rc == 0, f"server exited with {rc} on SIGTERM:\n{s.proc.tail()}"


def role_client(srv, service, role_arn):
    """A client with the credentials a job running as role_arn gets from its container
    endpoint."""
    assert os.access(TOOL, os.X_OK), f"{TOOL} missing: build the ty-session-tool target"
    redis = f"unix://{os.path.join(srv.data_dir, 'redis', 'redis.sock')}"
    p = subprocess.run([TOOL, "grant", redis, H.unique("dr-job"), role_arn, "3600"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    tok = p.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{64}", tok), tok
    import urllib.request
    req = urllib.request.Request(srv.url + "/_trainyard/credentials")
    req.add_header("Authorization", tok)
    with urllib.request.urlopen(req, timeout=30) as r:
        c = json.loads(r.read())
    return boto3.session.Session().client(
        service, endpoint_url=srv.url, region_name=srv.region, config=NO_RETRY,
        aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
        aws_session_token=c["Token"])


def code(call):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call()
    return e.value.response["Error"]["Code"], e.value.response["Error"].get("Message", "")


def test_default_role_is_a_jobs_not_the_platforms(srv):
    sm = srv.client("sagemaker")
    dom = sm.create_domain(DomainName="dr-team", AuthMode="IAM", SubnetIds=["subnet-0"],
                           VpcId="vpc-0", DefaultUserSettings={"ExecutionRole": DEFAULT})
    dom_id = dom["DomainArn"].split("/")[-1]
    sm.create_user_profile(DomainId=dom_id, UserProfileName="bob")
    rsm = role_client(srv, "sagemaker", DEFAULT)
    c, msg = code(lambda: rsm.create_presigned_domain_url(DomainId=dom_id,
                                                          UserProfileName="bob"))
    assert c == "AccessDeniedException", (c, msg)
    c, msg = code(lambda: rsm.describe_training_job(TrainingJobName="dr-someone-elses"))
    assert c == "AccessDeniedException", (c, msg)
    c, msg = code(lambda: rsm.list_training_jobs())
    assert c == "AccessDeniedException", (c, msg)
    c, msg = code(lambda: role_client(srv, "iam", DEFAULT).list_users())
    assert c == "AccessDenied", (c, msg)
    rs3 = role_client(srv, "s3", DEFAULT)
    # bucket administration: refused
    c, msg = code(lambda: rs3.delete_bucket(Bucket="bob-data"))
    assert c == "AccessDenied", (c, msg)
    c, msg = code(lambda: rs3.create_bucket(Bucket="dr-new-bucket"))
    assert c == "AccessDenied", (c, msg)
    c, msg = code(lambda: rs3.delete_object(Bucket="bob-data", Key="train/x.csv"))
    assert c == "AccessDenied", (c, msg)
    # what a job does: read its data, write its output
    assert rs3.get_object(Bucket="alice-data", Key="train/x.csv")["Body"].read() == b"1,2\n"
    rs3.put_object(Bucket="alice-data", Key="out/model.tar.gz", Body=b"m")


def test_readme_per_user_role(srv):
    """The README walkthrough's alice-exec: her data only; alice may pass it, not trainyard."""
    iam = srv.client("iam")
    iam.create_role(RoleName="alice-exec", AssumeRolePolicyDocument=json.dumps(TRUST))
    iam.put_role_policy(RoleName="alice-exec", PolicyName="own-data", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
                       "Resource": "arn:aws:s3:::alice*"},
                      {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject",
                                                     "s3:AbortMultipartUpload"],
                       "Resource": "arn:aws:s3:::alice*/*"},
                      {"Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                       "Resource": "arn:aws:logs:*:*:log-group:/aws/sagemaker/*"}]}))
    iam.create_user(UserName="alice")
    k = iam.create_access_key(UserName="alice")["AccessKey"]
    iam.put_user_policy(UserName="alice", PolicyName="train", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["sagemaker:CreateTrainingJob",
                       "sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob"],
                       "Resource": "arn:aws:sagemaker:*:*:training-job/alice-*"},
                      {"Effect": "Allow", "Action": "iam:PassRole",
                       "Resource": f"arn:aws:iam::{ACCOUNT}:role/alice-exec"},
                      {"Effect": "Allow", "Action": "s3:*",
                       "Resource": ["arn:aws:s3:::alice*", "arn:aws:s3:::alice*/*"]}]}))
    time.sleep(1)  # the policy cache (authgen) sees the new policies
    arn = f"arn:aws:iam::{ACCOUNT}:role/alice-exec"
    rs3 = role_client(srv, "s3", arn)
    assert rs3.get_object(Bucket="alice-data", Key="train/x.csv")["Body"].read() == b"1,2\n"
    rs3.list_objects_v2(Bucket="alice-data")
    for call in (lambda: rs3.get_object(Bucket="bob-data", Key="train/x.csv"),
                 lambda: rs3.list_objects_v2(Bucket="bob-data"),
                 lambda: rs3.put_object(Bucket="bob-data", Key="x", Body=b"x")):
        c, msg = code(call)
        assert c == "AccessDenied", (c, msg)
    c, msg = code(lambda: role_client(srv, "sagemaker", arn).list_training_jobs())
    assert c == "AccessDeniedException", (c, msg)
    alice = srv.client("sagemaker", keys=(k["AccessKeyId"], k["SecretAccessKey"]))
    req = H.job_request("alice-dr-1", "true", output="s3://alice-data/out")
    c, msg = code(lambda: alice.create_training_job(**{**req, "RoleArn": DEFAULT}))
    assert c == "AccessDeniedException" and "iam:PassRole" in msg, (c, msg)
    alice.create_training_job(**{**req, "RoleArn": arn})
    alice.stop_training_job(TrainingJobName="alice-dr-1")


def test_old_broad_default_is_narrowed_on_start(srv):
    iam = srv.client("iam")
    # byte for byte the old default: narrowed at the next start
    iam.put_role_policy(RoleName="trainyard", PolicyName="TrainyardExecution",
                        PolicyDocument=OLD_POLICY)
    srv.stop(timeout=60)
    srv.start()
    iam = srv.client("iam")
    doc = iam.get_role_policy(RoleName="trainyard", PolicyName="TrainyardExecution")
    actions = json.dumps(doc["PolicyDocument"])
    assert "sagemaker:*" not in actions and '"s3:*"' not in actions, actions
    assert "s3:GetObject" in actions, actions
    # an admin's own edit (even one as broad) is kept
    edited = OLD_POLICY.replace('"Resource":"*"', '"Resource":["*"]')
    iam.put_role_policy(RoleName="trainyard", PolicyName="TrainyardExecution",
                        PolicyDocument=edited)
    srv.stop(timeout=60)
    srv.start()
    doc = srv.client("iam").get_role_policy(RoleName="trainyard", PolicyName="TrainyardExecution")
    assert json.dumps(doc["PolicyDocument"], separators=(",", ":")) == edited
