"""SigV4 on every request: header and presigned-query auth, and each way it can fail; the
REST alias POST /sagemaker/<Op> as curl --aws-sigv4 sends it."""
import datetime
import json
import subprocess

import pytest

import tyhelpers as H

DESCRIBE = {"TrainingJobName": "no-such-job-sigv4"}


def _signed_ok(r):
    """A correctly signed Describe of an unknown job gets past auth to the API's answer."""
    return r.status == 400 and r.error_type == "ValidationException" \
        and r.message == "Requested resource not found."


def test_signed_request_accepted(server):
    r = server.call("DescribeTrainingJob", DESCRIBE)
    assert _signed_ok(r), r


def test_no_auth(server):
    r = H.raw_call(server.url, "DescribeTrainingJob", DESCRIBE, keys=None)
    assert r.status == 403, r
    assert r.error_type == "MissingAuthenticationTokenException", r


def test_malformed_authorization_is_incomplete_signature(server):
    """A SigV4 header missing its parts is IncompleteSignatureException (400), with AWS's
    message naming each missing parameter, as SageMaker answers it."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", "/", body=json.dumps(DESCRIBE), headers={
            "X-Amz-Target": "SageMaker.DescribeTrainingJob",
            "Content-Type": "application/x-amz-json-1.1",
            "X-Amz-Date": datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ"),
            "Authorization": "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260101/us-east-1/sagemaker/aws4_request"})
        r = conn.getresponse()
        body = json.loads(r.read())
    finally:
        conn.close()
    assert r.status == 400, body
    assert body["__type"].split("#")[-1] == "IncompleteSignatureException", body
    assert "Authorization header requires 'Signature' parameter." in body["message"], body
    assert "Authorization header requires 'SignedHeaders' parameter." in body["message"], body


def test_unknown_access_key(server):
    r = H.raw_call(server.url, "DescribeTrainingJob", DESCRIBE,
                   keys=("AKIAUNKNOWNUNKNOWN00", "whatever-secret"))
    assert r.status == 403, r
    assert r.error_type == "UnrecognizedClientException", r


def test_wrong_secret(server):
    akid, secret = server.credentials()
    r = H.raw_call(server.url, "DescribeTrainingJob", DESCRIBE, keys=(akid, secret + "x"))
    assert r.status == 403, r
    assert r.error_type == "InvalidSignatureException", r


def test_tampered_body(server):
    """The signature covers the body: changing it after signing is refused."""
    akid, secret = server.credentials()
    p = H.build_request(server.url, "DescribeTrainingJob", DESCRIBE, keys=(akid, secret))
    p.body = json.dumps({"TrainingJobName": "other-name-sigv4"}).encode()
    p.headers["Content-Length"] = str(len(p.body))
    r = H.send_prepared(p)
    assert r.status == 403 and r.error_type == "InvalidSignatureException", r


def test_tampered_target(server):
    akid, secret = server.credentials()
    p = H.build_request(server.url, "DescribeTrainingJob", DESCRIBE, keys=(akid, secret))
    p.headers["X-Amz-Target"] = "SageMaker.ListTrainingJobs"
    r = H.send_prepared(p)
    assert r.status == 403 and r.error_type == "InvalidSignatureException", r


def test_old_date(server):
    keys = server.credentials()
    old = datetime.datetime.utcnow() - datetime.timedelta(minutes=20)
    r = H.raw_call(server.url, "DescribeTrainingJob", DESCRIBE, keys=keys, when=old)
    assert r.status == 403, r
    assert r.error_type == "InvalidSignatureException", r
    assert "expired" in (r.message or "").lower(), r
    # 20 minutes in the future is refused too; 5 minutes either way is within the window
    future = datetime.datetime.utcnow() + datetime.timedelta(minutes=20)
    r = H.raw_call(server.url, "DescribeTrainingJob", DESCRIBE, keys=keys, when=future)
    assert r.status == 403 and r.error_type == "InvalidSignatureException", r
    for minutes in (-5, 5):
        when = datetime.datetime.utcnow() + datetime.timedelta(minutes=minutes)
        r = H.raw_call(server.url, "DescribeTrainingJob", DESCRIBE, keys=keys, when=when)
        assert _signed_ok(r), (minutes, r)


def test_presigned_query(server):
    keys = server.credentials()
    p = H.build_request(server.url, "DescribeTrainingJob", DESCRIBE, keys=keys, auth="query")
    assert "X-Amz-Signature=" in p.url and "Authorization" not in p.headers
    r = H.send_prepared(p)
    assert _signed_ok(r), r
    # a tampered presigned signature is refused
    p2 = H.build_request(server.url, "DescribeTrainingJob", DESCRIBE, keys=keys, auth="query")
    p2.url = p2.url[:-1] + ("0" if p2.url[-1] != "0" else "1")
    r = H.send_prepared(p2)
    assert r.status == 403 and r.error_type == "InvalidSignatureException", r


def test_presigned_query_wrong_secret(server):
    akid, secret = server.credentials()
    p = H.build_request(server.url, "DescribeTrainingJob", DESCRIBE, keys=(akid, secret + "x"),
                        auth="query")
    r = H.send_prepared(p)
    assert r.status == 403 and r.error_type == "InvalidSignatureException", r


def test_healthz_needs_no_auth(server):
    status, body = server.healthz()
    assert status == 200, body
    assert json.loads(body)["status"] in ("ok", "degraded")


def _curl(server, op, body, keys=None, region="us-east-1"):
    akid, secret = keys or server.credentials()
    p = subprocess.run(
        ["curl", "-sS", "--aws-sigv4", f"aws:amz:{region}:sagemaker", "-u", f"{akid}:{secret}",
         "-H", "Content-Type: application/json", "-d", json.dumps(body),
         "-o", "-", "-w", "\n%{http_code}", f"{server.url}/sagemaker/{op}"],
        capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    text, _, code = p.stdout.rpartition("\n")
    return int(code), (json.loads(text) if text.strip() else None)


def test_rest_alias_with_curl(server, sm, fleet_job):
    name = fleet_job("complete")
    code, body = _curl(server, "DescribeTrainingJob", {"TrainingJobName": name})
    assert code == 200, body
    assert body["TrainingJobName"] == name
    assert body["TrainingJobArn"] == f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{name}"
    assert isinstance(body["CreationTime"], (int, float)), "timestamps are epoch seconds"
    H.RESPONSE_VALIDATOR.check("DescribeTrainingJob", body)
    code, body = _curl(server, "ListTrainingJobs", {"NameContains": name})
    assert code == 200, body
    assert [s["TrainingJobName"] for s in body["TrainingJobSummaries"]] == [name]
    H.RESPONSE_VALIDATOR.check("ListTrainingJobs", body)


def test_rest_alias_create_and_errors(server, sm):
    name = H.unique("curl")
    code, body = _curl(server, "CreateTrainingJob", H.job_request(name, "true"))
    assert code == 200, body
    assert body == {"TrainingJobArn": f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{name}"}
    assert sm.describe_training_job(TrainingJobName=name)["TrainingJobName"] == name
    code, body = _curl(server, "DescribeTrainingJob", {"TrainingJobName": "no-such-job-curl"})
    assert code == 400 and body["__type"].split("#")[-1] == "ValidationException", body
    assert body["message"] == "Requested resource not found."
    akid, secret = server.credentials()
    code, body = _curl(server, "DescribeTrainingJob", {"TrainingJobName": name},
                       keys=(akid, secret + "x"))
    assert code == 403 and body["__type"].split("#")[-1] == "InvalidSignatureException", body
    # the REST route refuses a scope of another region too (test_region.py)
    code, body = _curl(server, "DescribeTrainingJob", {"TrainingJobName": name}, region="ap-south-1")
    assert code == 403 and body["__type"].split("#")[-1] == "InvalidSignatureException", body
    assert body["message"] == "Credential should be scoped to a valid region. ", body


def test_rest_alias_needs_auth(server):
    p = subprocess.run(["curl", "-sS", "-H", "Content-Type: application/json", "-d", "{}",
                        "-o", "-", "-w", "\n%{http_code}", f"{server.url}/sagemaker/ListTrainingJobs"],
                       capture_output=True, text=True, timeout=30)
    text, _, code = p.stdout.rpartition("\n")
    assert code == "403", p.stdout
    assert json.loads(text)["__type"].split("#")[-1] == "MissingAuthenticationTokenException"


@pytest.mark.parametrize("path", ["/sagemaker/NoSuchOperation"])
def test_rest_alias_unknown_operation(server, path):
    keys = server.credentials()
    r = H.send_prepared(H.build_request(server.url, "NoSuchOperation", {}, keys=keys, path=path,
                                        target=False))
    assert r.status in (400, 404), r
