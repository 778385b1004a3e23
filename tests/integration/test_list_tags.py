"""ListTrainingJobs (filters, sorting, paging), tags, and ARNs."""
import datetime
import math
import time

import pytest
from botocore.exceptions import ClientError

import tyhelpers as H


@pytest.fixture(scope="module")
def listed(sm):
    """Five jobs sharing a token in their names, created in three different seconds (request
    timestamps are whole epoch seconds), two of them failing. Returns (token, names in creation
    order, the whole seconds that separate the groups)."""
    token = H.unique("lst").replace("-", "")[-16:]
    names, cuts = [], []
    plan = [("c", "true"), ("a", "exit 4"), ("e", "true"), ("b", "true"), ("d", "exit 5")]
    groups = [[0, 1], [2, 3], [4]]
    for gi, group in enumerate(groups):
        if gi:
            # the next group starts in a later whole second than everything created so far
            last = sm.describe_training_job(TrainingJobName=names[-1])["CreationTime"].timestamp()
            cut = math.floor(last) + 1
            cuts.append(cut)
            H.wait_for(lambda cut=cut: time.time() > cut + 0.05, 3, "the next second")
        for i in group:
            letter, script = plan[i]
            n = f"{letter}-{token}-{i}"
            sm.create_training_job(**H.job_request(n, script))
            names.append(n)
    for n in names:
        H.wait_job(sm, n, timeout=180)
    return token, names, cuts


def _names(r):
    return [s["TrainingJobName"] for s in r["TrainingJobSummaries"]]


def test_list_summaries(sm, listed):
    token, names, _ = listed
    r = sm.list_training_jobs(NameContains=token)
    assert sorted(_names(r)) == sorted(names)
    assert "NextToken" not in r
    for s in r["TrainingJobSummaries"]:
        assert s["TrainingJobArn"] == \
            f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{s['TrainingJobName']}"
        assert isinstance(s["CreationTime"], datetime.datetime)
        assert isinstance(s["LastModifiedTime"], datetime.datetime)
        assert s["TrainingJobStatus"] in ("Completed", "Failed"), s
        assert isinstance(s["TrainingEndTime"], datetime.datetime), s


def test_list_default_sort_is_creation_time_descending(sm, listed):
    token, names, _ = listed
    assert _names(sm.list_training_jobs(NameContains=token)) == list(reversed(names))
    assert _names(sm.list_training_jobs(NameContains=token, SortBy="CreationTime",
                                        SortOrder="Ascending")) == names


def test_list_sort_by_name_and_status(sm, listed):
    token, names, _ = listed
    assert _names(sm.list_training_jobs(NameContains=token, SortBy="Name",
                                        SortOrder="Ascending")) == sorted(names)
    assert _names(sm.list_training_jobs(NameContains=token, SortBy="Name",
                                        SortOrder="Descending")) == sorted(names, reverse=True)
    st = sm.list_training_jobs(NameContains=token, SortBy="Status", SortOrder="Ascending")
    statuses = [s["TrainingJobStatus"] for s in st["TrainingJobSummaries"]]
    assert statuses == sorted(statuses), statuses
    assert statuses.count("Failed") == 2 and statuses.count("Completed") == 3


def test_list_status_equals(sm, listed):
    token, names, _ = listed
    failed = _names(sm.list_training_jobs(NameContains=token, StatusEquals="Failed"))
    assert sorted(failed) == sorted([names[1], names[4]])
    completed = _names(sm.list_training_jobs(NameContains=token, StatusEquals="Completed"))
    assert sorted(completed) == sorted([names[0], names[2], names[3]])
    assert _names(sm.list_training_jobs(NameContains=token, StatusEquals="Stopped")) == []


