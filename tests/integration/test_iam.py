"""IAM on trainyard: the IAM query API (boto3 and the AWS CLI), STS GetCallerIdentity, policy
evaluation on every SageMaker/Logs/IAM call (training jobs, Logs, Studio), and the quotas.

One private server (no agents, so jobs stay InProgress and count against the quota) with
--max-training-jobs-per-instance-type 2. The admin creates alice and bob, each with an access
key and an inline policy scoped to their own resources through ${aws:username}:
  - CreateTrainingJob only with the request tag team=<own name> and only on ml.m5.large
    (aws:RequestTag/team, sagemaker:InstanceTypes);
  - Describe/Stop/Delete only on jobs whose stored tag team is their own name
    (sagemaker:ResourceTag/team);
  - ListTrainingJobs on "*";
  - an explicit Deny on training jobs named <name>-secret-*.
carol has a key and no policy. Every allowed and denied call below is one assertion.
"""
import json
import os
import subprocess

import botocore.exceptions
import pytest

import tyhelpers as H

ACCOUNT = "000000000000"
QUOTA = 2      # --max-training-jobs-per-instance-type
PROFILES = 3   # --max-user-profiles-per-domain (--max-apps-per-user is 1)


def _policy():
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "CreateOwnTaggedOnM5Large", "Effect": "Allow",
             "Action": "sagemaker:CreateTrainingJob",
             "Resource": "arn:aws:sagemaker:*:*:training-job/*",
             "Condition": {"StringEquals": {"aws:RequestTag/team": "${aws:username}",
                                            "sagemaker:InstanceTypes": "ml.m5.large"}}},
            {"Sid": "OwnJobs", "Effect": "Allow",
             "Action": ["sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob",
                        "sagemaker:DeleteTrainingJob"],
             "Resource": "*",
             "Condition": {"StringEquals": {"sagemaker:ResourceTag/team": "${aws:username}"}}},
            {"Sid": "List", "Effect": "Allow", "Action": "sagemaker:ListTrainingJobs",
             "Resource": "*"},
            {"Sid": "NoSecrets", "Effect": "Deny", "Action": "sagemaker:*",
             "Resource": "arn:aws:sagemaker:*:*:training-job/${aws:username}-secret-*"},
            # a job needs its role passed (iam:PassRole, as on AWS): the default role
            {"Sid": "PassTheDefaultRole", "Effect": "Allow", "Action": "iam:PassRole",
             "Resource": "arn:aws:iam::*:role/trainyard",
             "Condition": {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}},
        ],
    }


@pytest.fixture(scope="module")
def iam_server(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "iam"), agents=0,
                 extra=["--max-training-jobs-per-instance-type", str(QUOTA),
                        "--max-user-profiles-per-domain", str(PROFILES),
                        "--max-apps-per-user", "1"])
    s.start()
    yield s
    rc = s.stop(timeout=60)
    assert rc == 0, f"server exited with {rc} on SIGTERM:\n{s.proc.tail()}"


@pytest.fixture(scope="module")
def admin_iam(iam_server):
    return iam_server.client("iam")


@pytest.fixture(scope="module")
def users(iam_server, admin_iam):
    """name -> (access key id, secret) for alice, bob (scoped policies) and carol (none)."""
    out = {}
    for name in ("alice", "bob", "carol"):
        admin_iam.create_user(UserName=name, Tags=[{"Key": "team", "Value": name}])
        k = admin_iam.create_access_key(UserName=name)["AccessKey"]
        out[name] = (k["AccessKeyId"], k["SecretAccessKey"])
        if name != "carol":
            admin_iam.put_user_policy(UserName=name, PolicyName="own-jobs",
                                      PolicyDocument=json.dumps(_policy()))
    return out


def client(srv, users, name, service="sagemaker", **cfg):
    return srv.client(service, keys=users[name], **cfg)


def job(name, instance_type="ml.m5.large", team=None, **extra):
    req = H.job_request(name, "echo hi", instance_type=instance_type, **extra)
    if team:
        req["Tags"] = [{"Key": "team", "Value": team}]
    return req


def denied(exc_info, action, user, resource=None, explicit=False):
    e = exc_info.value
    assert isinstance(e, botocore.exceptions.ClientError), e
    code = e.response["Error"]["Code"]
    assert code in ("AccessDeniedException", "AccessDenied"), e.response
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    msg = e.response["Error"]["Message"]
    assert msg.startswith(f"User: arn:aws:iam::{ACCOUNT}:user/{user} is not authorized to "
                          f"perform: {action}"), msg
    if resource:
        assert f"on resource: {resource}" in msg, msg
    assert ("with an explicit deny" in msg) == explicit, msg


