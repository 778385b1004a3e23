"""Training jobs that really run in containers: completion with logs, metrics and a model
artifact; failures; Stop; MaxRuntimeInSeconds."""
import datetime
import json
import os
import re
import tarfile
import time

import tyhelpers as H
from tyhelpers import LOG_GROUP, wait_job


def _transitions(d):
    return [t["Status"] for t in d.get("SecondaryStatusTransitions", [])]


def _check_transition_fields(d):
    trs = d["SecondaryStatusTransitions"]
    assert trs, d
    prev = None
    for i, t in enumerate(trs):
        assert isinstance(t.get("StatusMessage"), str) and t["StatusMessage"].strip(), \
            f"transition {t} has no StatusMessage"
        assert isinstance(t.get("StartTime"), datetime.datetime), t
        if prev is not None:
            assert t["StartTime"] >= prev["StartTime"], trs
        if i < len(trs) - 1:
            assert isinstance(t.get("EndTime"), datetime.datetime), \
                f"transition {t['Status']} was followed by another but has no EndTime"
            assert t["EndTime"] >= t["StartTime"], t
        prev = t


def _always_present(d):
    """Members the SageMaker SDK indexes with [] (reference/sdk-flow.md §2, §7)."""
    assert isinstance(d["LastModifiedTime"], datetime.datetime)
    assert d["ResourceConfig"]["InstanceCount"] == 1
    assert d["OutputDataConfig"]["KmsKeyId"] == ""
    assert "S3ModelArtifacts" in d["ModelArtifacts"]
    assert isinstance(d["CreationTime"], datetime.datetime)


def test_completed_job_describe(server, sm, fleet_job):
    name = fleet_job("complete")
    t0 = time.time()
    d = wait_job(sm, name, timeout=150)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert d["SecondaryStatus"] == "Completed"
    assert _transitions(d) == ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    _check_transition_fields(d)
    _always_present(d)
    assert d["TrainingJobName"] == name
    assert d["TrainingJobArn"] == f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{name}"
    assert d["HyperParameters"] == {"lr": "0.1", "epochs": "3"}
    assert d["Environment"] == {"MYVAR": "hello-env"}
    assert d["RoleArn"] == H.ROLE
    assert d["AlgorithmSpecification"]["TrainingImage"] == H.RUNTIME_IMAGE
    assert d["StoppingCondition"]["MaxRuntimeInSeconds"] == 600
    # the job slept 1 s: it trained for at least that, and not longer than it has existed
    age = t0 - d["CreationTime"].timestamp() + 5
    assert isinstance(d["TrainingTimeInSeconds"], int) and 1 <= d["TrainingTimeInSeconds"] <= age
    assert isinstance(d["BillableTimeInSeconds"], int)
    assert 1 <= d["BillableTimeInSeconds"] <= d["TrainingTimeInSeconds"] + 1
    assert d["LastModifiedTime"] >= d["CreationTime"]
    assert "FailureReason" not in d


def test_completed_job_model_artifact(server, sm, fleet_job):
    name = fleet_job("complete")
    d = wait_job(sm, name, timeout=150)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert d["ModelArtifacts"]["S3ModelArtifacts"] == f"s3://bucket/prefix/{name}/output/model.tar.gz"
    path = os.path.join(server.data_dir, "s3", "bucket", "prefix", name, "output", "model.tar.gz")
    assert os.path.isfile(path), f"{path} missing; s3 dir has {list(os.walk(os.path.join(server.data_dir, 's3')))[:5]}"
    with tarfile.open(path, "r:gz") as tf:
        members = {m.name[2:] if m.name.startswith("./") else m.name: m for m in tf.getmembers()}
        assert "weights.txt" in members, sorted(members)
        assert "sub/n.txt" in members, sorted(members)
        assert tf.extractfile(members["weights.txt"]).read() == b"weights-123"
        assert tf.extractfile(members["sub/n.txt"]).read() == b"nested"


def test_completed_job_metrics(sm, fleet_job):
    d = wait_job(sm, fleet_job("complete"), timeout=150)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    metrics = {m["MetricName"]: m for m in d.get("FinalMetricDataList", [])}
    assert set(metrics) == {"train:loss", "final:acc"}, d.get("FinalMetricDataList")
    # the final value of each metric is its last match in the log
    assert abs(metrics["train:loss"]["Value"] - 0.75) < 1e-6, metrics
    assert abs(metrics["final:acc"]["Value"] - 0.875) < 1e-6, metrics
    for m in metrics.values():
        assert isinstance(m["Timestamp"], datetime.datetime)
    assert d["AlgorithmSpecification"]["MetricDefinitions"][0] == \
        {"Name": "train:loss", "Regex": "loss=([0-9.]+)"}


