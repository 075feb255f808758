# shellcheck shell=bash
# cmake_build.sh: a build that shows it is working, for scripts/test.sh and scripts/demo.sh.
#     source scripts/cmake_build.sh
#     cmake_build DIR [ARGS...]      # cmake --build DIR ARGS...
# prints one line a target as it is done ("  [ 42%] built attn_model"), keeps the whole
# output in DIR/build.log, and when the build fails prints its errors (each with the three
# lines after it: the source line and the caret) and returns its exit code.
cmake_build() {
    local - dir=$1 rc=0
    set -o pipefail  # cmake's exit code, not sed's (local -: only in here)
    shift
    cmake --build "$dir" "$@" 2>&1 | tee "$dir/build.log" |
        sed -un 's/^\[ *\([0-9]*%\)\] Built target \(.*\)/  [\1] built \2/p' || rc=$?
    if [[ $rc != 0 ]]; then
        grep -E -A3 'error|undefined reference' "$dir/build.log" | tail -n 60 >&2
        echo "build failed (exit $rc); the whole output: $dir/build.log" >&2
    fi
    return "$rc"
}
