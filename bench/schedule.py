#!/usr/bin/python3
"""The scheduler at scale, for bench/schedule.sh (Debian's python3-boto3).

  schedule.py URL CREDFILE SERVER_LOG --jobs J --users U --gpus G [--seed S]

1. Idle cluster: 50 one-GPU jobs created 0.3 s apart, each claimable when created; the
   create-to-claim latency of each is the agent's `agent.claim.took` log time less its queue
   entry's id (Redis's clock in ms at the XADD; same host, same clock).
2. Backlog: U IAM users, each allowed sagemaker:* and iam:PassRole, create J/U jobs each, user 0
   all of his first, then user 1, ... (first come, first served would run user 0's whole
   backlog first), while one 8-GPU job per agent holds every GPU, so that every user's jobs
   wait from the start. Sizes (fixed seed): 60 % ml.p3.2xlarge (1 GPU), 30 % ml.p3.8xlarge (4),
   10 % ml.p3.16xlarge (8); each sleeps 1, 2 or 3 s. The agents declare 96 vCPUs and 1152 GiB
   each, so GPUs are what binds.
From the server's log (each job's claim and the moment its runner freed its charge):
- GPU utilisation during the backlog, the window running from the last create to the last claim
  (jobs were waiting all that time): GPU-seconds charged to any job, the blockers included /
  (G x the window), and 1 - the
  GPU-seconds an agent's free GPUs sat idle while a waiting job would have fit them / (G x the
  window) (an 8-GPU job waiting for a whole agent leaves GPUs idle that no waiting job fits);
- Jain's fairness index of the users' GPU-seconds over the window from the last create until the
  first user has nothing left waiting (every user had jobs waiting all that time);
- the longest wait of each size, and per user the median create-to-claim.
Prints the figures; exits 1 when a job did not complete.
"""
import argparse
import calendar
import json
import random
import re
import statistics
import sys
import time

import boto3
import botocore.config

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import benchlib as B  # noqa: E402

SIZES = [("ml.p3.2xlarge", 1, 0.6), ("ml.p3.8xlarge", 4, 0.3), ("ml.p3.16xlarge", 8, 0.1)]
LINE = re.compile(r"^ts=(\S+) .*event=(agent\.claim\.took|agent\.run\.freed) (.*)$")


def ts_ms(ts):
    # 2026-12-07T13:34:26.410Z
    base, frac = ts.rstrip("Z").split(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) * 1000 + int(frac[:3])


def parse_log(path):
    """{job: {"claim": ms, "entry": ms, "freed": ms, "gpus": n}}"""
    jobs = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            kv = dict(p.split("=", 1) for p in m.group(3).split() if "=" in p)
            j = jobs.setdefault(kv.get("job", ""), {})
            if m.group(2) == "agent.claim.took":
                j["claim"] = ts_ms(m.group(1))
                j["agent"] = kv.get("agent", "")
                j["entry"] = int(kv["entry"].split("-")[0])
                j["gpus"] = int(kv.get("gpus", "0"))
            else:
                j["freed"] = ts_ms(m.group(1))
    return jobs


def user_client(url, credfile, name):
    iam = B.client(url, credfile, "iam")
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName="jobs", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["sagemaker:*", "iam:PassRole"],
                       "Resource": "*"}]}))
    k = iam.create_access_key(UserName=name)["AccessKey"]
    return boto3.session.Session().client(
        "sagemaker", endpoint_url=url, region_name=B.REGION, aws_access_key_id=k["AccessKeyId"],
        aws_secret_access_key=k["SecretAccessKey"],
        config=botocore.config.Config(retries={"max_attempts": 0}))


def request(name, itype, seconds):
    r = B.job(name, f"sleep {seconds}")
    r["ResourceConfig"]["InstanceType"] = itype
    return r


def wait_freed(log, names, timeout):
    deadline = time.monotonic() + timeout
    while True:
        jobs = parse_log(log)
        left = [n for n in names if "freed" not in jobs.get(n, {})]
        if not left:
            return jobs
        if time.monotonic() > deadline:
            raise SystemExit(f"schedule: {len(left)} jobs not done after {timeout} s, e.g. {left[:3]}")
        time.sleep(1)


def idle_while_fitting(jobs, names, per_agent, t0, t1):
    """GPU-seconds (ms) in [t0, t1] during which an agent had free GPUs and a waiting job would
    have fit them: every free GPU of that agent counts, an upper bound of the waste."""
    ev = []
    for n in names:
        j = jobs[n]
        ev.append((j["entry"], 0, n))
        ev.append((j["claim"], 1, n))
        ev.append((j["freed"], 2, n))
    ev.sort()
    free = {a: per_agent for a in {jobs[n]["agent"] for n in names}}
    waiting = {}
    wasted, last = 0, t0
    for t, kind, n in ev:
        if t > last and t > t0 and last < t1 and waiting:
            small = min(waiting.values())
            span = min(t, t1) - max(last, t0)
            wasted += span * sum(f for f in free.values() if f >= small)
        last = max(last, t)
        j = jobs[n]
        if kind == 0:
            waiting[n] = j["gpus"]
        elif kind == 1:
            waiting.pop(n, None)
            free[j["agent"]] -= j["gpus"]
        else:
            free[j["agent"]] += j["gpus"]
    return wasted


