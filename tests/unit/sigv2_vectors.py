#!/usr/bin/python3
"""sigv2_vectors.py - prints the SigV2 vectors of tests/unit/test_sigv2.c, computed by botocore's
own signers (HmacV1Auth, HmacV1QueryAuth), not by trainyard's code.

    /usr/bin/python3 tests/unit/sigv2_vectors.py

Each vector: method, raw path, raw query, headers, and the Authorization header or presigned
query botocore produced for them with the fixed key below and a fixed Date / Expires.
"""
import urllib.parse

import botocore.auth
import botocore.awsrequest
import botocore.credentials

AKID, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
DATE = "Tue, 27 Mar 2007 19:36:42 +0000"
EXPIRES = 1175139620


class FixedHeaderAuth(botocore.auth.HmacV1Auth):
    def _get_date(self):
        return DATE


class FixedQueryAuth(botocore.auth.HmacV1QueryAuth):
    def _get_date(self):
        return str(EXPIRES)


def show(name, method, url, headers, auth_path=None, query=False, token=None):
    creds = botocore.credentials.Credentials(AKID, SECRET, token)
    req = botocore.awsrequest.AWSRequest(method=method, url=url, headers=dict(headers))
    if auth_path:
        req.auth_path = auth_path
    (FixedQueryAuth(creds) if query else FixedHeaderAuth(creds)).add_auth(req)
    split = urllib.parse.urlsplit(req.url)
    print(f"{name}: {method} path={split.path!r} query={split.query!r}")
    for k, v in req.headers.items():
        print(f"    header {k}: {v}")


show("get", "GET", "http://h/bucket/photos/puppy.jpg", {})
show("put", "PUT", "http://h/bucket/a%20b/c%2Bd.txt",
     {"Content-Type": "image/jpeg", "Content-MD5": "4gJE4saaMU4BqNR0kLY+lw==",
      "x-amz-meta-Foo": " spaced ", "X-Amz-Meta-bar": "b"})
show("subres", "GET", "http://h/bucket/k?versionId=v1&acl&prefix=x&uploadId=u%2F1", {})
show("bucket", "PUT", "http://h/bucket", {}, auth_path="/bucket/")
show("token", "GET", "http://h/bucket/k", {}, token="TOKEN/with+chars")
show("presign", "GET", "http://h/bucket/k?response-content-type=text%2Fplain", {}, query=True)
show("presign-token", "GET", "http://h/bucket/k", {}, query=True, token="SESSION+TOKEN/=")
show("vhost", "GET", "http://johnsmith.s3.amazonaws.com/photos/puppy.jpg", {},
     auth_path="/johnsmith/photos/puppy.jpg")
