"""API calls of the browser test (tests/browser/console.mjs runs this between its steps), with
Debian's boto3 and the keys the test's users got in the console:

  api.py URL AKID SECRET create-job NAME KIND   KIND: "profiled" (the built-in trainer on a
                                                tiny data set, profiled, 6 epochs) or "long"
                                                (a shell loop printing a loss line a second,
                                                profiled: live system metrics)
  api.py URL AKID SECRET wait-job NAME STATUS[,STATUS...] [TIMEOUT]
  api.py URL AKID SECRET describe NAME
  api.py URL AKID SECRET put-object BUCKET KEY CONTENT-TYPE BODY
  api.py URL AKID SECRET presign BUCKET KEY v4|v2    a presigned GET, as any client makes one
  api.py URL AKID SECRET user-policies USER          the names of USER's inline policies

Prints one JSON object; exit 0, or 1 with the error on stderr.
"""
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import tyhelpers as H  # noqa: E402

import boto3  # noqa: E402

BUCKET = "con-browser"
METRICS = [{"Name": "train:loss", "Regex": "train_loss=([0-9.]+)"}]


def client(url, akid, secret, service):
    return boto3.client(service, endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id=akid, aws_secret_access_key=secret)


def create(url, akid, secret, name, kind):
    sm = client(url, akid, secret, "sagemaker")
    if kind == "long":
        script = ('i=0; while [ $i -lt 600 ]; do i=$((i+1)); '
                  'echo "step=$i train_loss=$(awk "BEGIN{print 2/$i}")"; sleep 1; done')
        req = H.job_request(name, script, output=f"s3://{BUCKET}/out")
        req["AlgorithmSpecification"]["MetricDefinitions"] = METRICS
        # profiled too: its system metrics reach S3 while it runs (the live charts)
        req["ProfilerConfig"] = {"S3OutputPath": f"s3://{BUCKET}/prof",
                                 "ProfilingIntervalInMilliseconds": 500}
        sm.create_training_job(**req)
        return {"TrainingJobName": name}
    s3 = client(url, akid, secret, "s3")
    try:
        s3.create_bucket(Bucket=BUCKET)
    except Exception:  # noqa: BLE001 - it exists
        pass
    n = 64
    images = struct.pack(">IIII", 0x803, n, 28, 28) + bytes(n * 784)
    labels = struct.pack(">II", 0x801, n) + bytes(i % 8 for i in range(n))
    s3.put_object(Bucket=BUCKET, Key=f"{name}/train/train-images-idx3-ubyte", Body=images)
    s3.put_object(Bucket=BUCKET, Key=f"{name}/train/train-labels-idx1-ubyte", Body=labels)
    req = H.job_request(name, "true", output=f"s3://{BUCKET}/out")
    del req["AlgorithmSpecification"]["ContainerEntrypoint"]  # the image's own `train`
    req["AlgorithmSpecification"]["MetricDefinitions"] = METRICS
    req["HyperParameters"] = {"model": "mlp-small", "epochs": "6", "batch_size": "16"}
    req["InputDataConfig"] = [{
        "ChannelName": "train",
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                        "S3Uri": f"s3://{BUCKET}/{name}/train",
                                        "S3DataDistributionType": "FullyReplicated"}}}]
    req["ProfilerConfig"] = {"S3OutputPath": f"s3://{BUCKET}/prof",
                             "ProfilingIntervalInMilliseconds": 100}
    req["ProfilerRuleConfigurations"] = [
        {"RuleConfigurationName": "LowGPUUtilization", "RuleEvaluatorImage": "x",
         "RuleParameters": {"rule_to_invoke": "LowGPUUtilization"}}]
    sm.create_training_job(**req)
    return {"TrainingJobName": name}


def wait(url, akid, secret, name, statuses, timeout):
    sm = client(url, akid, secret, "sagemaker")
    want = statuses.split(",")
    end = time.time() + timeout
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        if d["TrainingJobStatus"] in want:
            return {"TrainingJobStatus": d["TrainingJobStatus"],
                    "FailureReason": d.get("FailureReason", "")}
        if time.time() > end:
            raise SystemExit(f"{name} is {d['TrainingJobStatus']} after {timeout}s "
                             f"({d.get('FailureReason', '')})")
        time.sleep(0.5)


def main(argv):
    url, akid, secret, cmd = argv[1:5]
    if cmd == "create-job":
        out = create(url, akid, secret, argv[5], argv[6])
    elif cmd == "wait-job":
        out = wait(url, akid, secret, argv[5], argv[6], float(argv[7]) if len(argv) > 7 else 120)
    elif cmd == "describe":
        d = client(url, akid, secret, "sagemaker").describe_training_job(TrainingJobName=argv[5])
        out = {"TrainingJobStatus": d["TrainingJobStatus"]}
    elif cmd == "put-object":
        client(url, akid, secret, "s3").put_object(Bucket=argv[5], Key=argv[6],
                                                   ContentType=argv[7], Body=argv[8].encode())
        out = {}
    elif cmd == "presign":
        import botocore.config
        s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                          aws_access_key_id=akid, aws_secret_access_key=secret,
                          config=botocore.config.Config(
                              signature_version="s3v4" if argv[7] == "v4" else "s3",
                              s3={"addressing_style": "path"}))
        out = {"url": s3.generate_presigned_url("get_object",
                                                Params={"Bucket": argv[5], "Key": argv[6]})}
    elif cmd == "user-policies":
        out = {"PolicyNames": client(url, akid, secret, "iam").list_user_policies(
            UserName=argv[5])["PolicyNames"]}
    else:
        raise SystemExit(f"unknown command {cmd}")
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