def job_arn(name):
    return f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/{name.lower()}"


# ---------------------------------------------------------------------------------------------
# the IAM API


def test_admin_is_an_iam_user_with_an_all_allowing_policy(iam_server, admin_iam):
    u = admin_iam.get_user()["User"]
    assert u["UserName"] == "admin"
    assert u["Arn"] == f"arn:aws:iam::{ACCOUNT}:user/admin"
    assert u["UserId"].startswith("AIDA")
    names = admin_iam.list_user_policies(UserName="admin")["PolicyNames"]
    assert names == ["AdministratorAccess"]
    doc = admin_iam.get_user_policy(UserName="admin", PolicyName="AdministratorAccess")
    st = doc["PolicyDocument"]["Statement"][0]
    assert (st["Effect"], st["Action"], st["Resource"]) == ("Allow", "*", "*")
    me = iam_server.client("sts").get_caller_identity()
    assert me["Arn"] == u["Arn"] and me["UserId"] == u["UserId"] and me["Account"] == ACCOUNT


def test_users_keys_and_policies(iam_server, admin_iam, users):
    got = admin_iam.get_user(UserName="alice")["User"]
    assert got["Arn"] == f"arn:aws:iam::{ACCOUNT}:user/alice"
    assert got["Tags"] == [{"Key": "team", "Value": "alice"}]
    assert len(got["UserId"]) == 21 and got["UserId"].startswith("AIDA")
    listed = [u["UserName"] for u in admin_iam.list_users()["Users"]]
    assert {"admin", "alice", "bob", "carol"} <= set(listed)
    keys = admin_iam.list_access_keys(UserName="alice")["AccessKeyMetadata"]
    assert [k["AccessKeyId"] for k in keys] == [users["alice"][0]]
    assert keys[0]["Status"] == "Active"
    akid, secret = users["alice"]
    assert akid.startswith("AKIA") and len(akid) == 20 and len(secret) == 40
    pol = admin_iam.get_user_policy(UserName="alice", PolicyName="own-jobs")
    assert pol["PolicyDocument"] == _policy()  # URL-decoded by botocore, as from IAM
    assert admin_iam.list_user_policies(UserName="alice")["PolicyNames"] == ["own-jobs"]
    # STS: the IAM user's unique id and ARN
    me = client(iam_server, users, "alice", "sts").get_caller_identity()
    assert me["Arn"] == f"arn:aws:iam::{ACCOUNT}:user/alice"
    assert me["UserId"] == got["UserId"]


def test_iam_errors(admin_iam, users):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        admin_iam.create_user(UserName="Alice")  # names are unique case-insensitively
    assert ei.value.response["Error"]["Code"] == "EntityAlreadyExists"
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        admin_iam.get_user(UserName="nobody")
    assert ei.value.response["Error"]["Code"] == "NoSuchEntity"
    assert ei.value.response["Error"]["Message"] == "The user with name nobody cannot be found."
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        admin_iam.get_user_policy(UserName="alice", PolicyName="nope")
    assert ei.value.response["Error"]["Code"] == "NoSuchEntity"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        admin_iam.delete_access_key(UserName="alice", AccessKeyId="AKIANOSUCHKEY0000000")
    assert ei.value.response["Error"]["Code"] == "NoSuchEntity"


def test_malformed_and_oversized_policies_rejected(admin_iam, users):
    for doc, msg in [
        ('{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sagemaker:*"}]}',
         "Policy statement must contain resources."),
        ('{"Statement": [}', "Syntax errors in policy."),
        ('{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*",'
         '"Principal":"*"}]}', "Policy document should not specify a principal."),
    ]:
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            admin_iam.put_user_policy(UserName="bob", PolicyName="bad", PolicyDocument=doc)
        assert ei.value.response["Error"]["Code"] == "MalformedPolicyDocument", doc
        assert ei.value.response["Error"]["Message"] == msg
        assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    big = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": "sagemaker:DescribeTrainingJob",
        "Resource": [job_arn("j" * 40 + str(i)) for i in range(30)]}]}
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        admin_iam.put_user_policy(UserName="bob", PolicyName="big", PolicyDocument=json.dumps(big))
    assert ei.value.response["Error"]["Code"] == "LimitExceeded"
    assert ei.value.response["Error"]["Message"] == \
        "Maximum policy size of 2048 bytes exceeded for user bob"
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert admin_iam.list_user_policies(UserName="bob")["PolicyNames"] == ["own-jobs"]


