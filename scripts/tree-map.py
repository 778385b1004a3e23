#!/usr/bin/env python3
# Prints the README's map of the tree (the block between <!-- tree-map begin/end --> in
# README.md): one row per folder, its C prefixes taken from the tracked files (the prefix is the
# file stem, docs/style.md) and what it holds (the table below). --write puts it in README.md;
# scripts/style-check.py fails when the README's copy differs. A folder that holds C files or
# sits at the top level but has no description here is printed with "(undescribed)", which the
# style check reports.
import collections
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# folder -> what it holds (the order of the map)
WHAT = {
    "control-plane": "the control plane, one folder per library (docs/design.md), each with "
                     "its public headers in `include/`",
    "control-plane/core": "`ty_core`: errors (`TY_ERR_MAP`), logger, bounded buffers, XML reader, "
                          "options, decoding, CRC-32C, `mkdir -p`, random strings, clocks, "
                          "name/value pairs",
    "control-plane/sigv4": "`ty_sigv4`: SigV4 and SigV2 signing and verification",
    "control-plane/iam": "`ty_iam`: IAM policy parsing, validation and evaluation",
    "control-plane/apimodel": "`ty_apimodel`: the AWS service model (`api/`) and request "
                              "validation",
    "control-plane/tuning": "`ty_tuning`: hyperparameter tuning strategies (pure)",
    "control-plane/s3uri": "`ty_s3uri`: `s3://bucket/key` parsing",
    "control-plane/store": "`ty_store`: Redis state, the queue, sessions, quotas' records",
    "control-plane/store/lua": "the Lua scripts of every atomic state change (compiled in)",
    "control-plane/authz": "`ty_authz`: authorisation of every call",
    "control-plane/http": "`ty_http`: the HTTP server (libmicrohttpd) and request metrics",
    "control-plane/objstore": "`ty_objstore`: the embedded and the external object store, the S3 "
                              "client",
    "control-plane/front": "`ty_front`: the request context, the per-thread worker, "
                           "authentication",
    "control-plane/s3api": "`ty_s3api`: the S3 REST API",
    "control-plane/docker": "`ty_docker`: the Docker Engine API client",
    "control-plane/slurm": "`ty_slurm`: the client of Slurm's REST API (slurmrestd)",
    "control-plane/slurmexec": "`ty_slurmexec`: the Slurm executor's pure parts (the instance map, "
                               "the Slurm job's name, batch script and submission, what its state means)",
    "control-plane/launch": "`ty_launch`: what a per-node launcher and its executor say to "
                            "each other, and the executor's listener",
    "control-plane/agent": "the agent: queue -> hardened containers through the Docker Engine "
                           "API; staging, confined file I/O, the API relay, network fences, "
                           "artifacts, warm pools; the Slurm executor (slurmx, run/run_slurm.c) and "
                           "trainyard-launch, a job's host on a Slurm "
                           "node (launch/)",
    "control-plane/ops": "`ty_ops`: training jobs, tags, Logs, CloudWatch, IAM, STS, Studio, "
                         "tuning, quotas, the operation table",
    "control-plane/console": "`ty_console`: the web console",
    "control-plane/server": "`ty_server` and `trainyard-server`: the router, the private Redis, "
                            "main",
    "api": "the SageMaker and Logs service-model subset (from botocore) and its extractor",
    "openapi": "`openapi.yaml`, generated from `api/`, drift-checked by a test",
    "runtime-image": "`trainyard-train` (SageMaker's container contract), the built-in trainer, "
                     "the offline image builder",
    "compiler": "`libtyc`, the training compiler, and `tyc`",
    "profiler": "`libtyprof`, the profiler, and `typrof`",
    "web": "the console's stylesheet and script, uPlot and playwright-core pinned by "
           "`package-lock.json`",
    "docs": "design (`design.md`), style (`style.md`) and feature notes",
    "scripts": "install, run, test, the style check and this map",
    "docker": "Dockerfiles and a compose file",
    "tests": "`unit/` (cmocka), `integration/` (pytest + boto3 + AWS CLI), `faults/`, "
             "`browser/`, `fuzz/`",
    "bench": "benchmarks that print ratios against a baseline measured in the same run",
}

# folders whose C files are read for prefixes (the others list none)
PREFIX_DIRS = {"control-plane/core", "control-plane/sigv4", "control-plane/iam",
               "control-plane/apimodel", "control-plane/tuning", "control-plane/s3uri",
               "control-plane/store", "control-plane/authz", "control-plane/http",
               "control-plane/objstore", "control-plane/front", "control-plane/s3api",
               "control-plane/docker", "control-plane/slurm", "control-plane/slurmexec",
               "control-plane/launch",
               "control-plane/agent", "control-plane/ops",
               "control-plane/console", "control-plane/server", "runtime-image"}


# folders whose libraries have one public prefix
FIXED = {"compiler": "`tyc_`", "profiler": "`typrof_`"}


def prefixes(files, folder):
    if folder in FIXED:
        return FIXED[folder]
    stems = sorted({os.path.basename(f)[:-2] for f in files
                    if os.path.dirname(f) == folder and f.endswith(".c")} - {"main"})
    groups = collections.OrderedDict()
    for s in stems:
        head = s.split("_")[0]
        groups.setdefault(head, []).append(s)
    out = []
    for head, ss in groups.items():
        out.append(f"`{head}_*`" if len(ss) > 2 else " ".join(f"`{s}_`" for s in ss))
    return " ".join(out)


def tree_map():
    files = subprocess.check_output(["git", "-C", TOP, "ls-files"], text=True).split()
    folders = list(WHAT)
    tops = sorted({f.split("/")[0] for f in files if "/" in f and not f.startswith(".")})
    for t in tops:
        if t not in WHAT:
            folders.append(t)
    rows = ["| folder | prefixes | what it holds |", "|---|---|---|"]
    for d in folders:
        pre = prefixes(files, d) if d in PREFIX_DIRS or d in FIXED else ""
        rows.append(f"| `{d}/` | {pre} | {WHAT.get(d, '(undescribed)')} |")
    return "\n".join(rows) + "\n"


def main():
    m = tree_map()
    if "--write" in sys.argv:
        path = os.path.join(TOP, "README.md")
        with open(path, encoding="utf-8") as fh:
            readme = fh.read()
        new, n = re.subn(r"(<!-- tree-map begin -->\n).*?(<!-- tree-map end -->)",
                         lambda x: x.group(1) + m + x.group(2), readme, flags=re.S)
        if n != 1:
            sys.exit("tree-map: README.md has no '<!-- tree-map begin/end -->' block")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    else:
        sys.stdout.write(m)
    return 1 if "(undescribed)" in m else 0


if __name__ == "__main__":
    sys.exit(main())
