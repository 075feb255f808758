#!/usr/bin/env bash
# report_memory.sh: what `attnsweep report` holds per trial. Makes results files of SIZES
# trials without training (h5_append_bench FILE N varied: the results file's own writer,
# h5store_write_trial, with a random sweep's configurations, repeats, metrics, curves of 10
# evaluations and one trial in ten pruned, one in twenty failed), then runs the report on
# each in every format of FORMATS under /usr/bin/time and prints its maximum resident
# memory, the bytes per trial it grows by (the slope between the smallest file and this
# one), its wall time and its CPU time (user + system: what a busy machine moves least).
# With BEFORE_BIN (an attnsweep built from an older commit) the same runs of that binary
# come first in each line, with the ratios after/before (memory, CPU), and the two
# outputs are compared byte for byte ("same" or "DIFFER"). REAL="FILE ..." adds results
# files of real sweeps (read only), each a line per format under its trial count and name,
# with the memory per trial as the whole resident memory over its trials. Asserts nothing.
#
#   bash scripts/bench/report_memory.sh   (ATTNSWEEP_BIN=..., BEFORE_BIN=..., SIZES="1000 10000 50000",
#                                          FORMATS="table json html", FILES=DIR to keep the files, KEEP=1,
#                                          REAL="/tmp/s50/r.h5 ...")
set -euo pipefail
# shellcheck source=scripts/bench/sweep_bench_lib.sh
source "$(dirname "$0")/sweep_bench_lib.sh"
bench_setup
SIZES=${SIZES:-1000 10000 50000}
FORMATS=${FORMATS:-table json html}
FILES=${FILES:-$WORK}
mkdir -p "$FILES"
build=$(dirname "$BIN")
[[ -f $build/CMakeCache.txt ]] || build=$ROOT/build
machine_facts "before"

# max RSS (KiB), wall seconds and CPU seconds (user + system) of: BINARY report FILE --format F > OUT
measure() {
    /usr/bin/time -f "%M %e %U %S" -o "$WORK/time.txt" "$1" report "$2" --format "$3" >"$4"
    read -r rss wall user sys <"$WORK/time.txt"
    echo "$rss $wall $(echo "$user + $sys" | bc -l)"
}

declare -A base_rss
smallest=
for n in $SIZES; do
    file=$FILES/report_$n.h5
    if [[ ! -f $file ]]; then
        cmake --build "$build" --target h5_append_bench >/dev/null
        t=$SECONDS
        "$build/bench/h5_append_bench" "$file.part" "$n" varied >/dev/null
        mv "$file.part" "$file"
        echo "made $file: $n trials, $(du -m "$file" | cut -f1) MB, $((SECONDS - t)) s"
    fi
    smallest=${smallest:-$n}
done

# The runs: "LABEL TRIALS FILE" per line, the files made above, then REAL's.
runs=()
for n in $SIZES; do runs+=("$n $n $FILES/report_$n.h5"); done
for file in ${REAL:-}; do
    n=$("$PY" -c 'import h5py, sys; print(len(h5py.File(sys.argv[1], "r")["summary"]))' "$file")
    runs+=("$(basename "$file") $n $file")
done

printf '%-7s %-6s' trials format
[[ -n ${BEFORE_BIN:-} ]] && printf ' %12s %10s %8s %8s' "before MiB" "B/trial" "s" "CPU s"
printf ' %12s %10s %8s %8s' "MiB" "B/trial" "s" "CPU s"
[[ -n ${BEFORE_BIN:-} ]] && printf ' %7s %7s %s' "RSS ×" "CPU ×" "output"
printf '\n'
for run in "${runs[@]}"; do
    read -r label n file <<<"$run"
    for f in $FORMATS; do
        printf '%-7s %-6s' "$n" "$f"
        for side in before after; do
            bin=$BIN
            if [[ $side == before ]]; then
                [[ -n ${BEFORE_BIN:-} ]] || continue
                bin=$BEFORE_BIN
            fi
            read -r rss secs cpu < <(measure "$bin" "$file" "$f" "$WORK/$side.$f.out")
            [[ $label == "$smallest" ]] && base_rss[$side.$f]=$rss
            if [[ $label != "$n" ]]; then  # a real sweep's file: all it holds over its trials
                per=$((rss * 1024 / n))
            elif [[ $n != "$smallest" ]]; then
                per=$(((rss - base_rss[$side.$f]) * 1024 / (n - smallest)))
            else
                per=-
            fi
            printf ' %12.1f %10s %8.2f %8.2f' "$(echo "$rss / 1024" | bc -l)" "$per" "$secs" "$cpu"
            eval "${side}_rss=$rss ${side}_secs=$cpu"
        done
        if [[ -n ${BEFORE_BIN:-} ]]; then
            # shellcheck disable=SC2154  # set by the eval above
            printf ' %7.2f %7.2f %s' "$(echo "$after_rss / $before_rss" | bc -l)" \
                "$(echo "$after_secs / ($before_secs + 0.001)" | bc -l)" \
                "$(cmp -s "$WORK/before.$f.out" "$WORK/after.$f.out" && echo same || echo DIFFER)"
        fi
        [[ $label != "$n" ]] && printf '  %s' "$label"
        printf '\n'
    done
done
machine_facts "after"
