#!/usr/bin/env bash
# report_memory.sh: what `attnsweep report` holds per trial. Makes results files of SIZES
# trials without training (h5_append_bench FILE N varied: the results file's own writer,
# h5store_write_trial, with a random sweep's configurations, repeats, metrics, curves of 10
# evaluations and one trial in ten pruned, one in twenty failed), then runs the report on
# each in every format of FORMATS under /usr/bin/time and prints its maximum resident
# memory, the bytes per trial it grows by (the slope between the smallest file and this
# one) and its wall time. With BEFORE_BIN (an attnsweep built from an older commit) the
# same runs of that binary come first in each line, with the ratios after/before, and the
# two outputs are compared byte for byte ("same" or "DIFFER"). Asserts nothing.
#
#   bash scripts/bench/report_memory.sh   (ATTNSWEEP_BIN=..., BEFORE_BIN=..., SIZES="1000 10000 50000",
#                                          FORMATS="table json html", FILES=DIR to keep the files, KEEP=1)
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

# max RSS (KiB) and wall seconds of: BINARY report FILE --format F > OUT
measure() {
    /usr/bin/time -f "%M %e" -o "$WORK/time.txt" "$1" report "$2" --format "$3" >"$4"
    cat "$WORK/time.txt"
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

printf '%-7s %-6s' trials format
[[ -n ${BEFORE_BIN:-} ]] && printf ' %12s %10s %8s' "before MiB" "B/trial" "s"
printf ' %12s %10s %8s' "MiB" "B/trial" "s"
[[ -n ${BEFORE_BIN:-} ]] && printf ' %7s %7s %s' "RSS ×" "time ×" "output"
printf '\n'
for n in $SIZES; do
    for f in $FORMATS; do
        printf '%-7s %-6s' "$n" "$f"
        for side in before after; do
            bin=$BIN
            if [[ $side == before ]]; then
                [[ -n ${BEFORE_BIN:-} ]] || continue
                bin=$BEFORE_BIN
            fi
            read -r rss secs < <(measure "$bin" "$FILES/report_$n.h5" "$f" "$WORK/$side.$f.out")
            [[ $n == "$smallest" ]] && base_rss[$side.$f]=$rss
            per=-
            [[ $n != "$smallest" ]] && per=$(((rss - base_rss[$side.$f]) * 1024 / (n - smallest)))
            printf ' %12.1f %10s %8.2f' "$(echo "$rss / 1024" | bc -l)" "$per" "$secs"
            eval "${side}_rss=$rss ${side}_secs=$secs"
        done
        if [[ -n ${BEFORE_BIN:-} ]]; then
            # shellcheck disable=SC2154  # set by the eval above
            printf ' %7.2f %7.2f %s' "$(echo "$after_rss / $before_rss" | bc -l)" \
                "$(echo "$after_secs / ($before_secs + 0.001)" | bc -l)" \
                "$(cmp -s "$WORK/before.$f.out" "$WORK/after.$f.out" && echo same || echo DIFFER)"
        fi
        printf '\n'
    done
done
machine_facts "after"
