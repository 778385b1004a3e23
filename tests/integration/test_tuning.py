"""Hyperparameter tuning jobs and CloudWatch metrics for training jobs.

CloudWatch: a training job's MetricDefinitions matches become points of namespace
/aws/sagemaker/TrainingJobs (dimensions Host=<job>/algo-1 and TrainingJobName=<job>), read back
through Debian's boto3 (query protocol, as botocore 1.29 speaks it), through a botocore client
built from the same model switched to the JSON 1.0 protocol (what current botocore sends), through
the AWS CLI, and as the SageMaker SDK v2's TrainingJobAnalytics(...).dataframe() asks for them
(DescribeTrainingJob, then GetMetricStatistics per metric, Period 60, Average).

Tuning: the SDK v2 HyperparameterTuner(...).fit() replayed call for call (sagemaker-python-sdk
v2.257.6, session.py create_tuning_job/_get_tuning_request, tuner.py wait/best_training_job):
CreateHyperParameterTuningJob with the request the SDK builds, DescribeHyperParameterTuningJob
polled until the job is no longer InProgress/Stopping, then BestTrainingJob. Random and Bayesian,
6 jobs, 2 in parallel, the objective read from the jobs' logs. Job and bucket names start with
"hpo-".
"""
import json
import os
import shutil
import tempfile
import time

import boto3
import botocore.config
import botocore.session
import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

NS = "/aws/sagemaker/TrainingJobs"

# loss falls with the epoch and depends on the hyperparameters x (continuous) and opt
# (categorical): the tuner has something to find. Busybox sh has no floats: awk computes.
METRIC_SH = r"""
echo "start $(date +%s)"
for e in 1 2 3 4; do echo "epoch=$e loss=$(awk -v e=$e 'BEGIN{printf "%.4f", 1.0/e}') acc=0.$((e * 2))"; sleep 0.3; done
echo "final loss=0.125"
"""

METRIC_DEFS = [{"Name": "train:loss", "Regex": r"loss=([0-9.]+)"},
               {"Name": "train:acc", "Regex": r"acc=([0-9.]+)"}]


def _client(server, service, **kw):
    return server.client(service, **kw)


@pytest.fixture(scope="module")
def metric_job(server, sm):
    name = H.unique("hpo-cw")
    req = H.job_request(name, METRIC_SH)
    req["AlgorithmSpecification"]["MetricDefinitions"] = METRIC_DEFS
    sm.create_training_job(**req)
    desc = H.wait_job(sm, name, timeout=180)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    return name, desc


def _json_protocol_client(server, tmpdir):
    """A botocore CloudWatch client speaking JSON 1.0 (X-Amz-Target
    GraniteServiceVersion20100801.<Op>): Debian's model with its protocol switched, found first
    on the loader's search path."""
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


def test_final_metrics_and_cloudwatch_series(server, metric_job):
    name, desc = metric_job
    final = {m["MetricName"]: m["Value"] for m in desc["FinalMetricDataList"]}
    assert final == {"train:loss": 0.125, "train:acc": 0.8}, desc["FinalMetricDataList"]
    cw = _client(server, "cloudwatch")
    host = f"{name}/algo-1"
    r = cw.list_metrics(Namespace=NS, Dimensions=[{"Name": "Host", "Value": host}])
    names = sorted(m["MetricName"] for m in r["Metrics"])
    assert names == ["train:acc", "train:loss"], r["Metrics"]
    assert r["Metrics"][0]["Dimensions"] == [{"Name": "Host", "Value": host}]
    r = cw.list_metrics(Namespace=NS, MetricName="train:loss",
                        Dimensions=[{"Name": "TrainingJobName", "Value": name}],
                        RecentlyActive="PT3H")
    assert len(r["Metrics"]) == 1
    start = desc["TrainingStartTime"]
    end = desc["TrainingEndTime"]
    r = cw.get_metric_statistics(
        Namespace=NS, MetricName="train:loss", Dimensions=[{"Name": "Host", "Value": host}],
        StartTime=start.timestamp() - 60, EndTime=end.timestamp() + 60, Period=3600,
        Statistics=["SampleCount", "Average", "Minimum", "Maximum", "Sum"])
    assert r["Label"] == "train:loss"
    assert len(r["Datapoints"]) == 1, r
    dp = r["Datapoints"][0]
    vals = [1.0, 0.5, 0.3333, 0.25, 0.125]
    assert dp["SampleCount"] == 5 and dp["Minimum"] == 0.125 and dp["Maximum"] == 1.0
    assert abs(dp["Sum"] - sum(vals)) < 1e-9 and abs(dp["Average"] - sum(vals) / 5) < 1e-9
    r = cw.get_metric_statistics(
        Namespace=NS, MetricName="train:loss", Dimensions=[{"Name": "Host", "Value": host}],
        StartTime=start.timestamp() - 60, EndTime=end.timestamp() + 60, Period=3600,
        ExtendedStatistics=["p50", "p100"])
    assert r["Datapoints"][0]["ExtendedStatistics"] == {"p50": 0.3333, "p100": 1.0}
    # GetMetricData: per-second buckets, newest first by default
    r = cw.get_metric_data(
        MetricDataQueries=[{"Id": "l", "MetricStat": {"Metric": {
            "Namespace": NS, "MetricName": "train:loss",
            "Dimensions": [{"Name": "TrainingJobName", "Value": name}]},
            "Period": 1, "Stat": "Minimum"}}],
        StartTime=start.timestamp() - 60, EndTime=end.timestamp() + 60,
        ScanBy="TimestampAscending")
    res = r["MetricDataResults"][0]
    assert res["Id"] == "l" and res["StatusCode"] == "Complete" and res["Label"] == "train:loss"
    assert min(res["Values"]) == 0.125 and res["Timestamps"] == sorted(res["Timestamps"])
    # errors in CloudWatch's words
    with pytest.raises(ClientError) as e:
        cw.get_metric_statistics(Namespace=NS, MetricName="train:loss", StartTime=end,
                                 EndTime=start, Period=60, Statistics=["Average"])
    assert e.value.response["Error"]["Code"] == "InvalidParameterValue"
    with pytest.raises(ClientError) as e:
        cw.get_metric_statistics(Namespace=NS, MetricName="train:loss", StartTime=0,
                                 EndTime=time.time(), Period=1, Statistics=["Average"])
    assert e.value.response["Error"]["Code"] == "InvalidParameterCombination"