def test_delete_user_conflicts_until_keys_and_policies_are_gone(admin_iam):
    admin_iam.create_user(UserName="dave", Path="/team/")
    u = admin_iam.get_user(UserName="dave")["User"]
    assert u["Arn"] == f"arn:aws:iam::{ACCOUNT}:user/team/dave" and u["Path"] == "/team/"
    k = admin_iam.create_access_key(UserName="dave")["AccessKey"]["AccessKeyId"]
    admin_iam.put_user_policy(UserName="dave", PolicyName="p", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sagemaker:List*",
                                                 "Resource": "*"}]}))
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        admin_iam.delete_user(UserName="dave")
    assert ei.value.response["Error"]["Code"] == "DeleteConflict"
    assert ei.value.response["Error"]["Message"] == \
        "Cannot delete entity, must delete access keys first."
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    admin_iam.delete_access_key(UserName="dave", AccessKeyId=k)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        admin_iam.delete_user(UserName="dave")
    assert ei.value.response["Error"]["Message"] == \
        "Cannot delete entity, must delete policies first."
    admin_iam.delete_user_policy(UserName="dave", PolicyName="p")
    admin_iam.delete_user(UserName="dave")
    assert "dave" not in [x["UserName"] for x in admin_iam.list_users()["Users"]]
    assert [x["UserName"] for x in admin_iam.list_users(PathPrefix="/team/")["Users"]] == []


def test_deleted_access_key_no_longer_authenticates(iam_server, admin_iam):
    admin_iam.create_user(UserName="erin")
    k = admin_iam.create_access_key(UserName="erin")["AccessKey"]
    sts = iam_server.client("sts", keys=(k["AccessKeyId"], k["SecretAccessKey"]))
    assert sts.get_caller_identity()["Arn"].endswith(":user/erin")
    admin_iam.delete_access_key(UserName="erin", AccessKeyId=k["AccessKeyId"])
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sts.get_caller_identity()
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    admin_iam.delete_user(UserName="erin")


def test_iam_operations_by_a_non_admin_are_denied(iam_server, users):
    alice_iam = client(iam_server, users, "alice", "iam")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        alice_iam.list_users()
    denied(ei, "iam:ListUsers", "alice")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        alice_iam.create_user(UserName="mallory")
    denied(ei, "iam:CreateUser", "alice", f"arn:aws:iam::{ACCOUNT}:user/mallory")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        alice_iam.put_user_policy(UserName="alice", PolicyName="escalate", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*",
                                                     "Resource": "*"}]}))
    denied(ei, "iam:PutUserPolicy", "alice", f"arn:aws:iam::{ACCOUNT}:user/alice")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        alice_iam.get_user()
    denied(ei, "iam:GetUser", "alice", f"arn:aws:iam::{ACCOUNT}:user/alice")


