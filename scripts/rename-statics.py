#!/usr/bin/env python3
# One-off mechanical rename for the static naming rule (docs/style.md, issue 13): a file-local
# (static) function or file-scope variable never contains "__"; "x__y" becomes "x_y".
# Finds the statics with Universal Ctags over the tracked C files, refuses any new name that
# already exists as an identifier anywhere in the tree (the table below names the replacements
# chosen for those), and rewrites whole words in every tracked .c/.h/.cmake file.
# Deterministic: a helper branch can run it before rebasing onto the commit that ran it, so the
# identical edits merge cleanly. Usage: scripts/rename-statics.py [--dry-run]  (from the repo root)
import collections
import json
import re
import subprocess
import sys

# Names whose plain "x_y" form is taken by another identifier in the tree.
OVERRIDES = {
    "iam__ops": "iam_op_table",
    "op_studio__timing": "op_studio_timing_def",
    "quota__limits": "quota_current",
    "tuning__model": "tuning_model_cur",
    "console__auth": "console_serve_auth",
    "console__login": "console_serve_login",
    "job__logs": "job_logs_page",
    "lg__window": "lg_window_parse",
    "s3__body": "s3_body_open",
    "s3p__stream": "s3p_stream_get",
    "tuning__kind": "tuning_kind_of",
}


def tracked(*globs):
    out = subprocess.check_output(["git", "ls-files", "-z", "--", *globs], text=True)
    return [f for f in out.split("\0") if f]


def statics(files):
    tags = subprocess.run(
        ["ctags", "-L", "-", "--languages=C", "--kinds-C=fv", "--fields=+n",
         "--fields-C=+{properties}", "--output-format=json", "-o", "-"],
        input="\n".join(files), capture_output=True, text=True, check=True).stdout
    found, public = {}, set()
    for line in tags.splitlines():
        t = json.loads(line)
        name = t["name"]
        if "__" not in name or name.startswith("_"):
            continue
        if "static" in t.get("properties", ""):
            found.setdefault(name, set()).add(t["path"])
        else:
            public.add(name)
    return {n: p for n, p in found.items() if n not in public}


def main():
    dry = "--dry-run" in sys.argv
    cfiles = tracked("*.c", "*.h")
    names = statics(cfiles)
    edit = cfiles + tracked("*.cmake", "*CMakeLists.txt")
    words = collections.defaultdict(set)
    text = {}
    for f in edit:
        with open(f, encoding="utf-8", errors="surrogateescape") as fh:
            text[f] = fh.read()
        for w in set(re.findall(r"\b[A-Za-z_]\w*\b", text[f])):
            words[w].add(f)
    mapping, clash = {}, []
    for n in sorted(names):
        new = OVERRIDES.get(n, re.sub(r"_{2,}", "_", n))
        if new in words or new in mapping.values():
            clash.append(f"{n} -> {new} ({' '.join(sorted(words[new])[:3])})")
        mapping[n] = new
    if clash:
        sys.exit("rename-statics: collisions, add overrides:\n  " + "\n  ".join(clash))
    if not mapping:
        print("rename-statics: nothing to rename")
        return
    pat = re.compile(r"\b(" + "|".join(map(re.escape, sorted(mapping, key=len, reverse=True))) + r")\b")
    changed = 0
    for f, s in text.items():
        t = pat.sub(lambda m: mapping[m.group(1)], s)
        if t != s:
            changed += 1
            if not dry:
                with open(f, "w", encoding="utf-8", errors="surrogateescape") as fh:
                    fh.write(t)
    print(f"rename-statics: {len(mapping)} names in {changed} files" + (" (dry run)" if dry else ""))


if __name__ == "__main__":
    main()
