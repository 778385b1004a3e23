"""Studio: domains, user profiles, apps, presigned domain URLs and the profiler app behind them.

Runs against a server of its own without agents (nothing here needs a container), through
boto3, the AWS CLI and hand-signed requests; the console (/console/...) through urllib with a
cookie jar and no automatic redirects, so every redirect and Set-Cookie is checked where it happens.

Timing: Pending/Updating -> InService and Deleting -> Deleted/gone take OP_STUDIO_PENDING_S /
OP_STUDIO_DELETING_S (2 s) on the server; every wait below polls with a deadline.
"""
import http.cookiejar
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from botocore.exceptions import ClientError

import tyhelpers as H

ROLE = "arn:aws:iam::000000000000:role/trainyard"
OWNER_TAG = "sagemaker:user-profile-arn"
ID_RE = re.compile(r"^d-[a-z0-9]{12}$")


# ---------------------------------------------------------------------------------------------
# fixtures of this module

@pytest.fixture(scope="module")
def studio_server(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    d = tempfile.mkdtemp(prefix="studio-", dir=workdir)
    s = H.Server(d, agents=0)
    s.start()
    yield s
    rc = s.stop(timeout=30)
    assert rc == 0, f"server exited with {rc}:\n{s.proc.tail()}"


@pytest.fixture(scope="module")
def ssm(studio_server):
    return studio_server.client("sagemaker")


@pytest.fixture(scope="module")
def ssm_noval(studio_server):
    return studio_server.client("sagemaker", parameter_validation=False)


@pytest.fixture(scope="module")
def cli(studio_server):
    """The AWS CLI (Debian's) against the module's server."""

    def run(*args, check=True):
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"AWS_SHARED_CREDENTIALS_FILE": studio_server.credentials_path,
                    "AWS_CONFIG_FILE": os.path.join(studio_server.data_dir, "no-config"),
                    "AWS_PAGER": "", "AWS_EC2_METADATA_DISABLED": "true",
                    "AWS_MAX_ATTEMPTS": "1"})
        argv = [H.AWS_CLI, "--endpoint-url", studio_server.url, "--region", "us-east-1",
                "--output", "json"] + list(args)
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        if check:
            assert p.returncode == 0, f"{argv} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
            return json.loads(p.stdout) if p.stdout.strip() else {}
        return p

    return run


def _domain(sm, name=None):
    r = sm.create_domain(DomainName=name or H.unique("dom")[:60], AuthMode="IAM",
                         DefaultUserSettings={"ExecutionRole": ROLE},
                         SubnetIds=["subnet-0abc"], VpcId="vpc-0abc")
    return r["DomainArn"].rsplit("/", 1)[1], r


def _err(call, **kw):
    with pytest.raises(ClientError) as ei:
        call(**kw)
    e = ei.value.response
    return e["Error"]["Code"], e["Error"].get("Message", ""), e["ResponseMetadata"]["HTTPStatusCode"]


def _wait_status(describe, want, timeout=20, **kw):
    return H.wait_for(lambda: (lambda d: d if d["Status"] == want else None)(describe(**kw)),
                      timeout, f"Status {want} of {kw}")


def _wait_gone(describe, timeout=20, **kw):
    def gone():
        try:
            describe(**kw)
        except ClientError as e:
            return e.response["Error"]["Code"] == "ResourceNotFound"
        return False
    H.wait_for(gone, timeout, f"{kw} to disappear")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **kw):
        return None


class Browser:
    """A cookie jar and an opener that does not follow redirects."""

    def __init__(self):
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar),
                                                  _NoRedirect())

    def get(self, url, method="GET"):
        req = urllib.request.Request(url, method=method)
        try:
            r = self.opener.open(req, timeout=10)
            return r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()


@pytest.fixture(scope="module")
def team(ssm, studio_server):
    """A domain with alice and bob, each with an InService DetailedProfiler app and one training
    job tagged as theirs (jobs only queue: this server has no agents)."""
    dom, _ = _domain(ssm)
    out = {"domain": dom}
    iam = studio_server.client("iam")
    for user in ("alice", "bob"):
        # the owner tag is the system's: each job is created with its user's own IAM keys,
        # and trainyard tags it with the profile that names that user (attrib.h)
        iam_user = H.unique(f"team-{user}")[:60]
        iam.create_user(UserName=iam_user)
        iam.put_user_policy(UserName=iam_user, PolicyName="jobs", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": "sagemaker:CreateTrainingJob", "Resource": "*"},
                {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}]}))
        k = iam.create_access_key(UserName=iam_user)["AccessKey"]
        arn = ssm.create_user_profile(DomainId=dom, UserProfileName=user, Tags=[
            {"Key": "trainyard:iam-user", "Value": iam_user}])["UserProfileArn"]
        ssm.create_app(DomainId=dom, UserProfileName=user, AppType="DetailedProfiler",
                       AppName="default")
        job = H.unique(f"{user}-job")
        usm = studio_server.client("sagemaker", keys=(k["AccessKeyId"], k["SecretAccessKey"]))
        usm.create_training_job(**H.job_request(
            job, "true", ProfilerConfig={"S3OutputPath": f"s3://prof/{user}"}))
        out[user] = {"arn": arn, "job": job, "keys": (k["AccessKeyId"], k["SecretAccessKey"])}
    for user in ("alice", "bob"):
        _wait_status(ssm.describe_app, "InService", DomainId=dom, UserProfileName=user,
                     AppType="DetailedProfiler", AppName="default")
    return out


