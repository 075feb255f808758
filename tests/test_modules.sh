#!/usr/bin/env bash
# test_modules: the modules CMakeLists.txt declares match the folders of src/, the
# headers their files include, and docs/layout.md's list and table (tests/modules.py).
# First the checker itself on a small tree, right and then wrong in each way, so that it
# is seen to find what it looks for.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

# tree DEPENDS-OF-b TABLE-ROW-OF-b: a tree with modules a and b, b's file including a/a.h.
tree() {
    rm -rf t && mkdir -p t/src/a t/src/b t/docs
    printf 'attn_module(a LIBS m)\nattn_module(b %s)\n' "$1" >t/CMakeLists.txt
    printf '// a.h\n' >t/src/a/a.h
    printf '#include "a/a.h"\n#include "b/b.h"\n#include <stdio.h>\n' >t/src/b/b.c
    printf '# Layout\n\n    src/a/    one\n    src/b/    two\n\n    module  uses\n    a       (none)\n    %s\n\n' \
        "$2" >t/docs/layout.md
}
# expect WHAT RC LINE: the checker on t exits RC and prints LINE (a fixed string).
expect() {
    local rc=0
    "$py" "$here/modules.py" t >out 2>err || rc=$?
    [[ $rc == "$2" ]] && grep -qF -- "$3" out || fail "$1: exit $rc (want $2), $(cat out err)"
    pass "$1"
}
tree "DEPENDS a" "b       a      libraries"
expect "the checker on a right tree" 0 "the 2 modules of CMakeLists.txt match"
tree "LIBS m" "b       (none)"
expect "an include across an undeclared edge" 1 "module b: its files include a/ headers, but a is not among its DEPENDS"
tree "DEPENDS a" "b       (none)"
expect "a table row that differs from DEPENDS" 1 "docs/layout.md: module b uses (none) in the table, but DEPENDS a"
tree "DEPENDS a" "b       a"
mkdir t/src/c
expect "a folder that is no module" 1 "src/c/ is a folder of src/ but no attn_module in CMakeLists.txt"
tree "DEPENDS a" "b       a"
sed -i '/src\/b\//d' t/docs/layout.md
expect "a module the list leaves out" 1 "docs/layout.md: no line for src/b/"
tree "DEPENDS a" "b       a"
sed -i 's#"a/a.h"#<stdlib.h>#' t/src/b/b.c
expect "a dependency no file uses" 1 "module b: DEPENDS names a, whose headers none of its files include"

rc=0
"$py" "$here/modules.py" "$(dirname "$here")" >out 2>err || rc=$?
[[ $rc == 0 ]] || fail "the modules of this tree:$(printf '\n'; cat out err)"
pass "$(cat out)"
echo "test_modules: $checks checks passed in $((SECONDS - start)) s"
