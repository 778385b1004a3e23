#!/usr/bin/env python3
# The style check (docs/style.md), run by scripts/test.sh before anything is built; about 15 s.
# Checks the tracked C files: clang-format (the repo's .clang-format), every public header
# compiles alone, no banned function, the static naming rule, the dependency rules of
# docs/design.md, no source file over 1,500 lines and no function over 150 (tests excluded),
# and that the README's map of the tree is the one scripts/tree-map.py prints.
# Usage: scripts/style-check.py [--cc CC] [--self-test]  (from anywhere; exits 1 listing every
# finding; --self-test only runs the size checks on made-up sources, as the style_sizes ctest)
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Files the check leaves alone: C++ for the fake CUDA runtime the compiler's tests run.
FORMAT_SKIP = {"compiler/tools/fakecuda/prelude.h"}

# curl's list (docs/CODE_STYLE.md there): unbounded or unchecked conversions and copies.
BANNED = ["strcpy", "strcat", "sprintf", "vsprintf", "gets", "atoi", "atol", "strtok"]
# Known uses left in files another helper owns (issue 13, the front door's files): to go.
BANNED_KNOWN = set()

# Headers compiled alone: every header of the libraries (tests' helpers are not public).
HEADER_DIRS = ["control-plane/*", "control-plane/*/include", "profiler/include",
               "compiler/include"]
INCLUDE_DIRS = sorted(d for d in glob.glob(os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "control-plane", "*")) if os.path.isdir(d)) + sorted(
    glob.glob(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "control-plane", "*", "include"))) + [
    "profiler/include", "profiler/src", "profiler/rules", "profiler/report", "compiler/include",
    "compiler/src"]
PKGS = ["jansson", "hiredis", "libmicrohttpd", "libcurl", "libcrypto", "libarchive", "libpcre2-8"]

# Library-internal symbols (x__y, docs/style.md) and the files allowed to use them. Everything else
# reaches a library through its public header.
INTERNAL = [
    # ty_store's command helpers (store_int.h): other libraries use the typed store_*.h.
    (r"\bstore__\w+", r"^control-plane/store/"),
    # ty_iam's compiled policies and matchers (iam_int.h).
    (r"\biam__\w+", r"^control-plane/iam/"),
    # the IAM query API's files (ops/iamapi_int.h).
    (r"\biamapi__\w+", r"^control-plane/ops/iamapi\w*\.[ch]$"),
    # one job's run (control-plane/agent/run/run_int.h).
    (r"\brun__\w+", r"^control-plane/agent/run/"),
    (r"\btyprof__\w+", r"^profiler/"),
    (r"\btyc__\w+", r"^(compiler|runtime-image)/"),
]

# Quoted includes: (files, forbidden include pattern, why).
AGENT_DIR = "control-plane/agent"


def git_files(*pats):
    out = subprocess.check_output(["git", "-C", TOP, "ls-files", "-z", "--", *pats], text=True)
    return [f for f in out.split("\0") if f]


def read(f):
    with open(os.path.join(TOP, f), encoding="utf-8", errors="replace") as fh:
        return fh.read()


def strip_comments(s):
    """C source without comments and string literals (kept line by line)."""
    def repl(m):
        t = m.group(0)
        if t.startswith("/"):
            return re.sub(r"[^\n]", " ", t)
        return '""' if t.startswith('"') else "''"
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', repl, s,
                  flags=re.S)


def check_format(files, findings):
    cf = shutil.which("clang-format-14") or shutil.which("clang-format")
    if not cf:
        findings.append("clang-format: not installed (apt-get install clang-format)")
        return
    todo = [f for f in files if f not in FORMAT_SKIP]
    chunks = [todo[i::4] for i in range(4)]

    def run(chunk):
        r = subprocess.run([cf, "--dry-run", "-Werror", *chunk], cwd=TOP, capture_output=True,
                           text=True)
        return sorted({ln.split(":")[0] for ln in r.stderr.splitlines() if ": error:" in ln})

    with ThreadPoolExecutor(4) as ex:
        for bad in ex.map(run, chunks):
            for f in bad:
                findings.append(f"{f}: not clang-formatted (clang-format -i {f})")


def check_headers(cc, findings):
    flags = []
    try:
        flags = subprocess.check_output(["pkg-config", "--cflags", *PKGS], text=True).split()
    except (OSError, subprocess.CalledProcessError):
        findings.append("headers: pkg-config failed for " + " ".join(PKGS))
        return
    inc = [f"-I{os.path.join(TOP, d)}" for d in INCLUDE_DIRS]
    heads = sorted({h for d in HEADER_DIRS for h in git_files(f"{d}/*.h") if "/tests/" not in h})

    def one(h):
        src = f'#include "{os.path.join(TOP, h)}"\n'
        r = subprocess.run([cc, "-std=gnu11", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                            *inc, *flags, "-x", "c", "-"], input=src, capture_output=True,
                           text=True)
        return None if r.returncode == 0 else f"{h}: does not compile alone: " + (
            r.stderr.strip().splitlines() or ["?"])[0]

    with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        findings.extend(x for x in ex.map(one, heads) if x)


