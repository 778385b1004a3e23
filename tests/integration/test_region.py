"""One region per deployment: every signature's credential scope must name the region the server
serves (--region), as an AWS regional endpoint refuses a scope of another region; ARNs and
aws:RequestedRegion come from the server's region only. Before, a
Deny on arn:aws:sagemaker:us-east-1:...:training-job/secret-* was dodged by signing for
eu-west-1 (or US-EAST-1), which built the ARN from the request's scope."""
import json
import subprocess
import urllib.error
import urllib.request
import uuid

import boto3
import botocore.config
import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

ACCOUNT = "000000000000"
SCOPE_MSG = "Credential should be scoped to a valid region. "


@pytest.fixture(scope="module")
def rsrv(workdir):
    """A server of this module's own, API only, serving eu-west-1."""
    import os
    s = H.Server(os.path.join(workdir, "region"), agents=0, extra=["--region", "eu-west-1"])
    s.start()
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()


def _client(srv, service, region, keys=None, **cfg):
    akid, secret = keys or srv.credentials()
    conf = botocore.config.Config(retries={"max_attempts": 0}, **cfg)
    return boto3.session.Session().client(service, endpoint_url=srv.url, region_name=region,
                                          aws_access_key_id=akid, aws_secret_access_key=secret,
                                          config=conf)


def _err(e):
    return e.value.response["Error"]["Code"], e.value.response["Error"].get("Message", "")


@pytest.fixture(scope="module")
def denied_user(rsrv):
    """A user allowed sagemaker:* but denied the secret-* jobs in the server's region."""
    iam = rsrv.client("iam")
    name = "deny-" + uuid.uuid4().hex[:6]
    iam.create_user(UserName=name)
    k = iam.create_access_key(UserName=name)["AccessKey"]
    iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sagemaker:*", "Resource": "*"},
            {"Effect": "Allow", "Action": "iam:PassRole",
             "Resource": f"arn:aws:iam::{ACCOUNT}:role/trainyard"},
            {"Effect": "Deny", "Action": "sagemaker:*",
             "Resource": f"arn:aws:sagemaker:eu-west-1:{ACCOUNT}:training-job/secret-*"},
            {"Effect": "Deny", "Action": "sagemaker:*", "Resource": "*",
             "Condition": {"StringNotEquals": {"aws:RequestedRegion": "eu-west-1"}}},
        ]}))
    return k["AccessKeyId"], k["SecretAccessKey"]


@pytest.fixture(scope="module")
def secret_job(rsrv):
    name = "secret-" + uuid.uuid4().hex[:8]
    rsrv.client().create_training_job(**H.job_request(name, "true"))
    return name


@pytest.mark.parametrize("region", ["us-east-1", "EU-WEST-1", "eu-west-2", "Eu-West-1"])
def test_other_region_refused_json(rsrv, denied_user, secret_job, region):
    sm = _client(rsrv, "sagemaker", region, keys=denied_user)
    for call in (lambda: sm.describe_training_job(TrainingJobName=secret_job),
                 lambda: sm.stop_training_job(TrainingJobName=secret_job)):
        with pytest.raises(ClientError) as e:
            call()
        assert _err(e) == ("InvalidSignatureException", SCOPE_MSG), (region, _err(e))
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    st = rsrv.client().describe_training_job(TrainingJobName=secret_job)["TrainingJobStatus"]
    assert st != "Stopping" and st != "Stopped", st


def test_deny_holds_in_served_region(rsrv, denied_user, secret_job):
    sm = _client(rsrv, "sagemaker", "eu-west-1", keys=denied_user)
    with pytest.raises(ClientError) as e:
        sm.describe_training_job(TrainingJobName=secret_job)
    assert _err(e)[0] == "AccessDeniedException", _err(e)
    with pytest.raises(ClientError) as e:
        sm.stop_training_job(TrainingJobName=secret_job)
    assert _err(e)[0] == "AccessDeniedException", _err(e)
    # the same user reaches a job the Deny does not name (aws:RequestedRegion is eu-west-1)
    name = "open-" + uuid.uuid4().hex[:8]
    arn = sm.create_training_job(**H.job_request(name, "true"))["TrainingJobArn"]
    assert arn == f"arn:aws:sagemaker:eu-west-1:{ACCOUNT}:training-job/{name}"


