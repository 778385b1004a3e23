"""The condition keys AWS sets are set here too, so Deny statements on them fire (issue 37,
finding 3): S3's own keys (s3:prefix, s3:delimiter, s3:max-keys, s3:x-amz-acl,
s3:signatureversion, ...), aws:SourceIp and aws:UserAgent, and SageMaker's training keys
(sagemaker:MaxRuntimeInSeconds, NetworkIsolation, VolumeKmsKey, ...). Before, none of these
was in the request context: each Deny below let its request through.

One private server without agents (jobs only queue); each test has its own IAM user whose
policy allows everything and denies one thing by one condition key. Users are ck-*.
"""
import json
import os
import uuid

import botocore.exceptions
import pytest

import tyhelpers as H


@pytest.fixture(scope="module")
def srv(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "cond-keys"), agents=0)
    s.start()
    s.client("s3").create_bucket(Bucket="ck-bucket")
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()


def user_with(srv, deny, actions="*"):
    """A new user allowed everything except deny (one Deny statement); its keys."""
    iam = srv.client("iam")
    name = "ck-" + uuid.uuid4().hex[:8]
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": actions, "Resource": "*"},
            dict({"Effect": "Deny"}, **deny)]}))
    k = iam.create_access_key(UserName=name)["AccessKey"]
    return k["AccessKeyId"], k["SecretAccessKey"]


def refused(call):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call()
    assert e.value.response["Error"]["Code"] in ("AccessDenied", "AccessDeniedException"), \
        e.value.response
    return e.value.response["Error"]["Message"]


def test_s3_prefix_delimiter_and_acl(srv):
    keys = user_with(srv, {"Action": "s3:ListBucket", "Resource": "arn:aws:s3:::ck-bucket",
                           "Condition": {"StringLike": {"s3:prefix": "secret*"}}})
    s3 = srv.client("s3", keys=keys, s3={"addressing_style": "path"})
    refused(lambda: s3.list_objects_v2(Bucket="ck-bucket", Prefix="secret/"))
    s3.list_objects_v2(Bucket="ck-bucket", Prefix="public/")
    keys = user_with(srv, {"Action": "s3:ListBucket", "Resource": "*",
                           "Condition": {"StringEquals": {"s3:delimiter": "/"}}})
    s3 = srv.client("s3", keys=keys, s3={"addressing_style": "path"})
    refused(lambda: s3.list_objects_v2(Bucket="ck-bucket", Delimiter="/"))
    s3.list_objects_v2(Bucket="ck-bucket")
    keys = user_with(srv, {"Action": "s3:PutObject", "Resource": "*",
                           "Condition": {"StringEquals": {"s3:x-amz-acl": "public-read"}}})
    s3 = srv.client("s3", keys=keys, s3={"addressing_style": "path"})
    refused(lambda: s3.put_object(Bucket="ck-bucket", Key="k", Body=b"x", ACL="public-read"))
    s3.put_object(Bucket="ck-bucket", Key="k", Body=b"x")
    keys = user_with(srv, {"Action": "s3:GetObject", "Resource": "*",
                           "Condition": {"StringEquals": {"s3:signatureversion": "AWS"}}})
    v2 = srv.client("s3", keys=keys, s3={"addressing_style": "path"}, signature_version="s3")
    v4 = srv.client("s3", keys=keys, s3={"addressing_style": "path"}, signature_version="s3v4")
    refused(lambda: v2.get_object(Bucket="ck-bucket", Key="k"))
    assert v4.get_object(Bucket="ck-bucket", Key="k")["Body"].read() == b"x"


