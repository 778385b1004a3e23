#!/usr/bin/env python3
"""The repository paths and function names the internals docs cite, against the tree.

Usage: doc-paths.py [REPO_ROOT]      check the docs (default: this script's repository)
       doc-paths.py --self-test      show the check fails on made-up docs, and passes on one

Checked docs: every docs/internals/*.md and docs/design.md. Fenced code blocks are skipped;
everything else is read for citations, and each one must hold or the check fails (exit 1,
naming the doc, its line and the citation):
  1. A word of an inline code span that begins with a top-level folder of the repository and
     a '/' (`control-plane/ops/optable.c`, `tests/unit/`, `api/*.json`) is a path: it must
     exist. '*' and '?' are globs and '<name>' a placeholder for one path segment; either must
     match at least one file or folder. Trailing punctuation (, ; .) is not part of the word.
  2. `path:name` (or `path:name()`) names something the file defines: in a .c file a function
     definition, a file-scope variable or a #define at the start of a line; in a .h file also
     a prototype; in a .py file a def or an assignment at the start of a line; in CMake a
     function() or macro(); in any other file the name as a whole word. `path:123` is refused:
     line numbers go stale, functions are found by name.
  3. `name()` alone names a function or macro some C file of the tree defines (functions of
     other projects are written without the parentheses).
  4. A relative Markdown link [text](target) must point at an existing file or folder.
The check also fails when the docs cite fewer than MIN_CITES paths and names in all (the
parser would then have stopped seeing them).
"""
import glob
import os
import re
import sys
import tempfile

DOCS = ["docs/internals/*.md", "docs/design.md"]
MIN_CITES = 40
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
C_EXTS = (".c", ".h")
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
IDENT = r"[A-Za-z_]\w*"


def strip_c(text):
    """C text with comments and string literals blanked (newlines kept)."""
    def repl(m):
        t = m.group(0)
        return re.sub(r"[^\n]", " ", t) if t.startswith("/") else '""'
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', repl, text, flags=re.S)


def c_names(text, header):
    """The names a C file defines at the start of a line: functions (a header's prototypes
    too), file-scope variables and macros."""
    code = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)[ \t]*", "", strip_c(text))
    names = set(re.findall(r"(?m)^[ \t]*#[ \t]*define[ \t]+(" + IDENT + ")", code))
    for m in re.finditer(r"(?m)^(?![ \t#/*}])[^\n;{}()]*?\b(" + IDENT + r")[ \t]*(\(|\[|=)", code):
        name, kind = m.group(1), m.group(2)
        if name in ("if", "for", "while", "switch", "return", "sizeof"):
            continue
        if kind != "(":
            names.add(name)
            continue
        depth, i = 0, m.end() - 1
        while i < len(code):
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
            if depth == 0:
                break
        rest = code[i:i + 400].lstrip()
        if rest.startswith("{") or (header and rest.startswith(";")):
            names.add(name)
    return names


def file_defines(path, name):
    """Whether the file at path defines name (the module docstring's rule 2)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    base = os.path.basename(path)
    if base.endswith(C_EXTS):
        return name in c_names(text, base.endswith(".h"))
    if base.endswith(".py"):
        return re.search(r"(?m)^(?:def[ \t]+" + re.escape(name) + r"\b|" + re.escape(name) +
                         r"[ \t]*=)", text) is not None
    if base.endswith(".cmake") or base == "CMakeLists.txt":
        return re.search(r"(?mi)^[ \t]*(?:function|macro)\([ \t]*" + re.escape(name) + r"\b",
                         text) is not None
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text) is not None


def tree_c_names(root):
    """Every name a C file of the tree defines (build trees and hidden folders left out)."""
    names = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith((".", "build"))]
        for f in files:
            if f.endswith(C_EXTS):
                with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                    names |= c_names(fh.read(), f.endswith(".h"))
    return names


def resolve(root, word):
    """The paths under root that word (globs, <placeholders>) names."""
    pat = re.sub(r"<[^<>/]+>", "*", word.rstrip("/"))
    return glob.glob(os.path.join(root, pat))


def doc_lines(text):
    """(line number, line) of text outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"[ \t]*(```|~~~)", line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if not fence:
            yield n, line


def check_doc(root, rel, tops, cnames, out):
    """Appends doc rel's failures to out; returns how many citations it checked."""
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        text = fh.read()
    count = 0
    for n, line in doc_lines(text):
        where = f"{rel}:{n}"
        for span in SPAN.findall(line):
            for word in span.split():
                word = word.rstrip(",;.")
                head = word.split("/", 1)[0]
                if "/" in word and head in tops:
                    count += 1
                    path, _, name = word.partition(":")
                    name = name[:-2] if name.endswith("()") else name
                    hits = resolve(root, path)
                    if not hits:
                        out.append(f"{where}: `{path}` does not exist")
                    elif name and re.fullmatch(r"\d+", name):
                        out.append(f"{where}: `{word}`: cite a function, not a line number")
                    elif name and not re.fullmatch(IDENT, name):
                        out.append(f"{where}: `{word}`: '{name}' is not a name")
                    elif name and not any(os.path.isfile(h) and file_defines(h, name)
                                          for h in hits):
                        out.append(f"{where}: `{word}`: {path} does not define {name}")
            m = re.fullmatch(r"(" + IDENT + r")\(\)", span.strip())
            if m:
                count += 1
                if m.group(1) not in cnames:
                    out.append(f"{where}: `{span}`: no C file of the tree defines {m.group(1)}")
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            count += 1
            t = target.split("#", 1)[0]
            if t and not os.path.exists(os.path.normpath(os.path.join(root, os.path.dirname(rel),
                                                                      t))):
                out.append(f"{where}: link ({target}) points at nothing")
    return count


