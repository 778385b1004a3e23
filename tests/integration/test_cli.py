"""The AWS CLI (Debian's awscli 2.9) against trainyard, with the credentials file the server
wrote, as the README tells users to run it."""
import json
import os
import stat

import tyhelpers as H


def test_credentials_file(server):
    st = os.stat(server.credentials_path)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    akid, secret = H.read_credentials(server.credentials_path)
    assert akid and secret and akid != secret


def test_cli_create_describe_list(server, sm, aws_cli):
    name = H.unique("cli")
    req = H.job_request(name, "echo from-cli")
    p = aws_cli("sagemaker", "create-training-job",
                "--training-job-name", name,
                "--algorithm-specification", json.dumps(req["AlgorithmSpecification"]),
                "--role-arn", req["RoleArn"],
                "--output-data-config", json.dumps(req["OutputDataConfig"]),
                "--resource-config", json.dumps(req["ResourceConfig"]),
                "--stopping-condition", json.dumps(req["StoppingCondition"]), check=True)
    assert json.loads(p.stdout) == \
        {"TrainingJobArn": f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{name}"}
    d = H.wait_job(sm, name, timeout=150)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    p = aws_cli("sagemaker", "describe-training-job", "--training-job-name", name, check=True)
    out = json.loads(p.stdout)
    assert out["TrainingJobName"] == name and out["TrainingJobStatus"] == "Completed"
    assert [t["Status"] for t in out["SecondaryStatusTransitions"]][-1] == "Completed"
    p = aws_cli("sagemaker", "list-training-jobs", "--name-contains", name, check=True)
    assert [s["TrainingJobName"] for s in json.loads(p.stdout)["TrainingJobSummaries"]] == [name]
    # the waiter's first poll sees Completed and returns at once
    p = aws_cli("sagemaker", "wait", "training-job-completed-or-stopped",
                "--training-job-name", name, timeout=60)
    assert p.returncode == 0, p.stderr


def test_cli_errors(server, aws_cli, fleet_job):
    p = aws_cli("sagemaker", "describe-training-job", "--training-job-name", "no-such-job-cli")
    assert p.returncode == 254, (p.returncode, p.stderr)
    assert "ValidationException" in p.stderr and "Requested resource not found." in p.stderr, p.stderr
    # the waiter treats ValidationException as a terminal failure, without waiting 120 s
    p = aws_cli("sagemaker", "wait", "training-job-completed-or-stopped",
                "--training-job-name", "no-such-job-cli", timeout=60)
    assert p.returncode == 255, (p.returncode, p.stderr)
    assert "terminal failure" in p.stderr, p.stderr
    # a Failed job is a waiter failure too
    H.wait_job(server.client(), fleet_job("fail_exit"), timeout=150)
    p = aws_cli("sagemaker", "wait", "training-job-completed-or-stopped",
                "--training-job-name", fleet_job("fail_exit"), timeout=60)
    assert p.returncode == 255 and "terminal failure" in p.stderr, (p.returncode, p.stderr)


def test_cli_logs(server, aws_cli, fleet_job):
    name = fleet_job("complete")
    H.wait_job(server.client(), name, timeout=150)
    p = aws_cli("logs", "describe-log-streams", "--log-group-name", H.LOG_GROUP,
                "--log-stream-name-prefix", name + "/", check=True)
    streams = json.loads(p.stdout)["logStreams"]
    assert len(streams) == 1
    p = aws_cli("logs", "get-log-events", "--log-group-name", H.LOG_GROUP,
                "--log-stream-name", streams[0]["logStreamName"], "--start-from-head",
                "--limit", "3", check=True)
    out = json.loads(p.stdout)
    assert len(out["events"]) == 3 and out["events"][0]["message"].startswith("HP:"), out


def test_cli_other_region_refused(server, aws_cli):
    """One region per deployment (test_region.py): a call signed for another is refused."""
    name = H.unique("clieu")
    req = H.job_request(name, "true")
    p = aws_cli("sagemaker", "create-training-job", "--cli-input-json", json.dumps(req),
                region="eu-west-1")
    assert p.returncode != 0 and "InvalidSignatureException" in p.stderr, p.stderr
    assert "Credential should be scoped to a valid region" in p.stderr, p.stderr
