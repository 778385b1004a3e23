#!/usr/bin/python3
"""The soak load for bench/soak.sh (Debian's python3-boto3): mixed API calls at a steady rate
and short training jobs spread over the run, with RSS and latency per minute.

  soak.py URL CREDFILE SERVER_PID AGENT_PID [--minutes M] [--jobs J] [--rate R] [--threads T]
          [--warmup W] [--max-growth-pct G] [--max-slope-pct S]

Workers (T threads, R calls/s in all, paced) draw DescribeTrainingJob 35 %, ListTrainingJobs
15 %, S3 PutObject 25 % (4-64 KiB, random bytes), S3 GetObject 25 % (an object put earlier,
its bytes compared). A scheduler creates J jobs (`echo loss=...`) evenly over the first 80 % of
the run; after the load, the jobs get up to 5 minutes to end. An error is any call that raised,
a GetObject whose bytes differ, or a job that did not end Completed. Prints one line per minute
(calls, errors, p50/p99 in ms, jobs ended, RSS of both processes) and a RESULT line.

Memory: the RSS of both processes is sampled every 5 s. The first W minutes (default 30 % of
the run, at least 1) are warm-up: the allocator's per-thread arenas, the HTTP pool's threads,
Redis' connections and the size classes of the load all settle there. For each process the
MEMORY line gives the RSS at start (before the load), after the warm-up, at the end of the load
and after the jobs drained, and the least-squares slope of the samples over the second half of
the load (kB/min). It says PASS when, for both processes, the growth from the end of the
warm-up to the end of the load is at most G % (default 10) of the RSS after the warm-up and the
slope over the second half is at most S % (default 1) of it per minute; FAIL otherwise. A leak
of a few hundred bytes per call fails both bounds within a 10-minute run.
Exits 1 when there was any error or the memory check failed.
"""
import argparse
import hashlib
import os
import random
import threading
import time

import benchlib as B

PREFIX = f"soak-{os.getpid()}"


