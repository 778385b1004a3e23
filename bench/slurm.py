#!/usr/bin/python3
"""bench/slurm.py - the Slurm executor on the test cluster (tests/slurm/cluster.sh), beside the
same containers started by hand. Run by bench/slurm.sh, which brings the cluster up.

  slurm.py CLUSTER_ENV WORKDIR N JOBS

1. Start: CreateTrainingJob of a 2-host job -> the first instruction of its container on every
   node (the later of the two), N times; beside it, `sbatch` of a script whose `srun` runs
   `podman run` of the same image and command on each node, N times, alternating. Each
   container reads the kernel's uptime clock (shared with the host) with shell builtins as its
   first action, so no figure depends on log timestamps. Medians and their ratio.
2. Following: JOBS jobs created at once (2 run, the rest wait in Slurm's queue, as a busy
   cluster's do), then for 30 s the CPU seconds per second of slurmrestd, slurmctld and the
   agent while it follows them all, and the time of one DescribeTrainingJob meanwhile.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import tyhelpers as H  # noqa: E402

FIRST = "read up _ < /proc/uptime; echo RUNNING_AT $up"
TICK = os.sysconf("SC_CLK_TCK")


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def pid_of(comm, conf):
    """The pid of the process named comm whose environment or arguments name this cluster's
    configuration (not runuser, which starts slurmrestd)."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().decode(errors="replace")
        except OSError:
            continue
        if name == comm and (conf in cmd or conf in env):
            return int(d)
    raise SystemExit(f"no process {pattern} of {conf}")


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def trainyard_start(s, name):
    sm = s.client()
    t0 = uptime()
    sm.create_training_job(**H.job_request(
        name, FIRST, ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 2,
                                     "VolumeSizeInGB": 1}))
    d = H.wait_job(sm, name, timeout=300)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    logs = s.client("logs")
    ups = []
    for st in logs.describe_log_streams(logGroupName=H.LOG_GROUP,
                                        logStreamNamePrefix=name + "/")["logStreams"]:
        for e in H.log_events(logs, st["logStreamName"])[0]:
            if e["message"].startswith("RUNNING_AT "):
                ups.append(float(e["message"].split()[1]))
    assert len(ups) == 2, ups
    return max(ups) - t0