def _signin(ssm, dom, user, **kw):
    url = ssm.create_presigned_domain_url(DomainId=dom, UserProfileName=user,
                                          **kw)["AuthorizedUrl"]
    return url


# ---------------------------------------------------------------------------------------------
# domains

def test_domain_describe_and_status_machine(ssm, studio_server):
    name = H.unique("shape")[:60]
    dom, created = _domain(ssm, name)
    assert ID_RE.match(dom), dom
    assert created["DomainArn"] == f"arn:aws:sagemaker:us-east-1:000000000000:domain/{dom}"
    assert created["Url"] == f"{studio_server.url}/console/domain/{dom}"
    d = ssm.describe_domain(DomainId=dom)
    assert d["Status"] == "Pending"
    assert d["DomainId"] == dom and d["DomainName"] == name
    assert d["DomainArn"] == created["DomainArn"]
    assert re.match(r"^fs-[0-9a-f]{17}$", d["HomeEfsFileSystemId"]), d
    assert d["AuthMode"] == "IAM"
    assert d["DefaultUserSettings"] == {"ExecutionRole": ROLE}
    assert d["SubnetIds"] == ["subnet-0abc"] and d["VpcId"] == "vpc-0abc"
    assert d["AppNetworkAccessType"] == "PublicInternetOnly"
    assert d["Url"] == created["Url"]
    assert d["CreationTime"] <= d["LastModifiedTime"]
    d = _wait_status(ssm.describe_domain, "InService", DomainId=dom)
    assert d["LastModifiedTime"] > d["CreationTime"]

    # UpdateDomain: Updating, then InService again, with the merged settings
    r = ssm.update_domain(DomainId=dom, DefaultUserSettings={
        "SecurityGroups": ["sg-1"]})
    assert r["DomainArn"] == created["DomainArn"]
    assert ssm.describe_domain(DomainId=dom)["Status"] == "Updating"
    code, msg, _ = _err(ssm.update_domain, DomainId=dom,
                        DefaultUserSettings={"ExecutionRole": ROLE})
    assert code == "ResourceInUse" and "Updating" in msg, msg
    d = _wait_status(ssm.describe_domain, "InService", DomainId=dom)
    assert d["DefaultUserSettings"] == {"ExecutionRole": ROLE, "SecurityGroups": ["sg-1"]}

    ids = [x["DomainId"] for x in ssm.list_domains()["Domains"]]
    assert dom in ids
    ssm.delete_domain(DomainId=dom, RetentionPolicy={"HomeEfsFileSystem": "Delete"})
    assert ssm.describe_domain(DomainId=dom)["Status"] == "Deleting"
    code, _, _ = _err(ssm.delete_domain, DomainId=dom)
    assert code == "ResourceInUse"
    _wait_gone(ssm.describe_domain, DomainId=dom)
    assert dom not in [x["DomainId"] for x in ssm.list_domains()["Domains"]]