def test_completed_job_container_contract(sm, logs, fleet_job):
    """hyperparameters.json, resourceconfig.json, Environment and SM_* reach the container."""
    name = fleet_job("complete")
    d = wait_job(sm, name, timeout=150)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    msgs = [e["message"].rstrip("\n") for e in H.log_events(logs, stream)[0]]
    hp = [m for m in msgs if m.startswith("HP:")]
    assert len(hp) == 1, msgs[:10]
    assert json.loads(hp[0][3:]) == {"lr": "0.1", "epochs": "3"}
    rc = [m for m in msgs if m.startswith("RC:")]
    assert len(rc) == 1, msgs[:10]
    rcj = json.loads(rc[0][3:])
    assert rcj["current_host"] == "algo-1" and rcj["hosts"] == ["algo-1"], rcj
    assert "ENV:MYVAR=hello-env SM_CURRENT_HOST=algo-1" in msgs, msgs[:10]


def test_logs_describe_streams(sm, logs, fleet_job):
    name = fleet_job("complete")
    wait_job(sm, name, timeout=150)
    # what the SDK sends (reference/sdk-flow.md §2)
    r = logs.describe_log_streams(logGroupName=LOG_GROUP, logStreamNamePrefix=name + "/",
                                  orderBy="LogStreamName", limit=1)
    assert len(r["logStreams"]) == 1, r
    assert "nextToken" not in r, "nextToken with every stream returned makes the SDK loop forever"
    st = r["logStreams"][0]
    assert re.fullmatch(re.escape(name) + r"/algo-1-\d{10}", st["logStreamName"]), st
    assert isinstance(st["creationTime"], int)
    assert st.get("lastEventTimestamp", 0) >= st.get("firstEventTimestamp", 0) > 0, st
    # another job's prefix does not see this stream
    other = logs.describe_log_streams(logGroupName=LOG_GROUP, logStreamNamePrefix=name + "x/")
    assert other["logStreams"] == []


def test_logs_get_events_forward_paging(sm, logs, fleet_job):
    name = fleet_job("complete")
    d = wait_job(sm, name, timeout=150)
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    events, pages = H.log_events(logs, stream, limit=7)
    assert len(pages) >= 5, "30+ events in pages of 7 need at least 5 pages plus the empty one"
    assert pages[-1]["events"] == []
    msgs = [e["message"].rstrip("\n") for e in events]
    numbered = [m for m in msgs if m.startswith("line-")]
    assert numbered == [f"line-{i} loss=0.{100 - i} step={i}" for i in range(1, 26)], msgs
    assert msgs.index("WARN first warning") < msgs.index("WARN second warning") \
        < msgs.index("final acc=0.875")
    ts = [e["timestamp"] for e in events]
    assert ts == sorted(ts)
    created_ms = d["CreationTime"].timestamp() * 1000
    assert all(created_ms - 2000 <= t <= time.time() * 1000 + 2000 for t in ts), ts[:3]
    # no duplicates across pages, and the same events in one unpaged call
    all_at_once, _ = H.log_events(logs, stream)
    assert [e["message"] for e in all_at_once] == [e["message"] for e in events]
    # the empty final page repeats a usable token: asking again is still empty
    again = logs.get_log_events(logGroupName=LOG_GROUP, logStreamName=stream, startFromHead=True,
                                nextToken=pages[-1]["nextForwardToken"])
    assert again["events"] == [] and "nextForwardToken" in again


