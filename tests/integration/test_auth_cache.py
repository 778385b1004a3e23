"""Cached authentication (auth.h, authgen.h): each server keeps verified access keys and the
callers' policies in process, so an authenticated read is one Redis round trip; a change made
anywhere moves ty:iam:version and every server drops what it cached within AUTHGEN_POLL_MS.
Two servers (no agents) share one Redis: changes go through A, requests through B, whose
caches are warm; B must follow within a second.
"""
import json
import os
import time

import botocore.exceptions
import pytest

USER = "fdcache-user"
ALLOW_LIST = {"Version": "2012-10-17",
              "Statement": [{"Effect": "Allow", "Action": "sagemaker:ListTrainingJobs",
                             "Resource": "*"}]}


@pytest.fixture
def pair(make_server):
    a = make_server(agents=0)
    akid, secret = a.credentials()
    b = make_server(agents=0,
                    extra=["--redis", "unix://" + os.path.join(a.data_dir, "redis", "redis.sock")],
                    env={"TRAINYARD_ADMIN_ACCESS_KEY_ID": akid,
                         "TRAINYARD_ADMIN_SECRET_ACCESS_KEY": secret})
    return a, b


def _code(ei):
    return ei.value.response["Error"]["Code"], ei.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_changes_through_another_server_apply_within_a_second(pair):
    a, b = pair
    iam = a.client("iam")
    iam.create_user(UserName=USER)
    k = iam.create_access_key(UserName=USER)["AccessKey"]
    keys = (k["AccessKeyId"], k["SecretAccessKey"])
    sts_b, sm_b = b.client("sts", keys=keys), b.client("sagemaker", keys=keys)

    # warm B's caches: the key verifies, and without a policy the user is denied
    for _ in range(5):
        assert sts_b.get_caller_identity()["Arn"].endswith(f":user/{USER}")
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            sm_b.list_training_jobs()
        assert _code(ei) == ("AccessDeniedException", 403)

    # a policy put through A reaches B's policy cache
    iam.put_user_policy(UserName=USER, PolicyName="list", PolicyDocument=json.dumps(ALLOW_LIST))
    time.sleep(1.0)
    assert "TrainingJobSummaries" in sm_b.list_training_jobs()

    # an access key deleted through A is refused by B a second later, on every protocol
    iam.delete_access_key(UserName=USER, AccessKeyId=keys[0])
    time.sleep(1.0)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sts_b.get_caller_identity()
    assert _code(ei) == ("InvalidClientTokenId", 403)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        sm_b.list_training_jobs()
    assert _code(ei)[0] == "UnrecognizedClientException"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        b.client("s3", keys=keys).list_buckets()
    assert _code(ei) == ("InvalidAccessKeyId", 403)
