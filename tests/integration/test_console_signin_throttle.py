"""Console sign-in is throttled per client address and user, never locked: wrong passwords
from one address make that address wait 1 s, 2 s, 4 s, ... (a 429 page
saying when to retry) before its next attempt of that user, while the right password from
another address signs in at once. Also: a sign-in form posted with `Origin: null` is refused.

One private server without agents; the second address is 127.0.0.2 (a bound source address on
the loopback). Users are named thr-*.
"""
import http.client
import os
import re
import time
import urllib.parse

import pytest

import tyhelpers as H

A, B = "127.0.0.1", "127.0.0.2"
PW = "Thr-Passw0rd-1"


@pytest.fixture(scope="module")
def srv(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "console-throttle"), agents=0)
    s.start()
    yield s
    rc = s.stop(timeout=60)
    assert rc == 0, f"server exited with {rc} on SIGTERM:\n{s.proc.tail()}"


def sign_in(srv, source, name, password, origin=None):
    """(status, page text) of POST /console/login sent from address source."""
    u = urllib.parse.urlsplit(srv.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30, source_address=(source, 0))
    body = urllib.parse.urlencode({"account": "000000000000", "username": name,
                                   "password": password})
    hdr = {"Content-Type": "application/x-www-form-urlencoded"}
    if origin:
        hdr["Origin"] = origin
    try:
        c.request("POST", "/console/login", body=body, headers=hdr)
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        c.close()


def retry_after(page):
    m = re.search(r"Try again in (\d+) seconds", page)
    assert m, page[-600:]
    return int(m.group(1))


def make_user(srv, name):
    iam = srv.client("iam")
    iam.create_user(UserName=name)
    iam.create_login_profile(UserName=name, Password=PW, PasswordResetRequired=False)


def test_wrong_passwords_throttle_the_source_not_the_user(srv):
    make_user(srv, "thr-ann")
    for _ in range(5):
        st, page = sign_in(srv, A, "thr-ann", "wrong-password")
        assert st == 401, (st, page[-400:])
    # A now waits, even with the right password: a 429 saying when to retry
    st, page = sign_in(srv, A, "thr-ann", PW)
    assert st == 429, (st, page[-400:])
    assert retry_after(page) == 1
    # another address signs in at once: the account is not locked
    st, page = sign_in(srv, B, "thr-ann", PW)
    assert st == 303, (st, page[-400:])
    # A's waits grow: 1 s, then 2 s, then 4 s
    waits = []
    for _ in range(2):
        time.sleep(1.2 if not waits else waits[-1] + 0.2)
        st, page = sign_in(srv, A, "thr-ann", "wrong-password")
        assert st == 401, (st, page[-400:])
        st, page = sign_in(srv, A, "thr-ann", PW)
        assert st == 429, (st, page[-400:])
        waits.append(retry_after(page))
    assert waits == [2, 4], waits
    # once its wait is over, A signs in with the right password, which clears its count
    time.sleep(waits[-1] + 0.3)
    st, page = sign_in(srv, A, "thr-ann", PW)
    assert st == 303, (st, page[-400:])
    st, page = sign_in(srv, A, "thr-ann", "wrong-password")
    assert st == 401, (st, page[-400:])
    st, page = sign_in(srv, A, "thr-ann", PW)
    assert st == 303, (st, page[-400:])


def test_many_wrong_passwords_never_lock_the_user_out(srv):
    """Twenty failures from A (as from a job's relay) keep B's sign-in working."""
    make_user(srv, "thr-bob")
    for _ in range(20):
        st, _ = sign_in(srv, A, "thr-bob", "wrong-password")
        assert st in (401, 429)
    st, page = sign_in(srv, B, "thr-bob", PW)
    assert st == 303, (st, page[-400:])


def test_origin_null_is_refused(srv):
    make_user(srv, "thr-cat")
    st, page = sign_in(srv, B, "thr-cat", PW, origin="null")
    assert st == 403, (st, page[-400:])
    st, _ = sign_in(srv, B, "thr-cat", PW, origin=srv.url)
    assert st == 303
