"""S3 content never acts as the console: every S3 answer of an object
(GetObject, HeadObject, a presigned GET signed SigV4 or SigV2, a response-content-type override,
an error) carries Content-Security-Policy: sandbox (no allow-same-origin, no allow-scripts) and
X-Content-Type-Options: nosniff, and the console's presigned links save the object
(Content-Disposition: attachment).

One private server without agents; bucket sbx-bucket, user sbx-u.
"""
import http.cookiejar
import json
import os
import urllib.error
import urllib.parse
import urllib.request

import botocore.config
import pytest

import tyhelpers as H

BUCKET = "sbx-bucket"
EVIL = {
    "evil.html": ("text/html", b"<script>document.title='ran'</script>"),
    "evil.svg": ("image/svg+xml",
                 b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
    "evil.xhtml": ("application/xhtml+xml",
                   b'<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>'),
}


@pytest.fixture(scope="module")
def srv(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "s3-sandbox"), agents=0)
    s.start()
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def get(op, url, method="GET"):
    try:
        r = op.open(urllib.request.Request(url, method=method), timeout=30)
        return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def sandboxed(h):
    csp = h.get("content-security-policy", "")
    assert "sandbox" in csp and "allow-same-origin" not in csp and "allow-scripts" not in csp, h
    assert h.get("x-content-type-options") == "nosniff", h


def test_object_answers_are_sandboxed(srv):
    s3 = srv.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    for key, (ct, body) in EVIL.items():
        s3.put_object(Bucket=BUCKET, Key=key, Body=body, ContentType=ct)
    plain = urllib.request.build_opener(NoRedirect)
    v2 = srv.client("s3", signature_version="s3")
    for key, (ct, body) in EVIL.items():
        r = s3.get_object(Bucket=BUCKET, Key=key)
        sandboxed(r["ResponseMetadata"]["HTTPHeaders"])
        r = s3.head_object(Bucket=BUCKET, Key=key)
        sandboxed(r["ResponseMetadata"]["HTTPHeaders"])
        for c in (s3, v2):
            for params in ({}, {"ResponseContentType": "text/html",
                                "ResponseContentDisposition": "inline"}):
                for method in ("GET", "HEAD"):
                    if method == "HEAD" and params:
                        continue
                    url = c.generate_presigned_url(f"{method.lower()}_object", Params=dict(
                        Bucket=BUCKET, Key=key, **params), ExpiresIn=600, HttpMethod=method)
                    st, h, _ = get(plain, url, method)
                    assert st == 200, (url, st)
                    sandboxed(h)
    # errors too: a missing key, a bad signature
    st, h, _ = get(plain, f"{srv.url}/{BUCKET}/nope.html")
    assert st == 403
    sandboxed(h)
    try:
        s3.get_object(Bucket=BUCKET, Key="nope.html")
    except s3.exceptions.NoSuchKey as e:
        sandboxed(e.response["ResponseMetadata"]["HTTPHeaders"])


def test_console_links_save_the_object(srv):
    iam = srv.client("iam")
    iam.create_user(UserName="sbx-u")
    iam.create_login_profile(UserName="sbx-u", Password="Sbx-Passw0rd-1")
    iam.create_access_key(UserName="sbx-u")
    iam.put_user_policy(UserName="sbx-u", PolicyName="read", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                                                "Resource": f"arn:aws:s3:::{BUCKET}/*"}]}))
    jar = http.cookiejar.CookieJar()
    op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    body = urllib.parse.urlencode({"account": "000000000000", "username": "sbx-u",
                                   "password": "Sbx-Passw0rd-1"}).encode()
    try:
        op.open(urllib.request.Request(srv.url + "/console/login", data=body), timeout=30)
    except urllib.error.HTTPError as e:
        assert e.code == 303
    plain = urllib.request.build_opener(NoRedirect)
    for key in EVIL:
        uri = urllib.parse.quote(f"s3://{BUCKET}/{key}", safe="")
        st, h, _ = get(op, f"{srv.url}/console/presign?uri={uri}")
        assert st == 303
        st, h, _ = get(plain, h["location"])
        assert st == 200
        sandboxed(h)
        assert h.get("content-disposition", "").startswith("attachment"), h
        st, h, _ = get(op, f"{srv.url}/console/download?uri={uri}")
        assert st == 200
        sandboxed(h)
        assert h.get("content-disposition", "").startswith("attachment"), h