def test_not_found_and_in_use_errors(ssm, ssm_noval):
    code, msg, status = _err(ssm.describe_domain, DomainId="d-000000000000")
    assert (code, status) == ("ResourceNotFound", 400)
    assert "d-000000000000" in msg
    # the current model gives DomainId a pattern: AWS refuses other strings as invalid
    code, msg, _ = _err(ssm.describe_domain, DomainId="not-a-domain-id")
    assert code == "ValidationException" and "'domainId'" in msg, msg
    code, _, _ = _err(ssm.delete_domain, DomainId="d-000000000000")
    assert code == "ResourceNotFound"
    code, _, _ = _err(ssm.create_user_profile, DomainId="d-000000000000", UserProfileName="x")
    assert code == "ResourceNotFound"
    dom, _ = _domain(ssm)
    code, msg, _ = _err(ssm.describe_user_profile, DomainId=dom, UserProfileName="nobody")
    assert code == "ResourceNotFound"
    assert msg == (f"User profile arn:aws:sagemaker:us-east-1:000000000000:user-profile/{dom}/"
                   "nobody does not exist.")
    ssm.create_user_profile(DomainId=dom, UserProfileName="Carol")
    # names are case-insensitive, as SageMaker's
    code, msg, _ = _err(ssm.create_user_profile, DomainId=dom, UserProfileName="carol")
    assert code == "ResourceInUse" and "already exists" in msg
    assert ssm.describe_user_profile(DomainId=dom, UserProfileName="CAROL")["UserProfileName"] \
        == "Carol"
    code, _, _ = _err(ssm.describe_app, DomainId=dom, UserProfileName="Carol",
                      AppType="JupyterServer", AppName="default")
    assert code == "ResourceNotFound"
    code, _, _ = _err(ssm.create_app, DomainId=dom, UserProfileName="nobody",
                      AppType="JupyterServer", AppName="default")
    assert code == "ResourceNotFound"
    ssm.create_app(DomainId=dom, UserProfileName="Carol", AppType="JupyterServer",
                   AppName="default")
    code, msg, _ = _err(ssm.create_app, DomainId=dom, UserProfileName="carol",
                        AppType="JupyterServer", AppName="default")
    assert code == "ResourceInUse" and "already exists" in msg
    # validation from the service model
    for kw in ({"ExpiresInSeconds": 4}, {"ExpiresInSeconds": 301},
               {"SessionExpirationDurationInSeconds": 1799},
               {"SessionExpirationDurationInSeconds": 43201}):
        code, _, _ = _err(ssm_noval.create_presigned_domain_url, DomainId=dom,
                          UserProfileName="Carol", **kw)
        assert code == "ValidationException", kw
    code, _, _ = _err(ssm_noval.create_app, DomainId=dom, UserProfileName="Carol",
                      AppType="NoSuchType", AppName="x")
    assert code == "ValidationException"
    code, _, _ = _err(ssm.create_presigned_domain_url, DomainId=dom, UserProfileName="nobody")
    assert code == "ResourceNotFound"


def test_every_app_type_accepted(ssm):
    dom, _ = _domain(ssm)
    ssm.create_user_profile(DomainId=dom, UserProfileName="u")
    types = ["JupyterServer", "KernelGateway", "DetailedProfiler", "TensorBoard", "CodeEditor",
             "JupyterLab", "RStudioServerPro", "RSessionGateway", "Canvas"]
    for t in types:
        arn = ssm.create_app(DomainId=dom, UserProfileName="u", AppType=t,
                             AppName="a1")["AppArn"]
        assert arn == f"arn:aws:sagemaker:us-east-1:000000000000:app/{dom}/u/{t.lower()}/a1"
    apps = ssm.list_apps(DomainIdEquals=dom, UserProfileNameEquals="u", MaxResults=100)["Apps"]
    assert sorted(a["AppType"] for a in apps) == sorted(types)
    d = ssm.describe_app(DomainId=dom, UserProfileName="u", AppType="KernelGateway",
                         AppName="a1")
    assert d["ResourceSpec"]["InstanceType"] == "ml.t3.medium"
    assert d["Status"] == "Pending"


# ---------------------------------------------------------------------------------------------
# parents and children

def test_delete_domain_with_profiles_fails_until_they_are_gone(ssm):
    dom, _ = _domain(ssm)
    for u in ("p1", "p2"):
        ssm.create_user_profile(DomainId=dom, UserProfileName=u)
    code, msg, _ = _err(ssm.delete_domain, DomainId=dom)
    assert code == "ResourceInUse" and "2 user profile" in msg, msg
    ssm.create_app(DomainId=dom, UserProfileName="p1", AppType="DetailedProfiler",
                   AppName="default")
    code, msg, _ = _err(ssm.delete_user_profile, DomainId=dom, UserProfileName="p1")
    assert code == "ResourceInUse" and "app" in msg, msg
    ssm.delete_app(DomainId=dom, UserProfileName="p1", AppType="DetailedProfiler",
                   AppName="default")
    # Deleting still counts; Deleted does not
    app = ssm.describe_app(DomainId=dom, UserProfileName="p1", AppType="DetailedProfiler",
                           AppName="default")
    assert app["Status"] == "Deleting"
    _wait_status(ssm.describe_app, "Deleted", DomainId=dom, UserProfileName="p1",
                 AppType="DetailedProfiler", AppName="default")
    ssm.delete_user_profile(DomainId=dom, UserProfileName="p1")
    assert ssm.describe_user_profile(DomainId=dom, UserProfileName="p1")["Status"] == "Deleting"
    code, _, _ = _err(ssm.create_app, DomainId=dom, UserProfileName="p1",
                      AppType="JupyterServer", AppName="default")
    assert code == "ResourceInUse"
    code, _, _ = _err(ssm.delete_domain, DomainId=dom)
    assert code == "ResourceInUse"
    ssm.delete_user_profile(DomainId=dom, UserProfileName="p2")
    _wait_gone(ssm.describe_user_profile, DomainId=dom, UserProfileName="p1")
    _wait_gone(ssm.describe_user_profile, DomainId=dom, UserProfileName="p2")
    ssm.delete_domain(DomainId=dom)
    _wait_gone(ssm.describe_domain, DomainId=dom)


