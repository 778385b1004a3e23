"""The HTTP front door under abuse: 10,000 idle connections from one client address while
another address is served, and slowloris clients cut at the read deadlines."""
import http.client
import json
import os
import resource
import socket
import time

import pytest

import tyhelpers as H

FLOOD = 10000
OTHER = "127.0.0.2"  # the whole of 127/8 is loopback: another client address on this host


def _raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    if soft != resource.RLIM_INFINITY and soft < need:
        pytest.skip(f"the open-file hard limit is {hard}; this test needs {need} (ulimit -Hn)")


def _from(addr, port, method, path, body=None, headers=None, timeout=5):
    """One request from source address addr; returns (status, body, seconds)."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                      source_address=(addr, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, data, time.monotonic() - t0
    finally:
        conn.close()


def _signed_from(addr, s, op, body):
    p = H.build_request(s.url, op, body, keys=s.credentials())
    return _from(addr, s.port, p.method, "/", body=p.body, headers=dict(p.headers.items()))


def _server_fds(s):
    return len(os.listdir(f"/proc/{s.proc.pid}/fd"))


def test_ten_thousand_idle_connections(make_server):
    _raise_nofile(FLOOD + 500)
    s = make_server(agents=1)
    sm = s.client()
    name = H.unique("flt-idle")
    sm.create_training_job(**H.job_request(name, "true"))
    fds_before = _server_fds(s)

    socks = []
    t0 = time.monotonic()
    try:
        for _ in range(FLOOD):
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.setblocking(False)
            c.bind(("127.0.0.1", 0))
            c.connect_ex(("127.0.0.1", s.port))
            socks.append(c)
        opened = time.monotonic() - t0
        time.sleep(1)  # let the server take (and refuse) what it will
        fds_flood = _server_fds(s)

        worst = 0.0
        for i in range(5):
            st, body, dt = _from(OTHER, s.port, "GET", "/healthz")
            assert st == 200, body
            assert json.loads(body)["status"] == "ok", body
            worst = max(worst, dt)
            st, body, dt = _signed_from(OTHER, s, "DescribeTrainingJob", {"TrainingJobName": name})
            assert st == 200, body
            assert json.loads(body)["TrainingJobName"] == name
            worst = max(worst, dt)
        print(f"\n{FLOOD} idle connections from 127.0.0.1 opened in {opened:.2f}s; server fds "
              f"{fds_before} -> {fds_flood}; worst latency from {OTHER} over 10 requests: "
              f"{worst * 1000:.1f} ms")
        assert worst < 1.0, f"a request from {OTHER} took {worst:.2f}s under {FLOOD} idle connections"
        # the flooding address holds no more than its cap
        assert fds_flood - fds_before <= 256 + 16, (fds_before, fds_flood)
    finally:
        for c in socks:
            c.close()
    # once the flood is gone the first address is served again
    st, _, _ = H.wait_for(lambda: _from("127.0.0.1", s.port, "GET", "/healthz"), 40,
                          "127.0.0.1 to be served again")
    assert st == 200


def _slow_client(port, head, drip, every, limit_s):
    """Sends head, then drip every `every` seconds until the server closes the connection or
    limit_s passes. Returns the seconds it stayed connected after head, or None if never cut."""
    c = socket.create_connection(("127.0.0.1", port), timeout=every)
    try:
        c.sendall(head)
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit_s:
            try:
                data = c.recv(4096)  # waits up to `every` s for the server to answer or close
                if not data:
                    return time.monotonic() - t0
            except socket.timeout:
                pass
            except OSError:
                return time.monotonic() - t0
            try:
                c.sendall(drip)
            except OSError:
                return time.monotonic() - t0
        return None
    finally:
        c.close()


def test_slowloris_headers_cut_at_deadline(make_server):
    s = make_server(agents=0, extra=["--header-timeout", "3", "--body-timeout", "3"])
    # one header line every 2 s: never done, cut 3 s after the connection started
    t = _slow_client(s.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", b"X-Slow: 1\r\n", 2, 30)
    assert t is not None, "a client sending one header line every 2 s was never cut"
    assert 2.0 <= t <= 6.0, f"cut after {t:.1f}s, deadline 3 s"
    # a body dribbled one byte every 2 s: cut 3 s after its headers
    t = _slow_client(s.port, b"PUT /bucket/key HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n",
                     b"x", 2, 30)
    assert t is not None, "a body sent one byte every 2 s was never cut"
    assert 2.0 <= t <= 6.0, f"cut after {t:.1f}s, body deadline 3 s"
    # a normal client is served all along
    st, _ = s.healthz()
    assert st in (200, 503)
