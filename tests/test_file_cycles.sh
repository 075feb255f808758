#!/usr/bin/env bash
# test_file_cycles: no call cycle between the files of src/ (tests/file_cycles.py reads
# the build's object files with nm). First the checker itself on two small files that
# call each other, so that it is seen to find a cycle.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

mkdir pair
printf 'int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n' >pair/a.c
printf 'int a(int);\nint b(int x) { return x ? a(x - 1) : 1; }\nint c(void) { return 2; }\n' >pair/b.c
printf 'int c(void);\nint d(void) { return c(); }\n' >pair/d.c
for f in a b d; do cc -c "pair/$f.c" -o "pair/$f.o"; done
rc=0
"$py" "$here/file_cycles.py" pair --any >out 2>err || rc=$?
[[ $rc == 1 ]] && grep -qx "cycle: a.o <-> b.o" out && ! grep -q "d.o" out ||
    fail "the checker on a.c <-> b.c (and d.c calling b.c, no cycle): exit $rc, $(cat out err)"
pass "the checker finds a.c <-> b.c and leaves d.c -> b.c alone"

build=$(dirname "$bin")
rc=0
"$py" "$here/file_cycles.py" "$build" >out 2>err || rc=$?
[[ $rc == 0 ]] || fail "call cycles between files of src/:$(printf '\n'; cat out err)"
pass "$(cat out)"
echo "test_file_cycles: $checks checks passed in $((SECONDS - start)) s"
