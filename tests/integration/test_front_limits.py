"""/metrics needs its token unless the server listens on loopback only
(beyond loopback with no --metrics-token it answers 403 and the start logs server.metrics.off),
and a body whose Content-Length is over the limit (16 MiB) is refused from the headers, at once,
with the connection closed - not read to its end first.
"""
import http.client
import socket
import time

import tyhelpers as H


def _get_metrics(port, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics", headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


def test_metrics_off_beyond_loopback_without_token(make_server):
    port = H.free_port()
    s = make_server(agents=0, port=port, extra=["--listen", f"0.0.0.0:{port}"])
    st, body = _get_metrics(s.port)
    assert st == 403, (st, body)
    assert "metrics-token" in body
    with open(s.log_path) as f:
        assert "server.metrics.off" in f.read()


def test_metrics_token_beyond_loopback(make_server):
    port = H.free_port()
    s = make_server(agents=0, port=port,
                    extra=["--listen", f"0.0.0.0:{port}", "--metrics-token", "fl-token"])
    assert _get_metrics(s.port)[0] == 401
    st, body = _get_metrics(s.port, {"Authorization": "Bearer fl-token"})
    assert st == 200 and "trainyard_up" in body, (st, body)


def test_metrics_open_on_loopback(make_server):
    s = make_server(agents=0)
    st, body = _get_metrics(s.port)
    assert st == 200 and "trainyard_up" in body, (st, body)


def test_body_over_limit_refused_from_headers(make_server):
    """A client announcing 1 GB and sending a byte a second is answered 413 within a second or
    two of its headers, and the connection is closed (today: read to its end first)."""
    s = make_server(agents=0)
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    try:
        t0 = time.monotonic()
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"X-Amz-Target: SageMaker.ListTrainingJobs\r\n"
                     b"Content-Type: application/x-amz-json-1.1\r\n"
                     b"Content-Length: 1000000000\r\n\r\n")
        got = b""
        sock.settimeout(0.5)
        while time.monotonic() - t0 < 8 and b"\r\n\r\n" not in got:
            try:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                got += chunk
            except socket.timeout:
                try:
                    sock.sendall(b"x")  # trickled body
                except OSError:
                    break
        took = time.monotonic() - t0
        assert got.startswith(b"HTTP/1.1 413"), (took, got[:200])
        assert took < 3, took
        print(f"413 after {took:.3f} s")
        # and the connection is closed after the answer, the body left unread
        sock.settimeout(5)
        rest = b""
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
        except ConnectionResetError:
            pass
        assert time.monotonic() - t0 < 8
    finally:
        sock.close()


def test_body_under_limit_still_served(make_server):
    s = make_server(agents=0)
    sm = s.client("sagemaker")
    assert "TrainingJobSummaries" in sm.list_training_jobs()
