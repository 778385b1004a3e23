#!/usr/bin/env python3
"""The commit-message habit, on the commits made since a baseline.

Usage: commit-check.py [BASE]     (run inside the repository; BASE: a commit, default BASELINE)

Each commit in BASE..HEAD (merges skipped) must have a subject of at most 72 characters, a
blank second line and a non-empty body saying why. Older history is not judged: BASELINE is
the commit the check was introduced on. Exit 0 when every commit passes, 1 naming each that
does not, 77 (skipped, for ctest) when there is nothing to judge against: not a git work tree,
no git, or a clone without BASE (a shallow clone, or history BASE is not part of).
"""
import os
import subprocess
import sys

BASELINE = "6665fbd6f3c19439f0431586d9575f639105421c"
SUBJECT_MAX = 72
SKIP = 77


def git(*args):
    """(exit status, stdout) of git args in the current directory."""
    cwd = os.getcwd()
    try:
        p = subprocess.run(["git", "-c", f"safe.directory={cwd}", *args], capture_output=True,
                           text=True, errors="replace")
    except OSError as e:
        return -1, str(e)
    return p.returncode, p.stdout


def problems(message):
    """What is wrong with one commit message (a list; empty when it is fine)."""
    lines = message.rstrip("\n").split("\n")
    out = []
    subject = lines[0] if lines else ""
    if not subject.strip():
        out.append("empty subject")
    elif len(subject) > SUBJECT_MAX:
        out.append(f"subject is {len(subject)} characters (at most {SUBJECT_MAX})")
    if len(lines) > 1 and lines[1].strip():
        out.append("second line is not blank")
    if not any(ln.strip() for ln in lines[2:]):
        out.append("no body (say why the change was made)")
    return out


def main(argv):
    if len(argv) > 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    base = argv[1] if len(argv) == 2 else BASELINE
    rc, out = git("rev-parse", "--is-inside-work-tree")
    if rc != 0 or out.strip() != "true":
        print(f"commit-check: skipped: {os.getcwd()} is not a git work tree (or git is missing)")
        return SKIP
    rc, _ = git("cat-file", "-e", f"{base}^{{commit}}")
    if rc != 0:
        _, shallow = git("rev-parse", "--is-shallow-repository")
        why = "this shallow clone" if shallow.strip() == "true" else "this clone"
        print(f"commit-check: skipped: the baseline {base[:12]} is not in {why}")
        return SKIP
    rc, _ = git("merge-base", "--is-ancestor", base, "HEAD")
    if rc != 0:
        print(f"commit-check: skipped: the baseline {base[:12]} is not an ancestor of HEAD")
        return SKIP
    rc, out = git("rev-list", "--no-merges", "--reverse", f"{base}..HEAD")
    if rc != 0:
        print("commit-check: git rev-list failed")
        return 1
    shas = out.split()
    bad = 0
    for sha in shas:
        rc, msg = git("log", "-1", "--format=%B", sha)
        if rc != 0:
            print(f"commit-check: cannot read {sha[:12]}")
            bad += 1
            continue
        found = problems(msg)
        if found:
            bad += 1
            subject = msg.split("\n", 1)[0]
            print(f"commit-check: {sha[:12]} {subject[:80]!r}: " + "; ".join(found))
    if bad:
        print(f"commit-check: FAILED: {bad} of {len(shas)} commits since {base[:12]} "
              f"(subject at most {SUBJECT_MAX} characters, blank line, body)")
        return 1
    print(f"commit-check: ok: {len(shas)} commits since {base[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
