"""SigV2 query-string URLs live at most 7 days, as SigV4's: a URL whose
Expires is more than 604800 seconds ahead is refused with S3's AccessDenied "Request has
expired", never served; one within the week is served.

One private server without agents; the bucket is sigv2-exp.
"""
import os
import urllib.error
import urllib.request

import pytest

import tyhelpers as H

BUCKET = "sigv2-exp"


@pytest.fixture(scope="module")
def srv(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "sigv2-exp"), agents=0)
    s.start()
    yield s
    rc = s.stop(timeout=60)
    assert rc == 0, f"server exited with {rc} on SIGTERM:\n{s.proc.tail()}"


@pytest.fixture(scope="module")
def v2(srv):
    """An S3 client that signs SigV2 (botocore's "s3" signature version), with an object."""
    s3 = srv.client("s3", signature_version="s3", s3={"addressing_style": "path"})
    srv.client("s3").create_bucket(Bucket=BUCKET)
    srv.client("s3").put_object(Bucket=BUCKET, Key="k.txt", Body=b"hello")
    return s3


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_within_a_week_is_served(v2):
    url = v2.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "k.txt"},
                                    ExpiresIn=604800 - 60)
    assert "Expires=" in url and "AWSAccessKeyId=" in url, url
    assert get(url) == (200, "hello")


@pytest.mark.parametrize("expires_in", [604800 + 120, 10 * 365 * 86400])
def test_beyond_a_week_is_refused(v2, expires_in):
    url = v2.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "k.txt"},
                                    ExpiresIn=expires_in)
    st, body = get(url)
    assert st == 403, (st, body)
    assert "<Code>AccessDenied</Code>" in body and "Request has expired" in body, body