def test_list_filters_sorting_and_paging(ssm):
    dom, _ = _domain(ssm)
    other, _ = _domain(ssm)
    names = ["ann-1", "ann-2", "ben-1"]
    for n in names:
        ssm.create_user_profile(DomainId=dom, UserProfileName=n)
        time.sleep(0.01)
    ssm.create_user_profile(DomainId=other, UserProfileName="ann-3")
    r = ssm.list_user_profiles(DomainIdEquals=dom)
    assert [p["UserProfileName"] for p in r["UserProfiles"]] == list(reversed(names))
    assert "NextToken" not in r
    r = ssm.list_user_profiles(DomainIdEquals=dom, SortOrder="Ascending",
                               SortBy="CreationTime")
    assert [p["UserProfileName"] for p in r["UserProfiles"]] == names
    r = ssm.list_user_profiles(DomainIdEquals=dom, UserProfileNameContains="ANN")
    assert sorted(p["UserProfileName"] for p in r["UserProfiles"]) == ["ann-1", "ann-2"]
    r = ssm.list_user_profiles(UserProfileNameContains="ann")
    assert {(p["DomainId"], p["UserProfileName"]) for p in r["UserProfiles"]} >= {
        (dom, "ann-1"), (dom, "ann-2"), (other, "ann-3")}
    seen, token = [], None
    for _ in range(10):
        kw = {"DomainIdEquals": dom, "MaxResults": 1, "SortOrder": "Ascending"}
        if token:
            kw["NextToken"] = token
        r = ssm.list_user_profiles(**kw)
        seen += [p["UserProfileName"] for p in r["UserProfiles"]]
        token = r.get("NextToken")
        if not token:
            break
    assert seen == names
    code, _, _ = _err(ssm.list_user_profiles, NextToken="not-a-token")
    assert code == "ValidationException"
    # a profile update moves it to the front when sorting by LastModifiedTime
    for n in names:
        _wait_status(ssm.describe_user_profile, "InService", DomainId=dom, UserProfileName=n)
    ssm.update_user_profile(DomainId=dom, UserProfileName="ann-1",
                            UserSettings={"ExecutionRole": ROLE})
    r = ssm.list_user_profiles(DomainIdEquals=dom, SortBy="LastModifiedTime")
    assert r["UserProfiles"][0]["UserProfileName"] == "ann-1"
    assert r["UserProfiles"][0]["Status"] == "Updating"
    d = _wait_status(ssm.describe_user_profile, "InService", DomainId=dom,
                     UserProfileName="ann-1")
    assert d["UserSettings"] == {"ExecutionRole": ROLE}

    # apps: by domain, by profile; a deleted app is listed as Deleted
    for u in ("ann-1", "ben-1"):
        ssm.create_app(DomainId=dom, UserProfileName=u, AppType="JupyterServer",
                       AppName="default")
    ssm.create_app(DomainId=other, UserProfileName="ann-3", AppType="JupyterServer",
                   AppName="default")
    apps = ssm.list_apps(DomainIdEquals=dom)["Apps"]
    assert sorted(a["UserProfileName"] for a in apps) == ["ann-1", "ben-1"]
    apps = ssm.list_apps(DomainIdEquals=dom, UserProfileNameEquals="ben-1")["Apps"]
    assert [a["UserProfileName"] for a in apps] == ["ben-1"]
    assert ssm.list_apps(SpaceNameEquals="s1")["Apps"] == []
    ssm.delete_app(DomainId=dom, UserProfileName="ben-1", AppType="JupyterServer",
                   AppName="default")

    def deleted():
        a = ssm.list_apps(DomainIdEquals=dom, UserProfileNameEquals="ben-1")["Apps"]
        return a if a and a[0]["Status"] == "Deleted" else None
    H.wait_for(deleted, 20, "the deleted app listed as Deleted")
    code, _, _ = _err(ssm.delete_app, DomainId=dom, UserProfileName="ben-1",
                      AppType="JupyterServer", AppName="default")
    assert code == "ResourceInUse"
    # the name may be used again once the app is Deleted
    ssm.create_app(DomainId=dom, UserProfileName="ben-1", AppType="JupyterServer",
                   AppName="default")


# ---------------------------------------------------------------------------------------------
# presigned URLs and the profiler app

