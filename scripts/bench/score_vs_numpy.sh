#!/usr/bin/env bash
# Tucker scoring of one attention layer (score_layer without the CP sweep: the SVDs of
# the four unfoldings, then HOOI) against numpy computing the same unfolding SVDs, in one
# run and one environment.
#
#   scripts/bench/score_vs_numpy.sh [--no-llama]
#
#   BERT-base layer  [12, 64, 768, 3]: 1 and 2 MPI ranks vs numpy (1 thread)
#   LLaMA-7B layer   [32, 128, 4096, 3]: 2 ranks, time and peak memory per rank
# Synthetic layers: low multilinear rank (BERT 8×24×64×3, LLaMA 16×32×256×3) plus 5 %
# noise. attnsweep's HOSVD gives the singular values of all four unfoldings and their
# leading left singular vectors (as many as the numerical rank), and HOOI runs on top.
# numpy cannot compute only some vectors, so it is timed two ways:
# np.linalg.svd(X_(n), compute_uv=False) (σ only: the least numpy can do toward the same
# outputs) and full_matrices=False (σ and all vectors, both sides). The target "1 rank
# no slower than numpy" is judged against σ only, the stricter of the two: attnsweep's
# time includes the vectors and HOOI, numpy's includes neither. The run also checks that
# the outputs are the same: σ against numpy's, and the leading-vector subspaces (largest
# principal angle). Medians of 7 runs (LLaMA: 1). Reports; asserts nothing: exit 0 when
# everything ran. Takes about 1 minute, under 20 s without LLaMA. Targets: 1 rank no
# slower than numpy, 2 ranks at least 1.6x faster than 1.
# ATTN_BUILD=DIR times the library built in DIR (default build; built there if missing).
set -euo pipefail

llama=1
case "${1-}" in
  --no-llama) llama=0 ;;
  -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  '') ;;
  *) echo "score_vs_numpy: unknown argument '$1'" >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
py=/usr/bin/python3
build="${ATTN_BUILD:-build}"
if [ ! -f "$build/libattncore.a" ]; then
  echo "score_vs_numpy: building attnsweep (Release) in $build" >&2
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j >/dev/null
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# OpenBLAS before GSL: libgslcblas also defines cblas_dgemm, and the first one wins.
# shellcheck disable=SC2046  # pkg-config prints several flags on purpose
cc -std=c17 -O2 -Isrc $(pkg-config --cflags openblas) scripts/bench/score_bench.c "$build/libattncore.a" \
  $(pkg-config --cflags --libs ompi-c) -lscalapack-openmpi -llapacke -lopenblas -lgsl -lm -o "$tmp/score_bench"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 \
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

bert=(12 64 768 3 8 24 64 3 0.05)
echo "BERT-base layer on 1 rank..." >&2
mpirun -np 1 "$tmp/score_bench" "${bert[@]}" 7 "$tmp/bert" >"$tmp/bert1.json"
echo "BERT-base layer on 2 ranks..." >&2
mpirun -np 2 "$tmp/score_bench" "${bert[@]}" 7 >"$tmp/bert2.json"
echo "numpy on the same tensor..." >&2
"$py" - "$tmp/bert" >"$tmp/numpy.json" <<'EOF'
import json, statistics, sys, time
import numpy as np
prefix = sys.argv[1]
X = np.fromfile(prefix + ".f32", dtype=np.float32).astype(np.float64).reshape(12, 64, 768, 3)
unfold = lambda n: np.moveaxis(X, n, 0).reshape(X.shape[n], -1)
def run(**kw):
    t = time.perf_counter()
    for n in range(4):
        np.linalg.svd(unfold(n), **kw)
    return time.perf_counter() - t
sv = statistics.median(run(compute_uv=False) for _ in range(7))
uv = statistics.median(run(full_matrices=False) for _ in range(7))
# the same outputs: attnsweep's σ and leading vectors (OUT.svd, see score_bench.c)
svd = np.fromfile(prefix + ".svd", dtype=np.float64)
off, sv_diff, angle = 0, 0.0, 0.0
for n in range(4):
    m, n_sv, n_vec = (int(v) for v in svd[off:off + 3])
    s, U = svd[off + 3:off + 3 + n_sv], svd[off + 3 + n_sv:off + 3 + n_sv + m * n_vec].reshape(n_vec, m).T
    off += 3 + n_sv + m * n_vec
    Un, sn, _ = np.linalg.svd(unfold(n), full_matrices=False)
    sv_diff = max(sv_diff, np.abs(s - sn).max() / sn[0])
    cos = np.linalg.svd(U.T @ Un[:, :n_vec], compute_uv=False)  # cosines of the principal angles
    angle = max(angle, float(np.sqrt(max(0.0, 1.0 - cos.min() ** 2))))
