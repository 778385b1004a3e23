#!/usr/bin/python3
"""The soak load for bench/soak.sh (Debian's python3-boto3): mixed API calls at a steady rate
and short training jobs spread over the run, with RSS and latency per minute.

  soak.py URL CREDFILE SERVER_PID AGENT_PID [--minutes M] [--jobs J] [--rate R] [--threads T]

Workers (T threads, R calls/s in all, paced) draw DescribeTrainingJob 35 %, ListTrainingJobs
15 %, S3 PutObject 25 % (4-64 KiB, random bytes), S3 GetObject 25 % (an object put earlier,
its bytes compared). A scheduler creates J jobs (`echo loss=...`) evenly over the first 80 % of
the run; after the load, the jobs get up to 5 minutes to end. An error is any call that raised,
a GetObject whose bytes differ, or a job that did not end Completed. Prints one line per minute
(calls, errors, p50/p99 in ms, jobs ended, RSS of both processes) and a RESULT line; exits 1
when there was any error.
"""
import argparse
import hashlib
import os
import random
import threading
import time

import benchlib as B

PREFIX = f"soak-{os.getpid()}"


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def pct(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


class Stats:
    """Latencies and errors per minute of the run, guarded by one lock."""

    def __init__(self, t0):
        self.t0 = t0
        self.mu = threading.Lock()
        self.lat = {}   # minute -> [seconds]
        self.err = {}   # minute -> count
        self.samples = []  # first few error messages

    def minute(self):
        return int((time.monotonic() - self.t0) // 60)

    def ok(self, secs):
        with self.mu:
            self.lat.setdefault(self.minute(), []).append(secs)

    def fail(self, what):
        with self.mu:
            m = self.minute()
            self.err[m] = self.err.get(m, 0) + 1
            if len(self.samples) < 5:
                self.samples.append(what)


def worker(args, stats, stop, objects, olock, seed):
    rnd = random.Random(seed)
    sm = B.client(args.url, args.cred)
    s3 = B.client(args.url, args.cred, "s3")
    period = args.threads / float(args.rate)
    nxt = time.monotonic()
    n = 0
    while not stop.is_set():
        nxt += period
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        op = rnd.random()
        t = time.monotonic()
        try:
            if op < 0.35:
                sm.describe_training_job(TrainingJobName=args.probe)
            elif op < 0.50:
                sm.list_training_jobs(MaxResults=20, NameContains=PREFIX)
            elif op < 0.75 or not objects:
                body = rnd.randbytes(rnd.randint(4096, 65536))
                key = f"k/{seed}/{n}"
                n += 1
                s3.put_object(Bucket=args.bucket, Key=key, Body=body)
                with olock:
                    objects.append((key, hashlib.sha256(body).hexdigest()))
            else:
                with olock:
                    key, digest = rnd.choice(objects)
                got = s3.get_object(Bucket=args.bucket, Key=key)["Body"].read()
                if hashlib.sha256(got).hexdigest() != digest:
                    stats.fail(f"GetObject {key}: bytes differ")
                    continue
            stats.ok(time.monotonic() - t)
        except Exception as e:  # noqa: BLE001 - every failure is an error of the soak
            stats.fail(f"{type(e).__name__}: {e}")


def scheduler(args, stats, names, t0):
    sm = B.client(args.url, args.cred)
    span = args.minutes * 60 * 0.8
    for i in range(args.jobs):
        at = t0 + span * i / max(1, args.jobs)
        delay = at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        name = f"{PREFIX}-{i}"
        t = time.monotonic()
        try:
            sm.create_training_job(**B.job(name, f"echo loss=0.{i % 10}; echo done", 120))
            names.append(name)
            stats.ok(time.monotonic() - t)
        except Exception as e:  # noqa: BLE001
            stats.fail(f"CreateTrainingJob {name}: {type(e).__name__}: {e}")


def ended(sm, names):
    """{name: status} of names that reached a terminal status."""
    out = {}
    for status in ("Completed", "Failed", "Stopped"):
        kw = {"MaxResults": 100, "NameContains": PREFIX, "StatusEquals": status}
        while True:
            r = sm.list_training_jobs(**kw)
            for j in r["TrainingJobSummaries"]:
                if j["TrainingJobName"] in names:
                    out[j["TrainingJobName"]] = status
            if not r.get("NextToken"):
                break
            kw["NextToken"] = r["NextToken"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("cred")
    ap.add_argument("server_pid", type=int)
    ap.add_argument("agent_pid", type=int)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--rate", type=float, default=40)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()

    sm = B.client(args.url, args.cred)
    s3 = B.client(args.url, args.cred, "s3")
    args.bucket = PREFIX
    s3.create_bucket(Bucket=args.bucket)
    args.probe = f"{PREFIX}-probe"
    sm.create_training_job(**B.job(args.probe, "echo probe", 120))
    B.wait(sm, args.probe, 120)

    rss0 = (rss_kb(args.server_pid), rss_kb(args.agent_pid))
    print(f"start: server rss {rss0[0]} kB, agent rss {rss0[1]} kB; {args.minutes:g} min, "
          f"{args.rate:g} calls/s over {args.threads} threads, {args.jobs} jobs", flush=True)
    t0 = time.monotonic()
    stats, stop, objects, olock, names = Stats(t0), threading.Event(), [], threading.Lock(), []
    threads = [threading.Thread(target=worker, args=(args, stats, stop, objects, olock, k),
                                daemon=True) for k in range(args.threads)]
    threads.append(threading.Thread(target=scheduler, args=(args, stats, names, t0), daemon=True))
    for t in threads:
        t.start()

    minutes = int(-(-args.minutes // 1))
    p99s, rows = [], []
    for m in range(minutes):
        end = t0 + min((m + 1) * 60, args.minutes * 60)
        while time.monotonic() < end:
            time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        if m == minutes - 1:
            stop.set()
            for t in threads:
                t.join(120)
        with stats.mu:
            lat = list(stats.lat.get(m, []))
            errs = stats.err.get(m, 0)
        done = len(ended(sm, set(names)))
        p50, p99 = pct(lat, 50) * 1000, pct(lat, 99) * 1000
        p99s.append(p99)
        rss = (rss_kb(args.server_pid), rss_kb(args.agent_pid))
        rows.append(rss)
        print(f"minute {m + 1}: calls={len(lat)} errors={errs} p50={p50:.1f}ms p99={p99:.1f}ms "
              f"jobs_created={len(names)} jobs_ended={done} rss_server={rss[0]}kB "
              f"rss_agent={rss[1]}kB", flush=True)

    # the jobs created late get time to end
    deadline = time.monotonic() + 300
    final = ended(sm, set(names))
    while len(final) < len(names) and time.monotonic() < deadline:
        time.sleep(2)
        final = ended(sm, set(names))
    bad = {n: final.get(n, "not ended") for n in names if final.get(n) != "Completed"}
    stats.samples += [f"job {n}: {st}" for n, st in list(bad.items())[:5]]
    rss1 = (rss_kb(args.server_pid), rss_kb(args.agent_pid))
    calls = sum(len(v) for v in stats.lat.values())
    errors = sum(stats.err.values()) + len(bad)
    print(f"end: server rss {rss1[0]} kB, agent rss {rss1[1]} kB")
    for s in stats.samples:
        print(f"error: {s}")
    print(f"\nRESULT soak: minutes={args.minutes:g} calls={calls} errors={errors} "
          f"jobs={len(names)} completed={len(names) - len(bad)} "
          f"rss_server_kB={rss0[0]}->{rss1[0]} rss_agent_kB={rss0[1]}->{rss1[1]} "
          f"p99_ms_per_minute=[{', '.join(f'{p:.1f}' for p in p99s)}]")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
