"""A seeded, bounded request fuzz driven by botocore's own service models (issue 35), against a
live server: every operation of SageMaker, S3, IAM, STS, CloudWatch Logs and CloudWatch that
Debian's botocore knows (served or not), with inputs built from each operation's input shape:
required members always, optional ones at random, strings at their edges (empty, one
character, the model's maximum length, non-ASCII, path and XML metacharacters), numbers at
their bounds, nested lists and maps; botocore signs and serialises each request exactly as a
client would (parameter validation off, so out-of-range values reach the server).

It fails on what must never happen: a 500 (an operation we do not serve answers 501
NotImplemented), a request that gets no answer in 30 s, a connection the server drops, or a
server that is not alive and answering /healthz at the end. The seed is printed; rerun one with
TY_FUZZ_SEED=<seed>. TY_FUZZ_ROUNDS (default 4) sets the requests per operation. Under the
sanitized suite (integration_sanitized) the same requests run against ASan+UBSan builds, where
a memory error kills the server and so fails the test.

Operations that would lock the run out (the caller's own keys, user or policies when IAM's
UserName is omitted) are left out; none of the jobs created can run (agents=0).
"""
import datetime
import os
import random
import sys

import botocore.config
import botocore.exceptions
import botocore.session
import pytest

import tyhelpers as H

SERVICES = ("sagemaker", "s3", "iam", "sts", "logs", "cloudwatch")
# IAM operations that act on the caller when UserName is omitted, or that would take the
# admin's own access away: the rest of the run would only see AccessDenied.
SKIP = {
    ("iam", op) for op in (
        "DeleteAccessKey", "UpdateAccessKey", "ChangePassword", "DeleteLoginProfile",
        "UpdateLoginProfile", "DeleteUser", "DeleteUserPolicy", "DetachUserPolicy",
        "PutUserPolicy", "AttachUserPolicy", "PutUserPermissionsBoundary",
        "DeleteUserPermissionsBoundary", "DeleteSigningCertificate", "UpdateSigningCertificate",
        "DeleteSSHPublicKey", "UpdateSSHPublicKey", "DeleteServiceSpecificCredential",
        "UpdateServiceSpecificCredential", "RemoveUserFromGroup", "DeleteVirtualMFADevice",
        "DeactivateMFADevice", "UpdateAccountPasswordPolicy", "DeleteAccountPasswordPolicy",
        "SetSecurityTokenServicePreferences", "UpdateUser", "UntagUser", "TagUser")
}
EDGE_STRINGS = ["", "a", "fuzz", "é漢字", "../../etc/passwd", "<x>&amp;</x>", "a/b/c", "%FF",
                "arn:aws:iam::000000000000:role/trainyard", "s3://fuzz-bucket/k", "-1",
                "null", "{}", " ", "\t", "*"]


class Gen:
    def __init__(self, rnd):
        self.r = rnd

    def value(self, shape, depth=0):
        t = shape.type_name
        r = self.r
        if t == "structure":
            out = {}
            req = set(shape.required_members)
            for name, m in shape.members.items():
                if name == "ContentLength":
                    continue  # HTTP framing: a promise of bytes never sent is a slow client
                if (name in req or r.random() < 0.5) and depth < 6:
                    out[name] = self.value(m, depth + 1)
            return out
        if t == "list":
            return [self.value(shape.member, depth + 1) for _ in range(r.choice((0, 1, 1, 2, 3)))] \
                if depth < 6 else []
        if t == "map":
            return {self.string(shape.key): self.value(shape.value, depth + 1)
                    for _ in range(r.choice((0, 1, 2)))} if depth < 6 else {}
        if t == "string":
            return self.string(shape)
        if t in ("integer", "long"):
            lo = shape.metadata.get("min", -(2 ** 31))
            hi = shape.metadata.get("max", 2 ** 31 - 1)
            return r.choice([lo, hi, 0, 1, -1, lo - 1, hi + 1, r.randint(min(lo, hi), max(lo, hi))])
        if t in ("double", "float"):
            return r.choice([0.0, -1.5, 1e308, 3.25, 1e-9])
        if t == "boolean":
            return r.random() < 0.5
        if t == "timestamp":
            return r.choice([datetime.datetime(1970, 1, 1), datetime.datetime(2038, 1, 19),
                             datetime.datetime(2026, 12, 6, 12, 0, 0)])
        if t == "blob":
            return os.urandom(r.choice((0, 1, 100, 4096)))
        return None

    def string(self, shape):
        r = self.r
        enum = shape.metadata.get("enum")
        if enum and r.random() < 0.8:
            return r.choice(enum)
        mx = min(shape.metadata.get("max", 256), 2048)
        mn = shape.metadata.get("min", 0)
        pick = r.random()
        if pick < 0.4:
            return f"fuzz-{r.randrange(10 ** 6)}"[:max(mx, 1)]
        if pick < 0.6:
            return "x" * mx
        if pick < 0.7:
            return "y" * max(mn - 1, 0)
        return r.choice(EDGE_STRINGS)