def test_cloudwatch_json_protocol(server, metric_job, tmp_path):
    name, desc = metric_job
    cw = _json_protocol_client(server, str(tmp_path))
    r = cw.list_metrics(Namespace=NS, Dimensions=[{"Name": "TrainingJobName", "Value": name}])
    assert sorted(m["MetricName"] for m in r["Metrics"]) == ["train:acc", "train:loss"]
    r = cw.get_metric_statistics(
        Namespace=NS, MetricName="train:acc", Dimensions=[{"Name": "TrainingJobName", "Value": name}],
        StartTime=desc["TrainingStartTime"], EndTime=time.time() + 60, Period=3600,
        Statistics=["Maximum"])
    assert r["Datapoints"][0]["Maximum"] == 0.8
    r = cw.get_metric_data(
        MetricDataQueries=[{"Id": "a", "MetricStat": {"Metric": {
            "Namespace": NS, "MetricName": "train:acc",
            "Dimensions": [{"Name": "Host", "Value": f"{name}/algo-1"}]},
            "Period": 3600, "Stat": "Average"}}],
        StartTime=desc["TrainingStartTime"], EndTime=time.time() + 60)
    assert abs(r["MetricDataResults"][0]["Values"][0] - 0.5) < 1e-9
    with pytest.raises(ClientError) as e:
        cw.get_metric_statistics(Namespace=NS, MetricName="x", StartTime=0, EndTime=10,
                                 Period=7, Statistics=["Average"])
    assert e.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_training_job_analytics_replay(server, sm, metric_job):
    """TrainingJobAnalytics(name).dataframe() of SDK v2.257.6 (analytics.py): the metric names
    from DescribeTrainingJob's MetricDefinitions, the interval TrainingStartTime .. TrainingEndTime
    + 1 minute, then per metric GetMetricStatistics(Dimensions TrainingJobName, Period 60,
    Statistics Average); rows (seconds since the first point, metric, value)."""
    import datetime
    name, _ = metric_job
    cw = _client(server, "cloudwatch")
    d = sm.describe_training_job(TrainingJobName=name)
    names = [m["Name"] for m in d["AlgorithmSpecification"]["MetricDefinitions"]]
    start = d["TrainingStartTime"]
    end = d.get("TrainingEndTime", datetime.datetime.utcnow()) + datetime.timedelta(minutes=1)
    rows = []
    for metric in names:
        dps = cw.get_metric_statistics(
            Namespace=NS, MetricName=metric,
            Dimensions=[{"Name": "TrainingJobName", "Value": name}],
            StartTime=start, EndTime=end, Period=60, Statistics=["Average"])["Datapoints"]
        assert dps, f"no datapoints for {metric}"
        base = min(dps, key=lambda p: p["Timestamp"])["Timestamp"]
        for p in sorted(dps, key=lambda p: p["Timestamp"]):
            rows.append(((p["Timestamp"] - base).total_seconds(), metric, p["Average"]))
    got = {m: v for _, m, v in rows}
    assert abs(got["train:loss"] - (1 + 0.5 + 0.3333 + 0.25 + 0.125) / 5) < 1e-9, rows
    assert abs(got["train:acc"] - 0.5) < 1e-9, rows


def test_cloudwatch_cli_and_authz(server, metric_job, aws_cli):
    name, desc = metric_job
    p = aws_cli("cloudwatch", "get-metric-statistics", "--namespace", NS, "--metric-name",
                "train:loss", "--dimensions", f"Name=TrainingJobName,Value={name}",
                "--start-time", str(int(desc["TrainingStartTime"].timestamp()) - 60),
                "--end-time", str(int(time.time()) + 60), "--period", "3600",
                "--statistics", "Minimum", check=True)
    out = json.loads(p.stdout)
    assert out["Datapoints"][0]["Minimum"] == 0.125, out
    p = aws_cli("cloudwatch", "list-metrics", "--namespace", NS, check=True)
    assert any(m["MetricName"] == "train:loss" for m in json.loads(p.stdout)["Metrics"])
