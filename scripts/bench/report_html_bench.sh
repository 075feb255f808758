#!/usr/bin/env bash
# report_html_bench.sh: the HTML report of a 1,000-trial sweep: its size and how long headless
# Chromium takes to open it. The sweep: scripts/bench/overhead.yaml with 1,000 trials (tiny
# recall models, each with its curve and invariant trace) on 3 ranks. Reports the time
# `attnsweep report --format html` takes, the page's bytes, and per Chromium run (5 of
# each) the page's own clock at the end of drawing (performance.now(): from the start of
# the navigation, reading the file included; and the script alone), and the wall times of
# `chromium --headless --screenshot` (load, script, layout and paint of a 1400 × 2400
# window) and of `--dump-dom` (the whole DOM serialised: 1,000 table rows and every SVG
# element) on the page against the same on an empty page (the browser's start-up, measured
# in the same run). Targets: under 5 MB, open under 2 s.
#
#   bash scripts/bench/report_html_bench.sh   (ATTNSWEEP_BIN=..., KEEP=1, TRIALS=1000)
set -euo pipefail
# shellcheck source=scripts/bench/sweep_bench_lib.sh
source "$(dirname "$0")/sweep_bench_lib.sh"
bench_setup
TRIALS=${TRIALS:-1000}
sed "s/^trials: .*/trials: $TRIALS/; s/^name: .*/name: bench_html/" "$BENCH_DIR/overhead.yaml" >"$WORK/html.yaml"
machine_facts "before"
t=$SECONDS
mpirun -np 3 "$BIN" run "$WORK/html.yaml" -o "$WORK/html.h5" --quiet
echo "sweep of $TRIALS trials: $((SECONDS - t)) s"
t0=$(date +%s.%N)
"$BIN" report "$WORK/html.h5" --format html -o "$WORK/html.html"
t1=$(date +%s.%N)
echo "attnsweep report --format html: $(echo "$t1 - $t0" | bc) s, $(stat -c %s "$WORK/html.html") bytes ($(echo "scale=2; $(stat -c %s "$WORK/html.html") / 1048576" | bc) MiB)"
echo "<!DOCTYPE html><html><body><pre id=\"selfcheck\">{}</pre></body></html>" >"$WORK/empty.html"
flags=(--headless --no-sandbox --disable-gpu --user-data-dir="$WORK/chrome")
for i in 1 2 3 4 5; do
    for page in empty html; do
        a=$(date +%s.%N)
        chromium "${flags[@]}" --window-size=1400,2400 --screenshot="$WORK/$page.png" "file://$WORK/$page.html" 2>/dev/null
        b=$(date +%s.%N)
        chromium "${flags[@]}" --dump-dom "file://$WORK/$page.html" 2>/dev/null >"$WORK/$page.dom"
        c=$(date +%s.%N)
        shot=$(echo "$b - $a" | bc) wall=$(echo "$c - $b" | bc)
        if [[ $page == html ]]; then
            check=$(sed -n 's/.*<pre id="selfcheck"[^>]*>\(.*\)<\/pre>.*/\1/p' "$WORK/html.dom" | sed 's/&quot;/"/g')
            open=$(echo "$check" | $PY -c 'import json,sys; c=json.load(sys.stdin); print(c["open_ms"], c["render_ms"])')
            echo "run $i: page: opened and drawn at ${open% *} ms (script ${open#* } ms); chromium --screenshot ${shot} s" \
                "against ${empty_shot} s for an empty page; --dump-dom ${wall} s against ${empty_wall} s"
        else
            empty_shot=$shot empty_wall=$wall
        fi
    done
done
machine_facts "after"
