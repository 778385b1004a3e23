"""Fair share between principals (issue 23, the fair-share step; docs/resources.md): agents take
waiting jobs in fair-share order, not first come first served:
- the principal whose running jobs hold the least dominant share of the agents' GPUs, vCPUs and
  memory goes first, and among equals the one whose last turn is the oldest, then the oldest
  job;
- so one user's backlog delays another user's first job by at most one job's turn;
- who a job belongs to is the SigV4-verified caller, never something the request says.
The agent here declares room for one ml.m5.large (2 vCPUs, 8 GiB) at a time. Job names fs-*.
"""
import json
import os
import time

import pytest

import tyhelpers as H


@pytest.fixture(scope="module")
def srv(workdir):
    s = H.Server(os.path.join(workdir, "fair"), agents=1,
                 extra=["--cpus", "2", "--memory", "8G", "--stop-grace", "2",
                        "--job-volumes", "none"])
    s.start()
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()


def _user(srv, name):
    iam = srv.client("iam")
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName="jobs", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["sagemaker:*", "iam:PassRole"],
                       "Resource": "*"}]}))
    k = iam.create_access_key(UserName=name)["AccessKey"]
    return k["AccessKeyId"], k["SecretAccessKey"]


@pytest.fixture(scope="module")
def users(srv):
    tag = os.getpid() % 100000
    keys = {who: _user(srv, f"fs-{who}-{tag}") for who in ("alice", "bob")}
    time.sleep(1.1)  # the policy cache
    return {who: srv.client(keys=k) for who, k in keys.items()}, keys


def _started(sm, name):
    d = sm.describe_training_job(TrainingJobName=name)
    assert d["TrainingJobStatus"] == "Completed", (name, d.get("FailureReason"))
    starting = [t for t in d["SecondaryStatusTransitions"] if t["Status"] == "Starting"]
    return starting[0]["EndTime"]


def test_one_users_backlog_delays_anothers_first_job_by_one_turn(srv, users):
    (clients, _) = users
    alice, bob = clients["alice"], clients["bob"]
    first = H.unique("fs-a1")
    alice.create_training_job(**H.job_request(first, "sleep 4"))
    H.wait_job(alice, first, statuses=("InProgress",), secondary=("Training",), timeout=120)
    # alice's backlog, queued before bob's first job
    backlog = [H.unique(f"fs-a{i}") for i in range(2, 6)]
    for name in backlog:
        alice.create_training_job(**H.job_request(name, "echo backlog"))
    time.sleep(0.2)
    bobs = H.unique("fs-b1")
    bob.create_training_job(**H.job_request(bobs, "echo first"))
    for name in [first] + backlog + [bobs]:
        H.wait_job(alice if name != bobs else bob, name, timeout=180)
    order = sorted([first] + backlog + [bobs],
                   key=lambda n: _started(bob if n == bobs else alice, n))
    # bob's first job went right after the job alice was running; her backlog after it, in age
    assert order == [first, bobs] + backlog, order


def test_a_job_belongs_to_its_signer_not_to_what_it_says(srv, users):
    """A hostile alice cannot pass her job off as bob's (and so take his turns): a _principal
    member in the request is no member of CreateTrainingJob. The job counts as hers (the
    agents' holding in /healthz says whose each running job is), and Describe never shows it."""
    (clients, keys) = users
    alice = clients["alice"]
    iam = srv.client("iam")
    tag = os.getpid() % 100000
    alice_arn = iam.get_user(UserName=f"fs-alice-{tag}")["User"]["Arn"]
    bob_arn = iam.get_user(UserName=f"fs-bob-{tag}")["User"]["Arn"]
    name = H.unique("fs-claim")
    body = H.job_request(name, "sleep 3")
    body["_principal"] = bob_arn
    r = H.raw_call(srv.url, "CreateTrainingJob", body, keys=keys["alice"])
    assert r.status == 200, r

    def holder():
        for a in json.loads(srv.healthz()[1])["agents"]:
            for h in a["holding"]:
                if h["job"] == name:
                    return h["principal"]
        return None
    assert H.wait_for(holder, 60, f"{name} held") == alice_arn
    d = H.wait_job(alice, name, timeout=120)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert "_principal" not in d
    raw = H.raw_call(srv.url, "DescribeTrainingJob", {"TrainingJobName": name},
                     keys=keys["alice"])
    assert raw.status == 200 and b"_principal" not in raw.body and b"fs-bob" not in raw.body, raw
    assert b"fs-alice" not in raw.body, raw