def check_sources(files, findings):
    banned = re.compile(r"(?<![\w.>])(" + "|".join(BANNED) + r")\s*\(")
    static_fn = re.compile(r"^static\b[^;=(]*?\b([A-Za-z]\w*__\w*)\s*\(", re.M)
    for f in files:
        raw = read(f)
        code = strip_comments(raw)
        for m in banned.finditer(code):
            if (f, m.group(1)) in BANNED_KNOWN:
                continue
            line = code.count("\n", 0, m.start()) + 1
            findings.append(f"{f}:{line}: banned function {m.group(1)}() (docs/style.md)")
        for m in static_fn.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            findings.append(f"{f}:{line}: static function {m.group(1)} contains '__' "
                            "(docs/style.md: static names are snake_case without '__')")
        for pat, allowed in INTERNAL:
            if re.search(allowed, f):
                continue
            m = re.search(pat, code)
            if m:
                line = code.count("\n", 0, m.start()) + 1
                findings.append(f"{f}:{line}: {m.group(0)} is another library's internal "
                                "symbol (docs/design.md)")
        incs = [(raw.count("\n", 0, m.start()) + 1, m.group(1))
                for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', raw, re.M)]
        for line, h in incs:
            where = f"{f}:{line}: #include \"{h}\""
            if "/tests/" in f or f.startswith("tests/") or f.startswith("bench/"):
                continue
            if h.startswith("../") or h.startswith("agent/") or h.startswith("/"):
                findings.append(f"{where}: reach another library through its public header, "
                                "not a path (docs/design.md)")
            if f.startswith("control-plane/core/") and not (
                    os.path.exists(os.path.join(TOP, "control-plane/core", h)) or
                    os.path.exists(os.path.join(TOP, "control-plane/core/include", h))):
                findings.append(f"{where}: core/ depends on nothing of the control plane")
            if f.startswith(AGENT_DIR + "/") and h.startswith("typrof") and \
                    h not in ("typrof.h", "typrof_report.h"):
                findings.append(f"{where}: the agent uses the profiler through typrof_report.h")


# Sizes (docs/style.md): the product's sources only (tests are not held to them).
SIZE_DIRS = ("control-plane/", "compiler/", "profiler/", "runtime-image/", "agent/")
FILE_MAX_LINES = 1500
FUNC_MAX_LINES = 150


def function_spans(code):
    """(name, first line, last line) of each top-level function body in code (comments and
    strings already blanked): a brace-matching scan; a '{' at depth 0 opens a function when
    the text before it (since the last ';', '}' or directive) ends with ')'."""
    code = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  code, flags=re.M)
    spans, depth, start, head_at = [], 0, None, 0
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                head = code[head_at:i].strip()
                if head.endswith(")") and "=" not in head:
                    m = re.search(r"(\w+)\s*\(", head)
                    hs = head_at + len(code[head_at:i]) - len(code[head_at:i].lstrip())
                    start = (m.group(1) if m else "?", code.count("\n", 0, hs) + 1)
                else:
                    start = None
            depth += 1
        elif ch == "}":
            depth = max(depth - 1, 0)
            if depth == 0:
                if start:
                    spans.append((start[0], start[1], code.count("\n", 0, i) + 1))
                start, head_at = None, i + 1
        elif ch == ";" and depth == 0:
            head_at = i + 1
    return spans


def size_findings(f, raw):
    """The size findings of file f whose text is raw (docs/style.md)."""
    out = []
    n = raw.count("\n")
    if n > FILE_MAX_LINES:
        out.append(f"{f}: {n} lines; split it by concern (docs/style.md: at most "
                   f"{FILE_MAX_LINES})")
    if f.endswith(".c"):
        for name, first, last in function_spans(strip_comments(raw)):
            if last - first + 1 > FUNC_MAX_LINES:
                out.append(f"{f}:{first}: function {name} is {last - first + 1} lines "
                           f"(docs/style.md: at most {FUNC_MAX_LINES})")
    return out


def check_sizes(files, findings):
    for f in files:
        if f.startswith(SIZE_DIRS) and "/tests/" not in f:
            findings.extend(size_findings(f, read(f)))


def self_test():
    """The size checks on made-up sources: each must find what it is there to find."""
    def fn(name, body_lines, head="static int"):
        return f"{head}\n{name}(int a)\n{{\n" + "    a++;\n" * (body_lines - 5) + "    return a;\n}\n"
    tricky = ('#define BLOCK(x) { if (x) { return; } }\n'
              'struct s { int (*f)(int); };\n'
              'static const int t[] = {1, 2};\n'
              '/* int fake(void) { */\n'
              'static const char *str = "}{";\n')
    src = tricky + fn("long_fn", 151) + fn("ok_fn", 150) + "int tiny(void) { return 0; }\n"
    got = size_findings("control-plane/x.c", src)
    want = ["control-plane/x.c:6: function long_fn is 151 lines (docs/style.md: at most 150)"]
    big = size_findings("control-plane/x.h", "int x;\n" * (FILE_MAX_LINES + 1))
    ok = got == want and len(big) == 1 and size_findings("control-plane/y.h", "int x;\n") == []
    print("style-check self-test:", "ok" if ok else f"FAILED: {got} {big}")
    return 0 if ok else 1


def check_tree_map(findings):
    readme = read("README.md")
    m = re.search(r"<!-- tree-map begin -->\n(.*?)<!-- tree-map end -->", readme, re.S)
    if not m:
        findings.append("README.md: no '<!-- tree-map begin/end -->' block (scripts/tree-map.py)")
        return
    want = subprocess.check_output([sys.executable, os.path.join(TOP, "scripts/tree-map.py")],
                                   text=True)
    if m.group(1) != want:
        findings.append("README.md: the map of the tree is stale: scripts/tree-map.py --write")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--self-test", action="store_true",
                    help="only check the size checks against made-up sources")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    files = git_files("*.c", "*.h")
    findings = []
    check_sources(files, findings)
    check_sizes(files, findings)
    check_tree_map(findings)
    check_headers(args.cc, findings)
    check_format(files, findings)
    for f in findings:
        print(f)
    print(f"style-check: {len(files)} files, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
