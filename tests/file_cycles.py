"""file_cycles.py DIR: the call cycles between the source files of attnsweep's modules.

Reads the object files under DIR (a build directory: CMakeFiles/attn_*.dir/src/MODULE/
FILE.c.o, or any *.o below DIR with --any) with nm: a file calls another when it uses a
symbol the other defines. Prints each cycle (a strongly connected set of files, with the
symbols of each edge) and exits 1 if there is one; 0 and one line otherwise. The build
already refuses a cycle between modules (CMakeLists.txt attn_module); this is the same
rule one level down.
"""
import collections
import glob
import os
import subprocess
import sys


def symbols(obj):
    """(defined global symbols, undefined symbols) of an object file."""
    def nm(*args):
        out = subprocess.run(["nm", *args, obj], capture_output=True, text=True, check=True).stdout
        return [line.split() for line in out.splitlines() if line.strip()]
    defined = {p[2] for p in nm("--defined-only", "-g") if len(p) == 3}
    used = {p[-1] for p in nm("-u")}
    return defined, used


def cycles(objs):
    """The strongly connected sets of more than one file (Tarjan), and each edge's symbols."""
    owner, uses = {}, {}
    for name, obj in objs.items():
        defined, used = symbols(obj)
        for s in defined:
            owner[s] = name
        uses[name] = used
    edges = collections.defaultdict(dict)
    for f, used in uses.items():
        for s in used:
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, []).append(s)
    index, low, on, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(uses):
        if v not in index:
            visit(v)
    return found, edges


def main(argv):
    root = argv[1]
    if len(argv) > 2 and argv[2] == "--any":
        paths = glob.glob(os.path.join(root, "**", "*.o"), recursive=True)
        objs = {os.path.relpath(p, root): p for p in paths}
    else:
        paths = glob.glob(os.path.join(root, "CMakeFiles", "attn_*.dir", "src", "*", "*.c.o"))
        objs = {p.split(os.sep + "src" + os.sep, 1)[1][:-2]: p for p in paths}
    if not objs:
        print(f"file_cycles.py: no object files under {root}")
        return 2
    found, edges = cycles(objs)
    for group in found:
        print("cycle: " + " <-> ".join(group))
        for f in group:
            for g in group:
                if g in edges[f]:
                    print(f"  {f} -> {g}: {', '.join(sorted(edges[f][g]))}")
    if found:
        return 1
    print(f"no call cycle between the {len(objs)} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
