#!/usr/bin/python3
"""extract.py - writes the service-model subset trainyard serves (api/sagemaker.json, api/logs.json).

Reads botocore's public service models (service-2.json or service-2.json.gz), keeps the
operations listed below plus the transitive closure of their input, output and error shapes,
drops every "documentation" key, and writes sorted, indented JSON. The output depends only on
the botocore model read, so running it twice gives the same bytes.

    /usr/bin/python3 api/extract.py [--botocore-dir DIR] [--out-dir DIR]

DIR defaults to the botocore package next to this Python (Debian: python3-botocore).
Standard library only.

The committed api/ comes from botocore 1.43.67 (boto/botocore 0e6e240, service models
sagemaker 2017-07-24 and logs 2014-03-28). To redo it from a botocore checkout:

    git -C botocore checkout 0e6e240
    /usr/bin/python3 api/extract.py --botocore-dir botocore/botocore/data
    /usr/bin/python3 openapi/generate.py

The hyperparameter-tuning operations are extracted ahead of being served (route.c serves
what it has a handler for; the rest answer UnknownOperationException).
"""

import argparse
import copy
import gzip
import json
import os
import sys

SERVICES = {
    "sagemaker": [
        "CreateTrainingJob", "DescribeTrainingJob", "ListTrainingJobs", "StopTrainingJob",
        "UpdateTrainingJob", "DeleteTrainingJob",
        "AddTags", "ListTags", "DeleteTags",
        "CreateDomain", "DescribeDomain", "ListDomains", "UpdateDomain", "DeleteDomain",
        "CreateUserProfile", "DescribeUserProfile", "ListUserProfiles", "UpdateUserProfile",
        "DeleteUserProfile",
        "CreateApp", "DescribeApp", "ListApps", "DeleteApp",
        "CreatePresignedDomainUrl",
        "CreateHyperParameterTuningJob", "DescribeHyperParameterTuningJob",
        "ListHyperParameterTuningJobs", "StopHyperParameterTuningJob",
        "ListTrainingJobsForHyperParameterTuningJob",
    ],
    "logs": ["DescribeLogStreams", "GetLogEvents", "FilterLogEvents", "DescribeLogGroups"],
}

METADATA_KEYS = ("apiVersion", "targetPrefix", "jsonVersion", "protocol", "signingName")
OPERATION_KEYS = ("name", "http", "input", "output", "errors")

# DeleteTrainingJob is newer than Debian 12's botocore (1.29.27). When the model read lacks it,
# it is added by hand with the shape AWS documents for it (API reference, DeleteTrainingJob):
# request {TrainingJobName} (required, the TrainingJobName shape), empty response, errors
# ResourceNotFound and ResourceInUse (as botocore's later models define it, checked against
# boto/botocore 0e6e240). A newer botocore's own definition wins.
MANUAL = {
    "sagemaker": {
        "operations": {
            "DeleteTrainingJob": {
                "name": "DeleteTrainingJob",
                "http": {"method": "POST", "requestUri": "/"},
                "input": {"shape": "DeleteTrainingJobRequest"},
                "errors": [{"shape": "ResourceNotFound"}, {"shape": "ResourceInUse"}],
            },
        },
        "shapes": {
            "DeleteTrainingJobRequest": {
                "type": "structure",
                "required": ["TrainingJobName"],
                "members": {"TrainingJobName": {"shape": "TrainingJobName"}},
            },
        },
    },
}


# Studio members newer than Debian 12's botocore, added to the shapes it has (checked against
# botocore 1.43's sagemaker model): the AppType values DetailedProfiler (the SageMaker Profiler
# app), CodeEditor, JupyterLab and Canvas, and CreatePresignedDomainUrl's LandingUri
# (shape LandingUri: string, 0..1023 characters). A newer botocore that has them keeps its own.
EXTEND = {
    "sagemaker": {
        "enums": {
            "AppType": ["JupyterServer", "KernelGateway", "DetailedProfiler", "TensorBoard",
                        "CodeEditor", "JupyterLab", "RStudioServerPro", "RSessionGateway",
                        "Canvas"],
        },
        "members": {
            "CreatePresignedDomainUrlRequest": {"LandingUri": {"shape": "LandingUri"}},
        },
        "shapes": {
            "LandingUri": {"type": "string", "max": 1023, "min": 0},
        },
    },
}