def check(root, quiet=False):
    root = os.path.abspath(root)
    tops = {d for d in os.listdir(root)
            if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")}
    docs = sorted({os.path.relpath(p, root) for pat in DOCS
                   for p in glob.glob(os.path.join(root, pat))})
    cnames = tree_c_names(root)
    out, total = [], 0
    for rel in docs:
        total += check_doc(root, rel, tops, cnames, out)
    if total < MIN_CITES:
        out.append(f"doc-paths: only {total} citations found in {len(docs)} docs "
                   f"(at least {MIN_CITES} expected): is the parser still seeing them?")
    for line in out:
        print(line)
    if not out and not quiet:
        print(f"doc-paths: ok ({len(docs)} docs, {total} citations)")
    return 1 if out else 0


def self_test():
    """Made-up trees and docs: the check must fail on each broken one and pass on the good."""
    import contextlib
    import io
    c_src = ("/* f */\n#define LIMIT 3\nstatic const int table[] = {1};\n"
             "static int helper(int a)\n{\n    return a;\n}\n"
             "__attribute__((unused)) int\nwrapped(int a,\n        int b)\n{\n    return a + b;\n}\n"
             "int only_called(void);\nvoid g(void)\n{\n    helper(1);\n    elsewhere(2);\n}\n")
    h_src = "int declared(int a);\n"
    good = ["# A doc", "`src/lib/a.c:helper` and `src/lib/a.c:wrapped()` and `src/lib/a.h:declared`",
            "`src/lib/` `src/*/a.c` `src/<lib>/a.h` `src/lib/a.c:table` `src/lib/a.c:LIMIT`",
            "`helper()` `tools/x.py:main`, run `python3 tools/x.py --flag` [a](../../src/lib/a.c)",
            "```", "`src/gone.c` inside a fence is not read", "```"]
    good += [f"`src/lib/a.c` {i}" for i in range(MIN_CITES)]
    cases = {  # name: (lines added to the good doc, exit wanted, text the output must hold)
        "good": ([], 0, "doc-paths: ok"),
        "missing path": (["see `src/lib/gone.c`"], 1, "`src/lib/gone.c` does not exist"),
        "glob matching nothing": (["`src/*/b.c`"], 1, "`src/*/b.c` does not exist"),
        "function not defined": (["`src/lib/a.c:nothere()`"], 1, "does not define nothere"),
        "a prototype in a .c is no definition": (["`src/lib/a.c:only_called`"], 1,
                                                  "does not define only_called"),
        "a call is no definition": (["`src/lib/a.c:g`", "`src/lib/a.c:elsewhere`"], 1,
                                    "does not define elsewhere"),
        "line number": (["`src/lib/a.c:12`"], 1, "cite a function, not a line number"),
        "bare function unknown": (["`renamed()`"], 1, "no C file of the tree defines renamed"),
        "dead link": (["[x](../nowhere.md)"], 1, "link (../nowhere.md) points at nothing"),
    }
    failed = []
    for name, (extra, want, needle) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            for rel, text in (("src/lib/a.c", c_src), ("src/lib/a.h", h_src),
                              ("tools/x.py", "def main():\n    pass\n")):
                os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
                with open(os.path.join(root, rel), "w") as fh:
                    fh.write(text)
            os.makedirs(os.path.join(root, "docs", "internals"))
            with open(os.path.join(root, "docs", "internals", "t.md"), "w") as fh:
                fh.write("\n".join(good[:4] + extra + good[4:]) + "\n")
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = check(root)
            if rc != want or needle not in buf.getvalue():
                failed.append(f"{name}: exit {rc} (wanted {want}), output:\n{buf.getvalue()}")
    with tempfile.TemporaryDirectory() as root:  # nothing cited: the floor fails
        os.makedirs(os.path.join(root, "docs", "internals"))
        with open(os.path.join(root, "docs", "internals", "t.md"), "w") as fh:
            fh.write("no citations\n")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = check(root)
        if rc != 1 or "only 0 citations" not in buf.getvalue():
            failed.append(f"empty docs: exit {rc}, output:\n{buf.getvalue()}")
    for f in failed:
        print("doc-paths self-test FAILED:", f)
    print("doc-paths self-test:", "ok" if not failed else f"{len(failed)} cases failed",
          f"({len(cases) + 1} cases)")
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
