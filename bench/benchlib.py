#!/usr/bin/python3
"""Helpers for bench/*.sh (Debian's python3-boto3): start requests, sign requests, read logs.

  benchlib.py create URL CREDFILE NAME SCRIPT [MAX_RUNTIME]  CreateTrainingJob (runtime image)
  benchlib.py wait URL CREDFILE NAME TIMEOUT                 waits for a terminal status, prints it
  benchlib.py wrk-lua URL CREDFILE NAME OUT.lua              a wrk script sending one DescribeTrainingJob
                                                             signed once (X-Amz-Date = now; valid 15 min)
  benchlib.py ttr URL CREDFILE NAME [KEEPALIVE [PREV]]      CreateTrainingJob -> container running, seconds
"""
import configparser
import json
import sys
import time

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.exceptions
import botocore.credentials

IMAGE = "trainyard/runtime:0.1.0"
REGION = "us-east-1"


def keys(credfile):
    cp = configparser.ConfigParser()
    cp.read(credfile)
    return cp["default"]["aws_access_key_id"], cp["default"]["aws_secret_access_key"]


def client(url, credfile, service="sagemaker"):
    akid, secret = keys(credfile)
    c = boto3.session.Session().client(
        service, endpoint_url=url, region_name=REGION, aws_access_key_id=akid,
        aws_secret_access_key=secret, config=botocore.config.Config(retries={"max_attempts": 0}))
    if service == "sagemaker":
        # job() writes to s3://bench/out: a job whose output bucket is missing fails, as on AWS
        try:
            client(url, credfile, "s3").create_bucket(Bucket="bench")
        except botocore.exceptions.ClientError as e:
            if e.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
                raise
    return c


def job(name, script, max_runtime=600):
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File",
                                   "ContainerEntrypoint": ["sh", "-c", script]},
        "RoleArn": "arn:aws:iam::000000000000:role/trainyard",
        "OutputDataConfig": {"S3OutputPath": "s3://bench/out"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime},
        "HyperParameters": {"epochs": "3", "lr": "0.1"},
        "Tags": [{"Key": "bench", "Value": "1"}],
    }


