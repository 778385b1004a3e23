"""A training job is an untrusted tenant: nothing it does inside its container may bring one byte
of a host file into S3, nor write outside its own staging folder.

Each hostile job below tries one escape the agent (root on the host) could fall for: symlinks in
place of /opt/ml/model, /opt/ml/output/data, /opt/ml/checkpoints, /opt/ml/output/profiler and
/opt/ml/output, symlinks inside those folders (files and folders, absolute and relative), hard
links, FIFOs, a hostile sourcedir.tar.gz ('..', absolute names, a symlink then a file through
it), a folder swapped for a symlink in a loop while checkpoints are uploaded, and the staging
folder's host path read from /proc/self/mountinfo. Canary files with random content sit in a
folder inside the data dir and in one under /tmp; after each job every object it could have
written is downloaded (tar.gz archives unpacked) and searched for the canary and for the admin's
secret key. A control file each job writes where it may proves the search sees its outputs.

All jobs are created at once (the shared server runs 8 side by side); each test waits for its
own. Training job names start with "esc-".
"""
import gzip
import io
import json
import os
import secrets
import shutil
import tarfile
import tempfile

import pytest

import tyhelpers as H

BUCKET = "escbucket"


def _canary_dirs(data_dir, token):
    """Two host folders holding the canary: one in the data dir, one under /tmp."""
    out = []
    for d in (os.path.join(data_dir, f"esc-canary-{token[:8]}"),
              tempfile.mkdtemp(prefix=f"ty-esc-canary-{token[:8]}-", dir="/tmp")):
        os.makedirs(os.path.join(d, "sub"), exist_ok=True)
        for rel in ("secret.txt", "sub/deep.txt", "failure"):
            with open(os.path.join(d, rel), "w") as f:
                f.write(f"CANARY-{token}\n")
        out.append(d)
    return out


def _up(n=16):
    """A relative path that, from any folder of the host's staging tree, reaches '/'."""
    return "/".join([".."] * n)