def by_hand_start(cl, workdir, i):
    out = os.path.join(workdir, f"hand-{i}.out")
    script = os.path.join(workdir, f"hand-{i}.sh")
    podman = (f"podman --runtime {subprocess.check_output(['sh', '-c', 'command -v runc']).decode().strip()}"
              f" --storage-driver vfs run --rm --network none {H.RUNTIME_IMAGE} sh -c '{FIRST}'")
    with open(script, "w") as f:
        f.write(f"#!/bin/sh\nexec srun --ntasks-per-node=1 {podman}\n")
    os.chmod(script, 0o755)
    env = dict(os.environ, SLURM_CONF=cl["SLURM_CONF"])
    t0 = uptime()
    subprocess.run(["sbatch", "-N", "2", "--exclusive", "-p", cl["SLURM_PARTITION"], "-o", out,
                    "-D", cl["SLURM_JOBS_DIR"], script], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with open(out) as f:
                ups = [float(l.split()[1]) for l in f if l.startswith("RUNNING_AT ")]
        except OSError:
            ups = []
        if len(ups) == 2:
            return max(ups) - t0
        time.sleep(0.05)
    raise SystemExit(f"by hand {i}: no two RUNNING_AT lines in {out}")


def following(s, cl, agent_pid, jobs):
    sm = s.client()
    # the default quota (50 instances in progress per principal) would refuse the rest
    s.client("iam").tag_user(UserName="admin", Tags=[
        {"Key": "trainyard:max-training-instances", "Value": str(jobs + 10)}])
    names = [H.unique("bench-follow") for _ in range(jobs)]
    for i, n in enumerate(names):  # two types: the account's quota is 100 instances of each
        sm.create_training_job(**H.job_request(
            n, "sleep 600", max_runtime=3600,
            instance_type="ml.m5.large" if i % 2 else "ml.m5.xlarge"))
    H.wait_for(lambda: all(sm.describe_training_job(TrainingJobName=n)["SecondaryStatusTransitions"]
                           [-1]["StatusMessage"] != "Launching requested ML instances"
                           for n in names[-5:]), 300, "the agent to submit every job")
    time.sleep(5)
    rest = pid_of("slurmrestd", cl["SLURM_CONF"])
    ctld = pid_of("slurmctld", cl["SLURM_CONF"])
    c0 = {p: cpu_s(p) for p in (rest, ctld, agent_pid)}
    t0 = time.monotonic()
    desc = []
    while time.monotonic() - t0 < 30:
        a = time.monotonic()
        sm.describe_training_job(TrainingJobName=names[len(desc) % len(names)])
        desc.append(time.monotonic() - a)
        time.sleep(0.5)
    dt = time.monotonic() - t0
    c1 = {p: cpu_s(p) for p in (rest, ctld, agent_pid)}
    for n in names:
        try:
            sm.stop_training_job(TrainingJobName=n)
        except sm.exceptions.ClientError:
            pass  # ended already: counted below
    ends = {}
    for n in names:
        d = H.wait_job(sm, n, timeout=300)
        if d["TrainingJobStatus"] == "Failed":
            ends[d["FailureReason"]] = ends.get(d["FailureReason"], 0) + 1
    for why, k in ends.items():
        print(f"  {k} of the {jobs} jobs failed: {why}")
    return ((c1[rest] - c0[rest]) / dt, (c1[ctld] - c0[ctld]) / dt,
            (c1[agent_pid] - c0[agent_pid]) / dt, median(desc))


def main():
    cl_env, workdir, n, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    cl = dict(line.strip().split("=", 1) for line in open(cl_env) if "=" in line)
    procs = []

    def start(argv, **kw):
        p = H.Proc(argv, **kw)
        procs.append(p)
        return p

    try:
        redis_url = H.private_redis(start, os.path.join(workdir, "redis"))
        s = H.Server(os.path.join(workdir, "server"), agents=0,
                     extra=["--redis", redis_url]).start()
        procs.append(s.proc)
        agent = start([H.AGENT_BIN, "--executor", "slurm", "--redis", redis_url,
                       "--docker-host", H.DOCKER_HOST, "--data-dir",
                       os.path.join(workdir, "agent"), "--slots", str(jobs + 8),
                       "--stop-grace", "5", "--endpoint-url", s.url,
                       "--slurm-url", cl["SLURM_REST_URL"], "--slurm-jwt-key", cl["SLURM_JWT_KEY"],
                       "--slurm-launcher", os.path.join(H.BUILD, "bin", "trainyard-launch"),
                       "--launch-listen", "127.0.0.1:0", "--slurm-node-docker-host",
                       H.DOCKER_HOST, "--slurm-node-staging-dir",
                       os.path.join(cl["SLURM_JOBS_DIR"], "launch-staging"),
                       "--slurm-instance-map", os.path.join(workdir, "map.json"),
                       "--slurm-workdir", cl["SLURM_JOBS_DIR"]],
                      log_path=os.path.join(workdir, "agent.log"))
        agent.wait_line("event=agent.started", 60)
        trainyard_start(s, H.unique("bench-warm"))  # first starts pay one-time setup
        by_hand_start(cl, workdir, 0)
        ty, hand = [], []
        for i in range(1, n + 1):
            ty.append(trainyard_start(s, H.unique("bench-start")))
            hand.append(by_hand_start(cl, workdir, i))
            print(f"run {i}: trainyard {ty[-1]:.3f} s, sbatch + srun podman run {hand[-1]:.3f} s",
                  flush=True)
        a, b = median(ty), median(hand)
        print(f"\nRESULT slurm start, 2 nodes (N={n}): trainyard median {a:.3f} s | sbatch + srun "
              f"podman run median {b:.3f} s | ratio {a / b:.2f}x")
        rest, ctld, ag, desc = following(s, cl, agent.p.pid, jobs)
        print(f"RESULT slurm following {jobs} jobs (2 running, {jobs - 2} waiting in Slurm): "
              f"slurmrestd {rest:.3f} CPU s/s | slurmctld {ctld:.3f} CPU s/s | agent {ag:.3f} "
              f"CPU s/s | DescribeTrainingJob median {desc * 1000:.1f} ms")
        print(f"(machine: {os.cpu_count()} CPUs; uptime clock resolution 10 ms)")
    finally:
        for p in reversed(procs):
            p.kill()


if __name__ == "__main__":
    main()
