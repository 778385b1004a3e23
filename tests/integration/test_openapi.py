"""openapi/openapi.yaml documents the REST alias for every operation the server serves, and
agrees with what the server accepts and returns (every SageMaker response in this suite is also
validated against it by the autouse fixture in conftest.py)."""
import json
import os

import pytest

import tyhelpers as H

OPS = ["CreateTrainingJob", "DescribeTrainingJob", "ListTrainingJobs", "StopTrainingJob",
       "UpdateTrainingJob", "DeleteTrainingJob", "AddTags", "ListTags", "DeleteTags"]
DOC = os.path.join(H.REPO, "openapi", "openapi.yaml")


@pytest.fixture(scope="module")
def doc():
    assert os.path.exists(DOC), f"{DOC} is missing"
    import yaml
    with open(DOC) as f:
        d = yaml.safe_load(f)
    assert str(d.get("openapi", "")).startswith("3."), d.get("openapi")
    return d


def _request_schema(doc, op):
    post = doc["paths"][f"/sagemaker/{op}"]["post"]
    body = post["requestBody"]
    v = H.RESPONSE_VALIDATOR
    if "$ref" in body:
        body = v._ref(body["$ref"])
    for ct, media in body["content"].items():
        if "json" in ct:
            return media["schema"]
    raise AssertionError(f"no JSON request body for {op}")


def _validate(doc, schema, value):
    v = H.ResponseValidator.__new__(H.ResponseValidator)
    v.openapi = doc
    errs = []
    v._validate_schema(schema, value, "$", errs, 0)
    return errs


def test_every_operation_documented(doc):
    missing = [op for op in OPS if f"/sagemaker/{op}" not in doc.get("paths", {})
               or "post" not in doc["paths"][f"/sagemaker/{op}"]]
    assert not missing, missing
    for op in OPS:
        responses = doc["paths"][f"/sagemaker/{op}"]["post"].get("responses", {})
        assert "200" in responses or 200 in responses, op


def test_documented_request_schema_matches_server(doc, server):
    schema = _request_schema(doc, "CreateTrainingJob")
    good = H.job_request("doc-check", "true")
    assert _validate(doc, schema, good) == []
    bad = H.job_request("bad_name!", "true")
    assert _validate(doc, schema, bad), "the document accepts a name the server refuses"
    r = server.call("CreateTrainingJob", bad)
    assert r.status == 400 and r.error_type == "ValidationException"
    missing = dict(good)
    del missing["RoleArn"]
    assert _validate(doc, schema, missing), "the document does not require RoleArn"
    desc = _request_schema(doc, "DescribeTrainingJob")
    assert _validate(doc, desc, {"TrainingJobName": "a" * 64}), "length 64 accepted by the document"


def test_describe_response_documented(doc, sm, fleet_job):
    """A real Describe of a finished job validates (and the check is not vacuous: a copy with a
    required member removed does not)."""
    name = fleet_job("complete")
    H.wait_job(sm, name, timeout=150)
    r = H.raw_call(sm.meta.endpoint_url, "DescribeTrainingJob", {"TrainingJobName": name},
                   keys=(sm._request_signer._credentials.access_key,
                         sm._request_signer._credentials.secret_key))
    assert r.status == 200, r
    schema = H.RESPONSE_VALIDATOR._openapi_response_schema("DescribeTrainingJob") \
        if H.RESPONSE_VALIDATOR.openapi is not None else None
    if schema is None:
        v = H.ResponseValidator.__new__(H.ResponseValidator)
        v.openapi = doc
        schema = v._openapi_response_schema("DescribeTrainingJob")
    assert schema is not None, "no 200 JSON schema for DescribeTrainingJob"
    assert _validate(doc, schema, r.json) == []
    broken = dict(r.json)
    del broken["TrainingJobArn"]
    assert _validate(doc, schema, broken), "TrainingJobArn is not required by the document"


def test_trainyard_endpoints_documented(doc, server):
    """/healthz and the container credentials endpoint answer as the document says (the 403 of
    an unknown token; test_sessions.py checks a granted token's 200 body against botocore)."""
    import urllib.error
    import urllib.request

    def get(path, headers=None):
        req = urllib.request.Request(server.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    status, health = get("/healthz")
    resp = doc["paths"]["/healthz"]["get"]["responses"][str(status)]
    assert _validate(doc, resp["content"]["application/json"]["schema"], health) == []
    status, body = get("/_trainyard/credentials", {"Authorization": "0" * 64})
    assert status == 403, body
    resp = doc["paths"]["/_trainyard/credentials"]["get"]["responses"]["403"]
    assert _validate(doc, resp["content"]["application/json"]["schema"], body) == []
    ok = doc["components"]["schemas"]["ContainerCredentials"]
    assert _validate(doc, ok, {"AccessKeyId": "ASIA"}), "the document accepts a partial answer"
