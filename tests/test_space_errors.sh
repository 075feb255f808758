#!/usr/bin/env bash
# The bad-YAML corpus: every tests/bad_yaml/*.yaml holds one mistake and, on its first
# line, the exact error `attnsweep validate` must print for it:
#   # expect: bad_yaml/NAME.yaml:LINE:COL: message
# Each must exit with code 2, print nothing on stdout and exactly
# "attnsweep: <expected>" on stderr. Then every example in sweeps/ must validate.
# Usage: tests/test_space_errors.sh path/to/attnsweep   (ctest passes it; run from the repo root)
set -uo pipefail
bin=${1:?usage: test_space_errors.sh ATTNSWEEP}
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/tests"

fail=0 count=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
for f in bad_yaml/*.yaml; do
  count=$((count + 1))
  first=$(head -n 1 "$f")
  want=${first#\# expect: }
  if [ "$want" = "$first" ]; then
    echo "FAIL $f: first line is not '# expect: ...'"
    fail=$((fail + 1))
    continue
  fi
  "$bin" validate "$f" >"$out" 2>"$err"
  rc=$?
  got=$(cat "$err")
  if [ "$rc" -ne 2 ] || [ -s "$out" ] || [ "$got" != "attnsweep: $want" ]; then
    echo "FAIL $f (exit $rc)"
    echo "  want: attnsweep: $want"
    echo "  got:  $got"
    [ -s "$out" ] && echo "  stdout: $(head -c 300 "$out")"
    fail=$((fail + 1))
  fi
done
if [ "$count" -lt 20 ]; then
  echo "FAIL: only $count files in bad_yaml/ (the corpus has at least 20)"
  fail=$((fail + 1))
fi

cd "$root"
for f in sweeps/*.yaml; do
  count=$((count + 1))
  if ! "$bin" validate "$f" >"$out" 2>"$err" || ! grep -q "valid sweep" "$out"; then
    echo "FAIL $f does not validate: $(cat "$err")"
    fail=$((fail + 1))
  fi
done

if [ "$fail" -ne 0 ]; then
  echo "test_space_errors: $fail of $count files FAILED"
  exit 1
fi
echo "test_space_errors: all $count files passed"
