#!/usr/bin/python3
"""seeds.py - (re)writes the committed seed corpus of the libFuzzer harnesses, corpus/<harness>/.

Run it from anywhere: /usr/bin/python3 tests/fuzz/seeds.py (Debian's botocore). Signed requests are signed by botocore (as the
SDKs sign them); aws-chunked bodies carry real chunk signatures for the key fuzz_multipart.c uses.
"""
import hashlib
import hmac
import json
import os
import struct
import zlib
import base64
import datetime

import botocore.auth

from botocore.auth import S3SigV4Auth, SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

class _FixedClock(datetime.datetime):
    """botocore signs at fuzz_sigv4.c's FUZZ_T0 (20150830T123600Z), so that seeds verify there
    with the secret it uses and the files do not change from one run to the next."""

    @classmethod
    def utcnow(cls):
        return datetime.datetime(2015, 8, 30, 12, 36, 0)


botocore.auth.datetime.datetime = _FixedClock
if hasattr(botocore.auth, "get_current_datetime"):  # newer botocore
    botocore.auth.get_current_datetime = lambda *a, **k: _FixedClock.utcnow()

HERE = os.path.dirname(os.path.abspath(__file__))
CRED = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
TMP = Credentials("ASIAEXAMPLE", "secret", "FQoGZXIvYXdzEBYaDtoken")


def put(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def wire(req):
    """fuzz_sigv4.c / fuzz_req.h layout: method, path, query, headers, empty line, body."""
    from urllib.parse import urlsplit
    u = urlsplit(req.url)
    lines = [req.method, u.path or "/", u.query]
    if "host" not in (k.lower() for k in req.headers.keys()):
        lines.append("Host: %s" % u.netloc)  # signed by botocore from the URL
    lines += ["%s: %s" % (k, v) for k, v in req.headers.items()]
    body = req.body or b""
    if isinstance(body, str):
        body = body.encode()
    return ("\n".join(lines) + "\n\n").encode() + body


def signed(method, url, headers=None, body=b"", service="s3", cred=CRED, query_auth=False):
    req = AWSRequest(method=method, url=url, headers=headers or {}, data=body)
    if query_auth:
        S3SigV4QueryAuth(cred, service, "us-east-1", expires=300).add_auth(req)
    elif service == "s3":
        req.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
        S3SigV4Auth(cred, service, "us-east-1").add_auth(req)
    else:
        SigV4Auth(cred, service, "us-east-1").add_auth(req)
    return wire(req)


def requests():
    h = "http://localhost:8080"
    return {
        "s3_get": signed("GET", h + "/bucket/dir/key%20one.txt"),
        "s3_put": signed("PUT", h + "/bucket/k", {"Content-MD5": "XrY7u+Ae7tCTyyK7j1rNww=="},
                         b"hello world"),
        "s3_presigned": signed("GET", h + "/bucket/key?versionId=1", query_auth=True),
        "s3_vhost": signed("GET", "http://bucket.localhost:8080/?list-type=2&prefix=a%2Fb"),
        "s3_uploads": signed("POST", h + "/bucket/big?uploads"),
        "s3_copy": signed("PUT", h + "/bucket/dst?partNumber=2&uploadId=abc",
                          {"x-amz-copy-source": "/src/some%2Fkey?versionId=x",
                           "x-amz-copy-source-range": "bytes=0-99"}),
        "s3_delete": signed("POST", h + "/bucket?delete", {},
                            b"<Delete><Object><Key>a</Key></Object></Delete>"),
        "sagemaker": signed("POST", h + "/", {"X-Amz-Target": "SageMaker.ListTrainingJobs",
                            "Content-Type": "application/x-amz-json-1.1"}, b"{}",
                            service="sagemaker", cred=TMP),
        "logs": signed("POST", h + "/", {"X-Amz-Target": "Logs_20140328.GetLogEvents"},
                       b'{"logGroupName":"/aws/sagemaker/TrainingJobs"}', service="logs"),
        "sts": signed("POST", h + "/", {"Content-Type": "application/x-www-form-urlencoded"},
                      b"Action=GetCallerIdentity&Version=2011-06-15", service="sts"),
        "iam": signed("GET", h + "/?Action=ListRoles&Version=2010-05-08&PathPrefix=%2F",
                      service="iam"),
    }


def chunked(chunks, key, seed, date, scope, trailer=None):
    """STREAMING-AWS4-HMAC-SHA256-PAYLOAD framing with real chunk signatures."""
    out, prev = b"", seed
    empty = hashlib.sha256(b"").hexdigest()
    for c in chunks + [b""]:
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", date, scope, prev, empty,
                         hashlib.sha256(c).hexdigest()])
        prev = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        out += b"%x;chunk-signature=%s\r\n" % (len(c), prev.encode())
        if c:
            out += c + b"\r\n"
    out += (trailer or b"") + b"\r\n"
    return out


