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


def _post(srv, source, name, password, cookie=None):
    """(status, headers, page) of POST /console/login from source, with cookie sent."""
    u = urllib.parse.urlsplit(srv.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30, source_address=(source, 0))
    body = urllib.parse.urlencode({"account": "000000000000", "username": name,
                                   "password": password})
    hdr = {"Content-Type": "application/x-www-form-urlencoded"}
    if cookie:
        hdr["Cookie"] = cookie
    try:
        c.request("POST", "/console/login", body=body, headers=hdr)
        r = c.getresponse()
        return r.status, r.getheaders(), r.read().decode("utf-8", "replace")
    finally:
        c.close()


def test_guessing_from_many_addresses_gains_nothing(srv):
    """Failures are counted per user as well as per address (issue 36, finding 3: 100 wrong
    passwords for one user from 25 addresses got no 429, and the right password then signed in
    at once). The user's own browser, known from an earlier sign-in, keeps signing in however
    many strangers guess, on other addresses or on hers; a 429 says Retry-After."""
    make_user(srv, "thr-dan")
    st, hdrs, page = _post(srv, B, "thr-dan", PW)
    assert st == 303, (st, page[-400:])
    dev = [v.split(";")[0] for k, v in hdrs if k.lower() == "set-cookie" and
           v.startswith("ty_device=")]
    assert len(dev) == 1, hdrs
    assert "Path=/console/login" in [v for k, v in hdrs if v.startswith("ty_device=")][0]
    codes = []
    for i in range(100):  # 4 guesses from each of 25 addresses: none reaches its own budget
        st, h, _ = _post(srv, f"127.0.1.{1 + i // 4}", "thr-dan", f"guess-{i}")
        codes.append(st)
        if st == 429:
            assert int(dict((k.lower(), v) for k, v in h)["retry-after"]) >= 1
    assert codes.count(401) < 30 and 429 in codes, codes
    # the right password from yet another address waits too, with Retry-After
    st, h, page = _post(srv, "127.0.2.1", "thr-dan", PW)
    assert st == 429, (st, page[-400:])
    assert int(dict((k.lower(), v) for k, v in h)["retry-after"]) >= 1
    # her own browser signs in at once, from her address or from a stranger's
    for source in (B, "127.0.1.3"):
        st, _, page = _post(srv, source, "thr-dan", PW, cookie=dev[0])
        assert st == 303, (source, st, page[-400:])
    # a stranger on her address, without her browser's token, cannot keep her out
    for _ in range(8):
        _post(srv, B, "thr-dan", "wrong-password")
    st, _, page = _post(srv, B, "thr-dan", PW, cookie=dev[0])
    assert st == 303, (st, page[-400:])
    # the token is hers alone: another user's sign-in with it is an unknown device
    make_user(srv, "thr-eve")
    for _ in range(5):
        _post(srv, "127.0.3.1", "thr-eve", "wrong-password")
    st, _, _ = _post(srv, "127.0.3.1", "thr-eve", PW, cookie=dev[0])
    assert st == 429