print(json.dumps({"sv_only_s": sv, "with_vectors_s": uv, "numpy": np.__version__,
                  "sv_max_diff": sv_diff, "vec_max_sin_angle": angle}))
EOF
if [ "$llama" = 1 ]; then
  echo "LLaMA-7B layer on 2 ranks..." >&2
  mpirun -np 2 "$tmp/score_bench" 32 128 4096 3 16 32 256 3 0.05 1 >"$tmp/llama2.json"
fi
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

BENCH_CPU="$(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) CPUs" BENCH_TMP="$tmp" \
BENCH_LOAD="$load_before at start, $load_after at end (1/5/15 min)" \
BENCH_CORETYPE="${OPENBLAS_CORETYPE-<unset>}" "$py" - <<'EOF'
import json, os
env = os.environ
tmp = env["BENCH_TMP"]
load = lambda name: json.load(open(os.path.join(tmp, name)))
b1, b2, nps = load("bert1.json"), load("bert2.json"), load("numpy.json")
t1, t2 = b1["score_median_s"], b2["score_median_s"]
print("\nTucker scoring (score_layer without CP) vs numpy unfolding SVDs, synthetic layers, "
      "low multilinear rank + 5 % noise")
print("-" * 100)
print(f"BERT-base [12,64,768,3]   1 rank  {t1:.3f} s (HOSVD {b1['hosvd_median_s']:.3f} s, "
      f"HOOI {b1['tucker_iters']} sweep(s), ranks {b1['tucker_ranks']}, fit {b1['tucker_fit']:.5f})")
print(f"                          2 ranks {t2:.3f} s (HOSVD {b2['hosvd_median_s']:.3f} s)")
print(f"numpy svd, σ only         {nps['sv_only_s']:.3f} s    numpy svd with vectors {nps['with_vectors_s']:.3f} s")
print(f"ratio numpy(σ only) / attnsweep 1 rank    {nps['sv_only_s'] / t1:.2f}x   (target >= 1; judged here)")
print(f"ratio numpy(vectors) / attnsweep 1 rank   {nps['with_vectors_s'] / t1:.2f}x")
print(f"speed-up 2 ranks / 1 rank                 {t1 / t2:.2f}x   (target >= 1.6; "
      f"HOSVD alone {b1['hosvd_median_s'] / b2['hosvd_median_s']:.2f}x)")
print(f"same outputs as numpy                     σ max diff {nps['sv_max_diff']:.1e} of σ_1, leading-vector "
      f"subspaces max angle {nps['vec_max_sin_angle']:.1e} rad")
print(f"peak memory per rank (BERT)               1 rank {b1['peak_rss_mb_per_rank']:.0f} MB, "
      f"2 ranks {b2['peak_rss_mb_per_rank']:.0f} MB")
if os.path.exists(os.path.join(tmp, "llama2.json")):
    l2 = load("llama2.json")
    print(f"LLaMA-7B [32,128,4096,3]  2 ranks {l2['score_median_s']:.1f} s (HOSVD {l2['hosvd_median_s']:.1f} s, "
          f"HOOI {l2['tucker_iters']} sweep(s), ranks {l2['tucker_ranks']}, fit {l2['tucker_fit']:.5f})")
    print(f"                          peak RSS per rank {l2['peak_rss_mb_per_rank']:.0f} MB "
          f"({l2['rss_before_scoring_mb']:.0f} MB before scoring: the float32 layer and its generation)")
print("-" * 100)
print(f"CPU               {env['BENCH_CPU']}")
print(f"threads           OPENBLAS_NUM_THREADS=1 per rank; numpy {nps['numpy']} on the same OpenBLAS, 1 thread")
print(f"OPENBLAS_CORETYPE {env['BENCH_CORETYPE']}")
print(f"load average      {env['BENCH_LOAD']}  (2 cores: another job on the machine slows the 2-rank run most)")
EOF