def rss_kb(pid, field="VmRSS"):
    """A /proc/PID/status figure in kB: VmRSS, RssAnon (heap, stacks) or RssFile (mapped
    binaries and libraries, faulted in as code paths first run)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def rss3(pid):
    return tuple(rss_kb(pid, k) for k in ("VmRSS", "RssAnon", "RssFile"))


class RssSampler(threading.Thread):
    """Samples (minutes since t0, server rss3, agent rss3) every `every` seconds until stopped."""

    def __init__(self, pids, t0, every=5.0):
        super().__init__(daemon=True)
        self.pids, self.t0, self.every = pids, t0, every
        self.samples = []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            self.samples.append(((time.monotonic() - self.t0) / 60.0,)
                                + tuple(rss3(p) for p in self.pids))
            self.halt.wait(self.every)


def slope(points):
    """Least-squares slope of [(x, y)], 0 with fewer than 2 points."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def memory_verdict(name, k, samples, start, drained, args):
    """One process' figures (k: its column in the samples, each an rss3) and whether they
    pass; the verdict is on VmRSS, the anon/file split is shown beside it."""
    warm = [s[k] for s in samples if s[0] <= args.warmup]
    after_warm = warm[-1] if warm else start
    load_end = samples[-1][k] if samples else start
    half = [(s[0], s[k][0]) for s in samples if s[0] >= args.minutes / 2.0]
    sl = slope(half)
    growth = load_end[0] - after_warm[0]
    ok = (growth <= after_warm[0] * args.max_growth_pct / 100.0
          and sl <= after_warm[0] * args.max_slope_pct / 100.0)

    def fig(r):
        return f"{r[0]} ({r[1]}+{r[2]})"
    text = (f"{name} rss kB (anon+file): start={fig(start)} warm={fig(after_warm)} "
            f"end={fig(load_end)} drained={fig(drained)}; after warm-up {growth:+d} kB "
            f"({100.0 * growth / max(1, after_warm[0]):+.1f} %), "
            f"slope over 2nd half {sl:+.0f} kB/min")
    return ok, text


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
    ap.add_argument("--warmup", type=float, default=None,
                    help="warm-up minutes (default 30 %% of the run, at least 1)")
    ap.add_argument("--max-growth-pct", type=float, default=10.0)
    ap.add_argument("--max-slope-pct", type=float, default=1.0)
    args = ap.parse_args()
    if args.warmup is None:
        args.warmup = min(args.minutes / 2.0, max(1.0, 0.3 * args.minutes))

    sm = B.client(args.url, args.cred)
    s3 = B.client(args.url, args.cred, "s3")
    args.bucket = PREFIX
    s3.create_bucket(Bucket=args.bucket)
    args.probe = f"{PREFIX}-probe"
    sm.create_training_job(**B.job(args.probe, "echo probe", 120))
    B.wait(sm, args.probe, 120)

    rss0 = (rss3(args.server_pid), rss3(args.agent_pid))
    print(f"start: server rss {rss0[0][0]} kB, agent rss {rss0[1][0]} kB; {args.minutes:g} min, "
          f"{args.rate:g} calls/s over {args.threads} threads, {args.jobs} jobs", flush=True)
    t0 = time.monotonic()
    stats, stop, objects, olock, names = Stats(t0), threading.Event(), [], threading.Lock(), []
    sampler = RssSampler((args.server_pid, args.agent_pid), t0)
    sampler.start()
    threads = [threading.Thread(target=worker, args=(args, stats, stop, objects, olock, k),
                                daemon=True) for k in range(args.threads)]
    threads.append(threading.Thread(target=scheduler, args=(args, stats, names, t0), daemon=True))
    for t in threads:
        t.start()

    minutes = int(-(-args.minutes // 1))
    p99s = []
    for m in range(minutes):
        end = t0 + min((m + 1) * 60, args.minutes * 60)
        while time.monotonic() < end:
            time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        if m == minutes - 1:
            sampler.halt.set()
            sampler.join()
            stop.set()
            for t in threads:
                t.join(120)
        with stats.mu:
            lat = list(stats.lat.get(m, []))
            errs = stats.err.get(m, 0)
        done = len(ended(sm, set(names)))
        p50, p99 = pct(lat, 50) * 1000, pct(lat, 99) * 1000
        p99s.append(p99)
        rss = (rss3(args.server_pid), rss3(args.agent_pid))
        print(f"minute {m + 1}: calls={len(lat)} errors={errs} p50={p50:.1f}ms p99={p99:.1f}ms "
              f"jobs_created={len(names)} jobs_ended={done} "
              f"rss_server={rss[0][0]}kB(anon={rss[0][1]}) "
              f"rss_agent={rss[1][0]}kB(anon={rss[1][1]})", flush=True)

    # the jobs created late get time to end
    deadline = time.monotonic() + 300
    final = ended(sm, set(names))
    while len(final) < len(names) and time.monotonic() < deadline:
        time.sleep(2)
        final = ended(sm, set(names))
    bad = {n: final.get(n, "not ended") for n in names if final.get(n) != "Completed"}
    stats.samples += [f"job {n}: {st}" for n, st in list(bad.items())[:5]]
    rss1 = (rss3(args.server_pid), rss3(args.agent_pid))
    calls = sum(len(v) for v in stats.lat.values())
    errors = sum(stats.err.values()) + len(bad)
    print(f"end: server rss {rss1[0][0]} kB, agent rss {rss1[1][0]} kB")
    for s in stats.samples:
        print(f"error: {s}")
    verdicts = [memory_verdict(name, k + 1, sampler.samples, rss0[k], rss1[k], args)
                for k, name in enumerate(("server", "agent"))]
    mem_ok = all(ok for ok, _ in verdicts)
    print(f"\nRESULT soak: minutes={args.minutes:g} calls={calls} errors={errors} "
          f"jobs={len(names)} completed={len(names) - len(bad)} "
          f"rss_server_kB={rss0[0][0]}->{rss1[0][0]} rss_agent_kB={rss0[1][0]}->{rss1[1][0]} "
          f"p99_ms_per_minute=[{', '.join(f'{p:.1f}' for p in p99s)}]")
    for _, text in verdicts:
        print(f"MEMORY {text}")
    print(f"MEMORY {'PASS' if mem_ok else 'FAIL'}: growth after {args.warmup:g} min warm-up "
          f"<= {args.max_growth_pct:g} % and 2nd-half slope <= {args.max_slope_pct:g} %/min "
          f"of the warm RSS, for server and agent")
    return 1 if errors or not mem_ok else 0


if __name__ == "__main__":
    raise SystemExit(main())
