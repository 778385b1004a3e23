"""The container engine's API service restarted while jobs train: the Podman service
on the socket the tests use (tests/engine.sh) gets SIGTERM while two of four jobs train, stays
away for a few seconds and is started again by engine.sh; the containers (run by conmon) go on.
The agent keeps supervising: its log readers read again from where they were once the engine
answers. Every job must end in a terminal state (Completed, or Failed with a reason), none
stranded, none run twice, a completed job's log complete, nothing left on the engine. The
engine is started again whatever happens, for the tests that follow."""
import os
import signal
import subprocess
import time

import pytest

import faultjobs as F
import tyhelpers as H

N = 4
TRAIN_S = 10
DOWN_S = 4


def _engine_pid():
    """pid of the Podman API service on the tests' socket, None when the engine is another."""
    if not H.DOCKER_HOST.startswith("unix://"):
        return None
    pids = [p for p in H.procs_mentioning("system service")
            if H.DOCKER_HOST in open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ")
            .decode(errors="replace")]
    return pids[0] if len(pids) == 1 else None


def _engine_up():
    env = dict(os.environ, TY_DOCKER_HOST=H.DOCKER_HOST)
    r = subprocess.run(["bash", H.ENGINE_SH], env=env, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr


def _restart_engine():
    """SIGTERM to the service, DOWN_S seconds without it, then engine.sh. Returns the seconds
    the engine did not answer."""
    pid = _engine_pid()
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    assert not H.engine_ping(), "the engine still answers after its service was stopped"
    time.sleep(DOWN_S)
    _engine_up()
    return time.monotonic() - t0


def test_engine_service_restarted_during_jobs(make_server):
    if _engine_pid() is None:
        pytest.skip("the engine is not a Podman API service on a unix socket of this host")
    s = make_server(agents=1, extra=["--slots", "2", "--stop-grace", "3"])
    sm, logs = s.client(), s.client("logs")
    staging = s.staging_args()[1]
    names = []
    for _ in range(N):
        n = H.unique("ra-engine")
        sm.create_training_job(**H.job_request(n, F.script(TRAIN_S)))
        names.append(n)
    H.wait_for(lambda: sum(sm.describe_training_job(TrainingJobName=n).get("SecondaryStatus")
                           == "Training" and bool(F.containers(n, sandboxes=False))
                           for n in names) >= 2, 120, "two jobs training")
    try:
        down = _restart_engine()
    finally:
        if not H.engine_ping():
            _engine_up()
    running_after = sum(c.get("State") == "running" for n in names
                        for c in F.containers(n, sandboxes=False))
    final = {n: H.wait_job(sm, n, timeout=180) for n in names}
    twice, incomplete = 0, []
    for n, d in final.items():
        ran, complete = F.runs(logs, n)
        twice += ran > 1
        if d["TrainingJobStatus"] == "Completed" and not complete:
            incomplete.append(n)
    H.wait_for(lambda: not F.leftovers(names, staging), 30, "nothing left behind", interval=0.5)
    F.fault_line("engine-restart", final, ran_twice=twice, incomplete_logs=len(incomplete),
                 leaked=len(F.leftovers(names, staging)), engine_down_s=round(down, 1))
    assert running_after >= 1, "the containers did not survive the engine's restart"
    for n, d in final.items():
        assert d["TrainingJobStatus"] in ("Completed", "Failed"), (n, d["TrainingJobStatus"])
        if d["TrainingJobStatus"] == "Failed":
            assert d.get("FailureReason"), n
    assert twice == 0 and not incomplete, incomplete
    assert s.proc.p.poll() is None, s.proc.tail()
