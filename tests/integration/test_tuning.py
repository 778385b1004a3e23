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
for e in 1 2 3 4; do echo "epoch=$e loss=$(awk -v e=$e 'BEGIN{printf "%.4f", 1.0/e}') acc=0.$((e * 2))"; sleep 0.6; done
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
    # the instance metrics the agent samples, beside the algorithm's
    assert {"train:acc", "train:loss", "MemoryUtilization", "DiskUtilization"} <= set(names), names
    assert r["Metrics"][0]["Dimensions"] == [{"Name": "Host", "Value": host}]
    for inst in ("MemoryUtilization", "DiskUtilization", "CPUUtilization"):
        if inst not in names:
            continue
        dps = cw.get_metric_statistics(
            Namespace=NS, MetricName=inst, Dimensions=[{"Name": "Host", "Value": host}],
            StartTime=desc["TrainingStartTime"].timestamp() - 60, EndTime=time.time() + 60,
            Period=60, Statistics=["Maximum"])["Datapoints"]
        assert dps and all(0 <= p["Maximum"] for p in dps), (inst, dps)
        assert inst == "CPUUtilization" or all(p["Maximum"] <= 100 for p in dps), (inst, dps)
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
    # IAM: cloudwatch:* actions through the same authorization as every operation
    iam = _client(server, "iam")
    user = f"hpo-cw-{os.getpid() % 100000}"
    iam.create_user(UserName=user)
    k = iam.create_access_key(UserName=user)["AccessKey"]
    iam.put_user_policy(UserName=user, PolicyName="list-only", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "cloudwatch:ListMetrics", "Resource": "*"}]}))
    cw = server.client("cloudwatch", keys=(k["AccessKeyId"], k["SecretAccessKey"]))
    time.sleep(1.1)  # the policy cache
    assert cw.list_metrics(Namespace=NS)["Metrics"]
    with pytest.raises(ClientError) as e:
        cw.get_metric_statistics(Namespace=NS, MetricName="train:loss", StartTime=0,
                                 EndTime=60, Period=60, Statistics=["Average"])
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    assert "cloudwatch:GetMetricStatistics" in e.value.response["Error"]["Message"]


# ---------------------------------------------------------------------------------------------
# hyperparameter tuning

# The training program (busybox sh, script mode: trainyard-train passes the JSON-decoded
# hyperparameters as --name value). valid:loss = (x - 0.3)^2 + (0 for adam, 0.05 otherwise),
# reached over three epochs; the tuner minimises it.
TUNE_SH = r"""#!/bin/sh
while [ $# -gt 0 ]; do
    case "$1" in
    -x|--x) X=$2 ;;  # one-letter names come as -x (the toolkit's to_cmd_args)
    --opt) OPT=$2 ;;
    --epochs) EPOCHS=$2 ;;
    esac
    shift 2
done
pen=0.05; [ "$OPT" = adam ] && pen=0
for e in 1 2 3; do
    awk -v x="$X" -v p="$pen" -v e=$e 'BEGIN{printf "epoch=%d valid:loss=%.6f\n", e, (x-0.3)*(x-0.3)+p+0.3/e-0.1}'
done
echo "epochs=$EPOCHS opt=$OPT x=$X"
"""


def _targz(files):
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o755
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(scope="module")
def tune_code(server):
    s3 = _client(server, "s3")
    bucket = f"hpo-{os.getpid() % 100000}-{int(time.time() * 1000) % 10000000}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="code/sourcedir.tar.gz", Body=_targz({"train.sh": TUNE_SH.encode()}))
    return bucket


