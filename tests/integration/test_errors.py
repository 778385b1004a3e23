"""Every error case of the training-job API, with AWS's codes and exact wording."""
import json
import os
import re

import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

NAME_PATTERN = "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"


def _err(call, *a, **kw):
    with pytest.raises(ClientError) as ei:
        call(*a, **kw)
    e = ei.value.response
    return e["Error"]["Code"], e["Error"].get("Message"), e["ResponseMetadata"]["HTTPStatusCode"]


def _model_enum(shape, fallback):
    """The enum of a shape in the committed service model (api/sagemaker.json), else fallback."""
    p = os.path.join(H.REPO, "api", "sagemaker.json")
    if os.path.exists(p):
        with open(p) as f:
            shapes = json.load(f).get("shapes", {})
        if shape in shapes and "enum" in shapes[shape]:
            return shapes[shape]["enum"]
    return fallback


@pytest.fixture(scope="module")
def running_job(sm):
    """A job that stays InProgress while the module's tests use it; stopped at the end."""
    name = H.unique("long")
    sm.create_training_job(**H.job_request(name, "echo started; sleep 300"))
    yield name
    try:
        sm.stop_training_job(TrainingJobName=name)
    except ClientError:
        pass


@pytest.fixture(scope="module")
def done_job(sm):
    name = H.unique("done")
    sm.create_training_job(**H.job_request(name, "echo hi"))
    return name


def test_duplicate_name_is_resource_in_use(sm, done_job):
    code, msg, status = _err(sm.create_training_job, **H.job_request(done_job, "true"))
    assert (code, status) == ("ResourceInUse", 400), msg
    assert f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{done_job}" in msg, msg
    # botocore maps it to the modelled exception class
    with pytest.raises(sm.exceptions.ResourceInUse):
        sm.create_training_job(**H.job_request(done_job, "true"))


def test_describe_unknown_job(server, sm):
    code, msg, status = _err(sm.describe_training_job, TrainingJobName="no-such-job-anywhere")
    assert (code, msg, status) == ("ValidationException", "Requested resource not found.", 400)
    # on the wire: __type in the body and x-amzn-ErrorType as a header, JSON 1.1 content type
    r = server.call("DescribeTrainingJob", {"TrainingJobName": "no-such-job-anywhere"})
    assert r.status == 400 and r.error_type == "ValidationException", r
    assert r.headers.get("x-amzn-errortype", "").split(":")[0] == "ValidationException", r.headers
    assert "json" in r.headers.get("content-type", ""), r.headers
    assert r.headers.get("x-amzn-requestid"), r.headers


def test_stop_completed_job(sm, done_job):
    d = H.wait_job(sm, done_job, timeout=150)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    code, msg, status = _err(sm.stop_training_job, TrainingJobName=done_job)
    assert (code, status) == ("ValidationException", 400), msg
    assert sm.describe_training_job(TrainingJobName=done_job)["TrainingJobStatus"] == "Completed"


def test_name_pattern(sm_noval):
    code, msg, _ = _err(sm_noval.create_training_job, **H.job_request("bad_name!", "true"))
    assert code == "ValidationException"
    assert msg == ("1 validation error detected: Value 'bad_name!' at 'trainingJobName' failed to "
                   f"satisfy constraint: Member must satisfy regular expression pattern: {NAME_PATTERN}")
    code, msg, _ = _err(sm_noval.describe_training_job, TrainingJobName="bad_name!")
    assert code == "ValidationException" and msg.endswith(NAME_PATTERN), msg


def test_name_length(sm_noval):
    long = "a" * 64
    code, msg, _ = _err(sm_noval.create_training_job, **H.job_request(long, "true"))
    assert code == "ValidationException"
    assert re.match(r"^\d+ validation errors? detected: ", msg), msg
    assert (f"Value '{long}' at 'trainingJobName' failed to satisfy constraint: "
            "Member must have length less than or equal to 63") in msg, msg
    # 63 is fine (and the name is then taken)
    ok = (H.unique("n").replace("-", "") + "a" * 63)[:63]
    assert len(ok) == 63
    sm_noval.create_training_job(**H.job_request(ok, "true"))


def test_range(sm_noval):
    code, msg, _ = _err(sm_noval.list_training_jobs, MaxResults=101)
    assert (code, msg) == ("ValidationException",
                           "1 validation error detected: Value '101' at 'maxResults' failed to "
                           "satisfy constraint: Member must have value less than or equal to 100")
    req = H.job_request(H.unique("range"), "true", StoppingCondition={"MaxRuntimeInSeconds": 0})
    code, msg, _ = _err(sm_noval.create_training_job, **req)
    assert (code, msg) == ("ValidationException",
                           "1 validation error detected: Value '0' at 'stoppingCondition.maxRuntimeInSeconds' "
                           "failed to satisfy constraint: Member must have value greater than or equal to 1")


