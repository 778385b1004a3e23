#!/usr/bin/env python3
"""The Redis key schema (docs/internals/redis-keys.md) against the code that builds the keys.

Usage: redis-keys.py [REPO_ROOT]      check the tree (default: this script's repository)
       redis-keys.py --self-test      show the check fails on made-up trees, and passes on one

Scans every C, header, Lua and Python file of the tree (recursively; build trees, .git and
this script excluded) for `ty:` key prefixes in string literals, comments left out, and
compares them with the key patterns the doc's tables list (first cell `` `ty:...` ``) and its
`redis-keys-composed` block. Fails (exit 1, naming each) when:
  - a literal builds a key no documented pattern covers;
  - a documented key is built by nothing under control-plane/ (tests and tools do not count);
  - a composed entry's format or word is gone;
  - the scan or the doc comes out (nearly) empty: fewer than MIN_CODE or MIN_DOC prefixes.
A literal is "open" when the key goes on after it (it ends in ':' or is cut by a format `%` or
a glob `*`), "closed" when it is a whole key. Placeholders (`<name>`) in a pattern match one
`:`-free segment of a concrete literal. An open literal shorter than every pattern it begins
(`ty:iam:` alone) is not covered: such a base must be listed in the composed block.
Comments that name an undocumented key are printed as notes (they do not fail the check).
"""
import os
import re
import sys
import tempfile

DOC = os.path.join("docs", "internals", "redis-keys.md")
MIN_CODE = 30  # distinct key prefixes the control plane builds (about 50 today)
MIN_DOC = 30
PRODUCTION = "control-plane"
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
EXTS = {".c": "c", ".h": "c", ".lua": "lua", ".py": "py"}
TOKEN = re.compile(r"(?<![A-Za-z0-9_])ty:[A-Za-z0-9_:.\-/]*")


def literals(text, lang):
    """Yields (kind, content, line) for each string literal ("str") and comment ("comment")."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        two = text[i:i + 2]
        end = None
        if lang == "c" and two == "//" or lang == "py" and c == "#" or \
                lang == "lua" and two == "--" and not text.startswith("--[[", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield "comment", text[i:end], line
            i = end
            continue
        if lang == "c" and two == "/*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif lang == "lua" and text.startswith("--[[", i):
            end = text.find("]]", i + 4)
            end = n if end < 0 else end + 2
        if end is not None:
            yield "comment", text[i:end], line
            line += text.count("\n", i, end)
            i = end
            continue
        if lang == "lua" and two == "[[":
            end = text.find("]]", i + 2)
            end = n if end < 0 else end
            yield "str", text[i + 2:end], line
            line += text.count("\n", i, end)
            i = end + 2
            continue
        if lang == "py" and text[i:i + 3] in ('"""', "'''"):
            q = text[i:i + 3]
            end = text.find(q, i + 3)
            end = n if end < 0 else end
            yield "str", text[i + 3:end], line
            line += text.count("\n", i, end)
            i = end + 3
            continue
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if lang != "c" or c == '"':  # a C '...' is a character
                yield "str", text[i + 1:j], line
            i = j + 1
            continue
        i += 1


def tokens(s):
    """(prefix, open, offset) for each `ty:` key in the text s of one literal."""
    for m in TOKEN.finditer(s):
        t = m.group(0).rstrip(".")  # a sentence's full stop, in a comment
        nxt = s[m.start() + len(t):m.start() + len(t) + 1]
        yield t, t.endswith(":") or nxt in ("%", "*"), m.start()