def test_presigned_url_works_once(ssm, team, studio_server):
    dom = team["domain"]
    url = _signin(ssm, dom, "alice")
    m = re.match(r"^http://127\.0\.0\.1:%d/console/auth\?token=([0-9a-f]{64})$"
                 % studio_server.port, url)
    assert m, url
    b = Browser()
    status, hdrs, _ = b.get(url)
    # a page that moves on by itself (Refresh): the SameSite=Strict cookie rides on that
    # same-site navigation, where a redirect from a cross-site link would drop it
    assert status == 200
    assert hdrs["Refresh"] == "0; url=/console/profiler"
    cookie = hdrs["Set-Cookie"]
    assert cookie.startswith("ty_console=")
    attrs = [a.strip() for a in cookie.split(";")]
    assert "HttpOnly" in attrs and "SameSite=Strict" in attrs and "Path=/console" in attrs
    assert "Max-Age=43200" in attrs
    assert hdrs["Cache-Control"] == "no-store"

    status, _, page = b.get(studio_server.url + "/console/profiler")
    assert status == 200, page
    assert team["alice"]["job"] in page
    assert team["bob"]["job"] not in page
    assert f"s3://prof/alice/{team['alice']['job']}/profiler-output/" in page
    status, _, page = b.get(studio_server.url + "/console/profiler/jobs/" + team["alice"]["job"])
    assert status == 200 and team["alice"]["job"] in page
    # a used token is refused, and sets no cookie
    status, hdrs, page = Browser().get(url)
    assert status == 403 and "Set-Cookie" not in hdrs
    assert "expired or has already been used" in page


def test_presigned_url_expires(ssm, team):
    url = _signin(ssm, team["domain"], "alice", ExpiresInSeconds=5)
    time.sleep(6)
    status, hdrs, _ = Browser().get(url)
    assert status == 403 and "Set-Cookie" not in hdrs


def test_session_is_scoped_to_its_user(ssm, team, studio_server):
    dom = team["domain"]
    bob = Browser()
    status, hdrs, _ = bob.get(_signin(ssm, dom, "bob", SessionExpirationDurationInSeconds=1800))
    assert status == 200 and "Max-Age=1800" in hdrs["Set-Cookie"]
    status, _, page = bob.get(studio_server.url + "/console/profiler")
    assert status == 200
    assert team["bob"]["job"] in page and team["alice"]["job"] not in page
    # another user's job is not found for bob, whatever the URL
    status, _, _ = bob.get(studio_server.url + "/console/profiler/jobs/" + team["alice"]["job"])
    assert status == 404
    # no cookie, a forged cookie: 403
    status, _, _ = Browser().get(studio_server.url + "/console/profiler")
    assert status == 403
    forged = Browser()
    forged.jar.set_cookie(http.cookiejar.Cookie(
        0, "ty_console", "0" * 64, None, False, "127.0.0.1", False, False, "/console", True,
        False, None, False, None, None, {}))
    status, _, _ = forged.get(studio_server.url + "/console/profiler")
    assert status == 403


def test_artifacts_are_scoped_to_their_users_jobs(ssm, team, studio_server):
    """A domain user downloads and presigns only the objects the console links for his own
    jobs: another user's (predictable) artifact URIs are 404, whatever his role may read."""
    dom = team["domain"]
    s3 = studio_server.client("s3", s3={"addressing_style": "path"})
    try:
        s3.create_bucket(Bucket="prof")
    except ClientError:
        pass
    objs = {}
    for user in ("alice", "bob"):
        job = team[user]["job"]
        objs[user] = [f"s3://prof/{user}/{job}/profiler-output/system/metrics.json",
                      f"s3://prof/{user}/{job}/rule-output/ProfilerReport/profiler-output/"
                      "profiler-report.html",
                      f"s3://bucket/prefix/{job}/output/output.tar.gz"]
        for uri in objs[user]:
            b, k = uri[5:].split("/", 1)
            s3.put_object(Bucket=b, Key=k, Body=f"{user}'s bytes".encode())
    s3.put_object(Bucket="bucket", Key="other/thing.txt", Body=b"nobody's")
    bob = Browser()
    assert bob.get(_signin(ssm, dom, "bob"))[0] == 200
    base = studio_server.url
    for uri in objs["bob"]:
        q = urllib.parse.quote(uri, safe="")
        status, _, body = bob.get(f"{base}/console/download?uri={q}")
        assert status == 200 and body == "bob's bytes", (uri, status, body)
        status, hdrs, _ = bob.get(f"{base}/console/presign?uri={q}")
        assert status == 303 and "X-Amz-Signature=" in hdrs["Location"], (uri, status)
    for uri in objs["alice"] + ["s3://bucket/other/thing.txt",
                                f"s3://bucket/prefix/{team['bob']['job']}/../x"]:
        q = urllib.parse.quote(uri, safe="")
        for page in ("download", "presign", "presign", "download"):
            status, _, body = bob.get(f"{base}/console/{page}?uri={q}")
            assert status == 404, (page, uri, status)
            assert "alice's bytes" not in body and "nobody's" not in body
        status, _, _ = bob.get(f"{base}/console/presign?uri={q}&show=1")
        assert status == 404, (uri, status)