def _client(server, session, name):
    akid, secret = server.credentials()
    conf = botocore.config.Config(retries={"max_attempts": 0}, connect_timeout=10, read_timeout=30,
                                  parameter_validation=False,
                                  s3={"addressing_style": "path"})
    return session.create_client(name, endpoint_url=server.url, region_name=server.region,
                                 aws_access_key_id=akid, aws_secret_access_key=secret, config=conf)


def test_model_driven_fuzz(make_server, capsys):
    seed = int(os.environ.get("TY_FUZZ_SEED", "35"))
    rounds = int(os.environ.get("TY_FUZZ_ROUNDS", "4"))
    with capsys.disabled():
        sys.stderr.write(f"\nmodel fuzz: seed={seed} rounds={rounds} (TY_FUZZ_SEED to rerun)\n")
    srv = make_server(agents=0)
    session = botocore.session.get_session()
    rnd = random.Random(seed)
    gen = Gen(rnd)
    bad, counts = [], {}
    for name in SERVICES:
        client = _client(srv, session, name)
        model = session.get_service_model(name)
        for op in sorted(model.operation_names):
            if (name, op) in SKIP:
                continue
            om = model.operation_model(op)
            if (getattr(om, "endpoint", None) or {}).get("hostPrefix"):
                continue  # botocore sends it to another host (S3 Object Lambda, ...), not ours
            method = getattr(client, botocore.xform_name(op))
            for i in range(rounds):
                params = gen.value(om.input_shape) if om.input_shape else {}
                if name == "iam" and "UserName" in (om.input_shape.members if om.input_shape else {}):
                    params["UserName"] = f"fuzz-{rnd.randrange(10 ** 6)}"
                status = None
                try:
                    r = method(**params)
                    status = r.get("ResponseMetadata", {}).get("HTTPStatusCode", 200)
                except botocore.exceptions.ClientError as e:
                    status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                except (botocore.exceptions.ReadTimeoutError,
                        botocore.exceptions.ConnectionClosedError,
                        botocore.exceptions.EndpointConnectionError) as e:
                    bad.append(f"{name}.{op} round {i}: {type(e).__name__}: {e}")
                    if srv.proc.p.poll() is not None:
                        pytest.fail(f"seed={seed}: the server died on {name}.{op} round {i}: "
                                    f"{params!r:.600}\n" + srv.proc.tail())
                    continue
                except (botocore.exceptions.BotoCoreError, ValueError, TypeError, KeyError,
                        AttributeError):
                    continue  # botocore itself could not build it (or read the answer)
                counts[status] = counts.get(status, 0) + 1
                if status is not None and status >= 500 and status not in (501, 503):
                    bad.append(f"{name}.{op} round {i}: HTTP {status} for {params!r:.300}")
    with capsys.disabled():
        by = dict(sorted(counts.items(), key=lambda kv: str(kv[0])))
        sys.stderr.write(f"model fuzz: seed={seed} answers by status: {by}\n")
    assert srv.proc.p.poll() is None, f"seed={seed}: the server died\n" + srv.proc.tail()
    status, body = srv.healthz()  # agents=0: "degraded" for that reason alone
    assert status in (200, 503) and b'"redis":{"ok":true' in body, (seed, status, body)
    assert not bad, f"seed={seed}: {len(bad)} bad answers:\n  " + "\n  ".join(bad[:40])