def scan(root):
    """{(prefix, open): set of (path, line, literal)} for strings; notes from comments; files."""
    found, notes, files = {}, {}, 0
    me = os.path.realpath(__file__)
    for dirpath, dirs, names in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")
                         and not (rel == "." and d.startswith(".")))
        for name in sorted(names):
            lang = EXTS.get(os.path.splitext(name)[1])
            path = os.path.join(dirpath, name)
            if not lang or os.path.realpath(path) == me:
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            files += 1
            relpath = os.path.relpath(path, root)
            for kind, s, line in literals(text, lang):
                for t, is_open, off in tokens(s):
                    ref = (relpath, line + s.count("\n", 0, off), s)
                    if kind == "str":
                        found.setdefault((t, is_open), set()).add(ref)
                    elif t != "ty:":
                        notes.setdefault((t, is_open), set()).add(ref)
    return found, notes, files


def parse_pattern(p):
    """`ty:a:<x>:b` -> [("lit", "ty:a:"), ("ph", "x"), ("lit", ":b")]."""
    parts, pos = [], 0
    for m in re.finditer(r"<[^<>]+>", p):
        if m.start() > pos:
            parts.append(("lit", p[pos:m.start()]))
        parts.append(("ph", m.group(0)))
        pos = m.end()
    if pos < len(p):
        parts.append(("lit", p[pos:]))
    return parts


def static_prefix(p):
    return p.split("<", 1)[0]


def covers(pattern, t, is_open):
    """Whether literal t (a prefix of a key when is_open, else a whole key) fits pattern."""
    ds = static_prefix(pattern)
    if is_open and t == ds:
        return True
    if is_open and len(t) <= len(ds):
        return False  # a base shorter than the pattern's fixed part: must be listed on its own
    parts = parse_pattern(pattern)

    def match(k, pos):
        if pos == len(t):
            return is_open or k == len(parts)
        if k == len(parts):
            return False
        kind, val = parts[k]
        if kind == "lit":
            rest = t[pos:pos + len(val)]
            if rest == val:
                return match(k + 1, pos + len(val))
            return is_open and pos + len(rest) == len(t) and val.startswith(rest)
        j = pos
        while j < len(t) and t[j] != ":":
            j += 1
            if match(k + 1, j):
                return True
        return False

    return match(0, 0)


def parse_doc(path):
    """(patterns {pattern: line}, composed [(prefix, fmt, word, line)], errors)."""
    patterns, composed, errors = {}, [], []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    in_block = False
    for no, ln in enumerate(lines, 1):
        if ln.strip().startswith("```"):
            in_block = ln.strip() == "```redis-keys-composed"
            continue
        if in_block:
            if ln.strip():
                f3 = ln.split()
                if len(f3) != 3 or not f3[0].startswith("ty:") or "%s" not in f3[1]:
                    errors.append(f"{DOC}:{no}: composed entry is not 'prefix format word'")
                else:
                    composed.append((f3[0], f3[1], f3[2], no))
            continue
        m = re.match(r"^\|\s*`(ty:[^`]*)`\s*\|", ln)
        if m:
            p = m.group(1)
            if p in patterns:
                errors.append(f"{DOC}:{no}: `{p}` listed twice (also line {patterns[p]})")
            if not re.fullmatch(r"ty:[A-Za-z0-9_:.\-/ <>]+", p) or p.count("<") != p.count(">"):
                errors.append(f"{DOC}:{no}: `{p}` is not a key pattern")
            patterns.setdefault(p, no)
    return patterns, composed, errors


def where(refs, k=3):
    refs = sorted(refs)
    s = ", ".join(f"{p}:{ln}" for p, ln, _ in refs[:k])
    return s + (f" (+{len(refs) - k} more)" if len(refs) > k else "")


