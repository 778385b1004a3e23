"""Query-protocol forms whose parameter names or values are not UTF-8 once decoded (issue 35).

A signed CloudWatch POST with `%FF.member.1=x` used to spin its worker thread at 100 % CPU for
ever (two of them stopped every API and /healthz on a 2-CPU host), and `%FF.x=1` wrote into
freed memory. Each such form is now refused at once in the protocol's own form, for CloudWatch
and IAM (whose parsers build the whole form; STS looks up the names it knows), two at a time,
and the server goes on answering.
"""
import concurrent.futures
import time

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest

import tyhelpers as H

FORM = "application/x-www-form-urlencoded; charset=utf-8"


def _signed_form(server, service, body):
    akid, secret = server.credentials()
    req = botocore.awsrequest.AWSRequest(method="POST", url=server.url + "/", data=body,
                                         headers={"Content-Type": FORM})
    botocore.auth.SigV4Auth(botocore.credentials.Credentials(akid, secret), service,
                            "us-east-1").add_auth(req)
    return H.send_prepared(req.prepare(), timeout=15)


@pytest.mark.parametrize("service,body", [
    ("monitoring", b"Action=ListMetrics&Version=2010-08-01&%FF.member.1=x"),
    ("monitoring", b"Action=ListMetrics&Version=2010-08-01&%FF.x=1"),
    ("monitoring", b"Action=ListMetrics&Version=2010-08-01&Dimensions.member.1.%FF=x"),
    ("monitoring", b"Action=GetMetricStatistics&Version=2010-08-01&Namespace=%C3"),
    ("iam", b"Action=ListUsers&Version=2010-05-08&%FF=1"),
    ("iam", b"Action=TagUser&Version=2010-05-08&UserName=u&Tags.member.1.%FF=x"),
])
def test_non_utf8_form_is_refused_at_once(server, service, body):
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as ex:  # one per worker on a 2-CPU host
        answers = list(ex.map(lambda _: _signed_form(server, service, body), range(2)))
    for r in answers:
        assert r.status == 400, r
        assert b"UTF-8" in r.body, r
    assert time.monotonic() - t0 < 10
    status, _ = server.healthz()
    assert status == 200