def test_permissions_boundaries_are_refused_never_dropped(iam_server, admin_iam, users):
    """A boundary names a managed policy and none exists here, so no boundary can be in force:
    CreateUser/CreateRole with PermissionsBoundary and Put{User,Role}PermissionsBoundary answer
    IAM's NoSuchEntity for the policy and create or change nothing (issue 36, finding 7:
    they answered 200, and GetUser/GetRole showed no boundary: an admin who delegated with a
    boundary believed a limit was in force that did not exist)."""
    b = f"arn:aws:iam::{ACCOUNT}:policy/DevBoundary"
    trust = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
        "Action": "sts:AssumeRole"}]})

    def err(call):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            call()
        return ei.value.response["Error"]["Code"], ei.value.response["Error"]["Message"]

    scope = ("NoSuchEntity", f"Scope ARN: {b} does not exist or is not attachable.")
    assert err(lambda: admin_iam.create_user(UserName="bounded", PermissionsBoundary=b)) == scope
    assert err(lambda: admin_iam.get_user(UserName="bounded"))[0] == "NoSuchEntity"
    assert err(lambda: admin_iam.create_role(RoleName="bounded-role", AssumeRolePolicyDocument=trust,
                                             PermissionsBoundary=b)) == scope
    assert err(lambda: admin_iam.get_role(RoleName="bounded-role"))[0] == "NoSuchEntity"
    assert err(lambda: admin_iam.put_user_permissions_boundary(
        UserName="carol", PermissionsBoundary=b)) == scope
    assert "PermissionsBoundary" not in admin_iam.get_user(UserName="carol")["User"]
    assert err(lambda: admin_iam.put_user_permissions_boundary(
        UserName="nobody-here", PermissionsBoundary=b))[0] == "NoSuchEntity"
    assert err(lambda: admin_iam.put_user_permissions_boundary(
        UserName="carol", PermissionsBoundary="not-an-arn-but-long-enough"))[0] == "ValidationError"
    admin_iam.create_role(RoleName="unbounded-role", AssumeRolePolicyDocument=trust)
    assert err(lambda: admin_iam.put_role_permissions_boundary(
        RoleName="unbounded-role", PermissionsBoundary=b)) == scope
    assert "PermissionsBoundary" not in admin_iam.get_role(RoleName="unbounded-role")["Role"]
    # nothing to remove: as IAM answers a delete of a boundary that is not there
    admin_iam.delete_user_permissions_boundary(UserName="carol")
    admin_iam.delete_role_permissions_boundary(RoleName="unbounded-role")
    admin_iam.delete_role(RoleName="unbounded-role")
    # authorised like any IAM action
    alice_iam = client(iam_server, users, "alice", "iam")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        alice_iam.put_user_permissions_boundary(UserName="alice", PermissionsBoundary=b)
    denied(ei, "iam:PutUserPermissionsBoundary", "alice", f"arn:aws:iam::{ACCOUNT}:user/alice")


def test_duplicate_tag_keys_are_refused_everywhere(iam_server, admin_iam):
    """A tag key given twice split the decision from the write: authorisation read the first
    value and the store kept the last, so a user allowed iam:TagUser only with team=ml raised
    her own principal tag to team=admin with [team=ml, team=admin]; team and Team together
    passed too (issue 37, finding 2). Each is refused, in IAM and SageMaker, and nothing is
    written."""
    user = "dup-tagger"
    admin_iam.create_user(UserName=user, Tags=[{"Key": "team", "Value": "ml"}])
    admin_iam.put_user_policy(UserName=user, PolicyName="tag-ml", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": "iam:TagUser",
            "Resource": f"arn:aws:iam::{ACCOUNT}:user/{user}",
            "Condition": {"StringEquals": {"aws:RequestTag/team": "ml"}}}]}))
    k = admin_iam.create_access_key(UserName=user)["AccessKey"]
    uiam = iam_server.client("iam", keys=(k["AccessKeyId"], k["SecretAccessKey"]))
    for tags in ([{"Key": "team", "Value": "ml"}, {"Key": "team", "Value": "admin"}],
                 [{"Key": "team", "Value": "ml"}, {"Key": "Team", "Value": "admin"}]):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            uiam.tag_user(UserName=user, Tags=tags)
        assert ei.value.response["Error"]["Code"] == "ValidationError", ei.value.response
        assert "Duplicate tag keys" in ei.value.response["Error"]["Message"]
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            admin_iam.create_user(UserName="dup-new", Tags=tags)
        assert ei.value.response["Error"]["Code"] == "ValidationError"
    assert admin_iam.list_user_tags(UserName=user)["Tags"] == [{"Key": "team", "Value": "ml"}]
    with pytest.raises(botocore.exceptions.ClientError):
        admin_iam.get_user(UserName="dup-new")
    uiam.tag_user(UserName=user, Tags=[{"Key": "team", "Value": "ml"}])  # the allowed form
    sm = iam_server.client("sagemaker")
    name = H.unique("dup-tags")
    for tags in ([{"Key": "team", "Value": "ml"}, {"Key": "team", "Value": "admin"}],
                 [{"Key": "team", "Value": "ml"}, {"Key": "TEAM", "Value": "admin"}]):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            sm.create_training_job(**H.job_request(name, "true", Tags=tags))
        assert ei.value.response["Error"]["Code"] == "ValidationException", ei.value.response
        assert "Duplicate tag key" in ei.value.response["Error"]["Message"]
    with pytest.raises(botocore.exceptions.ClientError):
        sm.describe_training_job(TrainingJobName=name)
    arn = sm.create_training_job(**H.job_request(name, "true", Tags=[
        {"Key": "team", "Value": "ml"}]))["TrainingJobArn"]
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.add_tags(ResourceArn=arn, Tags=[{"Key": "x", "Value": "1"}, {"Key": "X", "Value": "2"}])
    assert ei.value.response["Error"]["Code"] == "ValidationException"
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "ml"}]