def check(root, out=sys.stdout):
    """0 when the doc and the code agree, 1 otherwise (messages on out)."""
    errors = []
    doc = os.path.join(root, DOC)
    if not os.path.isdir(os.path.join(root, PRODUCTION)):
        print(f"redis-keys: no {PRODUCTION}/ under {root}", file=out)
        return 1
    if not os.path.isfile(doc):
        print(f"redis-keys: {DOC} is missing", file=out)
        return 1
    patterns, composed, errors = parse_doc(doc)
    found, notes, files = scan(root)
    prod = {k: v for k, v in found.items()
            if any(p.split(os.sep)[0] == PRODUCTION for p, _, _ in v)}

    # the composed entries: format and word in one production file, and they give the prefix
    bases = set()
    for prefix, fmt, word, no in composed:
        want = fmt.replace("%s", word, 1).split("%", 1)[0]
        if want != prefix:
            errors.append(f"{DOC}:{no}: {fmt} with {word} gives {want}, not {prefix}")
        fmt_files = {p for (t, o), refs in prod.items() for p, _, s in refs if fmt in s}
        word_files = set()
        for p in fmt_files:
            with open(os.path.join(root, p), encoding="utf-8", errors="replace") as f:
                if f'"{word}"' in f.read():
                    word_files.add(p)
        if not fmt_files:
            errors.append(f"{DOC}:{no}: no literal \"{fmt}\" under {PRODUCTION}/ any more")
        elif not word_files:
            errors.append(f"{DOC}:{no}: no \"{word}\" beside \"{fmt}\" in "
                          + ", ".join(sorted(fmt_files)))
        bases.add(fmt)

    # every literal is documented
    for (t, is_open), refs in sorted(found.items()):
        if any(covers(p, t, is_open) for p in patterns):
            continue
        if is_open and any(c[0] == t for c in composed):
            continue
        if is_open and any(b in s for b in bases for _, _, s in refs):
            continue
        kind = "prefix" if is_open else "key"
        errors.append(f"undocumented {kind} {t} ({where(refs)}): add it to {DOC}")

    # every documented key is built by the control plane
    composed_prefixes = {c[0] for c in composed}
    for p, no in sorted(patterns.items(), key=lambda x: x[1]):
        ds = static_prefix(p)
        if ds in composed_prefixes:
            continue
        if not any(covers(p, t, o) and (o or "<" not in p) or t == ds for t, o in prod):
            errors.append(f"{DOC}:{no}: `{p}` is built by nothing under {PRODUCTION}/ "
                          "(remove it, or the code lost it)")

    n_code = len({t for t, _ in prod})
    if n_code < MIN_CODE:
        errors.append(f"only {n_code} key prefixes found under {PRODUCTION}/ ({files} files "
                      f"scanned; at least {MIN_CODE} expected): is the scan broken?")
    if len(patterns) < MIN_DOC:
        errors.append(f"only {len(patterns)} keys parsed from {DOC} (at least {MIN_DOC} "
                      "expected): is the table form broken?")

    for (t, is_open), refs in sorted(notes.items()):
        if any(covers(p, t, is_open) for p in patterns) or t in composed_prefixes or \
                any(static_prefix(p).startswith(t) for p in patterns):
            continue
        print(f"note: a comment names {t}, which {DOC} does not list ({where(refs)})", file=out)

    for e in errors:
        print(f"redis-keys: {e}", file=out)
    if errors:
        print(f"redis-keys: FAILED ({len(errors)} problems)", file=out)
        return 1
    print(f"redis-keys: ok: {len(patterns)} documented keys, {n_code} prefixes in "
          f"{PRODUCTION}/, {len(found)} literals in {files} files", file=out)
    return 0


