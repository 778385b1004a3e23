"""GPUs attached for real and exclusively (issue 23, the GPU step), tested without a GPU: fake
device nodes (mknod c 195 N, NVIDIA's major number) and a CDI spec of a test-only vendor that
points at them, the way `nvidia-ctk cdi generate` describes real GPUs. The agent declares those
CDI names (--gpus trainyard-test.example/gpu=0,...=1) and
- on Podman creates a GPU job's container through the libpod API, the one that attaches CDI
  devices (its Docker-compatible API ignores DeviceRequests: ../docs/resources.md), so two
  1-GPU jobs that run at once each see exactly one device, a different one, with the same
  confinement as every job (read-only root, no capabilities, no_new_privs, seccomp);
- NVIDIA_VISIBLE_DEVICES and SM_NUM_GPUS say the same;
- a third 1-GPU job waits ("waiting for 1 GPU: the largest agent has 0 free") and starts with
  the GPU the first one frees;
- a 4-GPU job on this 2-GPU agent fails fast with a CapacityError.
Needs root (mknod, /etc/cdi) and Podman's service; skipped elsewhere. Job names gpu-*.
"""
import json
import os
import shutil

import pytest

import tyhelpers as H

VENDOR = "trainyard-test.example/gpu"
SPEC = "/etc/cdi/trainyard-test-gpus.json"


@pytest.fixture(scope="module")
def fake_gpus(workdir):
    """Two fake GPU device nodes and the CDI spec naming them; removed after the module."""
    if os.geteuid() != 0:
        pytest.skip("fake GPUs need root (mknod, /etc/cdi)")
    st, out = H.engine_request("GET", "/version")
    if b"Podman" not in out:
        pytest.skip("the CDI path is Podman's; Docker attaches GPUs through DeviceRequests")
    d = os.path.join(workdir, "fake-gpus")
    os.makedirs(d, exist_ok=True)
    devices = []
    for i in (0, 1):
        node = os.path.join(d, f"nvidia{i}")
        if not os.path.exists(node):
            os.mknod(node, 0o666 | 0o020000, os.makedev(195, i))
        devices.append({"name": str(i), "containerEdits": {
            "deviceNodes": [{"path": f"/dev/nvidia{i}", "hostPath": node}],
            "env": [f"FAKE_GPU_INDEX={i}"]}})
    os.makedirs(os.path.dirname(SPEC), exist_ok=True)
    with open(SPEC, "w") as f:
        json.dump({"cdiVersion": "0.5.0", "kind": VENDOR, "devices": devices}, f)
    try:
        yield ["--gpus", f"{VENDOR}=0,{VENDOR}=1", "--cpus", "32", "--memory", "256G",
               "--stop-grace", "2", "--job-volumes", "none"]
    finally:
        os.unlink(SPEC)  # every container the engine creates reads the specs
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def srv(workdir, fake_gpus):
    s = H.Server(os.path.join(workdir, "gpus"), agents=1, extra=fake_gpus)
    s.start()
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()


def _lines(s, name):
    logs = s.client("logs")
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    return [e["message"] for e in H.log_events(logs, stream)[0]]


SCRIPT = "\n".join([
    "echo GPU=$FAKE_GPU_INDEX NV=$NVIDIA_VISIBLE_DEVICES SM=$SM_NUM_GPUS",
    "echo DEVS=$(ls /dev | grep '^nvidia' | tr '\\n' ' ')",
    "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr '\\t' ' '",
    "touch /rootfs-probe 2>/dev/null && echo ROOT=writable || echo ROOT=readonly",
    "sleep $HOLD"])


def _job(sm, name, hold, instance_type="ml.g4dn.xlarge"):
    req = H.job_request(name, SCRIPT, instance_type=instance_type)
    req["Environment"] = {"HOLD": str(hold)}
    sm.create_training_job(**req)


