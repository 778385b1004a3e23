"""Counting for the fault cases that run jobs (test_agent_kill.py, test_engine_restart.py,
test_disk_full.py): jobs per terminal state, how many times each job's script ran (a marker line
it prints, counted in every log stream of the job), what a job left on the engine or on disk,
and the one `FAULT <case>: ...` line each case prints."""
import os

import tyhelpers as H

MARK = "RA-RUN-ONCE"
DONE = "RA-DONE"
STATES = ("Completed", "Failed", "Stopped", "InProgress", "Stopping")


def script(seconds):
    """A job that prints MARK, trains for `seconds`, prints DONE and writes a model file."""
    return "\n".join([f"echo {MARK}", f"sleep {seconds}", f"echo {DONE}",
                      "echo ran > /opt/ml/model/ran.txt"])


def containers(job, sandboxes=True):
    """The job's containers (with its sandboxes, a taken spare included: H.job_containers)."""
    out = H.job_containers(job)
    if not sandboxes:
        out = [c for c in out if "trainyard.sandbox" not in (c.get("Labels") or {})]
    return out


def networks(job):
    """The job's networks (labelled with it; named trainyard-<deployment>-<job>: reap.h)."""
    return H.job_networks(job)


def runs(logs, job, hosts=1):
    """(runs, complete) of job: runs = how many times its script started, counted as MARK lines
    over all its log streams divided by its hosts (a rerun writes new streams); complete = every
    host's stream has MARK and DONE exactly once (no line lost or repeated)."""
    streams = logs.describe_log_streams(logGroupName=H.LOG_GROUP,
                                        logStreamNamePrefix=job + "/")["logStreams"]
    marks, complete = 0, len(streams) == hosts
    for st in streams:
        msgs = [e["message"] for e in H.log_events(logs, st["logStreamName"])[0]]
        marks += msgs.count(MARK)
        complete &= msgs.count(MARK) == 1 and msgs.count(DONE) == 1
    return (marks + hosts - 1) // hosts if marks else 0, complete


def states(sm, names):
    """{name: description} for names."""
    return {n: sm.describe_training_job(TrainingJobName=n) for n in names}


def fault_line(case, descs, **extra):
    """Prints and returns `FAULT <case>: Completed=.. Failed=.. Stopped=.. InProgress=.. k=v`."""
    counts = {s: 0 for s in STATES}
    for d in descs.values():
        counts[d["TrainingJobStatus"]] = counts.get(d["TrainingJobStatus"], 0) + 1
    parts = [f"{s}={counts[s]}" for s in ("Completed", "Failed", "Stopped", "InProgress")]
    if counts["Stopping"]:
        parts.append(f"Stopping={counts['Stopping']}")
    parts += [f"{k.replace('_', '-')}={v}" for k, v in extra.items()]
    line = f"FAULT {case}: " + " ".join(parts)
    print("\n" + line)
    return line


def leftovers(names, staging):
    """What the jobs left: containers (with sandboxes), networks, staging folders."""
    left = [c["Id"][:12] for n in names for c in containers(n)]
    left += [f"network:{x['Name']}" for n in names for x in networks(n)]
    if staging and os.path.isdir(staging):
        left += [f"staging:{e}" for e in os.listdir(staging)]
    return left