def self_test():
    """Made-up trees: the check must fail on each broken one, and pass on the good one."""
    import io
    rows = [f"| `ty:k{i}:<id>` | hash | x | `a.c` | `a.c` | none | never |" for i in range(MIN_DOC)]
    rows += ["| `ty:idx:thing` | zset | x | `a.c` | `a.c` | none | never |",
             "| `ty:res:<kind>:<id>` | hash | x | `a.c` | `a.c` | none | never |",
             "| `ty:grp:<g>:created` | string | x | `a.c` | `a.c` | none | never |"]
    composed = "```redis-keys-composed\nty:w:login:  ty:w:%s:%s  login\n```\n"
    good_c = "\n".join(f'static const char k{i}[] = "ty:k{i}:%s";' for i in range(MIN_DOC))
    good_c += ('\nconst char *x = "ty:idx:thing", *r = "ty:res:app:";\n'
               'const char *g = "ty:grp:%s:created";\n'
               '/* a comment "ty:nope:" does not count */\n'
               'void f(char *o) { snprintf(o, 9, "ty:w:%s:%s", "login", "u"); }\n')
    good_lua = "-- KEYS[1] ty:gone:<x> ('ty:gone:')\nredis.call('GET', 'ty:k0:' .. x)\n"
    cases = {  # name: (files replaced, exit wanted, a line the output must hold)
        "good": ({}, 0, "redis-keys: ok"),
        "undocumented prefix in C": ({"cp": good_c + 'char *z = "ty:fake:%s";\n'}, 1,
                                     "undocumented prefix ty:fake: (control-plane/sub/deeper"),
        "undocumented key in Lua": ({"lua": good_lua + "redis.call('DEL', 'ty:fakelua')\n"}, 1,
                                    "undocumented key ty:fakelua (control-plane/lua/a.lua:3)"),
        "undocumented key in a test": ({"test": 'char *t = "ty:faketest:1";\n'}, 1,
                                       "undocumented key ty:faketest:1 (tests/unit/t.c:1)"),
        "bare base": ({"cp": good_c + 'char *b = "ty:%s";\n'}, 1, "undocumented prefix ty: ("),
        "documented but gone": ({"doc": rows + ["| `ty:gone:<x>` | set | x | a | a | none | n |"]},
                                1, "`ty:gone:<x>` is built by nothing under control-plane/"),
        "composed word gone": ({"cp": good_c.replace('"login"', '"logon"')}, 1,
                               'no "login" beside "ty:w:%s:%s"'),
        "empty scan": ({"cp": "int x;\n", "lua": "", "test": ""}, 1,
                       "only 0 key prefixes found under control-plane/"),
        "empty doc": ({"doc": []}, 1, "only 0 keys parsed from"),
    }
    bad = 0
    for name, (over, want, line) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            files = {
                "cp": os.path.join(d, PRODUCTION, "sub", "deeper", "a.c"),
                "lua": os.path.join(d, PRODUCTION, "lua", "a.lua"),
                "test": os.path.join(d, "tests", "unit", "t.c"),
                "doc": os.path.join(d, DOC),
            }
            content = {"cp": good_c, "lua": good_lua, "test": "", "doc": rows}
            content.update(over)
            for k, path in files.items():
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    v = content[k]
                    f.write("\n".join(v) + "\n\n" + composed if k == "doc" else v)
            buf = io.StringIO()
            got = check(d, buf)
            ok = got == want and line in buf.getvalue()
            bad += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {got} (want {want}: {line})")
            if not ok or os.environ.get("VERBOSE"):
                print("     " + buf.getvalue().strip().replace("\n", "\n     "))
    # the matcher itself
    for p, t, o, want in [("ty:job:<name>", "ty:job:", True, True),
                          ("ty:job:<name>", "ty:job:a", False, True),
                          ("ty:job:<name>", "ty:job:a:b", False, False),
                          ("ty:idx:job", "ty:idx:job", False, True),
                          ("ty:idx:job", "ty:idx:job:status:", True, False),
                          ("ty:idx:job:status:<s>", "ty:idx:job", False, False),
                          ("ty:res:<k>:<id>", "ty:res:app:", True, True),
                          ("ty:res:<k>:<id>", "ty:res:", True, True),
                          ("ty:res:<k>:<id>", "ty:re", True, False),
                          ("ty:l:<g>:created", "ty:l:x:created", False, True),
                          ("ty:l:<g>:created", "ty:l:x:made", False, False)]:
        if covers(p, t, o) != want:
            bad += 1
            print(f"FAIL covers({p!r}, {t!r}, open={o}) != {want}")
    print("self-test:", "FAILED" if bad else "ok")
    return 1 if bad else 0


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