# ---------------------------------------------------------------------------------------------
# SageMaker and Logs calls under the users' policies


def test_alice_creates_only_tagged_m5_large_jobs(iam_server, users):
    sm = client(iam_server, users, "alice")
    ok = H.unique("alice-ok")
    assert sm.create_training_job(**job(ok, team="alice"))["TrainingJobArn"] == job_arn(ok)
    # no tag, another team's tag, another instance type: no Allow applies
    for req in (job(H.unique("alice-untagged")), job(H.unique("alice-bobs"), team="bob"),
                job(H.unique("alice-big"), instance_type="ml.p3.2xlarge", team="alice")):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            sm.create_training_job(**req)
        denied(ei, "sagemaker:CreateTrainingJob", "alice", job_arn(req["TrainingJobName"]))
    # explicit deny wins over the Allow that would apply
    secret = H.unique("alice-secret")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.create_training_job(**job(secret, team="alice"))
    denied(ei, "sagemaker:CreateTrainingJob", "alice", job_arn(secret), explicit=True)
    # her own job: describe and list; stop
    assert sm.describe_training_job(TrainingJobName=ok)["TrainingJobName"] == ok
    assert any(s["TrainingJobName"] == ok
               for s in sm.list_training_jobs(MaxResults=100)["TrainingJobSummaries"])
    sm.stop_training_job(TrainingJobName=ok)


def test_alice_cannot_touch_bobs_jobs(iam_server, users):
    bob = client(iam_server, users, "bob")
    alice = client(iam_server, users, "alice")
    name = H.unique("bob-job")
    bob.create_training_job(**job(name, team="bob"))
    assert bob.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "InProgress"
    for call, action in ((alice.describe_training_job, "DescribeTrainingJob"),
                         (alice.stop_training_job, "StopTrainingJob")):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            call(TrainingJobName=name)
        denied(ei, f"sagemaker:{action}", "alice", job_arn(name))
    bob.stop_training_job(TrainingJobName=name)
    H.wait_for(lambda: bob.describe_training_job(TrainingJobName=name)["TrainingJobStatus"]
               == "Stopped", 10, "bob's job stopped")
    # DeleteTrainingJob (newer than Debian's botocore): signed by hand
    r = H.raw_call(iam_server.url, "DeleteTrainingJob", {"TrainingJobName": name},
                   keys=users["alice"])
    assert (r.status, r.error_type) == (403, "AccessDeniedException"), r
    assert r.message.startswith("User: arn:aws:iam::000000000000:user/alice is not authorized "
                                "to perform: sagemaker:DeleteTrainingJob on resource: "
                                + job_arn(name)), r
    r = H.raw_call(iam_server.url, "DeleteTrainingJob", {"TrainingJobName": name},
                   keys=users["bob"])
    assert r.status == 200, r


def test_no_policy_is_denied_everything(iam_server, users):
    sm = client(iam_server, users, "carol")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.list_training_jobs()
    denied(ei, "sagemaker:ListTrainingJobs", "carol")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.create_training_job(**job(H.unique("carol"), team="carol"))
    denied(ei, "sagemaker:CreateTrainingJob", "carol")
    logs = client(iam_server, users, "carol", "logs")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        logs.get_log_events(logGroupName=H.LOG_GROUP, logStreamName="x/algo-1-1")
    denied(ei, "logs:GetLogEvents", "carol",
           f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:{H.LOG_GROUP}:log-stream:x/algo-1-1")


def test_validation_comes_before_authorization(iam_server, users):
    sm = client(iam_server, users, "carol", parameter_validation=False)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.describe_training_job(TrainingJobName="bad name!")
    assert ei.value.response["Error"]["Code"] == "ValidationException"


def test_policy_changes_apply_at_once(iam_server, admin_iam, users):
    sm = client(iam_server, users, "carol")
    with pytest.raises(botocore.exceptions.ClientError):
        sm.list_training_jobs()
    admin_iam.put_user_policy(UserName="carol", PolicyName="list", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
                                                 "Action": "sagemaker:ListTrainingJobs",
                                                 "Resource": "*"}]}))
    sm.list_training_jobs()
    admin_iam.delete_user_policy(UserName="carol", PolicyName="list")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.list_training_jobs()
    denied(ei, "sagemaker:ListTrainingJobs", "carol")