def extend(model, service):
    """Adds EXTEND's enum values, members and shapes that model lacks (in place)."""
    ext = EXTEND.get(service, {})
    shapes = model["shapes"]
    for name, shape in ext.get("shapes", {}).items():
        shapes.setdefault(name, shape)
    for name, values in ext.get("enums", {}).items():
        have = shapes[name].setdefault("enum", [])
        missing = [v for v in values if v not in have]
        if missing:
            # AWS's order where the model has every value; otherwise appended in AWS's order
            shapes[name]["enum"] = values + [v for v in have if v not in values] \
                if all(v in values for v in have) else have + missing
    for name, members in ext.get("members", {}).items():
        for m, ref in members.items():
            shapes[name].setdefault("members", {}).setdefault(m, ref)


def default_botocore_dir():
    try:
        import botocore  # noqa: F401  (only to find its data directory)
        return os.path.join(os.path.dirname(botocore.__file__), "data")
    except ImportError:
        return "/usr/lib/python3/dist-packages/botocore/data"


def load_model(botocore_dir, service):
    """Newest API version's service-2.json(.gz) of service under botocore_dir."""
    sdir = os.path.join(botocore_dir, service)
    if not os.path.isdir(sdir):
        sys.exit("extract.py: no service directory '%s'" % sdir)
    versions = sorted(v for v in os.listdir(sdir) if os.path.isdir(os.path.join(sdir, v)))
    for version in reversed(versions):
        base = os.path.join(sdir, version, "service-2.json")
        if os.path.exists(base):
            with open(base, "rb") as f:
                return json.loads(f.read().decode("utf-8"))
        if os.path.exists(base + ".gz"):
            with gzip.open(base + ".gz", "rb") as f:
                return json.loads(f.read().decode("utf-8"))
    sys.exit("extract.py: no service-2.json(.gz) under '%s'" % sdir)


def strip_docs(node):
    """A copy of node with every "documentation" key removed, at any depth."""
    if isinstance(node, dict):
        return {k: strip_docs(v) for k, v in node.items() if k != "documentation"}
    if isinstance(node, list):
        return [strip_docs(v) for v in node]
    return node


def shape_refs(shape):
    """Names of the shapes a shape refers to."""
    refs = []
    for m in shape.get("members", {}).values():
        refs.append(m["shape"])
    for k in ("member", "key", "value"):
        if k in shape:
            refs.append(shape[k]["shape"])
    return refs


def subset(model, service):
    model = copy.deepcopy(model)
    manual = MANUAL.get(service, {})
    for name, op in manual.get("operations", {}).items():
        model["operations"].setdefault(name, op)
    for name, shape in manual.get("shapes", {}).items():
        model["shapes"].setdefault(name, shape)
    extend(model, service)

    meta = model["metadata"]
    out_meta = {k: meta[k] for k in METADATA_KEYS if k in meta}
    # botocore signs with endpointPrefix when signingName is absent (CloudWatch Logs).
    out_meta.setdefault("signingName", meta.get("endpointPrefix", service))

    ops = {}
    todo = []
    for name in SERVICES[service]:
        if name not in model["operations"]:
            sys.exit("extract.py: %s has no operation %s" % (service, name))
        op = model["operations"][name]
        ops[name] = {k: op[k] for k in OPERATION_KEYS if k in op}
        for k in ("input", "output"):
            if k in op:
                todo.append(op[k]["shape"])
        for e in op.get("errors", []):
            todo.append(e["shape"])

    shapes = {}
    while todo:
        name = todo.pop()
        if name in shapes:
            continue
        if name not in model["shapes"]:
            sys.exit("extract.py: %s refers to unknown shape %s" % (service, name))
        shapes[name] = model["shapes"][name]
        todo.extend(shape_refs(shapes[name]))

    return strip_docs({"metadata": out_meta, "operations": ops, "shapes": shapes})


def render(doc):
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main():
    ap = argparse.ArgumentParser(description="extract trainyard's service-model subset")
    ap.add_argument("--botocore-dir", default=default_botocore_dir(),
                    help="botocore's data directory (holds sagemaker/, logs/)")
    ap.add_argument("--out-dir", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    for service in sorted(SERVICES):
        doc = subset(load_model(args.botocore_dir, service), service)
        path = os.path.join(args.out_dir, service + ".json")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(render(doc))
        print("extract.py: wrote %s (%d operations, %d shapes)"
              % (path, len(doc["operations"]), len(doc["shapes"])))


if __name__ == "__main__":
    main()