QUOTA_TAG = "trainyard:max-training-instances"


def test_a_principals_quota_is_its_iam_tag_and_only_an_admin_sets_it(srv):
    """Per-principal quotas (ops/include/quota.h): the admin tags an IAM user (or a role, for
    each of its sessions) with trainyard:max-training-instances; over it, CreateTrainingJob is
    refused ResourceLimitExceeded. The user cannot raise his own: tagging is IAM's TagUser."""
    iam = srv.client("iam")
    name = f"fs-carol-{os.getpid() % 100000}"
    keys = _user(srv, name)
    iam.tag_user(UserName=name, Tags=[{"Key": QUOTA_TAG, "Value": "1"}])
    time.sleep(1.1)  # the policy cache
    carol = srv.client(keys=keys)
    first, second = H.unique("fs-q1"), H.unique("fs-q2")
    carol.create_training_job(**H.job_request(first, "sleep 60"))
    with pytest.raises(carol.exceptions.ResourceLimitExceeded) as e:
        carol.create_training_job(**H.job_request(second, "echo second"))
    msg = e.value.response["Error"]["Message"]
    assert "The principal-level limit 'training instances in progress for arn:aws:iam::" in msg
    assert f":user/{name}' is 1 Instances, with current utilization of 1 Instances" in msg, msg

    # the hostile user raises his own quota: IAM refuses, as his policy allows no iam:Tag*
    mine = srv.client("iam", keys=keys)
    for call in (lambda: mine.tag_user(UserName=name, Tags=[{"Key": QUOTA_TAG, "Value": "99"}]),
                 lambda: mine.untag_user(UserName=name, TagKeys=[QUOTA_TAG])):
        with pytest.raises(mine.exceptions.ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "AccessDenied", e.value.response
    # ... nor does a SageMaker tag of the same key on his own job count for anything
    carol.add_tags(ResourceArn=carol.describe_training_job(TrainingJobName=first)["TrainingJobArn"],
                   Tags=[{"Key": QUOTA_TAG, "Value": "99"}])
    with pytest.raises(carol.exceptions.ResourceLimitExceeded):
        carol.create_training_job(**H.job_request(second, "echo second"))

    # the value is a number, or the tag is refused
    with pytest.raises(iam.exceptions.ClientError) as e:
        iam.tag_user(UserName=name, Tags=[{"Key": QUOTA_TAG, "Value": "lots"}])
    assert e.value.response["Error"]["Code"] == "ValidationError", e.value.response
    # the admin raises it: the second job is accepted at once
    iam.tag_user(UserName=name, Tags=[{"Key": QUOTA_TAG, "Value": "2"}])
    carol.create_training_job(**H.job_request(second, "echo second"))
    carol.stop_training_job(TrainingJobName=first)
    assert H.wait_job(carol, first, timeout=120)["TrainingJobStatus"] == "Stopped"
    assert H.wait_job(carol, second, timeout=120)["TrainingJobStatus"] == "Completed"


def test_role_tags_are_served(srv):
    """TagRole, ListRoleTags and UntagRole: a role's quota tag applies to each of its sessions."""
    iam = srv.client("iam")
    role = f"fs-runner-{os.getpid() % 100000}"
    iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
                       "Action": "sts:AssumeRole"}]}))
    iam.tag_role(RoleName=role, Tags=[{"Key": QUOTA_TAG, "Value": "3"}, {"Key": "team", "Value": "a"}])
    tags = {t["Key"]: t["Value"] for t in iam.list_role_tags(RoleName=role)["Tags"]}
    assert tags == {QUOTA_TAG: "3", "team": "a"}, tags
    iam.untag_role(RoleName=role, TagKeys=["team"])
    assert iam.list_role_tags(RoleName=role)["Tags"] == [{"Key": QUOTA_TAG, "Value": "3"}]
    with pytest.raises(iam.exceptions.ClientError) as e:
        iam.tag_role(RoleName=role, Tags=[{"Key": QUOTA_TAG, "Value": "-1"}])
    assert e.value.response["Error"]["Code"] == "ValidationError", e.value.response
    with pytest.raises(iam.exceptions.NoSuchEntityException):
        iam.tag_role(RoleName=role + "-none", Tags=[{"Key": "a", "Value": "b"}])
    iam.delete_role(RoleName=role)