def test_source_ip_and_user_agent(srv):
    keys = user_with(srv, {"Action": "sagemaker:ListTrainingJobs", "Resource": "*",
                           "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}})
    sm = srv.client("sagemaker", keys=keys)
    refused(lambda: sm.list_training_jobs())
    keys = user_with(srv, {"Action": "sagemaker:ListTrainingJobs", "Resource": "*",
                           "Condition": {"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}})
    refused(lambda: srv.client("sagemaker", keys=keys).list_training_jobs())
    keys = user_with(srv, {"Action": "s3:ListAllMyBuckets", "Resource": "*",
                           "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}})
    refused(lambda: srv.client("s3", keys=keys).list_buckets())
    keys = user_with(srv, {"Action": "sagemaker:ListTrainingJobs", "Resource": "*",
                           "Condition": {"StringLike": {"aws:UserAgent": "*Botocore*"}}})
    refused(lambda: srv.client("sagemaker", keys=keys).list_training_jobs())
    # a source the Deny does not name is allowed
    keys = user_with(srv, {"Action": "sagemaker:ListTrainingJobs", "Resource": "*",
                           "Condition": {"IpAddress": {"aws:SourceIp": "192.0.2.0/24"}}})
    srv.client("sagemaker", keys=keys).list_training_jobs()


def test_sagemaker_training_keys(srv):
    sm_admin = srv.client("sagemaker")
    keys = user_with(srv, {"Action": "sagemaker:CreateTrainingJob", "Resource": "*",
                           "Condition": {"NumericGreaterThan":
                                         {"sagemaker:MaxRuntimeInSeconds": "3600"}}})
    sm = srv.client("sagemaker", keys=keys)
    long_job = H.unique("ck-long")
    refused(lambda: sm.create_training_job(**H.job_request(long_job, "true", max_runtime=86400,
                                                           instance_type="ml.c5.xlarge")))
    with pytest.raises(botocore.exceptions.ClientError):
        sm_admin.describe_training_job(TrainingJobName=long_job)
    sm.create_training_job(**H.job_request(H.unique("ck-short"), "true", max_runtime=600,
                                           instance_type="ml.c5.xlarge"))
    keys = user_with(srv, {"Action": "sagemaker:CreateTrainingJob", "Resource": "*",
                           "Condition": {"Bool": {"sagemaker:NetworkIsolation": "false"}}})
    sm = srv.client("sagemaker", keys=keys)
    refused(lambda: sm.create_training_job(**H.job_request(H.unique("ck-open"), "true",
                                                           instance_type="ml.c5.2xlarge")))
    sm.create_training_job(**H.job_request(H.unique("ck-iso"), "true",
                                           instance_type="ml.c5.2xlarge",
                                           EnableNetworkIsolation=True))
    keys = user_with(srv, {"Action": "sagemaker:CreateTrainingJob", "Resource": "*",
                           "Condition": {"Null": {"sagemaker:VolumeKmsKey": "true"}}})
    sm = srv.client("sagemaker", keys=keys)
    refused(lambda: sm.create_training_job(**H.job_request(H.unique("ck-nokms"), "true",
                                                           instance_type="ml.c5.4xlarge")))
    # the same keys decide a tuning job, from its training definition
    keys = user_with(srv, {"Action": "sagemaker:CreateHyperParameterTuningJob", "Resource": "*",
                           "Condition": {"NumericGreaterThan":
                                         {"sagemaker:MaxRuntimeInSeconds": "3600"}}})
    sm = srv.client("sagemaker", keys=keys)
    refused(lambda: sm.create_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=H.unique("ck-hpo")[:32],
        HyperParameterTuningJobConfig={
            "Strategy": "Random",
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 1, "MaxParallelTrainingJobs": 1},
            "ParameterRanges": {"ContinuousParameterRanges": [
                {"Name": "x", "MinValue": "0", "MaxValue": "1"}]}},
        TrainingJobDefinition={
            "StaticHyperParameters": {},
            "RoleArn": H.ROLE,
            "AlgorithmSpecification": {"TrainingImage": H.RUNTIME_IMAGE,
                                       "TrainingInputMode": "File",
                                       "MetricDefinitions": [{"Name": "m", "Regex": "m=(.*)"}]},
            "OutputDataConfig": {"S3OutputPath": "s3://ck-bucket/out"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1,
                               "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 86400}}))


def test_sagemaker_studio_keys(srv):
    """Studio operations carry the SageMaker keys AWS lists for them: a Deny on a profile's
    default app instance type, a domain's network access, an app's image fires (before, such a
    policy was refused at write time: the keys were never set)."""
    sm_admin = srv.client("sagemaker")
    dom = sm_admin.create_domain(DomainName=H.unique("ck-dom")[:60], AuthMode="IAM",
                                 DefaultUserSettings={"ExecutionRole": H.ROLE},
                                 SubnetIds=["subnet-0"], VpcId="vpc-0")["DomainArn"].split("/")[-1]
    keys = user_with(srv, {"Action": "sagemaker:*", "Resource": "*",
                           "Condition": {"ForAnyValue:StringLike":
                                         {"sagemaker:InstanceTypes": "ml.p*"}}})
    sm = srv.client("sagemaker", keys=keys)
    gpu = {"JupyterServerAppSettings": {"DefaultResourceSpec": {"InstanceType": "ml.p3.2xlarge"}}}
    refused(lambda: sm.create_user_profile(DomainId=dom, UserProfileName="ck-gpu",
                                           UserSettings=gpu))
    sm.create_user_profile(DomainId=dom, UserProfileName="ck-cpu", UserSettings={
        "JupyterServerAppSettings": {"DefaultResourceSpec": {"InstanceType": "system"}}})
    refused(lambda: sm.update_user_profile(DomainId=dom, UserProfileName="ck-cpu",
                                           UserSettings=gpu))
    keys = user_with(srv, {"Action": "sagemaker:CreateDomain", "Resource": "*",
                           "Condition": {"StringEquals":
                                         {"sagemaker:AppNetworkAccess": "PublicInternetOnly"}}})
    sm = srv.client("sagemaker", keys=keys)
    refused(lambda: sm.create_domain(DomainName=H.unique("ck-open")[:60], AuthMode="IAM",
                                     DefaultUserSettings={"ExecutionRole": H.ROLE},
                                     SubnetIds=["subnet-0"], VpcId="vpc-0"))
    keys = user_with(srv, {"Action": "sagemaker:CreateApp", "Resource": "*",
                           "Condition": {"ForAnyValue:StringLike":
                                         {"sagemaker:ImageArns": "*:image/untrusted*"}}})
    sm = srv.client("sagemaker", keys=keys)
    refused(lambda: sm.create_app(DomainId=dom, UserProfileName="ck-cpu",
                                  AppType="JupyterServer", AppName="default", ResourceSpec={
                                      "InstanceType": "system", "SageMakerImageArn":
                                      "arn:aws:sagemaker:us-east-1:000000000000:image/untrusted"}))

def test_policy_naming_a_key_never_provided_is_refused(srv):
    """A condition on a key no request carries would never match: such a policy used to be
    stored and silently inert (a Deny that never fires). PutUserPolicy and PutRolePolicy now
    refuse it, naming the key; keys the server provides, tag keys of any name included, are
    accepted."""
    iam = srv.client("iam")
    iam.create_user(UserName="ck-writer")

    def put(key):
        return iam.put_user_policy(UserName="ck-writer", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Deny", "Action": "*", "Resource": "*",
                "Condition": {"StringEquals": {key: "x"}}}]}))

    for key in ("aws:MultiFactorAuthPresent", "sagemaker:NoSuchKey", "s3:ExistingObjectTag/x",
                "aws:SourceVpc"):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            put(key)
        assert e.value.response["Error"]["Code"] == "MalformedPolicyDocument", e.value.response
        assert key in e.value.response["Error"]["Message"]
    assert iam.list_user_policies(UserName="ck-writer")["PolicyNames"] == []
    for key in ("aws:SourceIp", "AWS:SOURCEIP", "aws:RequestTag/anything", "s3:prefix",
                "sagemaker:MaxRuntimeInSeconds", "aws:PrincipalTag/team"):
        put(key)
    trust = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
        "Action": "sts:AssumeRole"}]})
    iam.create_role(RoleName="ck-role", AssumeRolePolicyDocument=trust)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        iam.put_role_policy(RoleName="ck-role", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "s3:*", "Resource": "*",
                "Condition": {"Bool": {"aws:ViaAWSService": "true"}}}]}))
    assert e.value.response["Error"]["Code"] == "MalformedPolicyDocument"