def multipart():
    key = bytes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10] + [0] * 22)
    seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
    date, scope = "20130524T000000Z", "20130524/us-east-1/s3/aws4_request"
    data = [b"a" * 64, b"hello chunk\n", b"z" * 7]
    body = chunked(data, key, seed, date, scope)
    dec = sum(len(c) for c in data)
    head = "PUT\n/bucket/key\n\n"
    yield "signed_chunks", (head + "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\n"
                            "x-amz-decoded-content-length: %d\n\n" % dec).encode() + body
    crc = base64.b64encode(struct.pack(">I", zlib.crc32(b"".join(data)))).decode()
    unsigned = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in data) + \
        b"0\r\nx-amz-checksum-crc32:" + crc.encode() + b"\r\n\r\n"
    yield "unsigned_trailer", (head + "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\n"
                               "x-amz-trailer: x-amz-checksum-crc32\n"
                               "x-amz-decoded-content-length: %d\n\n" % dec).encode() + unsigned
    raw = b"hello world"
    md5 = base64.b64encode(hashlib.md5(raw).digest()).decode()
    sha = hashlib.sha256(raw).hexdigest()
    s256 = base64.b64encode(hashlib.sha256(raw).digest()).decode()
    yield "raw_md5_sha", (head + "Content-MD5: %s\nx-amz-content-sha256: %s\n"
                          "x-amz-checksum-sha256: %s\n\n" % (md5, sha, s256)).encode() + raw
    yield "range", b"GET\n/bucket/key\n\nRange: bytes=0-99\nIf-Match: \"d41d8cd98f00b204e9800998ecf8427e\"\n\n"
    yield "range_suffix", b"GET\n/bucket/key\n\nRange: bytes=-5\nIf-None-Match: *, \"x\"\n\n"
    yield "crc32c_header", (head + "x-amz-sdk-checksum-algorithm: CRC32C\n"
                            "x-amz-checksum-crc32c: yZRlqg==\n\n").encode() + raw


def s3xml():
    ns = ' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
    return {
        "complete": '<?xml version="1.0" encoding="UTF-8"?>\n<CompleteMultipartUpload%s>'
                    '<Part><PartNumber>1</PartNumber><ETag>"a54357aff0632cce46d942af68356b38"</ETag>'
                    '</Part><Part><ETag>&quot;0c78aef83f66abc1fa1e8477f296d394&quot;</ETag>'
                    '<PartNumber>2</PartNumber><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>'
                    '</CompleteMultipartUpload>' % ns,
        "delete": '<Delete%s><Quiet>true</Quiet><Object><Key>a&amp;b</Key></Object>'
                  '<Object><Key>d/&#x263A;&#65;</Key><VersionId>null</VersionId></Object>'
                  '</Delete>' % ns,
        "create_bucket": '<CreateBucketConfiguration%s><LocationConstraint>eu-west-1'
                         '</LocationConstraint></CreateBucketConfiguration>' % ns,
        "list_buckets": '<ListAllMyBucketsResult%s><Owner><ID>x</ID></Owner><Buckets><Bucket>'
                        '<Name>b1</Name><CreationDate>2024-05-01T10:20:30.000Z</CreationDate>'
                        '</Bucket><Bucket><Name>b2</Name></Bucket></Buckets>'
                        '</ListAllMyBucketsResult>' % ns,
        "list_objects": '<ListBucketResult%s><Name>b</Name><IsTruncated>true</IsTruncated>'
                        '<Contents><Key>a/b.txt</Key><LastModified>2024-05-01T10:20:30.000Z'
                        '</LastModified><ETag>&quot;x&quot;</ETag><Size>11</Size></Contents>'
                        '<NextContinuationToken>tok</NextContinuationToken></ListBucketResult>' % ns,
        "error": '<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.'
                 '</Message><Resource>/b/k</Resource><RequestId>1</RequestId></Error>',
        "initiate": '<InitiateMultipartUploadResult%s><Bucket>b</Bucket><Key>k</Key>'
                    '<UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>' % ns,
        "empty_elems": '<Delete><Quiet/><Object><Key/></Object></Delete>',
    }


