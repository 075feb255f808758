#!/bin/sh
# scale_trial.sh: the trial program of scripts/bench/scale.sh, run by /bin/sh as
#   scale_trial.sh --sleep=S --x=X
# It sleeps S seconds (none for 0: a trial that returns at once) and reports one
# evaluation, val_loss = X, to $ATTNSWEEP_METRICS (docs/trainer.md). Nothing else: the
# sweep's cost is then the runner's own.
for a; do
    case $a in
    --sleep=*) s=${a#--sleep=} ;;
    --x=*) x=${a#--x=} ;;
    esac
done
[ "$s" = 0 ] || sleep "$s"
echo "{\"step\": 1, \"val_loss\": $x}" >>"$ATTNSWEEP_METRICS"
