"""modules.py ROOT: the modules CMakeLists.txt declares, against the tree and docs/layout.md.

A module is a folder of src/ declared by `attn_module(NAME DEPENDS ... LIBS ...)`. Checks:
  1. every folder of src/ is a module and every module a folder;
  2. a module's DEPENDS are exactly the other modules whose headers its files include
     (`#include "NAME/x.h"`): the build refuses an include across an undeclared edge that
     no dependency reaches either, and this refuses the others and a declared edge no
     file uses;
  3. docs/layout.md names every module's folder (`src/NAME/`), and its table under
     `module  uses` gives each module's DEPENDS (the module names at the start of the
     row; what follows them, the libraries, is not checked).
Prints one line per disagreement and exits 1; else one line and exits 0.
"""
import glob
import os
import re
import sys


def declared(root):
    """{module: set of DEPENDS}, in the order of CMakeLists.txt."""
    mods = {}
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        for line in f:
            m = re.match(r"attn_module\((\w+)(.*)\)\s*$", line)
            if m:
                words = m.group(2).split()
                deps = []
                if words and words[0] == "DEPENDS":
                    for w in words[1:]:
                        if w in ("LIBS", "SOURCES"):
                            break
                        deps.append(w)
                mods[m.group(1)] = set(deps)
    return mods


def included(root, module, modules):
    """The other modules whose headers the files of src/MODULE include."""
    used = set()
    for path in glob.glob(os.path.join(root, "src", module, "*.[ch]")):
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r'\s*#\s*include\s+"(\w+)/', line)
                if m and m.group(1) in modules and m.group(1) != module:
                    used.add(m.group(1))
    return used


def layout_table(root, modules):
    """docs/layout.md: the folders it names, and {module: set of uses} from its table."""
    with open(os.path.join(root, "docs", "layout.md")) as f:
        text = f.read()
    folders = set(re.findall(r"^\s*src/(\w+)/", text, re.M))
    table, rows = {}, False
    for line in text.splitlines():
        words = line.split()
        if words[:2] == ["module", "uses"]:
            rows = True
            continue
        if rows and not words:
            break
        if rows and words[0] in modules:
            uses = set()
            for w in words[1:]:
                if w not in modules:
                    break
                uses.add(w)
            table[words[0]] = uses
    return folders, table


def problems(root):
    mods = declared(root)
    found = []
    folders = {d for d in os.listdir(os.path.join(root, "src")) if os.path.isdir(os.path.join(root, "src", d))}
    for d in sorted(folders - set(mods)):
        found.append(f"src/{d}/ is a folder of src/ but no attn_module in CMakeLists.txt")
    for m in sorted(set(mods) - folders):
        found.append(f"attn_module({m}) has no folder src/{m}/")
    for m, deps in mods.items():
        used = included(root, m, mods)
        for d in sorted(used - deps):
            found.append(f"module {m}: its files include {d}/ headers, but {d} is not among its DEPENDS")
        for d in sorted(deps - used):
            found.append(f"module {m}: DEPENDS names {d}, whose headers none of its files include")
    named, table = layout_table(root, mods)
    for m in mods:
        if m not in named:
            found.append(f"docs/layout.md: no line for src/{m}/")
        if m not in table:
            found.append(f"docs/layout.md: module {m} is not in the table under `module  uses`")
        elif table[m] != mods[m]:
            found.append(f"docs/layout.md: module {m} uses {' '.join(sorted(table[m])) or '(none)'} in the table, "
                         f"but DEPENDS {' '.join(sorted(mods[m])) or '(none)'} in CMakeLists.txt")
    return found, len(mods)


def main(argv):
    found, n = problems(argv[1])
    for p in found:
        print(p)
    if found:
        return 1
    print(f"the {n} modules of CMakeLists.txt match src/, their includes and docs/layout.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