def test_deleting_the_app_ends_sessions(ssm, studio_server):
    dom, _ = _domain(ssm)
    ssm.create_user_profile(DomainId=dom, UserProfileName="dana")
    b = Browser()
    # signed in, but no profiler app yet: the page says so
    status, _, _ = b.get(_signin(ssm, dom, "dana"))
    assert status == 200
    status, _, page = b.get(studio_server.url + "/console/profiler")
    assert status == 503 and "not InService" in page
    ssm.create_app(DomainId=dom, UserProfileName="dana", AppType="DetailedProfiler",
                   AppName="default")
    _wait_status(ssm.describe_app, "InService", DomainId=dom, UserProfileName="dana",
                 AppType="DetailedProfiler", AppName="default")
    status, _, _ = b.get(studio_server.url + "/console/profiler")
    assert status == 200
    ssm.delete_app(DomainId=dom, UserProfileName="dana", AppType="DetailedProfiler",
                   AppName="default")
    status, _, _ = b.get(studio_server.url + "/console/profiler")
    assert status == 403
    # a new app does not bring the old session back; a new presigned URL works
    _wait_status(ssm.describe_app, "Deleted", DomainId=dom, UserProfileName="dana",
                 AppType="DetailedProfiler", AppName="default")
    ssm.create_app(DomainId=dom, UserProfileName="dana", AppType="DetailedProfiler",
                   AppName="default")
    _wait_status(ssm.describe_app, "InService", DomainId=dom, UserProfileName="dana",
                 AppType="DetailedProfiler", AppName="default")
    status, _, _ = b.get(studio_server.url + "/console/profiler")
    assert status == 403
    b2 = Browser()
    assert b2.get(_signin(ssm, dom, "dana"))[0] == 200
    assert b2.get(studio_server.url + "/console/profiler")[0] == 200


def test_landing_uri_and_rest_alias(studio_server, team):
    """LandingUri is newer than Debian's botocore: sent hand-signed, through the REST alias."""
    keys = studio_server.credentials()
    job = team["alice"]["job"]
    r = H.raw_call(studio_server.url, "CreatePresignedDomainUrl",
                   {"DomainId": team["domain"], "UserProfileName": "alice",
                    "LandingUri": f"app:DetailedProfiler:jobs/{job}"},
                   keys=keys, path="/sagemaker/CreatePresignedDomainUrl", target=False)
    assert r.status == 200, r
    status, hdrs, _ = Browser().get(r.json["AuthorizedUrl"])
    assert status == 200 and hdrs["Refresh"] == f"0; url=/console/profiler/jobs/{job}"
    for bad in ("https://evil.example/", "//evil.example/x", "studio::../x"):
        r = H.raw_call(studio_server.url, "CreatePresignedDomainUrl",
                       {"DomainId": team["domain"], "UserProfileName": "alice",
                        "LandingUri": bad}, keys=keys)
        assert r.status == 400 and r.error_type == "ValidationException", (bad, r)


def test_console_hostile_requests(studio_server):
    base = studio_server.url
    b = Browser()
    for path in ("/console/auth", "/console/auth?token=", "/console/auth?token=zz",
                 "/console/auth?token=" + "a" * 5000, "/console/auth?token=%00"):
        status, hdrs, page = b.get(base + path)
        assert status == 403 and "Set-Cookie" not in hdrs, path
        assert page.startswith("<!doctype html>")
    assert b.get(base + "/console/auth", method="POST")[0] == 405
    # without a session every page is refused alike, known or not
    assert b.get(base + "/console/nope")[0] == 403
    assert b.get(base + "/console/profiler/jobs/%3Cscript%3E")[0] == 403
    status, _, page = b.get(base + "/console/")
    assert status == 303 and "/console/login" in page
    # the console is not an AWS endpoint: no SigV4 needed, none accepted instead of the cookie
    status, _, _ = b.get(base + "/console/profiler")
    assert status == 403


def test_cli_walkthrough(cli, studio_server):
    d = cli("sagemaker", "create-domain", "--domain-name", "cli-dom", "--auth-mode", "IAM",
            "--default-user-settings", json.dumps({"ExecutionRole": ROLE}),
            "--subnet-ids", "subnet-1", "--vpc-id", "vpc-1")
    dom = d["DomainArn"].rsplit("/", 1)[1]
    assert cli("sagemaker", "describe-domain", "--domain-id", dom)["DomainName"] == "cli-dom"
    cli("sagemaker", "create-user-profile", "--domain-id", dom, "--user-profile-name", "erin")
    cli("sagemaker", "create-app", "--domain-id", dom, "--user-profile-name", "erin",
        "--app-type", "DetailedProfiler", "--app-name", "default")
    H.wait_for(lambda: cli("sagemaker", "describe-app", "--domain-id", dom, "--user-profile-name",
                           "erin", "--app-type", "DetailedProfiler", "--app-name",
                           "default")["Status"] == "InService", 20, "the app InService")
    url = cli("sagemaker", "create-presigned-domain-url", "--domain-id", dom,
              "--user-profile-name", "erin", "--expires-in-seconds", "60")["AuthorizedUrl"]
    b = Browser()
    assert b.get(url)[0] == 200
    assert b.get(studio_server.url + "/console/profiler")[0] == 200
    apps = cli("sagemaker", "list-apps", "--domain-id-equals", dom)["Apps"]
    assert [a["AppType"] for a in apps] == ["DetailedProfiler"]
    p = cli("sagemaker", "delete-domain", "--domain-id", dom, check=False)
    assert p.returncode != 0 and "ResourceInUse" in p.stderr
    p = cli("sagemaker", "describe-user-profile", "--domain-id", dom, "--user-profile-name",
            "nobody", check=False)
    assert p.returncode != 0 and "ResourceNotFound" in p.stderr