def test_list_creation_time_filters(sm, listed):
    token, names, cuts = listed
    after = _names(sm.list_training_jobs(NameContains=token, CreationTimeAfter=cuts[0]))
    assert sorted(after) == sorted(names[2:])
    before = _names(sm.list_training_jobs(NameContains=token, CreationTimeBefore=cuts[1]))
    assert sorted(before) == sorted(names[:4])
    both = _names(sm.list_training_jobs(NameContains=token, CreationTimeAfter=cuts[0],
                                        CreationTimeBefore=cuts[1]))
    assert sorted(both) == sorted(names[2:4])
    future = _names(sm.list_training_jobs(NameContains=token,
                                          CreationTimeAfter=time.time() + 3600))
    assert future == []


def test_list_last_modified_filters(sm, listed):
    token, names, _ = listed
    r = sm.list_training_jobs(NameContains=token,
                              LastModifiedTimeAfter=time.time() + 3600)
    assert _names(r) == []
    r = sm.list_training_jobs(NameContains=token, LastModifiedTimeBefore=time.time() + 60)
    assert sorted(_names(r)) == sorted(names)


def test_list_paging(sm, listed):
    token, names, _ = listed
    pages, kw = [], dict(NameContains=token, MaxResults=2, SortBy="Name", SortOrder="Ascending")
    for _ in range(10):
        r = sm.list_training_jobs(**kw)
        pages.append(_names(r))
        if "NextToken" not in r:
            break
        kw["NextToken"] = r["NextToken"]
    assert pages == [sorted(names)[0:2], sorted(names)[2:4], sorted(names)[4:5]], pages
    # botocore's paginator gives the same
    got = []
    for page in sm.get_paginator("list_training_jobs").paginate(
            NameContains=token, PaginationConfig={"PageSize": 3}):
        got += _names(page)
    assert sorted(got) == sorted(names) and len(got) == len(set(got))


def test_list_bad_next_token(sm):
    with pytest.raises(ClientError) as ei:
        sm.list_training_jobs(NextToken="garbage-token-!!")
    assert ei.value.response["Error"]["Code"] == "ValidationException"


def test_list_name_contains_no_match(sm):
    assert sm.list_training_jobs(NameContains="zz-nothing-has-this-name-zz")["TrainingJobSummaries"] == []


def test_tags(sm, fleet_job):
    name = fleet_job("complete")
    arn = sm.describe_training_job(TrainingJobName=name)["TrainingJobArn"]
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "ml"}]
    r = sm.add_tags(ResourceArn=arn, Tags=[{"Key": "env", "Value": "test"},
                                           {"Key": "team", "Value": "research"}])
    assert {(t["Key"], t["Value"]) for t in r["Tags"]} >= {("env", "test"), ("team", "research")}
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}
    assert tags == {"team": "research", "env": "test"}
    sm.delete_tags(ResourceArn=arn, TagKeys=["team", "not-there"])
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "env", "Value": "test"}]
    sm.delete_tags(ResourceArn=arn, TagKeys=["env"])
    assert sm.list_tags(ResourceArn=arn)["Tags"] == []


def test_tags_validation(sm_noval, fleet_job):
    arn = f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{fleet_job('complete')}"
    with pytest.raises(ClientError) as ei:
        sm_noval.add_tags(ResourceArn=arn, Tags=[{"Key": "", "Value": "x"}])
    e = ei.value.response["Error"]
    assert e["Code"] == "ValidationException"
    assert "at 'tags.1.member.key' failed to satisfy constraint: Member must have length " \
           "greater than or equal to 1" in e["Message"], e["Message"]


def test_arn_uses_served_region(make_server):
    """ARNs name the region the server serves (--region), never the request's."""
    s = make_server(agents=0, extra=["--region", "eu-west-1"])
    eu = s.client("sagemaker")
    name = H.unique("eu")
    r = eu.create_training_job(**H.job_request(name, "true"))
    assert r["TrainingJobArn"] == f"arn:aws:sagemaker:eu-west-1:000000000000:training-job/{name}"
    assert eu.describe_training_job(TrainingJobName=name)["TrainingJobArn"] == r["TrainingJobArn"]
