"""A profiled job's system-metrics feed (<job page>/system.json, console_sysmon.c), without an
agent: the system-metrics files are put where the agent uploads them while a job runs
(<S3OutputPath>/<job>/profiler-output/system/incremental/<YYYYMMDDHH>/<epoch>.algo-1.json,
SageMaker's JSON lines), and the signed-in user's feed folds them into the series the charts
draw; a job without profiling says so; a user without S3 rights gets AWS's AccessDenied; a
torn last line and another node's lines are left out. (The agent's uploads while a job runs and
the charts themselves are the browser test's.)

One private server without agents; users con-sm-*, bucket con-sm-bucket.
"""
import http.cookiejar
import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pytest

import tyhelpers as H

BUCKET = "con-sm-bucket"


@pytest.fixture(scope="module")
def srv(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "console-sysmon"), agents=0)
    s.start()
    yield s
    rc = s.stop(timeout=60)
    assert rc == 0, f"server exited with {rc} on SIGTERM:\n{s.proc.tail()}"


def signed_in(srv, name, password):
    jar = http.cookiejar.CookieJar()
    op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    body = urllib.parse.urlencode({"account": "000000000000", "username": name,
                                   "password": password}).encode()
    op.open(urllib.request.Request(srv.url + "/console/login", data=body), timeout=30).read()
    assert any(c.name == "ty_console" for c in jar)
    return op


def feed(op, url):
    try:
        r = op.open(url, timeout=30)
        return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def line(t, typ, name, dim, value, node="algo-1"):
    return json.dumps({"Type": typ, "Name": name, "Dimension": dim, "Value": value,
                       "NodeId": node, "Timestamp": t}) + "\n"


def test_system_metrics_feed(srv):
    admin = srv.client("iam")
    full = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["sagemaker:*", "s3:*", "iam:PassRole"], "Resource": "*"}]}
    jobs_only = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "sagemaker:*", "Resource": "*"}]}
    for name, pol in (("con-sm-a", full), ("con-sm-b", jobs_only)):
        admin.create_user(UserName=name)
        admin.create_login_profile(UserName=name, Password="Con-sm-Passw0rd")
        admin.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(pol))
    sm = srv.client("sagemaker")
    s3 = srv.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    prof = H.unique("con-sm-prof")
    plain = H.unique("con-sm-plain")
    sm.create_training_job(**H.job_request(
        prof, "true", output=f"s3://{BUCKET}/out",
        ProfilerConfig={"S3OutputPath": f"s3://{BUCKET}/prof/",
                        "ProfilingIntervalInMilliseconds": 500}))
    sm.create_training_job(**H.job_request(plain, "true", output=f"s3://{BUCKET}/out"))
    base = f"prof/{prof}/profiler-output/system/incremental"
    # two minutes' files in two hours; two samples each; the last one torn
    f1 = (line(7199.5, "cpu", "cpu0", "CPUUtilization", 10) +
          line(7199.5, "cpu", "cpu1", "CPUUtilization", 30) +
          line(7199.5, "cpu", "cpu_iowait", "IOWait", 90) +
          line(7199.5, "memory", "MemoryUsedPercent", "Memory", 40) +
          line(7199.5, "network", "net", "ReceiveBytesPerSecond", 1000) +
          line(7199.5, "network", "net", "TransmitBytesPerSecond", 500) +
          line(7199.5, "cpu", "cpu0", "CPUUtilization", 99, node="algo-2"))
    f2 = (line(7200.0, "cpu", "cpu0", "CPUUtilization", 50) +
          line(7200.0, "gpu", "gpu0", "GPUUtilization", 80) +
          line(7200.0, "gpu", "gpu0", "GPUMemoryUtilization", 25) +
          '{"Type":"cpu","Name":"cpu0","Dimen')
    s3.put_object(Bucket=BUCKET, Key=f"{base}/1970010101/7140.algo-1.json", Body=f1.encode())
    s3.put_object(Bucket=BUCKET, Key=f"{base}/1970010102/7200.algo-1.json", Body=f2.encode())

    a = signed_in(srv, "con-sm-a", "Con-sm-Passw0rd")
    status, j = feed(a, f"{srv.url}/console/jobs/{prof}/system.json")
    assert status == 200, j
    assert j["enabled"] is True
    assert j["t"] == [7199.5, 7200.0]
    assert j["cpu"] == [20.0, 50.0]
    assert j["mem"] == [40.0, None]
    assert (j["rx"], j["tx"]) == ([1000.0, None], [500.0, None])
    assert (j["gpu"], j["gpumem"], j["gpus"]) == ([None, 80.0], [None, 25.0], 1)
    # the job page carries the charts' box
    page = a.open(f"{srv.url}/console/jobs/{prof}", timeout=30).read().decode()
    assert f'data-feed="/console/jobs/{prof}/system.json"' in page
    # no profiling: said so
    status, j = feed(a, f"{srv.url}/console/jobs/{plain}/system.json")
    assert (status, j) == (200, {"enabled": False})
    # a user who may see the job but not read S3
    b = signed_in(srv, "con-sm-b", "Con-sm-Passw0rd")
    status, j = feed(b, f"{srv.url}/console/jobs/{prof}/system.json")
    assert status == 403 and j["__type"] == "AccessDenied", j
    assert "is not authorized to perform: s3:ListBucket" in j["message"]