def test_logs_and_cloudwatch_refuse_other_region(rsrv):
    logs = _client(rsrv, "logs", "us-east-1")
    with pytest.raises(ClientError) as e:
        logs.describe_log_groups()
    assert _err(e) == ("InvalidSignatureException", SCOPE_MSG), _err(e)
    cw = _client(rsrv, "cloudwatch", "us-east-1")
    with pytest.raises(ClientError) as e:
        cw.list_metrics()
    assert _err(e) == ("SignatureDoesNotMatch", SCOPE_MSG), _err(e)
    _client(rsrv, "logs", "eu-west-1").describe_log_groups()
    _client(rsrv, "cloudwatch", "eu-west-1").list_metrics()


def test_global_services_take_their_signing_region(rsrv):
    """IAM and STS are global on AWS (signed for us-east-1); the served region works too, any
    other is refused in the query protocol's words."""
    for region in ("us-east-1", "eu-west-1"):
        _client(rsrv, "iam", region).get_user()
        _client(rsrv, "sts", region).get_caller_identity()
    for service in ("iam", "sts"):
        with pytest.raises(ClientError) as e:
            c = _client(rsrv, service, "ap-south-1")
            c.get_user() if service == "iam" else c.get_caller_identity()
        assert _err(e) == ("SignatureDoesNotMatch", SCOPE_MSG), (service, _err(e))


def test_s3_header_and_query_refuse_other_region(rsrv):
    ok = _client(rsrv, "s3", "eu-west-1", s3={"addressing_style": "path"})
    bucket = "reg-" + uuid.uuid4().hex[:8]
    ok.create_bucket(Bucket=bucket)
    assert ok.get_bucket_location(Bucket=bucket)["LocationConstraint"] == "eu-west-1"
    ok.put_object(Bucket=bucket, Key="k", Body=b"x")
    akid, secret = rsrv.credentials()
    p = subprocess.run(["curl", "-sS", "--aws-sigv4", "aws:amz:us-east-1:s3", "-u",
                        f"{akid}:{secret}", "-o", "-", "-w", "\n%{http_code}",
                        f"{rsrv.url}/{bucket}/k"], capture_output=True, text=True, timeout=30)
    body, _, code = p.stdout.rpartition("\n")
    assert code == "400", p.stdout
    assert "<Code>AuthorizationHeaderMalformed</Code>" in body, body
    assert "<Message>The authorization header is malformed; the region &apos;us-east-1&apos; " \
           "is wrong; expecting &apos;eu-west-1&apos;</Message>" in body, body
    assert "<Region>eu-west-1</Region>" in body, body
    # botocore follows that Region element and signs again for eu-west-1, as against AWS
    bad = _client(rsrv, "s3", "us-east-1", s3={"addressing_style": "path"})
    assert bad.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"
    v4 = _client(rsrv, "s3", "us-east-1", s3={"addressing_style": "path"},
                 signature_version="s3v4")
    url = v4.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "k"})
    assert "X-Amz-Credential" in url, url
    with pytest.raises(urllib.error.HTTPError) as he:
        urllib.request.urlopen(url, timeout=10)
    body = he.value.read().decode()
    assert he.value.code == 400 and "AuthorizationQueryParametersError" in body, body
    assert "expecting &apos;eu-west-1&apos;" in body, body
    good = _client(rsrv, "s3", "eu-west-1", s3={"addressing_style": "path"},
                   signature_version="s3v4").generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "k"})
    assert urllib.request.urlopen(good, timeout=10).read() == b"x"


def test_cli_arn_uses_served_region(rsrv):
    import os
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_SHARED_CREDENTIALS_FILE": rsrv.credentials_path,
                "AWS_CONFIG_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_MAX_ATTEMPTS": "1", "AWS_PAGER": ""})

    def cli(region, *args):
        return subprocess.run([H.AWS_CLI, "--endpoint-url", rsrv.url, "--region", region,
                               "--output", "json"] + list(args),
                              env=env, capture_output=True, text=True, timeout=60)
    name = H.unique("clireg")
    p = cli("eu-west-1", "sagemaker", "create-training-job", "--cli-input-json",
            json.dumps(H.job_request(name, "true")))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["TrainingJobArn"] == \
        f"arn:aws:sagemaker:eu-west-1:{ACCOUNT}:training-job/{name}"
    p = cli("US-EAST-1", "sagemaker", "describe-training-job", "--training-job-name", name)
    assert p.returncode != 0 and "InvalidSignatureException" in p.stderr, p.stderr


def test_bad_region_option_refused(make_server):
    s = make_server(agents=0, extra=["--region", "US-EAST-1"], start=False)
    p = subprocess.run(s.argv(), capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "--region US-EAST-1" in p.stderr, p.stderr