def frame(stream, payload):
    return struct.pack(">BxxxI", stream, len(payload)) + payload


def docker():
    ts = b"2024-05-01T10:20:30.123456789Z "
    mux = frame(1, ts + b"epoch 1 loss 0.5\n" + ts + b"epoch 2") + frame(1, b" loss 0.4\n") + \
        frame(2, b"2024-05-01T10:20:31+02:00 warning: x\n")
    return {
        # flags, line ceiling, feed size, stream
        "mux_ts": bytes([1, 200, 5]) + mux,
        "mux_ts_one_feed": bytes([1, 255, 255]) + mux,
        "mux_no_ts": bytes([0, 16, 3]) + frame(1, b"a line longer than sixteen bytes\nb\n") +
        frame(2, b"err\n"),
        "raw": bytes([1, 100, 7]) + ts + b"raw tty line\r\n" + ts + b"second\n",
        "raw_forced": bytes([4, 50, 2]) + b"\x01\x00\x00\x00 not a frame\n",
        "stop": bytes([9, 100, 100]) + b"".join(frame(1, ts + b"l%d\n" % i) for i in range(6)),
        "time_offset": b"2024-02-29T23:59:60.5-07:30",
        # an image import's answer (Docker, Podman) and an error answer
        "import_docker": bytes([0, 255, 40]) + b'{"status":"Loading layer","progress":"[=>  ]"}\r\n'
        b'{"status":"sha256:4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"}\r\n',
        "import_podman": bytes([0, 60, 17]) + b'{"stream":"Loaded image: trainyard-runtime:latest\\n"}\n'
        b'{"id":"sha256:0c78aef83f66abc1fa1e8477f296d3940c78aef83f66abc1fa1e8477f296d394"}\n',
        "import_error": bytes([0, 255, 255]) + b'{"error":"archive/tar: invalid tar header",'
        b'"errorDetail":{"message":"archive/tar: invalid tar header"}}',
        "engine_error": bytes([0, 255, 255]) + b'{"message":"No such container: abc","cause":"x"}',
    }


def iam():
    pol = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["sagemaker:*", "s3:Get*"], "Resource": "*"},
        {"Effect": "Deny", "NotAction": "s3:DeleteObject", "Resource": "arn:aws:s3:::b/*",
         "Condition": {"StringEquals": {"aws:username": "alice"},
                       "StringLike": {"s3:prefix": ["home/${aws:username}/*"]},
                       "Bool": {"aws:SecureTransport": "true"}}}]}
    role = {"Version": "2012-10-17", "Statement": {"Effect": "Allow", "Action": "iam:PassRole",
            "Resource": "arn:aws:iam::000000000000:role/*",
            "Condition": {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}}}
    return {
        "allow_deny": "s3:GetObject arn:aws:s3:::b/home/alice/x aws:username=alice s3:prefix=home/alice/\n"
                      + json.dumps(pol),
        "passrole": "iam:PassRole arn:aws:iam::000000000000:role/R iam:PassedToService=sagemaker.amazonaws.com\n"
                    + json.dumps(role),
        "not_resource": "sagemaker:CreateTrainingJob arn:aws:sagemaker:us-east-1:0:training-job/j\n"
                        '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*",'
                        '"NotResource":["arn:aws:s3:::*"],"Condition":{"NumericLessThan":'
                        '{"sagemaker:MaxRuntimeInSeconds":"3600"},"ArnLike":{"aws:SourceArn":'
                        '"arn:aws:*:*:*:*"},"DateGreaterThan":{"aws:CurrentTime":"2020-01-01T00:00:00Z"}}}]}',
    }


def model():
    create = {"TrainingJobName": "job-1", "RoleArn": "arn:aws:iam::000000000000:role/R",
              "AlgorithmSpecification": {"TrainingImage": "trainyard/builtin:latest",
                                         "TrainingInputMode": "File"},
              "InputDataConfig": [{"ChannelName": "train", "DataSource": {"S3DataSource": {
                  "S3DataType": "S3Prefix", "S3Uri": "s3://b/train/"}}}],
              "OutputDataConfig": {"S3OutputPath": "s3://b/out/"},
              "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1,
                                 "VolumeSizeInGB": 10},
              "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
              "HyperParameters": {"epochs": "2"}, "Tags": [{"Key": "k", "Value": "v"}]}
    return {
        "create_training_job": bytes([0]) + json.dumps(create).encode(),
        "describe": bytes([1]) + b'{"TrainingJobName":"job-1"}',
        "list": bytes([2]) + b'{"MaxResults":10,"StatusEquals":"InProgress","SortBy":"CreationTime"}',
        "add_tags": bytes([6]) + b'{"ResourceArn":"arn:aws:sagemaker:us-east-1:0:training-job/j","Tags":[]}',
        "get_log_events": bytes([15]) + b'{"logGroupName":"/aws/sagemaker/TrainingJobs","logStreamName":"j/algo-1","startFromHead":true,"limit":5}',
        "create_app": bytes([12]) + b'{"DomainId":"d-1","UserProfileName":"u","AppType":"JupyterServer","AppName":"default"}',
    }


