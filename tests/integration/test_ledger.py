"""The resource ledger (issue 23, the ledger step): an agent admits a job only when its
instance type's GPUs, vCPUs and memory fit what the agent has free (control-plane/agent/
ledger.h), so
- a job that does not fit waits in Starting, and its open transition says what it waits for,
  in the words DescribeTrainingJob and the SDK's logs show ("waiting for 4 vCPUs: the largest
  agent has 2 free"); it starts once room is freed, and says it is launching again;
- a smaller job behind it that fits starts meanwhile (no resource sits idle while a job that
  fits it waits);
- a job no agent can ever run (more GPUs than any has) fails at once with SageMaker's
  CapacityError wording instead of waiting for ever;
- a waiting job can be stopped;
- /healthz shows each agent's ledger: capacity, free, and what each job is charged.
The agent here declares its ledger (--cpus 6 --memory 32G --gpus 2: the CI machine has 2 CPUs
and no GPU); the GPU job fails before any container is made. Job names led-*.
"""
import json
import os
import time

import pytest

import tyhelpers as H

GIB = 1 << 30


@pytest.fixture(scope="module")
def srv(workdir):
    s = H.Server(os.path.join(workdir, "ledger"), agents=1,
                 extra=["--cpus", "6", "--memory", "32G", "--gpus", "2", "--stop-grace", "2",
                        "--job-volumes", "none"])
    s.start()
    yield s
    assert s.stop(timeout=60) == 0, s.proc.tail()


def _agent(s):
    agents = json.loads(s.healthz()[1])["agents"]
    assert len(agents) == 1, agents
    return agents[0]


def _open_message(d):
    tr = d["SecondaryStatusTransitions"]
    return tr[-1]["Status"], tr[-1].get("StatusMessage")


def _wait_message(sm, name, want, timeout=30):
    def said():
        d = sm.describe_training_job(TrainingJobName=name)
        return d if d["TrainingJobStatus"] == "InProgress" and _open_message(d) == ("Starting", want) else None
    return H.wait_for(said, timeout, f"{name} saying {want!r}")


def test_a_job_waits_for_room_and_a_smaller_one_starts_meanwhile(srv):
    sm = srv.client()
    big, waits, small = H.unique("led-big"), H.unique("led-wait"), H.unique("led-small")
    sm.create_training_job(**H.job_request(big, "sleep 600", instance_type="ml.m5.xlarge"))
    H.wait_job(sm, big, statuses=("InProgress",), secondary=("Training",), timeout=120)
    a = _agent(srv)
    assert a["capacity"] == {"gpus": 2, "cpus": 6, "memory_bytes": 32 * GIB}, a
    assert a["free"] == {"gpus": 2, "cpus": 2, "memory_bytes": 16 * GIB}, a
    held = {h["job"]: h for h in a["holding"]}
    assert held[big]["charged"] == {"gpus": 0, "cpus": 4, "memory_bytes": 16 * GIB}, a

    sm.create_training_job(**H.job_request(waits, "echo ran-after", instance_type="ml.m5.xlarge"))
    _wait_message(sm, waits, "waiting for 4 vCPUs: the largest agent has 2 free")
    # behind it, a job that fits what is free starts and ends while the first still waits
    sm.create_training_job(**H.job_request(small, "echo small", instance_type="ml.m5.large"))
    assert H.wait_job(sm, small, timeout=120)["TrainingJobStatus"] == "Completed"
    d = sm.describe_training_job(TrainingJobName=waits)
    assert d["TrainingJobStatus"] == "InProgress" and d["SecondaryStatus"] == "Starting", d

    sm.stop_training_job(TrainingJobName=big)
    assert H.wait_job(sm, big, timeout=120)["TrainingJobStatus"] == "Stopped"
    d = H.wait_job(sm, waits, timeout=120)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    starting = [t for t in d["SecondaryStatusTransitions"] if t["Status"] == "Starting"]
    assert len(starting) == 1 and starting[0]["StatusMessage"] == "Launching requested ML instances", starting
    # nothing is held once every job ended
    H.wait_for(lambda: _agent(srv)["free"] == _agent(srv)["capacity"], 30, "the ledger emptied")