def _tar(entries):
    """A tar.gz of (TarInfo kwargs, data) pairs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.GNU_FORMAT) as tf:
        for kw, data in entries:
            ti = tarfile.TarInfo(kw.pop("name"))
            for k, v in kw.items():
                setattr(ti, k, v)
            if data is not None:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
            else:
                tf.addfile(ti)
    return buf.getvalue()


class Esc:
    """The jobs of this file, created once: name -> job name; plus the canary setup."""

    def __init__(self, server, sm):
        self.server, self.sm = server, sm
        self.s3 = server.client("s3")
        self.token = secrets.token_hex(16)
        self.canary = f"CANARY-{self.token}".encode()
        self.dirs = _canary_dirs(server.data_dir, self.token)
        self.before = {d: self._tree(d) for d in self.dirs}
        self.admin_secret = server.credentials()[1].encode()
        self.jobs = {}
        try:
            self.s3.create_bucket(Bucket=BUCKET)
        except self.s3.exceptions.BucketAlreadyOwnedByYou:
            pass

    @staticmethod
    def _tree(d):
        out = {}
        for root, dirs, files in os.walk(d):
            for n in dirs + files:
                p = os.path.join(root, n)
                out[os.path.relpath(p, d)] = os.lstat(p).st_mtime_ns
        return out

    def create(self, key, script, raw=False, **extra):
        """Creates the job; "@JOB@" anywhere in script or extra becomes its name."""
        name = H.unique(f"esc-{key}")[:63]
        # $C1 and $C2 name the canary folders (as a job would learn them from mountinfo)
        script = f"C1={self.dirs[0]}; C2={self.dirs[1]}; K=/opt/ml/checkpoints\n" + script
        req = H.job_request(name, script, output=f"s3://{BUCKET}/out",
                            max_runtime=extra.pop("max_runtime", 300), **extra)
        req = json.loads(json.dumps(req).replace("@JOB@", name))
        if raw:  # fields Debian's botocore cannot send (OutputDataConfig.CompressionType)
            r = self.server.call("CreateTrainingJob", req)
            assert r.status == 200, r
        else:
            self.sm.create_training_job(**req)
        self.jobs[key] = name
        return name

    def objects(self, name):
        """{key: bytes} of every object in the bucket that mentions the job's name (outputs,
        checkpoints, profiler output)."""
        out = {}
        token = None
        while True:
            kw = {"Bucket": BUCKET}
            if token:
                kw["ContinuationToken"] = token
            page = self.s3.list_objects_v2(**kw)
            for o in page.get("Contents", []):
                if name in o["Key"]:
                    out[o["Key"]] = self.s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
            if not page.get("IsTruncated"):
                return out
            token = page["NextContinuationToken"]

    @staticmethod
    def contents(key, data):
        """(label, bytes) of the object itself and, for a tar.gz, of every member (symlink
        members as their target text)."""
        yield key, data
        if data[:2] != b"\x1f\x8b":
            return
        try:
            raw = gzip.decompress(data)
        except OSError:
            return
        yield key + " (gunzipped)", raw
        try:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tf:
                for m in tf.getmembers():
                    if m.isfile():
                        yield f"{key}:{m.name}", tf.extractfile(m).read()
                    elif m.issym() or m.islnk():
                        yield f"{key}:{m.name} -> ", m.linkname.encode()
        except tarfile.TarError:
            return

    def check(self, key, control=None, timeout=180):
        """Waits for the job, then asserts no object of it holds the canary or the admin's
        secret, the FailureReason neither, and the canary folders are unchanged. control: a
        text that must appear in some object (proves the search sees the job's outputs).
        Returns (description, {label: bytes})."""
        name = self.jobs[key]
        d = H.wait_job(self.sm, name, timeout=timeout)
        objs = self.objects(name)
        seen = {}
        for k, data in objs.items():
            for label, blob in self.contents(k, data):
                seen[label] = blob
                assert self.canary not in blob, f"host canary leaked into {label}"
                assert self.admin_secret not in blob, f"admin secret leaked into {label}"
        reason = d.get("FailureReason", "")
        assert self.token not in reason, f"host canary leaked into FailureReason: {reason!r}"
        if control is not None:
            assert any(control.encode() in b for b in seen.values()), (
                f"control text {control!r} not found in the job's objects: {sorted(seen)}; "
                f"status {d['TrainingJobStatus']} {reason!r}")
        for cd in self.dirs:
            assert self._tree(cd) == self.before[cd], f"the job changed host folder {cd}"
        return d, seen

    def cleanup(self):
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


def _links(base, target_dir):
    """Shell lines placing file and folder links, absolute and relative, in base."""
    rel = _up() + target_dir
    return [f"ln -s {target_dir}/secret.txt {base}/f_abs", f"ln -s {target_dir} {base}/d_abs",
            f"ln -s {rel}/secret.txt {base}/f_rel", f"ln -s {rel} {base}/d_rel",
            f"ln -s {rel}/sub {base}/d_rel2"]


@pytest.fixture(scope="module")
def esc(server, sm):
    e = Esc(server, sm)
    d1, d2 = "$C1", "$C2"
    prof = {"S3OutputPath": f"s3://{BUCKET}/prof", "ProfilingIntervalInMilliseconds": 500}
    rules = [{"RuleConfigurationName": "esc-rule", "RuleEvaluatorImage": "x",
              "RuleParameters": {"rule_to_invoke": "LowGPUUtilization"}}]

    e.create("model-link", f"rm -rf /opt/ml/model; ln -s {d1} /opt/ml/model; "
             "echo ctl-model-link > /opt/ml/output/data/ctl")
    e.create("data-link", f"rm -rf /opt/ml/output/data; ln -s {d2} /opt/ml/output/data; "
             "echo ctl-data-link > /opt/ml/model/ctl")
    e.create("ckpt-link", "\n".join([
        "echo ctl-ckpt-link > /opt/ml/model/ctl",
        f"rm -rf /opt/ml/checkpoints; ln -s {d1} /opt/ml/checkpoints; sleep 12"]),
        CheckpointConfig={"S3Uri": f"s3://{BUCKET}/ckpt/@JOB@"})
    e.create("ckpt-outside", "\n".join([
        "echo ctl-ckpt-outside > /opt/ml/model/ctl",
        f"ln -s {d1} /ckpt/d_abs; ln -s {d2}/secret.txt /ckpt/f_abs; sleep 12"]),
        CheckpointConfig={"S3Uri": f"s3://{BUCKET}/ckpt/@JOB@", "LocalPath": "/ckpt"})
    e.create("prof-link", "\n".join([
        "echo ctl-prof-link > /opt/ml/model/ctl",
        f"rm -rf /opt/ml/output/profiler; ln -s {d1} /opt/ml/output/profiler; sleep 2"]),
        ProfilerConfig=prof, ProfilerRuleConfigurations=rules)
    e.create("output-link", "\n".join([
        "echo ctl-output-link > /opt/ml/model/ctl",
        f"rm -rf /opt/ml/output; ln -s {d1} /opt/ml/output; exit 1"]),
        ProfilerConfig=prof, ProfilerRuleConfigurations=rules)
    inner = ["mkdir -p /opt/ml/output/profiler /opt/ml/checkpoints",
             "echo ctl-inner > /opt/ml/model/ctl"]
    for base in ("/opt/ml/model", "/opt/ml/output/data", "/opt/ml/checkpoints",
                 "/opt/ml/output/profiler"):
        inner += _links(base, d1)
    inner += [f"ln -s {d2}/secret.txt /opt/ml/output/failure", "sleep 11; exit 1"]
    e.create("inner-links", "\n".join(inner), ProfilerConfig=prof,
             CheckpointConfig={"S3Uri": f"s3://{BUCKET}/ckpt/@JOB@"})
    e.create("inner-nocomp", "\n".join(
        ["echo ctl-nocomp > /opt/ml/model/ctl"] + _links("/opt/ml/model", d2) +
        _links("/opt/ml/output/data", d1)), raw=True,
        OutputDataConfig={"S3OutputPath": f"s3://{BUCKET}/out", "CompressionType": "NONE"})
    e.create("hardlink", "\n".join([
        "echo ctl-hardlink > /opt/ml/model/ctl",
        f"ln {d1}/secret.txt /opt/ml/model/h1 2>&1 || echo no-hardlink-1",
        f"ln /proc/1/root{d1}/secret.txt /opt/ml/model/h2 2>&1 || echo no-hardlink-2",
        "ln /opt/ml/input/config/resourceconfig.json /opt/ml/model/h3 2>&1 || true"]))
    e.create("fifo", "\n".join([
        "echo ctl-fifo > /opt/ml/model/ctl",
        "mkdir -p /opt/ml/checkpoints /opt/ml/output/profiler",
        "mkfifo /opt/ml/model/fifo /opt/ml/output/data/fifo /opt/ml/checkpoints/fifo",
        "mkfifo /opt/ml/output/profiler/fifo /opt/ml/output/failure",
        "exit 1"]), ProfilerConfig=prof,
        CheckpointConfig={"S3Uri": f"s3://{BUCKET}/ckpt/@JOB@"})
    # the swap race: folders become symlinks and back while checkpoints are uploaded
    e.create("race", "\n".join([
        "echo ctl-race > /opt/ml/output/data/ctl; end=$(($(date +%s)+24)); i=0",
        "while [ $(date +%s) -lt $end ]; do i=$((i+1)); rm -rf $K/sub; mkdir $K/sub; "
        f"echo $i > $K/sub/f; echo $i > $K/top; rm -rf $K/sub; ln -s {d1} $K/sub; done",
        "echo swaps=$i",
        f"rm -rf /opt/ml/model; mkdir /opt/ml/model; rm -rf /opt/ml/model; ln -s {d2} /opt/ml/model"]),
        CheckpointConfig={"S3Uri": f"s3://{BUCKET}/ckpt/@JOB@"}, max_runtime=120)
    e.create("race-root", "\n".join([
        "echo ctl-race-root > /opt/ml/output/data/ctl; end=$(($(date +%s)+24))",
        "while [ $(date +%s) -lt $end ]; do rm -rf $K; mkdir $K; echo x > $K/f; mkdir $K/d; "
        f"echo y > $K/d/g; rm -rf $K; ln -s {d1} $K; done",
        "rm -rf $K; mkdir $K; echo final > $K/final"]),
        CheckpointConfig={"S3Uri": f"s3://{BUCKET}/ckpt/@JOB@"}, max_runtime=120)
    # what a job learns from its mounts
    e.create("mountinfo", "\n".join([
        "grep ' /opt/ml ' /proc/self/mountinfo",
        f"if grep -q '{server.data_dir}' /proc/self/mountinfo; then echo mountinfo-found; "
        "else echo mountinfo-not-found; fi",
        "echo ctl-mountinfo > /opt/ml/model/ctl"]))
    # the reproduced attack: the data dir from mountinfo, then its credentials file
    e.create("mount-exploit", "\n".join([
        "src=$(grep ' /opt/ml ' /proc/self/mountinfo | cut -d' ' -f4); echo src=$src",
        "ln -s $src/../../../credentials /opt/ml/model/creds",
        "ln -s $src/../../../../credentials /opt/ml/model/creds2",
        "rm -rf /opt/ml/output/data; ln -s $src/../../.. /opt/ml/output/data",
        "echo ctl-exploit > /opt/ml/model/ctl"]))

    # hostile sourcedir.tar.gz
    def code_job(key, entries):
        body = _tar(entries)
        k = f"code/{key}-{e.token[:8]}.tar.gz"
        e.s3.put_object(Bucket=BUCKET, Key=k, Body=body)
        hps = {"sagemaker_submit_directory": json.dumps(f"s3://{BUCKET}/{k}"),
               "sagemaker_program": json.dumps("train.sh")}
        e.create(key, "ls -la /opt/ml/code; echo ctl > /opt/ml/model/ctl", HyperParameters=hps)

    code_job("tar-dotdot", [({"name": "ok.sh"}, b"echo ok\n"),
                            ({"name": "../../../../esc-dotdot"}, b"pwned\n")])
    code_job("tar-abs", [({"name": f"{e.dirs[1]}/esc-abs"}, b"pwned\n")])
    code_job("tar-symlink", [({"name": "lnk", "type": tarfile.SYMTYPE, "linkname": e.dirs[1]},
                              None),
                             ({"name": "lnk/esc-through-link"}, b"pwned\n")])
    code_job("tar-rel-symlink", [({"name": "lnk", "type": tarfile.SYMTYPE,
                                   "linkname": "../../../../../../../../../.." + e.dirs[1]}, None),
                                 ({"name": "lnk/esc-through-link"}, b"pwned\n")])
    code_job("tar-fifo", [({"name": "fifo", "type": tarfile.FIFOTYPE}, None),
                          ({"name": "dev", "type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 3},
                           None),
                          ({"name": "train.sh"}, b"echo ok\n")])
    # the issue-35 attack: a link chain whose text stays inside but the kernel's resolution
    # climbs out (code/l4 is the staging root's parent), then a LocalPath through it that the
    # agent, as root, would have made 0777: the private Redis folder with every secret
    def chain():  # new dicts each time: _tar consumes them
        out = [({"name": "a", "type": tarfile.DIRTYPE}, None),
               ({"name": "a/b", "type": tarfile.SYMTYPE, "linkname": ".."}, None)]
        for i, tgt in enumerate(["a/b/..", "l1/..", "l2/..", "l3/.."]):
            out.append(({"name": f"l{i + 1}", "type": tarfile.SYMTYPE, "linkname": tgt}, None))
        return out
    base = os.path.basename(e.server.data_dir)
    for key, local in (("tar-chain-redis", f"/opt/ml/code/l4/{base}/redis"),
                       ("tar-chain-new", f"/opt/ml/code/l4/esc-chain-{e.token[:8]}")):
        body = _tar(chain() + [({"name": "train.sh"}, b"echo ok\n")])
        k = f"code/{key}-{e.token[:8]}.tar.gz"
        e.s3.put_object(Bucket=BUCKET, Key=k, Body=body)
        e.create(key, "echo ctl > /opt/ml/model/ctl", HyperParameters={
            "sagemaker_submit_directory": json.dumps(f"s3://{BUCKET}/{k}"),
            "sagemaker_program": json.dumps("train.sh")},
            CheckpointConfig={"S3Uri": f"s3://{BUCKET}/ckpt/@JOB@", "LocalPath": local})
    yield e
    e.cleanup()


@pytest.mark.parametrize("key,control", [
    ("model-link", "ctl-model-link"),
    ("data-link", "ctl-data-link"),
    ("ckpt-link", "ctl-ckpt-link"),
    ("ckpt-outside", "ctl-ckpt-outside"),
    ("prof-link", "ctl-prof-link"),
    ("inner-nocomp", "ctl-nocomp"),
    ("hardlink", "ctl-hardlink"),
])
def test_symlinked_output_folders_are_not_followed(esc, key, control):
    d, _ = esc.check(key, control)
    assert d["TrainingJobStatus"] in H.TERMINAL


def test_symlinked_output_folder_and_failure_file(esc):
    """/opt/ml/output itself a symlink: neither the failure file nor the profiler folder (with
    rule output written into it by the agent) leads outside."""
    d, _ = esc.check("output-link")
    assert d["TrainingJobStatus"] == "Failed"


def test_links_inside_every_output_folder_are_archived_as_links(esc):
    d, seen = esc.check("inner-links", "ctl-inner")
    assert d["TrainingJobStatus"] == "Failed"
    assert esc.token not in d.get("FailureReason", "")
    # output.tar.gz (a failed job has no model.tar.gz) keeps the links as links, as tar does,
    # never their targets' bytes
    links = {k.split(":", 1)[1][:-4]: v for k, v in seen.items()
             if k.endswith(" -> ") and "output.tar.gz" in k}
    assert links.get("f_abs") == f"{esc.dirs[0]}/secret.txt".encode(), sorted(seen)
    assert "d_abs" in links and "d_rel" in links, sorted(seen)


def test_fifos_are_skipped_and_the_job_ends(esc):
    d, _ = esc.check("fifo", "ctl-fifo", timeout=120)
    assert d["TrainingJobStatus"] == "Failed"


@pytest.mark.parametrize("key", ["race", "race-root"])
def test_swap_race_during_checkpoint_uploads(esc, key):
    d, seen = esc.check(key, f"ctl-{key}", timeout=240)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    # the uploads did run while the folders were swapped
    assert any(k.startswith("ckpt/") for k in seen), sorted(seen)


def test_mountinfo_does_not_reveal_the_data_dir(esc, logs):
    d, _ = esc.check("mountinfo", "ctl-mountinfo")
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    name = esc.jobs["mountinfo"]
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    msgs = [e["message"] for e in H.log_events(logs, stream)[0]]
    assert "mountinfo-not-found" in msgs, msgs
    assert "mountinfo-found" not in msgs, msgs
    assert not any(esc.server.data_dir in m for m in msgs), msgs


def test_mountinfo_exploit_gets_no_credentials(esc):
    d, _ = esc.check("mount-exploit", "ctl-exploit")
    assert d["TrainingJobStatus"] in H.TERMINAL


@pytest.mark.parametrize("key", ["tar-dotdot", "tar-abs", "tar-symlink", "tar-rel-symlink"])
def test_hostile_sourcedir_is_refused(esc, key):
    d, _ = esc.check(key)
    assert d["TrainingJobStatus"] == "Failed", d
    assert d["FailureReason"].startswith("ClientError: "), d["FailureReason"]
    assert not os.path.exists(os.path.join(esc.dirs[1], "esc-abs"))
    assert not os.path.exists(os.path.join(esc.dirs[1], "esc-through-link"))
    assert not os.path.exists(os.path.join(os.path.dirname(esc.server.data_dir), "esc-dotdot"))


def test_sourcedir_special_files_are_skipped(esc):
    d, _ = esc.check("tar-fifo")
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")


@pytest.mark.parametrize("key", ["tar-chain-redis", "tar-chain-new"])
def test_link_chain_and_localpath_through_it_reach_nothing(esc, key):
    """The archive is refused for where its links resolve, and nothing outside the job's
    folder changed: the Redis folder stays 0700, no new folder appears beside the data dir."""
    d, _ = esc.check(key)
    assert d["TrainingJobStatus"] == "Failed", d
    assert d["FailureReason"].startswith("ClientError: "), d["FailureReason"]
    assert "symbolic link 'l1'" in d["FailureReason"], d["FailureReason"]
    assert os.stat(os.path.join(esc.server.data_dir, "redis")).st_mode & 0o777 == 0o700
    parent = os.path.dirname(esc.server.data_dir)
    assert not os.path.exists(os.path.join(parent, f"esc-chain-{esc.token[:8]}"))
