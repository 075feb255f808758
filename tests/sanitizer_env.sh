# sanitizer_env.sh: sourced by the test scripts. Sets asan_leaks and asan_noleaks, the
# ASAN_OPTIONS for a run of attnsweep with and without leak detection.
#
# Under AddressSanitizer (ATTNSWEEP_SANITIZED=1, set by scripts/test.sh) Open MPI's own
# allocations at exit would be reported as leaks, also for a lone process (MPI starts as
# a singleton). Runs with leak detection therefore use tests/lsan-openmpi.supp, which
# names only Open MPI and its libraries; naming their frames needs exact (slow) unwinding
# and components kept loaded. A script keeps leak detection on for the runs that cover
# each code path once and turns it off for repeats and mpirun runs, to stay fast.
# Outside the sanitizer build both are the caller's ASAN_OPTIONS (unused).
asan_leaks=${ASAN_OPTIONS:-}
asan_noleaks=${ASAN_OPTIONS:-}
if [[ -n ${ATTNSWEEP_SANITIZED:-} ]]; then
    export OMPI_MCA_mca_base_component_disable_dlclose=1 \
        LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lsan-openmpi.supp:print_suppressions=0"
    asan_leaks="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:fast_unwind_on_malloc=0"
    asan_noleaks="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
