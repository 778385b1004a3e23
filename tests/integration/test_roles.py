"""IAM roles, iam:PassRole and role-scoped data access for training jobs.

A job acts only with its RoleArn: the caller must be allowed iam:PassRole on it, the role must
exist and trust sagemaker.amazonaws.com, and every object the platform reads or writes for the
job (channels, manifests, sourcedir.tar.gz, checkpoints, model/output, profiler output) is
authorised against the role's policies. Also UpdateAccessKey: an Inactive key is refused
everywhere. Job names start with role-.
"""
import io
import json
import tarfile

import botocore.exceptions
import pytest

import tyhelpers as H

ACCOUNT = "000000000000"
S3CFG = {"s3": {"addressing_style": "path"}}
DEFAULT_ROLE = f"arn:aws:iam::{ACCOUNT}:role/trainyard"
TRUST_SM = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
     "Action": "sts:AssumeRole"}]}
TRUST_EC2 = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


def _code(ei):
    return ei.value.response["Error"]["Code"]


def _msg(ei):
    return ei.value.response["Error"]["Message"]


@pytest.fixture(scope="module")
def iam(server):
    return server.client("iam")


@pytest.fixture(scope="module")
def admin_s3(server):
    return server.client("s3", **S3CFG)


def _user(server, iam, name, policy):
    iam.create_user(UserName=name)
    k = iam.create_access_key(UserName=name)["AccessKey"]
    iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
    return (k["AccessKeyId"], k["SecretAccessKey"])


def test_default_role_exists_and_is_documented(iam):
    r = iam.get_role(RoleName="trainyard")["Role"]
    assert r["Arn"] == DEFAULT_ROLE
    assert r["RoleId"].startswith("AROA")
    assert r["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"}
    assert iam.list_role_policies(RoleName="trainyard")["PolicyNames"] == ["TrainyardExecution"]
    doc = iam.get_role_policy(RoleName="trainyard", PolicyName="TrainyardExecution")
    # least privilege (README): a job's data, logs and metrics; no sagemaker:*, no IAM
    actions = [a for st in doc["PolicyDocument"]["Statement"] for a in
               (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])]
    assert "s3:GetObject" in actions and "s3:PutObject" in actions and "s3:ListBucket" in actions
    assert "logs:PutLogEvents" in actions and "cloudwatch:PutMetricData" in actions
    assert not [a for a in actions if a.startswith(("sagemaker:", "iam:")) or a.endswith(":*")]
    assert DEFAULT_ROLE in [x["Arn"] for x in iam.list_roles()["Roles"]]


