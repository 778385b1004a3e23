"""The console's presigned download links (GET /console/presign): a signed-in IAM user gets a
303 to a SigV4 presigned S3 URL signed with his own access key, which downloads the object with
no cookie and no other credentials, and which stops working when tampered with; show=1 shows
the URL; a user without s3:GetObject is refused with AWS's AccessDenied in the page (no URL);
a user without an access key is told so. (Studio users' links, signed with temporary
credentials of their execution role, are exercised by the browser test.)

One private server without agents; users con-ps-*, bucket con-ps-bucket.
"""
import html
import http.cookiejar
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

import tyhelpers as H

BUCKET = "con-ps-bucket"
KEY = "out/job 1/model.tar.gz"
BODY = b"model bytes \x00\x01 of con-ps"


@pytest.fixture(scope="module")
def srv(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "console-presign"), agents=0)
    s.start()
    yield s
    rc = s.stop(timeout=60)
    assert rc == 0, f"server exited with {rc} on SIGTERM:\n{s.proc.tail()}"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def signed_in(srv, name, password):
    """An opener holding name's console session cookie (redirects not followed)."""
    jar = http.cookiejar.CookieJar()
    op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    body = urllib.parse.urlencode({"account": "000000000000", "username": name,
                                   "password": password}).encode()
    try:
        op.open(urllib.request.Request(srv.url + "/console/login", data=body), timeout=30)
    except urllib.error.HTTPError as e:
        assert e.code == 303, e.read()
    assert any(c.name == "ty_console" for c in jar)
    return op


def get(op, url):
    try:
        r = op.open(url, timeout=30)
        return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_presigned_links(srv):
    admin = srv.client("iam")
    s3 = srv.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)
    read = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{BUCKET}/*"}]}
    for name, policy, key in (("con-ps-a", read, True), ("con-ps-b", None, True),
                              ("con-ps-c", read, False)):
        admin.create_user(UserName=name)
        admin.create_login_profile(UserName=name, Password="Con-ps-Passw0rd")
        if key:
            admin.create_access_key(UserName=name)
        if policy:
            admin.put_user_policy(UserName=name, PolicyName="read",
                                  PolicyDocument=json.dumps(policy))
    uri = urllib.parse.quote(f"s3://{BUCKET}/{KEY}", safe="")

    a = signed_in(srv, "con-ps-a", "Con-ps-Passw0rd")
    status, hdrs, _ = get(a, f"{srv.url}/console/presign?uri={uri}")
    assert status == 303
    url = hdrs["Location"]
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert q["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"] and q["X-Amz-Expires"] == ["900"]
    assert q["X-Amz-Credential"][0].startswith("AKIA")
    assert "/s3/aws4_request" in q["X-Amz-Credential"][0]
    # anyone with the URL downloads the object: no cookie, no keys
    plain = urllib.request.build_opener(NoRedirect)
    status, _, body = get(plain, url)
    assert (status, body) == (200, BODY)
    # a tampered URL is refused by S3
    status, _, body = get(plain, url.replace("X-Amz-Expires=900", "X-Amz-Expires=901"))
    assert status == 403 and b"SignatureDoesNotMatch" in body
    # show=1: the URL in a page
    status, _, page = get(a, f"{srv.url}/console/presign?uri={uri}&show=1")
    assert status == 200
    shown = html.unescape(re.search(r'id="presigned-s3"[^>]*href="([^"]+)"', page.decode()).group(1))
    assert get(plain, shown)[2] == BODY

    # no s3:GetObject: AWS's AccessDenied in the page, no URL
    b = signed_in(srv, "con-ps-b", "Con-ps-Passw0rd")
    status, hdrs, page = get(b, f"{srv.url}/console/presign?uri={uri}")
    assert status == 403 and "Location" not in hdrs
    assert b"is not authorized to perform: s3:GetObject" in page

    # no access key: said so
    c = signed_in(srv, "con-ps-c", "Con-ps-Passw0rd")
    status, hdrs, page = get(c, f"{srv.url}/console/presign?uri={uri}")
    assert status == 200 and "Location" not in hdrs
    assert b"has no active access key" in page
    # and without a session: nothing
    assert get(plain, f"{srv.url}/console/presign?uri={uri}")[0] == 403
