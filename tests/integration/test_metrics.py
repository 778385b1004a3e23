"""GET /metrics: Prometheus text exposition 0.0.4 of request counts and latencies per
operation, queue depth, jobs by status, agent slots, Redis and engine health; and
--metrics-token, which makes it answer 401 without "Authorization: Bearer <token>".
"""
import http.client
import re

import pytest
from botocore.exceptions import ClientError


def _get(server, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("GET", "/metrics", headers=headers or {})
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        conn.close()


def _samples(text):
    """{(name, frozenset(labels)): value}; also checks every line is a comment or a sample."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)', line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def test_metrics_page(make_server):
    s = make_server(agents=1, extra=["--metrics-token", "cpt-secret-token", "--slots", "3"])
    st, _, body = _get(s)
    assert st == 401, body
    st, _, _ = _get(s, {"Authorization": "Bearer wrong"})
    assert st == 401
    sm = s.client("sagemaker")
    sm.list_training_jobs()
    sm.list_training_jobs()
    with pytest.raises(ClientError):
        sm.describe_training_job(TrainingJobName="cpt-no-such-job")
    st, ctype, body = _get(s, {"Authorization": "Bearer cpt-secret-token"})
    assert st == 200 and ctype.startswith("text/plain; version=0.0.4"), (st, ctype)
    v = _samples(body)

    def one(name, **labels):
        return v[(name, frozenset(labels.items()))]

    assert one("trainyard_up") == 1 and one("trainyard_redis_up") == 1
    assert one("trainyard_engine_up") == 1
    assert one("trainyard_queue_depth") == 0
    assert one("trainyard_training_jobs", status="InProgress") == 0
    assert one("trainyard_agents_live") == 1
    slots = [val for (n, l), val in v.items() if n == "trainyard_agent_slots"]
    assert slots == [3], slots
    assert one("trainyard_requests_total", service="sagemaker", operation="ListTrainingJobs",
               code="2xx") == 2
    assert one("trainyard_requests_total", service="sagemaker", operation="DescribeTrainingJob",
               code="4xx") == 1
    lab = dict(service="sagemaker", operation="ListTrainingJobs")
    assert one("trainyard_request_duration_seconds_count", **lab) == 2
    assert one("trainyard_request_duration_seconds_bucket", le="+Inf", **lab) == 2
    assert one("trainyard_request_duration_seconds_sum", **lab) >= 0
    # buckets are cumulative
    les = sorted((float(dict(l)["le"]), val) for (n, l), val in v.items()
                 if n == "trainyard_request_duration_seconds_bucket" and dict(l).get(
                     "operation") == "ListTrainingJobs" and dict(l)["le"] != "+Inf")
    assert all(a[1] <= b[1] for a, b in zip(les, les[1:])), les
    assert "# TYPE trainyard_request_duration_seconds histogram" in body
