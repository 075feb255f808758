#!/usr/bin/env bash
# test_kill_campaign (issue 32, slow: about 2 minutes): scripts/redteam/kill_campaign.sh's 20
# rounds of kill -9 (the coordinator, a worker or mpirun, at random moments from seed 1,
# each round a --resume), then a last --resume: every trial recorded exactly once, in the
# journal and in /summary, and none failed but one whose own worker was killed while
# running it twice (max_deaths 2).
# Usage: bash tests/test_kill_campaign.sh /path/to/attnsweep [ROUNDS [SEED]]
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run is under mpirun: see sanitizer_env.sh
rounds=${2:-20} seed=${3:-1}

echo "== $rounds rounds of kill -9, seed $seed  [$((SECONDS - start)) s]"
rc=0
bash "$here/../scripts/redteam/kill_campaign.sh" "$bin" "$rounds" "$seed" "$tmp/campaign" | tee "$tmp/out" || rc=$?
[[ $rc == 0 ]] || fail "the campaign's checks (above)"
n=$(grep -c "killed -9 the [cwm]" "$tmp/out" || true)
((n >= rounds * 3 / 4)) || fail "at least $((rounds * 3 / 4)) of $rounds rounds killed something: $n did"
pass "$n kills -9 in $rounds rounds; every trial recorded exactly once, none falsely failed"

echo "test_kill_campaign: all $checks checks passed in $((SECONDS - start)) s"