def test_logs_get_events_start_time(sm, logs, fleet_job):
    """startTime is inclusive, as the SDK's resume relies on (sdk-flow.md §2)."""
    name = fleet_job("complete")
    wait_job(sm, name, timeout=150)
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    events, _ = H.log_events(logs, stream)
    pivot = events[len(events) // 2]["timestamp"]
    r = logs.get_log_events(logGroupName=LOG_GROUP, logStreamName=stream, startFromHead=True,
                            startTime=pivot)
    got = r["events"]
    want = [e for e in events if e["timestamp"] >= pivot]
    assert [e["message"] for e in got] == [e["message"] for e in want][:len(got)]
    assert got and got[0]["timestamp"] >= pivot
    later = logs.get_log_events(logGroupName=LOG_GROUP, logStreamName=stream, startFromHead=True,
                                startTime=events[-1]["timestamp"] + 1)
    assert later["events"] == [] and "nextForwardToken" in later


def test_logs_get_events_from_tail_and_backward(sm, logs, fleet_job):
    name = fleet_job("complete")
    wait_job(sm, name, timeout=150)
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    events, _ = H.log_events(logs, stream)
    msgs = [e["message"] for e in events]
    # without startFromHead the newest `limit` events come back, oldest first
    r = logs.get_log_events(logGroupName=LOG_GROUP, logStreamName=stream, limit=5)
    assert [e["message"] for e in r["events"]] == msgs[-5:]
    assert "nextBackwardToken" in r and "nextForwardToken" in r
    # walking backwards yields everything before, ending with an empty page
    back = list(r["events"])
    tok = r["nextBackwardToken"]
    for _ in range(100):
        p = logs.get_log_events(logGroupName=LOG_GROUP, logStreamName=stream, limit=5,
                                nextToken=tok)
        if not p["events"]:
            break
        back = p["events"] + back
        tok = p["nextBackwardToken"]
    else:
        raise AssertionError("backward paging never ended")
    assert [e["message"] for e in back] == msgs


def test_logs_filter_events(sm, logs, fleet_job):
    name = fleet_job("complete")
    wait_job(sm, name, timeout=150)
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    r = logs.filter_log_events(logGroupName=LOG_GROUP, logStreamNamePrefix=name + "/",
                               filterPattern="WARN")
    got = [(e["logStreamName"], e["message"].rstrip("\n")) for e in r["events"]]
    assert got == [(stream, "WARN first warning"), (stream, "WARN second warning")], r["events"]
    for e in r["events"]:
        assert isinstance(e["timestamp"], int) and isinstance(e["ingestionTime"], int)
        assert e["eventId"]
    # by stream name, no pattern: every event, paged with nextToken
    seen, kw = [], dict(logGroupName=LOG_GROUP, logStreamNames=[stream], limit=10)
    for _ in range(50):
        p = logs.filter_log_events(**kw)
        seen += [e["message"] for e in p["events"]]
        if "nextToken" not in p:
            break
        kw["nextToken"] = p["nextToken"]
    events, _ = H.log_events(logs, stream)
    assert seen == [e["message"] for e in events]
    # a pattern that matches nothing
    none = logs.filter_log_events(logGroupName=LOG_GROUP, logStreamNamePrefix=name + "/",
                                  filterPattern="NoSuchWordAnywhere")
    assert none["events"] == []


def test_logs_unknown_stream(logs):
    try:
        logs.get_log_events(logGroupName=LOG_GROUP, logStreamName="no-such-job/algo-1-1")
    except logs.exceptions.ResourceNotFoundException:
        return
    raise AssertionError("GetLogEvents of an unknown stream did not raise ResourceNotFoundException")


def test_failed_job_with_failure_file(sm, fleet_job):
    d = wait_job(sm, fleet_job("fail_reason"), timeout=150)
    assert d["TrainingJobStatus"] == "Failed"
    assert d["SecondaryStatus"] == "Failed"
    assert d["FailureReason"] == "custom failure: bad input"
    assert _transitions(d)[-1] == "Failed"
    assert _transitions(d)[:3] == ["Starting", "Downloading", "Training"]
    _check_transition_fields(d)
    _always_present(d)


def test_failed_job_with_exit_code(sm, fleet_job):
    d = wait_job(sm, fleet_job("fail_exit"), timeout=150)
    assert d["TrainingJobStatus"] == "Failed"
    assert d["SecondaryStatus"] == "Failed"
    reason = d["FailureReason"]
    assert re.search(r"\b3\b", reason) and "exit" in reason.lower(), reason
    _check_transition_fields(d)


def test_channel_data_staged(sm, logs, fleet_job):
    name = fleet_job("channel")
    d = wait_job(sm, name, timeout=150)
    # the container itself checked both files' contents (it exits 7 otherwise)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    assert d["InputDataConfig"][0]["ChannelName"] == "train"
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    msgs = [e["message"].rstrip() for e in H.log_events(logs, stream)[0]]
    # the agent's download progress comes first, then the container's output
    assert msgs[0] == ("Downloading s3://inbucket/train (2 objects, 12 bytes) into "
                       "/opt/ml/input/data/train"), msgs
    msgs = [m for m in msgs if not m.startswith(("Downloading ", "Downloaded "))]
    assert msgs[:2] == ["a,b", "1,2"], msgs


def test_stop_training_job(server, sm, logs):
    """Stop: SIGTERM, the grace period (2 s here), SIGKILL -> Stopped. One job ignores SIGTERM
    (it needs the SIGKILL), one exits on it (and logs that it got it)."""
    ignore = H.unique("stop-kill")
    handle = H.unique("stop-term")
    sm.create_training_job(**H.job_request(ignore, "trap '' TERM; echo started; sleep 300"))
    sm.create_training_job(**H.job_request(
        handle, "trap 'echo got-sigterm; exit 0' TERM; echo started; while true; do sleep 1; done"))
    for n in (ignore, handle):
        wait_job(sm, n, statuses=("InProgress",), secondary=("Training",), timeout=120)
        # the container runs once its first line is in the log
        H.wait_for(lambda n=n: any(e["message"].startswith("started") for e in
                                   H.log_events(logs, H.job_stream(logs, n)["logStreams"][0]["logStreamName"])[0]),
                   60, f"{n} to log 'started'")
    t0 = time.monotonic()
    assert sm.stop_training_job(TrainingJobName=ignore)["ResponseMetadata"]["HTTPStatusCode"] == 200
    sm.stop_training_job(TrainingJobName=handle)
    d1 = sm.describe_training_job(TrainingJobName=ignore)
    assert d1["TrainingJobStatus"] in ("Stopping", "Stopped"), d1["TrainingJobStatus"]
    for n in (ignore, handle):
        d = wait_job(sm, n, timeout=30)
        assert d["TrainingJobStatus"] == "Stopped", (n, d.get("FailureReason"))
        assert d["SecondaryStatus"] == "Stopped"
        trs = _transitions(d)
        assert trs[-1] == "Stopped" and "Training" in trs, trs
        _check_transition_fields(d)
        _always_present(d)
    took = time.monotonic() - t0
    assert took < 2 + 12, f"Stop took {took:.1f}s with a 2 s grace period"
    stream = H.job_stream(logs, handle)["logStreams"][0]["logStreamName"]
    msgs = [e["message"].rstrip("\n") for e in H.log_events(logs, stream)[0]]
    assert "got-sigterm" in msgs, msgs


def test_max_runtime_exceeded(sm, fleet_job):
    d = wait_job(sm, fleet_job("maxrt"), timeout=150)
    assert d["TrainingJobStatus"] == "Stopped", d.get("FailureReason")
    assert d["SecondaryStatus"] == "MaxRuntimeExceeded"
    assert "MaxRuntimeExceeded" in _transitions(d)
    _check_transition_fields(d)
    # it ran about 3 s (limit) + 2 s (grace), not the 120 s it asked for
    assert d.get("TrainingTimeInSeconds", 0) < 30, d.get("TrainingTimeInSeconds")


def test_logs_complete_under_load(sm, logs):
    """Jobs running side by side, each writing 2000 lines as fast as it can: every line reaches
    its job's stream once, whole and in order (no line lost, split or merged)."""
    n_lines = 2000
    names = [H.unique("burst") for _ in range(4)]
    for n in names:
        sm.create_training_job(**H.job_request(
            n, f"i=0; while [ $i -lt {n_lines} ]; do echo burst-$i; i=$((i + 1)); done"))
    want = [f"burst-{i}" for i in range(n_lines)]
    problems = {}
    for n in names:
        d = wait_job(sm, n, timeout=180)
        assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
        stream = H.job_stream(logs, n)["logStreams"][0]["logStreamName"]
        got = [e["message"].rstrip("\n") for e in H.log_events(logs, stream, limit=10000)[0]]
        if got != want:
            odd = [m for m in got if not re.fullmatch(r"burst-\d+", m)]
            missing = sorted(set(want) - set(got), key=lambda m: int(m[6:]))
            problems[n] = (f"{len(got)} events, {len(missing)} lines missing (first {missing[:3]}), "
                           f"malformed {odd[:3]}")
    assert not problems, problems


def test_logs_lines_written_in_pieces(sm, logs):
    """A line written in several pieces (printf without newline, then more, then the newline)
    is one event; a last line without a newline is an event too."""
    script = ("i=0; while [ $i -lt 20 ]; do printf 'piece-a-%d ' $i; printf 'piece-b'; echo; "
              "i=$((i + 1)); done; printf 'no-newline-at-end'")
    names = [H.unique("pieces") for _ in range(3)]
    for n in names:
        sm.create_training_job(**H.job_request(n, script))
    want = [f"piece-a-{i} piece-b" for i in range(20)] + ["no-newline-at-end"]
    bad = {}
    for n in names:
        d = wait_job(sm, n, timeout=150)
        assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
        stream = H.job_stream(logs, n)["logStreams"][0]["logStreamName"]
        got = [e["message"].rstrip("\n") for e in H.log_events(logs, stream)[0]]
        if got != want:
            bad[n] = [m for m in got if m not in want][:3] + [f"missing: {[w for w in want if w not in got][:3]}"]
    assert not bad, bad