def test_more_gpus_than_any_agent_has_fails_fast(srv):
    sm = srv.client()
    name = H.unique("led-p4d")
    t0 = time.monotonic()
    sm.create_training_job(**H.job_request(name, "echo never", instance_type="ml.p4d.24xlarge"))
    d = H.wait_job(sm, name, timeout=60)
    assert time.monotonic() - t0 < 30
    assert d["TrainingJobStatus"] == "Failed", d
    why = d["FailureReason"]
    assert why.startswith("CapacityError: Unable to provision requested ML compute capacity"), why
    assert "ml.p4d.24xlarge x 1 needs 8 GPUs" in why and "has 2" in why, why
    assert "TrainingStartTime" not in d or d.get("TrainingTimeInSeconds", 0) == 0, d


def test_a_waiting_job_can_be_stopped(srv):
    sm = srv.client()
    big, waits = H.unique("led-hold"), H.unique("led-stopw")
    sm.create_training_job(**H.job_request(big, "sleep 600", instance_type="ml.c5.2xlarge"))
    H.wait_job(sm, big, statuses=("InProgress",), secondary=("Training",), timeout=120)
    sm.create_training_job(**H.job_request(waits, "echo never", instance_type="ml.c5.2xlarge"))
    # a type larger than the agent (8 vCPUs on 6) waits for all of it
    _wait_message(sm, waits, "waiting for 6 vCPUs: the largest agent has 0 free")
    sm.stop_training_job(TrainingJobName=waits)
    d = H.wait_job(sm, waits, timeout=30)
    assert d["TrainingJobStatus"] == "Stopped", d
    sm.stop_training_job(TrainingJobName=big)
    assert H.wait_job(sm, big, timeout=120)["TrainingJobStatus"] == "Stopped"


def test_a_gpu_type_on_a_gpu_less_agent_runs_on_the_cpu_and_says_so(make_server):
    """--cpu-fallback yes (the default): the job runs, and both its Starting message and its
    log say it has no GPU; never silently."""
    s = make_server(agents=1, extra=["--gpus", "none", "--stop-grace", "2", "--job-volumes", "none"])
    sm = s.client()
    name = H.unique("led-cpu")
    sm.create_training_job(**H.job_request(name, "echo SM_NUM_GPUS=$SM_NUM_GPUS",
                                           instance_type="ml.p3.2xlarge"))
    d = H.wait_job(sm, name, timeout=120)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    starting = [t for t in d["SecondaryStatusTransitions"] if t["Status"] == "Starting"]
    assert starting[0]["StatusMessage"] == (
        "Launching requested ML instances: this trainyard agent has no GPU, so the job runs on "
        "the CPU only (--cpu-fallback)"), starting
    logs = s.client("logs")
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    lines = [e["message"] for e in H.log_events(logs, stream)[0]]
    assert any("ml.p3.2xlarge has 1 GPU; this agent has none, so this job runs on the CPU only"
               in l for l in lines), lines
    assert "SM_NUM_GPUS=0" in lines, lines


def test_no_cpu_fallback_fails_a_gpu_job_fast(make_server):
    """--cpu-fallback no on the only agent, which has no GPU: a GPU job can never run, and
    fails at once with the capacity wording; a CPU job still runs."""
    s = make_server(agents=1, extra=["--gpus", "none", "--cpu-fallback", "no", "--stop-grace",
                                     "2", "--job-volumes", "none"])
    sm = s.client()
    gpu, cpu = H.unique("led-nofb"), H.unique("led-nofb-cpu")
    sm.create_training_job(**H.job_request(gpu, "echo never", instance_type="ml.g4dn.xlarge"))
    sm.create_training_job(**H.job_request(cpu, "echo fine", instance_type="ml.m5.large"))
    d = H.wait_job(sm, gpu, timeout=60)
    assert d["TrainingJobStatus"] == "Failed", d
    assert d["FailureReason"].startswith("CapacityError: Unable to provision requested ML "
                                         "compute capacity: ml.g4dn.xlarge x 1 needs 1 GPU, "
                                         "and the largest trainyard agent has 0"), d["FailureReason"]
    assert H.wait_job(sm, cpu, timeout=120)["TrainingJobStatus"] == "Completed"
    assert json.loads(s.healthz()[1])["agents"][0]["cpu_fallback"] is False