def wait(sm, name, timeout):
    deadline = time.monotonic() + timeout
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            return d
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: still {d['TrainingJobStatus']}/{d['SecondaryStatus']} after {timeout}s")
        time.sleep(0.05)


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def lua_quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def main(argv):
    cmd = argv[1]
    if cmd == "create":
        url, cred, name, script = argv[2:6]
        mr = int(argv[6]) if len(argv) > 6 else 600
        print(client(url, cred).create_training_job(**job(name, script, mr))["TrainingJobArn"])
    elif cmd == "wait":
        url, cred, name, timeout = argv[2:6]
        print(wait(client(url, cred), name, float(timeout))["TrainingJobStatus"])
    elif cmd == "wrk-lua":
        url, cred, name, out = argv[2:6]
        akid, secret = keys(cred)
        body = json.dumps({"TrainingJobName": name})
        req = botocore.awsrequest.AWSRequest(
            method="POST", url=url.rstrip("/") + "/", data=body.encode(),
            headers={"Content-Type": "application/x-amz-json-1.1",
                     "X-Amz-Target": "SageMaker.DescribeTrainingJob"})
        botocore.auth.SigV4Auth(botocore.credentials.Credentials(akid, secret), "sagemaker",
                                REGION).add_auth(req)
        lines = ['wrk.method = "POST"', f"wrk.body = {lua_quote(body)}"]
        for k in ("Content-Type", "X-Amz-Target", "X-Amz-Date", "Authorization"):
            lines.append(f"wrk.headers[{lua_quote(k)}] = {lua_quote(req.headers[k])}")
        lines.append("""
done = function(summary, latency, requests)
  io.write(string.format("LUA requests=%d duration_us=%d p50_us=%d p99_us=%d non2xx=%d errors=%d\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.timeout))
end""")
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")
    elif cmd == "ttr":
        # CreateTrainingJob -> the container's first instruction. The container reads the kernel's
        # uptime clock (shared with the host: no time namespace) with shell builtins only, so the
        # figure does not depend on log or engine timestamps.
        # With KEEPALIVE (> 0) the job asks for a warm pool (ResourceConfig.KeepAlivePeriodInSeconds)
        # and the call returns once the pool is Available; with PREV, PREV's pool must have been
        # reused by this job (Reused, ReusedByJob NAME), else the run is refused.
        url, cred, name = argv[2:5]
        keep = int(argv[5]) if len(argv) > 5 else 0
        prev = argv[6] if len(argv) > 6 else ""
        sm = client(url, cred)
        logs = client(url, cred, "logs")
        req = job(name, 'read up _ < /proc/uptime; echo "RUNNING_AT $up"')
        if keep > 0:
            # 2 GB: the interleaved cold runs (1 GB) never match, so never take, the pool
            req["ResourceConfig"].update({"KeepAlivePeriodInSeconds": keep, "VolumeSizeInGB": 2})
        t0 = uptime()
        sm.create_training_job(**req)
        d = wait(sm, name, 120)
        if d["TrainingJobStatus"] != "Completed":
            raise SystemExit(f"{name}: {d['TrainingJobStatus']} {d.get('FailureReason')}")
        deadline = time.monotonic() + 30
        while keep > 0 and d.get("WarmPoolStatus", {}).get("Status") != "Available":
            if time.monotonic() > deadline:
                raise SystemExit(f"{name}: no Available warm pool: {d.get('WarmPoolStatus')}")
            time.sleep(0.05)
            d = sm.describe_training_job(TrainingJobName=name)
        if prev:
            w = sm.describe_training_job(TrainingJobName=prev).get("WarmPoolStatus", {})
            if w.get("Status") != "Reused" or w.get("ReusedByJob") != name:
                raise SystemExit(f"{name}: did not reuse {prev}'s warm pool: {w}")
        streams = logs.describe_log_streams(logGroupName="/aws/sagemaker/TrainingJobs",
                                            logStreamNamePrefix=name + "/")["logStreams"]
        ev = logs.get_log_events(logGroupName="/aws/sagemaker/TrainingJobs",
                                 logStreamName=streams[0]["logStreamName"], startFromHead=True)
        for e in ev["events"]:
            if e["message"].startswith("RUNNING_AT "):
                print(f"{float(e['message'].split()[1]) - t0:.3f}")
                return
        raise SystemExit(f"{name}: no RUNNING_AT line in {ev['events']}")
    elif cmd == "logs":
        # A job that prints N numbered lines as fast as busybox's seq can: the time from
        # CreateTrainingJob until its stream holds the last line (polled every 50 ms), then a
        # full read that checks every line is there once and in order. Prints
        # "LOGS lines=N seconds=S lines_per_s=R missing=M doubled=D in_order=0|1".
        url, cred, name, n = argv[2], argv[3], argv[4], int(argv[5])
        sm = client(url, cred)
        logs = client(url, cred, "logs")
        group = "/aws/sagemaker/TrainingJobs"
        t0 = time.monotonic()
        sm.create_training_job(**job(name, f"seq 1 {n}", 1800))
        stream, t_end = None, None
        while time.monotonic() - t0 < 1800:
            if not stream:
                ss = logs.describe_log_streams(logGroupName=group,
                                               logStreamNamePrefix=name + "/")["logStreams"]
                stream = ss[0]["logStreamName"] if ss else None
            if stream:
                ev = logs.get_log_events(logGroupName=group, logStreamName=stream,
                                         startFromHead=False, limit=1)["events"]
                if ev and ev[-1]["message"] == str(n):
                    t_end = time.monotonic()
                    break
            d = sm.describe_training_job(TrainingJobName=name)
            if d["TrainingJobStatus"] in ("Failed", "Stopped"):
                raise SystemExit(f"{name}: {d['TrainingJobStatus']} {d.get('FailureReason')}")
            if d["TrainingJobStatus"] == "Completed" and stream:
                t_end = time.monotonic()  # ended without its last line: counted below
                break
            time.sleep(0.05)
        if t_end is None:
            raise SystemExit(f"{name}: no last line after 1800 s")
        wait(sm, name, 600)
        nums, kw = [], {"logGroupName": group, "logStreamName": stream, "startFromHead": True}
        while True:
            r = logs.get_log_events(**kw)
            if not r["events"]:
                break
            nums.extend(int(e["message"]) for e in r["events"] if e["message"].isdigit())
            kw["nextToken"] = r["nextForwardToken"]
        seen = set(nums)
        missing = sum(1 for i in range(1, n + 1) if i not in seen)
        print(f"LOGS lines={n} seconds={t_end - t0:.2f} lines_per_s={n / (t_end - t0):.0f} "
              f"missing={missing} doubled={len(nums) - len(seen)} "
              f"in_order={int(nums == list(range(1, n + 1)))}")
    elif cmd == "uptime":
        print(f"{uptime():.2f}")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