def test_role_crud_and_errors(iam):
    name = H.unique("role-crud")
    r = iam.create_role(RoleName=name, Path="/svc/", AssumeRolePolicyDocument=json.dumps(TRUST_SM),
                        Description="a test role", MaxSessionDuration=7200,
                        Tags=[{"Key": "team", "Value": "ml"}])["Role"]
    assert r["Arn"] == f"arn:aws:iam::{ACCOUNT}:role/svc/{name}"
    assert r["RoleId"].startswith("AROA") and r["Path"] == "/svc/"
    g = iam.get_role(RoleName=name)["Role"]
    assert g["Arn"] == r["Arn"] and g["Description"] == "a test role"
    assert g["MaxSessionDuration"] == 7200 and g["AssumeRolePolicyDocument"] == TRUST_SM
    assert g["Tags"] == [{"Key": "team", "Value": "ml"}]
    assert name in [x["RoleName"] for x in iam.list_roles(PathPrefix="/svc/")["Roles"]]

    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST_SM))
    assert _code(ei) == "EntityAlreadyExists" and _msg(ei) == f"Role with name {name} already exists."
    bad = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole"}]}
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.create_role(RoleName=name + "x", AssumeRolePolicyDocument=json.dumps(bad))
    assert _code(ei) == "MalformedPolicyDocument" and _msg(ei) == "Missing required field Principal"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.create_role(RoleName=name + "x", AssumeRolePolicyDocument=json.dumps(
            {**TRUST_SM, "Statement": [{**TRUST_SM["Statement"][0], "Resource": "*"}]}))
    assert _code(ei) == "MalformedPolicyDocument" and _msg(ei) == "Has prohibited field Resource"

    pol = {"Version": "2012-10-17",
           "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}
    iam.put_role_policy(RoleName=name, PolicyName="read", PolicyDocument=json.dumps(pol))
    assert iam.list_role_policies(RoleName=name)["PolicyNames"] == ["read"]
    assert iam.get_role_policy(RoleName=name, PolicyName="read")["PolicyDocument"] == pol
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.put_role_policy(RoleName=name, PolicyName="bad", PolicyDocument="{")
    assert _code(ei) == "MalformedPolicyDocument"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.delete_role(RoleName=name)
    assert _code(ei) == "DeleteConflict"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.get_role_policy(RoleName=name, PolicyName="nope")
    assert _code(ei) == "NoSuchEntity"
    iam.delete_role_policy(RoleName=name, PolicyName="read")
    iam.delete_role(RoleName=name)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.get_role(RoleName=name)
    assert _code(ei) == "NoSuchEntity" and _msg(ei) == f"The role with name {name} cannot be found."


def test_pass_role_denied_unknown_and_untrusting(server, iam):
    user = H.unique("role-pat")
    base = [{"Effect": "Allow", "Action": ["sagemaker:CreateTrainingJob", "sagemaker:CreateDomain"],
             "Resource": "*"}]
    keys = _user(server, iam, user, {"Version": "2012-10-17", "Statement": base})
    sm = server.client("sagemaker", keys=keys)
    name = H.unique("role-pass")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.create_training_job(**H.job_request(name, "echo hi"))
    assert _code(ei) == "AccessDeniedException"
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert _msg(ei).startswith(f"User: arn:aws:iam::{ACCOUNT}:user/{user} is not authorized to "
                               f"perform: iam:PassRole on resource: {DEFAULT_ROLE}"), _msg(ei)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.create_domain(DomainName=H.unique("role-dom")[:60], AuthMode="IAM",
                         DefaultUserSettings={"ExecutionRole": DEFAULT_ROLE},
                         SubnetIds=["subnet-0abc"], VpcId="vpc-0abc")
    assert _code(ei) == "AccessDeniedException" and "iam:PassRole" in _msg(ei)
    # the job was not created
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        server.client("sagemaker").describe_training_job(TrainingJobName=name)
    assert _code(ei) == "ValidationException"

    # PassRole on every role: now an unknown or an untrusting role is a ValidationException
    iam.put_user_policy(UserName=user, PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": base + [{"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*",
                              "Condition": {"StringEquals": {
                                  "iam:PassedToService": "sagemaker.amazonaws.com"}}}]}))
    ec2 = H.unique("role-ec2")
    iam.create_role(RoleName=ec2, AssumeRolePolicyDocument=json.dumps(TRUST_EC2))
    for role in (f"arn:aws:iam::{ACCOUNT}:role/{H.unique('role-missing')}",
                 f"arn:aws:iam::{ACCOUNT}:role/{ec2}"):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            sm.create_training_job(**H.job_request(H.unique("role-pass"), "echo hi", RoleArn=role))
        assert _code(ei) == "ValidationException"
        assert _msg(ei) == (f"Could not assume role {role}. Please ensure that the role exists "
                            "and allows principal 'sagemaker.amazonaws.com' to assume the role.")
    # the admin passes the default role through normal evaluation (its policy allows *)
    ok = H.unique("role-admin-ok")
    server.client("sagemaker").create_training_job(**H.job_request(ok, "echo hi"))
    # and the user, with PassRole, too
    sm.create_training_job(**H.job_request(H.unique("role-user-ok"), "echo hi"))
    iam.delete_role(RoleName=ec2)