def overlap(a0, a1, b0, b1):
    return max(0, min(a1, b1) - max(a0, b0))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("credfile")
    ap.add_argument("log")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--users", type=int, default=5)
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--seed", type=int, default=23)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    tag = int(time.time()) % 100000
    admin = B.client(a.url, a.credfile)

    # 1. idle cluster
    idle = [f"sch-idle-{tag}-{i}" for i in range(50)]
    for n in idle:
        admin.create_training_job(**request(n, "ml.p3.2xlarge", 1))
        time.sleep(0.3)
    jobs = wait_freed(a.log, idle, 300)
    lat = [jobs[n]["claim"] - jobs[n]["entry"] for n in idle]

    # 2. backlog
    users = [user_client(a.url, a.credfile, f"sch-u{u}-{tag}") for u in range(a.users)]
    time.sleep(1.1)  # the policy cache
    plan = []
    for u in range(a.users):
        for i in range(a.jobs // a.users):
            x = rnd.random()
            for itype, gpus, share in SIZES:
                if x < share:
                    break
                x -= share
            plan.append((u, f"sch-u{u}-{tag}-{i}", itype, gpus, rnd.choice((1, 2, 3))))
    # the agents are full when the backlog arrives: every user has jobs waiting from the start
    hold = max(4, int(len(plan) * 0.015) + 3)
    blockers = [f"sch-block-{tag}-{i}" for i in range(a.gpus // 8)]
    for n in blockers:
        admin.create_training_job(**request(n, "ml.p3.16xlarge", hold))
    deadline = time.monotonic() + 120
    while not all("claim" in parse_log(a.log).get(n, {}) for n in blockers):
        if time.monotonic() > deadline:
            raise SystemExit("schedule: the blockers were not claimed")
        time.sleep(0.2)
    t0 = time.time()
    for u, name, itype, _, secs in plan:
        users[u].create_training_job(**request(name, itype, secs))
    t_created = time.time() * 1000
    print(f"schedule: {len(plan)} jobs created by {a.users} users in {time.time() - t0:.1f} s",
          flush=True)
    jobs = wait_freed(a.log, [p[1] for p in plan], 3600)
    failed = [n for n in (p[1] for p in plan)
              if admin.describe_training_job(TrainingJobName=n)["TrainingJobStatus"] != "Completed"]

    last_claim = max(jobs[p[1]]["claim"] for p in plan)
    win = last_claim - t_created
    names = [p[1] for p in plan] + blockers
    jobs = wait_freed(a.log, names, 60)
    # every job's GPUs count, the blockers' too: they hold all the GPUs for the window's first
    # seconds (leaving them out read about 5 % of busy GPUs as idle)
    used = sum(jobs[n]["gpus"] * overlap(jobs[n]["claim"], jobs[n]["freed"], t_created, last_claim)
               for n in names)
    util = used / (a.gpus * win) if win > 0 else float("nan")
    waste = idle_while_fitting(jobs, names, 8, t_created, last_claim)
    busy = 1 - waste / (a.gpus * win) if win > 0 else float("nan")
    drained = min(max(jobs[p[1]]["claim"] for p in plan if p[0] == u) for u in range(a.users))
    fwin = drained - t_created
    share = [sum(jobs[p[1]]["gpus"] * overlap(jobs[p[1]]["claim"], jobs[p[1]]["freed"],
                                              t_created, drained)
                 for p in plan if p[0] == u) for u in range(a.users)]
    jain = (sum(share) ** 2 / (a.users * sum(x * x for x in share))) if sum(share) else float("nan")

    print(f"schedule: create-to-claim on an idle cluster, {len(lat)} jobs: "
          f"p50 {statistics.median(lat):.0f} ms, p99 {pct(lat, 99):.0f} ms, max {max(lat):.0f} ms"
          " (target p99 <= 5 ms)")
    print(f"schedule: GPU utilisation during the backlog ({win / 1000:.1f} s, {a.gpus} GPUs): "
          f"{util:.3f} charged / available; {busy:.3f} not idle while a waiting job fit "
          "(target >= 0.95)")
    print(f"schedule: Jain's index of the users' GPU-seconds while every user had jobs waiting "
          f"({fwin / 1000:.1f} s): {jain:.3f} (target >= 0.9); GPU-seconds per user: "
          + ", ".join(f"{x / 1000:.0f}" for x in share))
    for itype, gpus, _ in SIZES:
        waits = [jobs[p[1]]["claim"] - jobs[p[1]]["entry"] for p in plan if p[2] == itype]
        if waits:
            print(f"schedule: {itype} ({gpus} GPU{'s' if gpus > 1 else ''}), {len(waits)} jobs: "
                  f"median wait {statistics.median(waits) / 1000:.1f} s, "
                  f"longest {max(waits) / 1000:.1f} s")
    for u in range(a.users):
        waits = [jobs[p[1]]["claim"] - jobs[p[1]]["entry"] for p in plan if p[0] == u]
        first = min(jobs[p[1]]["claim"] for p in plan if p[0] == u) - t0 * 1000
        print(f"schedule: user {u}: first job claimed {first / 1000:.1f} s after the first "
              f"create; median wait {statistics.median(waits) / 1000:.1f} s")
    if failed:
        print(f"schedule: {len(failed)} jobs did not complete, e.g. {failed[:3]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