def _tuner_request(name, bucket, strategy, max_jobs=6, max_parallel=2, early="Off"):
    """Session._get_tuning_request as HyperparameterTuner(estimator, 'valid:loss', ranges,
    metric_definitions, strategy=..., max_jobs=6, max_parallel_jobs=2, objective_type='Minimize')
    .fit(job_name=name) builds it for a Framework estimator in script mode (v2.257.6): static
    hyperparameters JSON-encoded without the tuned ones plus the estimator class metadata,
    ranges as strings with ScalingType Auto, categorical values JSON-encoded."""
    static = {
        "epochs": json.dumps(3),
        "sagemaker_submit_directory": json.dumps(f"s3://{bucket}/code/sourcedir.tar.gz"),
        "sagemaker_program": json.dumps("train.sh"),
        "sagemaker_container_log_level": json.dumps(20),
        "sagemaker_job_name": json.dumps(name),
        "sagemaker_region": json.dumps("us-east-1"),
        "sagemaker_estimator_class_name": json.dumps("Framework"),
        "sagemaker_estimator_module": json.dumps("sagemaker.estimator"),
    }
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": strategy,
            "ResourceLimits": {"MaxNumberOfTrainingJobs": max_jobs,
                               "MaxParallelTrainingJobs": max_parallel},
            "TrainingJobEarlyStoppingType": early,
            "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "valid:loss"},
            "ParameterRanges": {
                "ContinuousParameterRanges": [{"Name": "x", "MinValue": "0.0", "MaxValue": "1.0",
                                               "ScalingType": "Auto"}],
                "CategoricalParameterRanges": [{"Name": "opt",
                                                "Values": [json.dumps("adam"), json.dumps("sgd")]}],
                "IntegerParameterRanges": [],
            },
        },
        "TrainingJobDefinition": {
            "StaticHyperParameters": static,
            "RoleArn": H.ROLE,
            "OutputDataConfig": {"S3OutputPath": f"s3://{bucket}/out"},
            "StoppingCondition": {"MaxRuntimeInSeconds": 300},
            "AlgorithmSpecification": {
                "TrainingInputMode": "File", "TrainingImage": H.RUNTIME_IMAGE,
                "MetricDefinitions": [{"Name": "valid:loss", "Regex": r"valid:loss=([0-9.]+)"}]},
            "ResourceConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.large",
                               "VolumeSizeInGB": 1},
        },
        "Tags": [{"Key": "project", "Value": "hpo"}],
    }


def _wait_tuning(sm, name, timeout=240, poll=1.5):
    """Session.wait_for_tuning_job: DescribeHyperParameterTuningJob until the status is no longer
    InProgress or Stopping (the SDK polls every 5 s)."""
    deadline = time.monotonic() + timeout
    while True:
        d = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        if d["HyperParameterTuningJobStatus"] not in ("InProgress", "Stopping"):
            return d
        assert d["TrainingJobStatusCounters"]["InProgress"] <= 2, d["TrainingJobStatusCounters"]
        assert time.monotonic() < deadline, f"tuning job {name} still {d['HyperParameterTuningJobStatus']}: {d}"
        time.sleep(poll)