def _sourcedir():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        data = b"print('hi')\n"
        info = tarfile.TarInfo("train.py")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_limited_role_cannot_reach_other_buckets(server, iam, admin_s3):
    """A user limited to his bucket passes a role limited to that bucket: through no job field
    can the job read the admin's bucket or write to it."""
    n = H.unique("role-b").lower()
    mine, theirs = f"{n}-mine", f"{n}-admin"
    admin_s3.create_bucket(Bucket=theirs)
    admin_s3.put_object(Bucket=theirs, Key="secret/data.csv", Body=b"admin-secret")
    admin_s3.put_object(Bucket=theirs, Key="code/sourcedir.tar.gz", Body=_sourcedir())
    admin_s3.create_bucket(Bucket=mine)
    admin_s3.put_object(Bucket=mine, Key="data/train.csv", Body=b"mine")
    admin_s3.put_object(Bucket=mine, Key="manifest.json", Body=json.dumps(
        [{"prefix": f"s3://{theirs}/secret/"}, "data.csv"]).encode())
    s3_mine = [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
         "Resource": f"arn:aws:s3:::{mine}/*"},
        {"Effect": "Allow", "Action": ["s3:ListBucket", "s3:CreateBucket"],
         "Resource": f"arn:aws:s3:::{mine}"}]
    role = H.unique("role-lim")
    role_arn = f"arn:aws:iam::{ACCOUNT}:role/{role}"
    iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(TRUST_SM))
    iam.put_role_policy(RoleName=role, PolicyName="mine", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": s3_mine}))
    user = H.unique("role-lim-user")
    keys = _user(server, iam, user, {"Version": "2012-10-17", "Statement": s3_mine + [
        {"Effect": "Allow", "Action": ["sagemaker:CreateTrainingJob",
                                       "sagemaker:DescribeTrainingJob"], "Resource": "*"},
        {"Effect": "Allow", "Action": "iam:PassRole", "Resource": role_arn}]})
    sm = server.client("sagemaker", keys=keys)

    def chan(uri, kind="S3Prefix"):
        return [{"ChannelName": "train", "DataSource": {"S3DataSource": {
            "S3Uri": uri, "S3DataType": kind, "S3DataDistributionType": "FullyReplicated"}}}]

    def req(name, **extra):
        extra.setdefault("InputDataConfig", chan(f"s3://{mine}/data/"))
        return H.job_request(name, "echo hi", output=f"s3://{mine}/out", RoleArn=role_arn,
                             **extra)

    # an S3Prefix channel on the admin's bucket is refused at creation with the same message
    # as a prefix without objects: nothing is told about a bucket the role cannot list
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.create_training_job(**req(H.unique("role-in"),
                                     InputDataConfig=chan(f"s3://{theirs}/secret/")))
    assert _code(ei) == "ValidationException"
    assert _msg(ei).startswith(f'No S3 objects found under S3 URL "s3://{theirs}/secret/"'), _msg(ei)
    assert f'the role "{role_arn}" has "s3:ListBucket" permissions' in _msg(ei)

    cases = {
        "manifest": (dict(InputDataConfig=chan(f"s3://{mine}/manifest.json", "ManifestFile")),
                     "s3:GetObject", f"s3://{theirs}/secret/data.csv"),
        "output": (dict(OutputDataConfig={"S3OutputPath": f"s3://{theirs}/out"}),
                   "s3:PutObject", f"s3://{theirs}/out/"),
        "ckpt": (dict(CheckpointConfig={"S3Uri": f"s3://{theirs}/ckpt/"}),
                 "s3:ListBucket", f"s3://{theirs}/ckpt/"),
        "prof": (dict(ProfilerConfig={"S3OutputPath": f"s3://{theirs}/prof"}),
                 "s3:PutObject", f"s3://{theirs}/prof/"),
        "code": (dict(HyperParameters={"sagemaker_submit_directory": json.dumps(
            f"s3://{theirs}/code/sourcedir.tar.gz"), "sagemaker_program": json.dumps("train.py")}),
                 "s3:GetObject", f"s3://{theirs}/code/sourcedir.tar.gz"),
    }
    names = {}
    for k, (extra, _, _) in cases.items():
        names[k] = H.unique(f"role-{k}")
        sm.create_training_job(**req(names[k], **extra))
    good = H.unique("role-good")
    sm.create_training_job(**req(good, CheckpointConfig={"S3Uri": f"s3://{mine}/ckpt/"}))

    for k, (_, action, obj) in cases.items():
        d = H.wait_job(sm, names[k], timeout=180)
        assert d["TrainingJobStatus"] == "Failed", (k, d)
        why = d["FailureReason"]
        assert why.startswith("ClientError: Access Denied (403) for " + obj), (k, why)
        assert f"the role {role_arn} is not authorized to perform {action}" in why, (k, why)
        # refused before the container ran: the admin's object was never read
        assert "Training" not in [t["Status"] for t in d["SecondaryStatusTransitions"]], (k, d)
    d = H.wait_job(sm, good, timeout=180)
    assert d["TrainingJobStatus"] == "Completed", d
    assert d["ModelArtifacts"]["S3ModelArtifacts"].startswith(f"s3://{mine}/out/{good}/")
    # nothing was written into the admin's bucket
    keys_there = sorted(o["Key"] for o in admin_s3.list_objects_v2(Bucket=theirs)["Contents"])
    assert keys_there == ["code/sourcedir.tar.gz", "secret/data.csv"]


def test_update_access_key_inactive_is_refused_everywhere(server, iam):
    user = H.unique("role-keys")
    keys = _user(server, iam, user, {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["sagemaker:ListTrainingJobs", "s3:ListAllMyBuckets"],
         "Resource": "*"}]})
    akid = keys[0]
    sm = server.client("sagemaker", keys=keys)
    s3 = server.client("s3", keys=keys, **S3CFG)
    sts = server.client("sts", keys=keys)
    uiam = server.client("iam", keys=keys)
    sm.list_training_jobs()
    s3.list_buckets()
    assert sts.get_caller_identity()["Arn"].endswith(f":user/{user}")

    iam.update_access_key(UserName=user, AccessKeyId=akid, Status="Inactive")
    meta = iam.list_access_keys(UserName=user)["AccessKeyMetadata"]
    assert [(m["AccessKeyId"], m["Status"]) for m in meta] == [(akid, "Inactive")]
    for call, code, text in (
            (sm.list_training_jobs, None, "The security token included in the request is invalid."),
            (s3.list_buckets, "InvalidAccessKeyId",
             "The AWS Access Key Id you provided does not exist in our records."),
            (sts.get_caller_identity, "InvalidClientTokenId",
             "The security token included in the request is invalid."),
            (uiam.list_access_keys, "InvalidClientTokenId",
             "The security token included in the request is invalid.")):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            call()
        assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403, ei.value.response
        if code:
            assert _code(ei) == code, ei.value.response
        assert text in _msg(ei), ei.value.response

    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.update_access_key(UserName=user, AccessKeyId=akid, Status="Sleeping")
    assert _code(ei) == "ValidationError"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        iam.update_access_key(UserName=user, AccessKeyId="AKIANOSUCHKEY0000000", Status="Active")
    assert _code(ei) == "NoSuchEntity"

    iam.update_access_key(UserName=user, AccessKeyId=akid, Status="Active")
    assert iam.list_access_keys(UserName=user)["AccessKeyMetadata"][0]["Status"] == "Active"
    sm.list_training_jobs()
    s3.list_buckets()
    assert sts.get_caller_identity()["Arn"].endswith(f":user/{user}")