def test_odd_ids_are_not_found_not_errors(studio_server):
    """DomainId has a pattern in the current service model (d-(-*[a-z0-9]){1,61}): a string
    outside it is a ValidationException naming the field, whatever the operation; one inside it
    that names no domain is ResourceNotFound (or an empty list), never a 500."""
    keys = studio_server.credentials()
    pattern = re.compile(r"d-(-*[a-z0-9]){1,61}")
    odd = ["d-abc:def", "d-../../x", "d-" + "a" * 61, "d-ABC", "ty:res:domain:x", "d-\u00e9t\u00e9",
           "d-a b", "d-%00", "*", "d-0-0", "d--x"]
    for d in odd:
        valid = pattern.fullmatch(d) is not None
        want = "ResourceNotFound" if valid else "ValidationException"
        for op, body in (("DescribeDomain", {"DomainId": d}),
                         ("DeleteDomain", {"DomainId": d}),
                         ("CreateUserProfile", {"DomainId": d, "UserProfileName": "u"}),
                         ("DescribeUserProfile", {"DomainId": d, "UserProfileName": "u"}),
                         ("DescribeApp", {"DomainId": d, "UserProfileName": "u",
                                          "AppType": "JupyterServer", "AppName": "a"}),
                         ("CreatePresignedDomainUrl", {"DomainId": d, "UserProfileName": "u"})):
            r = H.raw_call(studio_server.url, op, body, keys=keys)
            assert r.status == 400 and r.error_type == want, (op, d, r)
            if not valid:
                assert "domainId" in r.json["message"], (op, d, r)
        for op, body, field in (("ListUserProfiles", {"DomainIdEquals": d}, "UserProfiles"),
                                ("ListApps", {"DomainIdEquals": d, "UserProfileNameEquals": "u"},
                                 "Apps")):
            r = H.raw_call(studio_server.url, op, body, keys=keys)
            if valid:
                assert r.status == 200 and r.json[field] == [], (op, d, r)
            else:
                assert r.status == 400 and r.error_type == "ValidationException", (op, d, r)
    r = H.raw_call(studio_server.url, "CreateApp", {"DomainId": "d-abc", "AppType":
                                                    "JupyterServer", "AppName": "a"}, keys=keys)
    assert r.status == 400 and r.error_type == "ValidationException", r
    r = H.raw_call(studio_server.url, "CreateApp", {"DomainId": "d-abc", "SpaceName": "s",
                                                    "AppType": "JupyterServer", "AppName": "a"},
                   keys=keys)
    assert r.status == 400 and r.error_type == "ResourceNotFound", r


def test_iam_users_job_is_attributed_to_their_profile(ssm, studio_server):
    """A job created by an IAM user (not through a Studio session) is tagged with the profile
    whose trainyard:iam-user tag names that user (case-insensitively), among several profiles;
    a user no profile names gets no owner tag."""
    dom, _ = _domain(ssm)
    iam = studio_server.client("iam")
    names = [H.unique("attr-u")[:40] for _ in range(3)]
    arns = {}
    for i, user in enumerate(names):
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="jobs", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": "sagemaker:*", "Resource": "*"},
                {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}]}))
        tags = [] if i == 2 else [{"Key": "trainyard:iam-user", "Value": user.upper()}]
        arns[user] = ssm.create_user_profile(DomainId=dom, UserProfileName=f"p{i}-{user}"[:60],
                                             Tags=tags)["UserProfileArn"]
    for i, user in enumerate(names[1:]):
        k = iam.create_access_key(UserName=user)["AccessKey"]
        sm = studio_server.client("sagemaker", keys=(k["AccessKeyId"], k["SecretAccessKey"]))
        job = H.unique("attr-job")
        r = sm.create_training_job(**H.job_request(job, "true"))
        tags = {t["Key"]: t["Value"]
                for t in ssm.list_tags(ResourceArn=r["TrainingJobArn"])["Tags"]}
        if user == names[1]:
            assert tags.get(OWNER_TAG) == arns[user]
            assert tags.get("sagemaker:domain-arn", "").endswith(f":domain/{dom}")
        else:
            assert OWNER_TAG not in tags, tags