def form():
    """Whole forms as the form parsers get them (fuzz_form): CloudWatch, IAM, the console."""
    return {
        "cloudwatch_list_metrics": b"Action=ListMetrics&Version=2010-08-01&Namespace=trainyard"
                                   b"&Dimensions.member.1.Name=Host&Dimensions.member.1.Value=algo-1",
        "iam_tag_user": b"Action=TagUser&Version=2010-05-08&UserName=u&Tags.member.1.Key=team"
                        b"&Tags.member.1.Value=a",
        "console_do": b"csrf=x&p.DomainName=d1&p.DefaultUserSettings.ExecutionRole="
                      b"arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&l.SubnetIds=subnet-1&n.MaxResults=5&t.team=a",
        "cloudwatch_member_key_not_utf8": b"Action=ListMetrics&Version=2010-08-01&%FF.member.1=x",
    }


def proxy():
    """PROXY protocol v1 header lines without their CRLF (fuzz_proxy), as relays send them."""
    return {
        "tcp4": b"PROXY TCP4 127.18.3.4 10.0.0.1 40000 8080",
        "tcp6": b"PROXY TCP6 ::ffff:127.9.8.7 2001:db8::1 51234 443",
        "unknown": b"PROXY UNKNOWN",
    }


def slurm():
    """Byte 0 flags, then a GET /job answer (fuzz_slurm): recorded ones from
    tests/unit/data/slurm, kept to the fields the executor reads; and a host list."""
    data = os.path.join(HERE, "..", "unit", "data", "slurm")
    keep = ("job_id", "name", "comment", "job_state", "state_reason", "state_description", "nodes",
            "batch_host", "node_count", "restart_cnt", "exit_code", "derived_exit_code",
            "submit_time", "start_time", "end_time")
    out = {"hostlist": b"\x08n[1-2],gpu[08-10]"}
    for name in ("job_node_fail", "job_requeued", "job_pending_partition_limit",
                 "job_running_2_nodes", "job_failed_exit3"):
        with open(os.path.join(data, name + ".json")) as f:
            job = json.load(f)["jobs"][0]
        job = {k: job[k] for k in keep if k in job}
        out[name] = b"\x00" + json.dumps({"jobs": [job]}).encode()
    return out


def launchwire():
    """Report bodies a launcher sends (fuzz_launchwire), and an answer."""
    head = {"v": 1, "job": "train-1", "attempt": 1, "host": 1, "node": "n2", "seq": 3}
    out = {
        "staging": dict(head, phase="staging"),
        "running": dict(head, phase="running", started=1765100000.5,
                        lines=[[1765100000600, "epoch 1 loss=0.25", 0], [1765100000601, "warn", 1]]),
        "ended": dict(head, phase="ended", started=1765100000.5,
                      exit={"code": 1, "signal": 0, "stopped": False, "failure": "ValueError: x",
                            "model_error": ""}),
        "answer": {"ack": 3, "stop": True, "grace": 120, "upload": True},
    }
    return {k: json.dumps(v).encode() for k, v in out.items()}


def main():
    reqs = requests()
    for name in ("s3_get", "s3_presigned", "s3_put", "sagemaker", "sts", "iam"):
        put("sigv4", name, reqs[name])
    for name, data in reqs.items():
        put("route", name, data)
    put("route", "healthz", b"GET\n/healthz\n\n\n")
    put("route", "unsigned_form", b"POST\n/\n\nContent-Type: application/x-www-form-urlencoded\n\n"
        b"Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A0%3Arole%2FR")
    for name, data in multipart():
        put("multipart", name, data)
    for harness, seeds in (("s3xml", s3xml()), ("docker", docker()), ("iam", iam()),
                           ("model", model()), ("form", form()), ("proxy", proxy()),
                           ("slurm", slurm()), ("launchwire", launchwire())):
        for name, data in seeds.items():
            put(harness, name, data)


if __name__ == "__main__":
    main()