# ---------------------------------------------------------------------------------------------
# quota


def test_training_quota_per_instance_type(iam_server):
    sm = iam_server.client("sagemaker")
    names = [H.unique("quota") for _ in range(QUOTA + 1)]
    for n in names[:QUOTA]:
        sm.create_training_job(**job(n, instance_type="ml.c5.xlarge"))
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.create_training_job(**job(names[QUOTA], instance_type="ml.c5.xlarge"))
    err = ei.value.response["Error"]
    assert err["Code"] == "ResourceLimitExceeded"
    assert err["Message"] == (
        f"The account-level service limit 'ml.c5.xlarge for training job usage' is {QUOTA} "
        f"Instances, with current utilization of {QUOTA} Instances and a request delta of 1 "
        "Instances. Please use AWS Service Quotas to request an increase for this quota.")
    # other instance types have their own count
    sm.create_training_job(**job(H.unique("quota-other"), instance_type="ml.c5.2xlarge"))
    # a stopped job frees its instances
    sm.stop_training_job(TrainingJobName=names[0])
    H.wait_for(lambda: sm.describe_training_job(TrainingJobName=names[0])["TrainingJobStatus"]
               == "Stopped", 10, "job stopped")
    sm.create_training_job(**job(names[QUOTA], instance_type="ml.c5.xlarge"))


# ---------------------------------------------------------------------------------------------
# the AWS CLI


def _cli(srv, keys, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ACCESS_KEY_ID": keys[0], "AWS_SECRET_ACCESS_KEY": keys[1],
                "AWS_CONFIG_FILE": os.path.join(srv.data_dir, "no-such-aws-config"),
                "AWS_SHARED_CREDENTIALS_FILE": os.path.join(srv.data_dir, "no-such-creds"),
                "AWS_PAGER": "", "AWS_EC2_METADATA_DISABLED": "true", "AWS_MAX_ATTEMPTS": "1"})
    argv = [H.AWS_CLI, "--endpoint-url", srv.url, "--region", "us-east-1", "--output", "json"] \
        + list(args)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def test_cli(iam_server, users):
    admin = iam_server.credentials()
    p = _cli(iam_server, admin, "iam", "create-user", "--user-name", "frank")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["User"]["Arn"] == f"arn:aws:iam::{ACCOUNT}:user/frank"
    p = _cli(iam_server, admin, "iam", "put-user-policy", "--user-name", "frank",
             "--policy-name", "p", "--policy-document", json.dumps(_policy()))
    assert p.returncode == 0, p.stderr
    p = _cli(iam_server, admin, "iam", "get-user-policy", "--user-name", "frank",
             "--policy-name", "p")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["PolicyDocument"] == _policy()
    p = _cli(iam_server, admin, "iam", "delete-user", "--user-name", "frank")
    assert p.returncode != 0 and "DeleteConflict" in p.stderr, p.stderr
    p = _cli(iam_server, users["alice"], "sts", "get-caller-identity")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["Arn"] == f"arn:aws:iam::{ACCOUNT}:user/alice"
    p = _cli(iam_server, users["alice"], "iam", "list-users")
    assert p.returncode != 0 and "AccessDenied" in p.stderr, p.stderr
    p = _cli(iam_server, users["bob"], "sagemaker", "list-training-jobs")
    assert p.returncode == 0, p.stderr
    p = _cli(iam_server, users["carol"], "sagemaker", "list-training-jobs")
    assert p.returncode != 0 and "AccessDeniedException" in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# Studio: each user's own user profile and profiler app; studio quotas

STUDIO_ROLE = "arn:aws:iam::000000000000:role/trainyard"


def _studio_policy():
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "OwnProfileAndApps", "Effect": "Allow",
             "Action": ["sagemaker:CreateApp", "sagemaker:DeleteApp", "sagemaker:DescribeApp",
                        "sagemaker:DescribeUserProfile"],
             "Resource": ["arn:aws:sagemaker:*:*:user-profile/*/${aws:username}",
                          "arn:aws:sagemaker:*:*:app/*/${aws:username}/*"]},
            {"Sid": "OwnUrl", "Effect": "Allow", "Action": "sagemaker:CreatePresignedDomainUrl",
             "Resource": "*",
             "Condition": {"StringEquals": {"sagemaker:UserProfileName": "${aws:username}"}}},
        ],
    }


