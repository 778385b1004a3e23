"""CloudWatch PutMetricData and NextToken pages, in both protocols botocore speaks:
the query protocol (Debian's botocore 1.29) and JSON 1.0 (current botocore; Debian's model with
its protocol switched). ListMetrics pages of 500 metrics, GetMetricData pages of MaxDatapoints
(PartialData, NextToken), PutMetricData's Value, Values/Counts and StatisticValues and its
refusals. No jobs: the series are written through PutMetricData. Namespaces start wp/."""
import json
import os
import time

import botocore.config
import botocore.session
import pytest
from botocore.exceptions import ClientError

import tyhelpers as H


def _json_client(server, tmpdir):
    sess = botocore.session.get_session()
    loader = sess.get_component("data_loader")
    model = loader.load_service_model("cloudwatch", "service-2")
    model["metadata"].update({"protocol": "json", "jsonVersion": "1.0",
                              "targetPrefix": "GraniteServiceVersion20100801"})
    d = os.path.join(tmpdir, "cloudwatch", model["metadata"]["apiVersion"])
    os.makedirs(d)
    with open(os.path.join(d, "service-2.json"), "w") as f:
        json.dump(model, f)
    loader.search_paths.insert(0, tmpdir)
    akid, secret = server.credentials()
    return sess.create_client("cloudwatch", endpoint_url=server.url, region_name="us-east-1",
                              aws_access_key_id=akid, aws_secret_access_key=secret,
                              config=botocore.config.Config(retries={"max_attempts": 0}))


@pytest.fixture(params=["query", "json"])
def cw(request, server, tmp_path):
    if request.param == "query":
        return server.client("cloudwatch")
    return _json_client(server, str(tmp_path))


def _code(e):
    return e.value.response["Error"]["Code"]


def test_list_metrics_pages_of_500(cw):
    ns = "wp/" + H.unique("list")
    cw.put_metric_data(Namespace=ns, MetricData=[
        {"MetricName": "m", "Dimensions": [{"Name": "i", "Value": f"{k:04d}"}], "Value": k}
        for k in range(510)])
    r1 = cw.list_metrics(Namespace=ns)
    assert len(r1["Metrics"]) == 500 and r1.get("NextToken")
    r2 = cw.list_metrics(Namespace=ns, NextToken=r1["NextToken"])
    assert len(r2["Metrics"]) == 10 and "NextToken" not in r2
    got = [m["Dimensions"][0]["Value"] for m in r1["Metrics"] + r2["Metrics"]]
    assert sorted(got) == [f"{k:04d}" for k in range(510)]
    pages = list(cw.get_paginator("list_metrics").paginate(Namespace=ns))
    assert [len(p["Metrics"]) for p in pages] == [500, 10]
    with pytest.raises(ClientError) as e:
        cw.list_metrics(Namespace=ns, NextToken="not-a-token")
    assert _code(e) == "InvalidNextToken"


def test_get_metric_data_pages_and_put_forms(cw):
    ns = "wp/" + H.unique("gmd")
    base = (int(time.time()) // 60 - 40) * 60
    cw.put_metric_data(Namespace=ns, MetricData=[
        {"MetricName": name, "Timestamp": base + 60 * k, "Value": float(k + off)}
        for name, off in (("p", 0), ("q", 100)) for k in range(30)])
    queries = [{"Id": i, "MetricStat": {"Metric": {"Namespace": ns, "MetricName": m},
                                        "Period": 60, "Stat": "Sum"}}
               for i, m in (("a", "p"), ("b", "q"))]
    args = dict(MetricDataQueries=queries, StartTime=base, EndTime=base + 1800,
                ScanBy="TimestampAscending", MaxDatapoints=25)
    seen, statuses, token = {"a": [], "b": []}, [], None
    for _ in range(5):
        r = cw.get_metric_data(**args, **({"NextToken": token} if token else {}))
        statuses.append([(x["Id"], x["StatusCode"], len(x["Values"]))
                         for x in r["MetricDataResults"]])
        for x in r["MetricDataResults"]:
            seen[x["Id"]] += x["Values"]
        token = r.get("NextToken")
        if not token:
            break
    assert statuses == [[("a", "PartialData", 25), ("b", "PartialData", 0)],
                        [("a", "Complete", 5), ("b", "PartialData", 20)],
                        [("a", "Complete", 0), ("b", "Complete", 10)]], statuses
    assert seen["a"] == [float(k) for k in range(30)]
    assert seen["b"] == [float(k + 100) for k in range(30)]
    # newest first (the default ScanBy) pages the same points the other way round
    r = cw.get_metric_data(**{**args, "ScanBy": "TimestampDescending"})
    assert r["MetricDataResults"][0]["Values"] == [float(k) for k in range(29, 4, -1)]
    with pytest.raises(ClientError) as e:
        cw.get_metric_data(**args, NextToken="md.zz")
    assert _code(e) == "InvalidNextToken"

    # Values/Counts and StatisticValues keep SampleCount, Sum, Minimum and Maximum
    cw.put_metric_data(Namespace=ns, MetricData=[
        {"MetricName": "v", "Timestamp": base, "Values": [1, 2, 3], "Counts": [1, 1, 2]},
        {"MetricName": "v", "Timestamp": base + 60,
         "StatisticValues": {"SampleCount": 4, "Sum": 10, "Minimum": 1, "Maximum": 4}}])
    r = cw.get_metric_statistics(Namespace=ns, MetricName="v", StartTime=base,
                                 EndTime=base + 120, Period=60,
                                 Statistics=["SampleCount", "Sum", "Minimum", "Maximum"])
    dps = sorted(r["Datapoints"], key=lambda d: d["Timestamp"])
    assert [(d["SampleCount"], d["Sum"], d["Minimum"], d["Maximum"]) for d in dps] == [
        (4, 9, 1, 3), (4, 10, 1, 4)], dps


def test_put_metric_data_refusals(cw):
    ns = "wp/" + H.unique("bad")
    cases = [
        (dict(Namespace="AWS/EC2", MetricData=[{"MetricName": "m", "Value": 1}]),
         "InvalidParameterValue"),
        (dict(Namespace=ns, MetricData=[{"MetricName": "m", "Value": 1,
                                         "Timestamp": time.time() - 15 * 86400}]),
         "InvalidParameterValue"),
        (dict(Namespace=ns, MetricData=[{"MetricName": "m", "Value": 1, "StatisticValues": {
            "SampleCount": 1, "Sum": 1, "Minimum": 1, "Maximum": 1}}]),
         "InvalidParameterCombination"),
        (dict(Namespace=ns, MetricData=[{"MetricName": "m", "Values": [1, 2], "Counts": [1]}]),
         "InvalidParameterValue"),
        (dict(Namespace=ns, MetricData=[{"MetricName": "m"}]), "MissingParameter"),
    ]
    for kw, code in cases:
        with pytest.raises(ClientError) as e:
            cw.put_metric_data(**kw)
        assert _code(e) == code, (kw, e.value.response)
    # all or nothing: the good first entry of a refused call was not written
    with pytest.raises(ClientError):
        cw.put_metric_data(Namespace=ns, MetricData=[{"MetricName": "ok", "Value": 1},
                                                      {"MetricName": "m"}])
    assert cw.list_metrics(Namespace=ns)["Metrics"] == []
