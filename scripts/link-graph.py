#!/usr/bin/env python3
# Checks the libraries a build made against the allowed dependency graph of docs/design.md (the
# ```deps block): for every static library lib*.a below BUILD, the libraries that define the
# symbols it leaves undefined (nm) must be on its line; the graph must have no cycle.
# Usage: scripts/link-graph.py BUILD  (exits 1 listing every forbidden edge or cycle; 77 when
# the build holds no library yet)
import collections
import glob
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def allowed():
    with open(os.path.join(TOP, "docs/design.md"), encoding="utf-8") as fh:
        m = re.search(r"```deps\n(.*?)```", fh.read(), re.S)
    table = {}
    for line in m.group(1).splitlines():
        name, _, deps = line.partition(":")
        table[name.strip()] = set(deps.split())
    return table


def edges(build):
    defs, undef = {}, collections.defaultdict(set)
    libs = [p for p in glob.glob(os.path.join(build, "**", "lib*.a"), recursive=True)
            if "/_deps/" not in p]
    for path in libs:
        lib = os.path.basename(path)[3:-2]
        out = subprocess.run(["nm", "-g", path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRCVW":
                defs.setdefault(p[2], lib)
            elif len(p) == 2 and p[0] == "U":
                undef[lib].add(p[1])
    found = collections.defaultdict(dict)
    for lib, syms in undef.items():
        for s in sorted(syms):
            d = defs.get(s)
            if d and d != lib:
                found[lib].setdefault(d, s)
    return {os.path.basename(p)[3:-2] for p in libs}, found


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: link-graph.py BUILD")
    table = allowed()
    libs, found = edges(sys.argv[1])
    if not libs:
        print("link-graph: no library built yet")
        return 77
    bad = []
    for lib in sorted(libs):
        if lib not in table:
            bad.append(f"{lib}: not in docs/design.md's dependency table")
            continue
        for dep, sym in sorted(found[lib].items()):
            if dep not in table[lib]:
                bad.append(f"{lib} -> {dep} (it uses {sym}): not allowed by docs/design.md")
    # cycles among the edges found
    state = {}

    def visit(n, path):
        state[n] = 1
        for d in found[n]:
            if state.get(d) == 1:
                bad.append("cycle: " + " -> ".join(path[path.index(d):] + [d]))
            elif d not in state:
                visit(d, path + [d])
        state[n] = 2

    for lib in sorted(libs):
        if lib not in state:
            visit(lib, [lib])
    for b in bad:
        print(b)
    print(f"link-graph: {len(libs)} libraries, {sum(len(v) for v in found.values())} edges, "
          f"{len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