def _wait(fn, status, **kw):
    last = {}

    def ok():
        last["r"] = fn(**kw)
        return last["r"]["Status"] == status
    H.wait_for(ok, 20, f"status {status}")
    return last["r"]


def _code(exc_info):
    return exc_info.value.response["Error"]["Code"], exc_info.value.response["Error"]["Message"]


def test_studio_users_own_profiles_and_apps(iam_server, admin_iam, users):
    sm = iam_server.client("sagemaker")
    dom = sm.create_domain(DomainName=H.unique("iamdom")[:60], AuthMode="IAM",
                           DefaultUserSettings={"ExecutionRole": STUDIO_ROLE},
                           SubnetIds=["subnet-0abc"], VpcId="vpc-0abc")["DomainArn"].rsplit("/")[-1]
    for u in ("alice", "bob"):
        sm.create_user_profile(DomainId=dom, UserProfileName=u)
        admin_iam.put_user_policy(UserName=u, PolicyName="own-studio",
                                  PolicyDocument=json.dumps(_studio_policy()))
    for u in ("alice", "bob"):
        _wait(sm.describe_user_profile, "InService", DomainId=dom, UserProfileName=u)
    alice, carol = client(iam_server, users, "alice"), client(iam_server, users, "carol")
    app = dict(DomainId=dom, AppType="DetailedProfiler", AppName="default")
    app_arn = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:app/{dom}/%s/detailedprofiler/default"
    alice.create_app(UserProfileName="alice", **app)
    assert alice.describe_user_profile(DomainId=dom, UserProfileName="alice")["UserProfileName"] \
        == "alice"
    # every attempt on bob's profile or app is denied
    attempts = [
        (alice.create_app, dict(UserProfileName="bob", **app), "CreateApp", app_arn % "bob"),
        (alice.describe_app, dict(UserProfileName="bob", **app), "DescribeApp", app_arn % "bob"),
        (alice.delete_app, dict(UserProfileName="bob", **app), "DeleteApp", app_arn % "bob"),
        (alice.describe_user_profile, dict(DomainId=dom, UserProfileName="bob"),
         "DescribeUserProfile",
         f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:user-profile/{dom}/bob"),
        (alice.create_presigned_domain_url, dict(DomainId=dom, UserProfileName="bob"),
         "CreatePresignedDomainUrl",
         f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:user-profile/{dom}/bob"),
        (alice.delete_user_profile, dict(DomainId=dom, UserProfileName="alice"),
         "DeleteUserProfile",
         f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:user-profile/{dom}/alice"),
        (alice.list_domains, {}, "ListDomains", None),
        (carol.create_app, dict(UserProfileName="carol", **app), "CreateApp",
         app_arn % "carol"),
    ]
    for fn, kw, action, resource in attempts:
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            fn(**kw)
        who = "carol" if fn.__self__ is carol else "alice"
        denied(ei, f"sagemaker:{action}", who, resource)
    # her own presigned URL is hers to create (the condition on sagemaker:UserProfileName)
    _wait(alice.describe_app, "InService", UserProfileName="alice", **app)
    url = alice.create_presigned_domain_url(DomainId=dom, UserProfileName="alice")
    assert url["AuthorizedUrl"].startswith(iam_server.url)
    alice.delete_app(UserProfileName="alice", **app)


def test_studio_quotas(iam_server):
    sm = iam_server.client("sagemaker")
    dom = sm.create_domain(DomainName=H.unique("quotadom")[:60], AuthMode="IAM",
                           DefaultUserSettings={"ExecutionRole": STUDIO_ROLE},
                           SubnetIds=["subnet-0abc"], VpcId="vpc-0abc")["DomainArn"].rsplit("/")[-1]
    for i in range(PROFILES):
        sm.create_user_profile(DomainId=dom, UserProfileName=f"u{i}")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.create_user_profile(DomainId=dom, UserProfileName="one-too-many")
    assert _code(ei) == ("ResourceLimitExceeded", (
        f"The account-level service limit 'Maximum number of user profiles per domain' is "
        f"{PROFILES} UserProfiles, with current utilization of {PROFILES} UserProfiles and a "
        "request delta of 1 UserProfiles. Please use AWS Service Quotas to request an increase "
        "for this quota."))
    _wait(sm.describe_user_profile, "InService", DomainId=dom, UserProfileName="u0")
    sm.create_app(DomainId=dom, UserProfileName="u0", AppType="DetailedProfiler",
                  AppName="default")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm.create_app(DomainId=dom, UserProfileName="u0", AppType="JupyterServer",
                      AppName="default")
    assert _code(ei)[0] == "ResourceLimitExceeded"
    assert "'Maximum number of apps per user profile' is 1 Apps" in _code(ei)[1]
    # a deleted app no longer counts
    sm.delete_app(DomainId=dom, UserProfileName="u0", AppType="DetailedProfiler",
                  AppName="default")
    sm.create_app(DomainId=dom, UserProfileName="u0", AppType="JupyterServer",
                  AppName="default")


def test_s3_calls_are_authorized_by_policy(iam_server, admin_iam, users):
    """S3 goes through the same policy evaluation: dave may read and write only under
    shared/dave/, list the bucket, and nothing else; carol (no policy) may do nothing."""
    s3cfg = {"s3": {"addressing_style": "path"}}
    admin_s3 = iam_server.client("s3", **s3cfg)
    admin_s3.create_bucket(Bucket="shared")
    admin_s3.put_object(Bucket="shared", Key="dave/mine.txt", Body=b"mine")
    admin_s3.put_object(Bucket="shared", Key="erin/theirs.txt", Body=b"theirs")
    admin_iam.create_user(UserName="dave")
    k = admin_iam.create_access_key(UserName="dave")["AccessKey"]
    dave_keys = (k["AccessKeyId"], k["SecretAccessKey"])
    admin_iam.put_user_policy(UserName="dave", PolicyName="own-prefix", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
             "Resource": "arn:aws:s3:::shared/${aws:username}/*"},
            {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::shared"}]}))
    dave = iam_server.client("s3", keys=dave_keys, **s3cfg)
    carol = iam_server.client("s3", keys=users["carol"], **s3cfg)

    assert dave.get_object(Bucket="shared", Key="dave/mine.txt")["Body"].read() == b"mine"
    dave.put_object(Bucket="shared", Key="dave/new.txt", Body=b"new")
    keys = [o["Key"] for o in dave.list_objects_v2(Bucket="shared")["Contents"]]
    assert keys == ["dave/mine.txt", "dave/new.txt", "erin/theirs.txt"]

    def refused(fn, **kw):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            fn(**kw)
        assert e.value.response["Error"]["Code"] == "AccessDenied", e.value.response
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403

    refused(dave.get_object, Bucket="shared", Key="erin/theirs.txt")
    refused(dave.put_object, Bucket="shared", Key="erin/overwrite.txt", Body=b"x")
    refused(dave.delete_object, Bucket="shared", Key="dave/mine.txt")
    refused(dave.list_buckets)
    refused(dave.create_bucket, Bucket="daves-own")
    refused(carol.list_objects_v2, Bucket="shared")
    refused(carol.get_object, Bucket="shared", Key="dave/mine.txt")
    # a copy reads its source: dave may write under dave/ but not read erin's object that way
    refused(dave.copy_object, Bucket="shared", Key="dave/stolen.txt",
            CopySource={"Bucket": "shared", "Key": "erin/theirs.txt"})
    mpu = dave.create_multipart_upload(Bucket="shared", Key="dave/stolen-part.txt")
    refused(dave.upload_part_copy, Bucket="shared", Key="dave/stolen-part.txt", PartNumber=1,
            UploadId=mpu["UploadId"], CopySource={"Bucket": "shared", "Key": "erin/theirs.txt"})
    admin_s3.abort_multipart_upload(Bucket="shared", Key="dave/stolen-part.txt",
                                    UploadId=mpu["UploadId"])
    dave.copy_object(Bucket="shared", Key="dave/copy.txt",
                     CopySource={"Bucket": "shared", "Key": "dave/mine.txt"})
    # nothing a refused call sent was stored
    keys = [o["Key"] for o in admin_s3.list_objects_v2(Bucket="shared")["Contents"]]
    assert keys == ["dave/copy.txt", "dave/mine.txt", "dave/new.txt", "erin/theirs.txt"]
    assert "daves-own" not in [b["Name"] for b in admin_s3.list_buckets()["Buckets"]]