def test_owner_and_system_tags_are_not_the_callers(ssm, studio_server, team):
    """sagemaker: and aws: tag keys are the system's (issue 36, finding 5): a tenant who tags
    her job with another user's profile ARN would have it listed and opened in that user's
    profiler app; AddTags took aws: keys, which AWS reserves. Each is refused with a
    ValidationException, in CreateTrainingJob, AddTags and DeleteTags, in any letter case; the
    job is not created and the tags are not changed."""
    usm = studio_server.client("sagemaker", keys=team["alice"]["keys"])
    job = H.unique("forged-owner")
    for key in (OWNER_TAG, "SageMaker:domain-arn", "aws:cloudformation:stack-name", "AWS:x"):
        with pytest.raises(ClientError) as e:
            usm.create_training_job(**H.job_request(
                job, "true", Tags=[{"Key": key, "Value": team["bob"]["arn"]}]))
        assert e.value.response["Error"]["Code"] == "ValidationException", e.value.response
        assert "reserved" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        ssm.describe_training_job(TrainingJobName=job)
    arn = ssm.describe_training_job(TrainingJobName=team["alice"]["job"])["TrainingJobArn"]
    before = ssm.list_tags(ResourceArn=arn)["Tags"]
    assert {"Key": OWNER_TAG, "Value": team["alice"]["arn"]} in before
    for call in (lambda: ssm.add_tags(ResourceArn=arn, Tags=[{"Key": OWNER_TAG,
                                                              "Value": team["bob"]["arn"]}]),
                 lambda: ssm.add_tags(ResourceArn=arn, Tags=[{"Key": "aws:x", "Value": "y"}]),
                 lambda: ssm.delete_tags(ResourceArn=arn, TagKeys=[OWNER_TAG])):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "ValidationException", e.value.response
    assert ssm.list_tags(ResourceArn=arn)["Tags"] == before
    # ordinary keys, and keys that merely contain the words, are the caller's
    ssm.add_tags(ResourceArn=arn, Tags=[{"Key": "team", "Value": "x"},
                                        {"Key": "my-sagemaker:note", "Value": "y"}])


def test_studio_session_acts_only_on_its_own_jobs(ssm, team, studio_server):
    """/console/do for a Studio session is the profiler app's one action, StopTrainingJob on a
    job the profile owns (issue 36, finding 4: a presigned domain URL, no IAM keys, stopped the
    admin's job and reached IAM and Logs with the whole execution role). Another user's job,
    another operation or another service is a 403 and nothing is done."""
    b = Browser()
    status, _, _ = b.get(_signin(ssm, team["domain"], "alice"))
    assert status == 200
    status, _, page = b.get(studio_server.url + "/console/profiler/jobs/" + team["alice"]["job"])
    assert status == 200, page
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)

    def post(fields):
        body = urllib.parse.urlencode({"csrf": csrf, "back": "/console/profiler", **fields})
        req = urllib.request.Request(studio_server.url + "/console/do", data=body.encode(),
                                     method="POST", headers={
                                         "Content-Type": "application/x-www-form-urlencoded"})
        try:
            r = b.opener.open(req, timeout=10)
            return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    bob_job = team["bob"]["job"]
    for fields in (
            {"svc": "sagemaker", "op": "StopTrainingJob", "p.TrainingJobName": bob_job},
            {"svc": "sagemaker", "op": "StopTrainingJob", "p.TrainingJobName": bob_job.upper()},
            {"svc": "sagemaker", "op": "DescribeTrainingJob", "p.TrainingJobName": bob_job},
            {"svc": "sagemaker", "op": "CreatePresignedDomainUrl",
             "p.DomainId": team["domain"], "p.UserProfileName": "bob"},
            {"svc": "iam", "op": "ListUsers"},
            {"svc": "logs", "op": "DescribeLogGroups"},
            {"svc": "sagemaker", "op": "StopTrainingJob", "p.TrainingJobName": team["alice"]["job"],
             "p.Extra": "x"}):
        status, page = post(fields)
        assert status == 403, (fields, status, page[:300])
        assert "own training jobs only" in page
    assert ssm.describe_training_job(TrainingJobName=bob_job)["TrainingJobStatus"] == "InProgress"
    assert ssm.describe_training_job(
        TrainingJobName=team["alice"]["job"])["TrainingJobStatus"] == "InProgress"
    # her own job's Stop button goes on to her execution role's decision
    status, page = post({"svc": "sagemaker", "op": "StopTrainingJob",
                         "p.TrainingJobName": team["alice"]["job"]})
    assert status != 403 or "own training jobs only" not in page, page[:300]