def test_tuner_random_and_bayesian(server, sm, tune_code, aws_cli):
    names = {s: f"hpo-{s[:4].lower()}-{os.getpid() % 10000}{int(time.time()) % 10000}"
             for s in ("Random", "Bayesian")}
    for strategy, name in names.items():
        r = sm.create_hyper_parameter_tuning_job(**_tuner_request(name, tune_code, strategy))
        assert r["HyperParameterTuningJobArn"] == \
            f"arn:aws:sagemaker:us-east-1:000000000000:hyper-parameter-tuning-job/{name}"
    with pytest.raises(ClientError) as e:
        sm.create_hyper_parameter_tuning_job(**_tuner_request(names["Random"], tune_code, "Random"))
    assert e.value.response["Error"]["Code"] == "ResourceInUse"
    for strategy, name in names.items():
        d = _wait_tuning(sm, name)
        assert d["HyperParameterTuningJobStatus"] == "Completed", d
        assert d["TrainingJobStatusCounters"] == {"Completed": 6, "InProgress": 0,
                                                  "RetryableError": 0, "NonRetryableError": 0,
                                                  "Stopped": 0}, d
        assert d["ObjectiveStatusCounters"] == {"Succeeded": 6, "Pending": 0, "Failed": 0}
        assert d["HyperParameterTuningJobConfig"]["Strategy"] == strategy
        assert d["HyperParameterTuningEndTime"] >= d["CreationTime"]
        best = d["BestTrainingJob"]  # tuner.best_training_job()
        jobs = sm.list_training_jobs_for_hyper_parameter_tuning_job(
            HyperParameterTuningJobName=name, MaxResults=100)["TrainingJobSummaries"]
        assert len(jobs) == 6
        for j in jobs:  # SageMaker's names: <tuning job>-<3-digit index>-<8 hex>
            assert j["TrainingJobName"].startswith(name + "-")
            idx, tail = j["TrainingJobName"][len(name) + 1:].split("-")
            assert len(idx) == 3 and 1 <= int(idx) <= 6 and len(tail) == 8
            int(tail, 16)
            assert set(j["TunedHyperParameters"]) == {"x", "opt"}
            assert j["ObjectiveStatus"] == "Succeeded"
        vals = {j["TrainingJobName"]: j["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
                for j in jobs}
        assert best["TrainingJobName"] == min(vals, key=vals.get), (best, vals)
        assert best["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] == min(vals.values())
        # the objective is the job's last valid:loss line: (x-0.3)^2 + penalty + 0
        tj = sm.describe_training_job(TrainingJobName=best["TrainingJobName"])
        assert tj["TuningJobArn"] == d["HyperParameterTuningJobArn"]
        hp = tj["HyperParameters"]
        x = float(hp["x"])
        pen = 0 if json.loads(hp["opt"]) == "adam" else 0.05
        assert abs(best["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
                   - ((x - 0.3) ** 2 + pen)) < 1e-5
        assert hp["epochs"] == "3" and 0 <= x <= 1
        srt = sm.list_training_jobs_for_hyper_parameter_tuning_job(
            HyperParameterTuningJobName=name, SortBy="FinalObjectiveMetricValue",
            SortOrder="Ascending", MaxResults=2)
        assert srt["TrainingJobSummaries"][0]["TrainingJobName"] == best["TrainingJobName"]
        assert "NextToken" in srt
        tags = sm.list_tags(ResourceArn=d["HyperParameterTuningJobArn"])["Tags"]
        assert {"Key": "project", "Value": "hpo"} in tags
        # each child carries the tuning job's tags, as on SageMaker, so that a policy on
        # aws:ResourceTag sees them (issue 36, finding 9: they had none)
        for j in jobs:
            ct = sm.list_tags(ResourceArn=j["TrainingJobArn"])["Tags"]
            assert {"Key": "project", "Value": "hpo"} in ct, (j["TrainingJobName"], ct)
    listed = sm.list_hyper_parameter_tuning_jobs(NameContains="hpo-", SortBy="Name",
                                                 SortOrder="Ascending", MaxResults=100)
    got = [s["HyperParameterTuningJobName"] for s in listed["HyperParameterTuningJobSummaries"]]
    assert set(names.values()) <= set(got) and got == sorted(got)
    summ = [s for s in listed["HyperParameterTuningJobSummaries"]
            if s["HyperParameterTuningJobName"] == names["Bayesian"]][0]
    assert summ["Strategy"] == "Bayesian" and summ["ResourceLimits"]["MaxParallelTrainingJobs"] == 2
    # warm start from both: their 12 jobs join the Bayesian history
    warm = f"hpo-warm-{os.getpid() % 10000}{int(time.time()) % 10000}"
    req = _tuner_request(warm, tune_code, "Bayesian", max_jobs=2, max_parallel=2)
    req["WarmStartConfig"] = {"WarmStartType": "TransferLearning", "ParentHyperParameterTuningJobs": [
        {"HyperParameterTuningJobName": n} for n in names.values()]}
    sm.create_hyper_parameter_tuning_job(**req)
    d = _wait_tuning(sm, warm)
    assert d["HyperParameterTuningJobStatus"] == "Completed", d
    assert d["WarmStartConfig"]["WarmStartType"] == "TransferLearning"
    # OverallBestTrainingJob: the best of the warm-start job and its parents
    bests = [sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=n)["BestTrainingJob"]
             for n in list(names.values())] + [d["BestTrainingJob"]]
    val = lambda b: b["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]  # noqa: E731
    assert val(d["OverallBestTrainingJob"]) == min(val(b) for b in bests)
    assert d["OverallBestTrainingJob"]["TrainingJobName"] in [b["TrainingJobName"] for b in bests]
    p = aws_cli("sagemaker", "describe-hyper-parameter-tuning-job",
                "--hyper-parameter-tuning-job-name", names["Bayesian"], check=True)
    out = json.loads(p.stdout)
    assert out["HyperParameterTuningJobStatus"] == "Completed"
    assert out["BestTrainingJob"]["TrainingJobName"].startswith(names["Bayesian"])


def test_tuning_validation_and_stop(server, sm, tune_code):
    name = f"hpo-bad-{os.getpid() % 10000}{int(time.time()) % 10000}"
    req = _tuner_request(name, tune_code, "Random")
    req["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]["MetricName"] = "nope"
    with pytest.raises(ClientError) as e:
        sm.create_hyper_parameter_tuning_job(**req)
    assert e.value.response["Error"]["Code"] == "ValidationException"
    assert "nope" in e.value.response["Error"]["Message"]
    req = _tuner_request(name, tune_code, "Grid")
    with pytest.raises(ClientError) as e:  # a continuous range has no grid
        sm.create_hyper_parameter_tuning_job(**req)
    assert "Grid" in e.value.response["Error"]["Message"]
    req = _tuner_request(name, tune_code, "Random")
    req["TrainingJobDefinition"]["StaticHyperParameters"]["x"] = "1"
    with pytest.raises(ClientError) as e:
        sm.create_hyper_parameter_tuning_job(**req)
    assert "both static and tunable" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="hpo-none")
    assert e.value.response["Error"]["Code"] == "ResourceNotFound"
    # Grid over the categorical range only: 2 points; stopped at once
    req = _tuner_request(name, tune_code, "Grid", max_parallel=1)
    pr = req["HyperParameterTuningJobConfig"]["ParameterRanges"]
    pr["ContinuousParameterRanges"] = []
    req["HyperParameterTuningJobConfig"]["ResourceLimits"].pop("MaxNumberOfTrainingJobs")
    req["TrainingJobDefinition"]["StaticHyperParameters"]["x"] = "0.5"
    sm.create_hyper_parameter_tuning_job(**req)
    d = sm.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    assert d["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 2
    sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    d = _wait_tuning(sm, name, timeout=60)
    assert d["HyperParameterTuningJobStatus"] == "Stopped"
    assert d["TrainingJobStatusCounters"]["InProgress"] == 0
    with pytest.raises(ClientError) as e:
        sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    assert e.value.response["Error"]["Code"] == "ValidationException"


def test_tuning_survives_server_restart(make_server):
    """The driver's state is in Redis: a tuning job whose server stops after launching its first
    training jobs (an API-only server: they only queue) goes on on the next server of the same
    data dir, which launches the third and completes it."""
    first = make_server(agents=0)
    sm = first.client("sagemaker")
    s3 = first.client("s3")
    bucket = f"hpo-rs-{os.getpid() % 100000}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="code/sourcedir.tar.gz",
                  Body=_targz({"train.sh": TUNE_SH.encode()}))
    name = f"hpo-rs-{os.getpid() % 10000}{int(time.time()) % 10000}"
    sm.create_hyper_parameter_tuning_job(**_tuner_request(name, bucket, "Bayesian", max_jobs=3,
                                                          max_parallel=2))
    H.wait_for(lambda: len(sm.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name)["TrainingJobSummaries"]) == 2, 20, "2 launched jobs")
    time.sleep(1.5)  # another pass: still 2 (the parallel limit)
    assert len(sm.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name)["TrainingJobSummaries"]) == 2
    assert first.stop(timeout=60) == 0
    second = make_server(agents=1, data_dir=first.data_dir, port=first.port)
    sm = second.client("sagemaker")
    d = _wait_tuning(sm, name, timeout=150)
    assert d["HyperParameterTuningJobStatus"] == "Completed", d
    assert d["TrainingJobStatusCounters"]["Completed"] == 3, d
    assert d["BestTrainingJob"]["TrainingJobName"].startswith(name + "-")


def test_child_that_cannot_be_created_fails_the_tuning_job(server, sm, tune_code):
    """A training job the driver cannot create ends the tuning job Failed with SageMaker's
    FailureReason; the server lives on (it used to read the child's unset status: SIGSEGV a
    second after the 200). Two ways: the definition's input prefix holds no object, and
    HyperParameterTuningResourceConfig.InstanceConfigs without a ResourceConfig."""
    base = f"hpo-nochild-{os.getpid() % 10000}{int(time.time()) % 10000}"
    reqs = {}
    req = _tuner_request(base + "-a", tune_code, "Random", max_jobs=2, max_parallel=1)
    req["TrainingJobDefinition"]["InputDataConfig"] = [{
        "ChannelName": "train", "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": f"s3://{tune_code}/no-such-prefix/",
            "S3DataDistributionType": "FullyReplicated"}}}]
    reqs[base + "-a"] = req
    req = _tuner_request(base + "-b", tune_code, "Random", max_jobs=2, max_parallel=1)
    req["TrainingJobDefinition"].pop("ResourceConfig")
    req["TrainingJobDefinition"]["HyperParameterTuningResourceConfig"] = {
        "InstanceConfigs": [{"InstanceType": "ml.m5.large", "InstanceCount": 1,
                             "VolumeSizeInGB": 1}]}
    reqs[base + "-b"] = req
    created = []
    for name, r in reqs.items():
        try:
            sm.create_hyper_parameter_tuning_job(**r)
            created.append(name)
        except ClientError as e:  # refused up front is as good: never a crash
            assert e.response["Error"]["Code"] == "ValidationException", e
    for name in created:
        d = _wait_tuning(sm, name, timeout=60)
        assert d["HyperParameterTuningJobStatus"] == "Failed", d
        assert d.get("FailureReason", "").startswith("Failed to create training job"), d
    assert server.proc.p.poll() is None, "trainyard-server died"
    status, body = server.healthz()
    assert status == 200, body