def test_two_jobs_get_different_gpus_and_a_third_waits(srv):
    sm = srv.client()
    a, b, c = H.unique("gpu-a"), H.unique("gpu-b"), H.unique("gpu-c")
    _job(sm, a, 600)
    _job(sm, b, 600)
    for n in (a, b):
        H.wait_job(sm, n, statuses=("InProgress",), secondary=("Training",), timeout=120)
    seen = {}
    for n in (a, b):
        lines = H.wait_for(lambda: (lambda l: l if any(x.startswith("ROOT=") for x in l) else None)(_lines(srv, n)),
                           60, f"{n}'s probe lines")
        got = dict(kv.split("=", 1) for kv in next(l for l in lines if l.startswith("GPU=")).split())
        devs = next(l for l in lines if l.startswith("DEVS=")).split("=", 1)[1].split()
        assert devs == [f"nvidia{got['GPU']}"], lines  # exactly its own device node
        assert got["NV"] == got["GPU"] and got["SM"] == "1", lines
        assert "ROOT=readonly" in lines, lines
        status = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in lines
                  if l.startswith(("CapEff:", "NoNewPrivs:", "Seccomp:"))}
        assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2", lines
        # CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID: instances_caps, as every job
        assert int(status["CapEff"], 16) == 0xeb, lines
        seen[n] = got["GPU"]
    assert sorted(seen.values()) == ["0", "1"], seen
    held = {h["job"]: h["gpu_devices"] for h in json.loads(srv.healthz()[1])["agents"][0]["holding"]}
    assert held[a] == [f"{VENDOR}={seen[a]}"] and held[b] == [f"{VENDOR}={seen[b]}"], held

    _job(sm, c, 0)
    d = H.wait_for(lambda: (lambda d: d if d["SecondaryStatusTransitions"][-1].get("StatusMessage")
                            == "waiting for 1 GPU: the largest agent has 0 free" else None)(
        sm.describe_training_job(TrainingJobName=c)), 30, "the third job waiting for a GPU")
    assert d["TrainingJobStatus"] == "InProgress", d
    sm.stop_training_job(TrainingJobName=a)
    assert H.wait_job(sm, a, timeout=120)["TrainingJobStatus"] == "Stopped"
    d = H.wait_job(sm, c, timeout=120)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    got = dict(kv.split("=", 1) for kv in next(l for l in _lines(srv, c) if l.startswith("GPU=")).split())
    assert got["GPU"] == seen[a], got  # the GPU the stopped job freed
    sm.stop_training_job(TrainingJobName=b)
    assert H.wait_job(sm, b, timeout=120)["TrainingJobStatus"] == "Stopped"


def test_more_gpus_than_the_agent_has_fails_fast(srv):
    sm = srv.client()
    name = H.unique("gpu-four")
    _job(sm, name, 0, instance_type="ml.g5.12xlarge")  # 4 GPUs
    d = H.wait_job(sm, name, timeout=60)
    assert d["TrainingJobStatus"] == "Failed", d
    assert d["FailureReason"].startswith("CapacityError: Unable to provision requested ML "
                                         "compute capacity"), d["FailureReason"]
    assert "needs 4 GPUs" in d["FailureReason"], d["FailureReason"]


def _gpu_of(s, name):
    lines = H.wait_for(lambda: (lambda l: l if any(x.startswith("GPU=") for x in l) else None)(
        _lines(s, name)), 60, f"{name}'s GPU line")
    return dict(kv.split("=", 1) for kv in next(l for l in lines if l.startswith("GPU=")).split())["GPU"]


def test_a_restarted_agent_keeps_its_jobs_gpus(make_server, procs, workdir, fake_gpus):
    """An agent killed and started again re-attaches a running GPU job to the GPUs its container
    holds (their trainyard.gpus label), not to the first free ones: /healthz says so, and the
    next job gets the GPU that is really free, never one a container already has."""
    d = os.path.join(workdir, "gpu-restart")
    redis_url = H.private_redis(procs, d)
    s = make_server(agents=0, extra=["--redis", redis_url])
    argv = [H.AGENT_BIN, "--redis", redis_url, "--docker-host", H.DOCKER_HOST,
            "--data-dir", os.path.join(d, "agent"), "--id", "it-gpu-restart", "--slots", "4",
            "--heartbeat-ttl", "60", "--runtime-image-tar", H.RUNTIME_TAR] + fake_gpus
    first = procs(argv, log_path=os.path.join(d, "agent-1.log"))
    sm = s.client()
    a, b, c = H.unique("gpu-ra"), H.unique("gpu-rb"), H.unique("gpu-rc")
    _job(sm, a, 600)
    H.wait_job(sm, a, statuses=("InProgress",), secondary=("Training",), timeout=120)
    _job(sm, b, 600)
    H.wait_job(sm, b, statuses=("InProgress",), secondary=("Training",), timeout=120)
    assert (_gpu_of(s, a), _gpu_of(s, b)) == ("0", "1")
    sm.stop_training_job(TrainingJobName=a)
    assert H.wait_job(sm, a, timeout=120)["TrainingJobStatus"] == "Stopped"
    first.kill()  # b runs on, on GPU 1; GPU 0 is free
    procs(argv, log_path=os.path.join(d, "agent-2.log"))

    def holding():
        for ag in json.loads(s.healthz()[1])["live_agents"]:
            for h in ag["holding"]:
                if h["job"] == b and h["gpu_devices"]:
                    return h["gpu_devices"]
        return None
    assert H.wait_for(holding, 90, f"{b} re-attached with its GPUs") == [f"{VENDOR}=1"]
    _job(sm, c, 0)
    assert H.wait_job(sm, c, timeout=120)["TrainingJobStatus"] == "Completed"
    assert _gpu_of(s, c) == "0"  # the free one, not b's
    sm.stop_training_job(TrainingJobName=b)
    assert H.wait_job(sm, b, timeout=120)["TrainingJobStatus"] == "Stopped"