def test_enum(sm_noval):
    code, msg, _ = _err(sm_noval.list_training_jobs, StatusEquals="Running")
    assert code == "ValidationException"
    prefix = ("1 validation error detected: Value 'Running' at 'statusEquals' failed to satisfy "
              "constraint: Member must satisfy enum value set: [")
    assert msg.startswith(prefix) and msg.endswith("]"), msg
    got = [v.strip() for v in msg[len(prefix):-1].split(",")]
    want = _model_enum("TrainingJobStatus",
                       ["InProgress", "Completed", "Failed", "Stopping", "Stopped"])
    assert sorted(got) == sorted(want), got
    req = H.job_request(H.unique("enum"), "true", ResourceConfig={"InstanceType": "ml.bogus.huge"})
    code, msg, _ = _err(sm_noval.create_training_job, **req)
    assert code == "ValidationException"
    assert msg.startswith("1 validation error detected: Value 'ml.bogus.huge' at "
                          "'resourceConfig.instanceType' failed to satisfy constraint: Member must "
                          "satisfy enum value set: ["), msg


def test_required(sm_noval):
    req = H.job_request(H.unique("req"), "true")
    del req["RoleArn"]
    code, msg, _ = _err(sm_noval.create_training_job, **req)
    assert (code, msg) == ("ValidationException",
                           "1 validation error detected: Value null at 'roleArn' failed to satisfy "
                           "constraint: Member must not be null")


def test_several_errors_joined(sm_noval):
    req = H.job_request("bad_name!", "true", StoppingCondition={"MaxRuntimeInSeconds": 0})
    code, msg, _ = _err(sm_noval.create_training_job, **req)
    assert code == "ValidationException"
    assert msg.startswith("2 validation errors detected: "), msg
    parts = msg[len("2 validation errors detected: "):].split("; ")
    assert len(parts) == 2, msg
    assert any(p.startswith("Value 'bad_name!' at 'trainingJobName'") for p in parts), parts
    assert any(p.startswith("Value '0' at 'stoppingCondition.maxRuntimeInSeconds'") for p in parts), parts


def test_wrong_type(server):
    body = H.job_request(H.unique("type"), "true")
    body["ResourceConfig"]["InstanceCount"] = "one"
    r = server.call("CreateTrainingJob", body)
    assert r.status == 400, r
    assert r.error_type in ("ValidationException", "SerializationException"), r


def test_malformed_json(server):
    r = server.call("DescribeTrainingJob", b"{not json")
    assert r.status == 400, r
    assert r.error_type in ("SerializationException", "ValidationException"), r


def test_unknown_operation(server):
    r = server.call("FlyToTheMoon", {})
    assert r.status == 400, r
    assert r.error_type in ("UnknownOperationException", "InvalidAction"), r


def test_unknown_members_ignored(server, sm):
    # botocore cannot serialize members its model lacks: sent by hand, signed
    name = H.unique("unknown")
    req = H.job_request(name, "true", NotAMember={"x": 1}, AnotherOne="y")
    req["AlgorithmSpecification"]["FutureOption"] = True
    r = server.call("CreateTrainingJob", req)
    assert r.status == 200, r
    assert r.json["TrainingJobArn"].endswith("/" + name)
    d = sm.describe_training_job(TrainingJobName=name)
    assert d["TrainingJobName"] == name
    r = server.call("DescribeTrainingJob", {"TrainingJobName": name, "Extra": [1, 2]})
    assert r.status == 200 and "NotAMember" not in r.json, r


def test_delete_running_job_refused(server, sm, running_job):
    H.wait_job(sm, running_job, statuses=("InProgress",), timeout=60)
    # DeleteTrainingJob is newer than Debian's botocore: sent by hand, signed
    r = server.call("DeleteTrainingJob", {"TrainingJobName": running_job})
    assert r.status == 400, r
    assert r.error_type in ("ValidationException", "ResourceInUse", "ConflictException"), r
    assert sm.describe_training_job(TrainingJobName=running_job)["TrainingJobStatus"] == "InProgress"


def test_delete_terminal_job(server, sm, done_job):
    d = H.wait_job(sm, done_job, timeout=150)
    assert d["TrainingJobStatus"] in H.TERMINAL
    name = H.unique("del")
    sm.create_training_job(**H.job_request(name, "exit 1"))
    H.wait_job(sm, name, timeout=150)
    r = server.call("DeleteTrainingJob", {"TrainingJobName": name})
    assert r.status == 200, r
    code, msg, _ = _err(sm.describe_training_job, TrainingJobName=name)
    assert (code, msg) == ("ValidationException", "Requested resource not found.")
    listed = sm.list_training_jobs(NameContains=name)["TrainingJobSummaries"]
    assert listed == []
    # deleting it again: not found
    r = server.call("DeleteTrainingJob", {"TrainingJobName": name})
    assert r.status == 400 and r.error_type in ("ValidationException", "ResourceNotFound"), r
    # and the name can be used again
    sm.create_training_job(**H.job_request(name, "true"))


def test_update_training_job(server, sm, running_job):
    H.wait_job(sm, running_job, statuses=("InProgress",), timeout=60)
    r = sm.update_training_job(TrainingJobName=running_job,
                               ProfilerConfig={"ProfilingIntervalInMilliseconds": 500})
    assert r["TrainingJobArn"].endswith("/" + running_job)
    d = sm.describe_training_job(TrainingJobName=running_job)
    assert d["ProfilerConfig"]["ProfilingIntervalInMilliseconds"] == 500, d.get("ProfilerConfig")
    code, msg, _ = _err(sm.update_training_job, TrainingJobName="no-such-job-anywhere",
                        ProfilerConfig={"ProfilingIntervalInMilliseconds": 500})
    assert code in ("ValidationException", "ResourceNotFound"), (code, msg)

