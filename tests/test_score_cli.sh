#!/usr/bin/env bash
# End-to-end tests of `attnsweep score` and of the scores `attnsweep train -o` records:
# the trial file's invariants table, scores/ groups and reward columns; scoring a trial on
# 1, 2 and 4 MPI ranks (the same numbers, one BLACS grid of 1x1, 2x1, 2x2); the reward
# options recomputed from the JSON; a safetensors checkpoint; bad input; --help.
# Usage: bash tests/test_score_cli.sh /path/to/attnsweep     (from the repository root;
# ctest runs it so). Models are tiny (d_model 16, 2 heads, 2 layers, 20 steps) so the file
# finishes in seconds, also in the AddressSanitizer build (ATTNSWEEP_SANITIZED=1).
# Leaks under AddressSanitizer (tests/sanitizer_env.sh): the runs of sections 1, 2 and 4
# without mpirun keep leak detection; the mpirun runs (where exact unwinding makes a
# 4-rank start take 14 s) and the repeats of sections 3 and 5 (the same code paths, to
# stay within a minute) run with detect_leaks=0.
# Bad input is tested without mpirun, whose extra lines on a failing rank would hide the
# one-line message.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
leaks=1

# ---------------------------------------------------------------------------
echo "== 1. attnsweep train -o records invariants, scores and the reward  [$((SECONDS - start)) s]"
tiny=(--steps 20 --eval-every 10 --eval-batches 1 --batch 8 --d-model 16 --heads 2 --layers 2 --quiet)
run train --attention mha "${tiny[@]}" -o "$tmp/mha.h5"
expect_rc 0 "train mha -o"
run train --attention grassmann --grassmann-rank 4 "${tiny[@]}" -o "$tmp/grassmann.h5"
expect_rc 0 "train grassmann -o"

# Every trial file: invariants has one row per evaluation step (curves' step) with the
# shapes [n], [n, L], [n, L, 4], [n, L, G] (G = the function-level tensor's first mode:
# heads, or Grassmann's output features); its last row is the final tensor, so it equals
# scores/layerK; scores/layer0..L-1 hold the full score of the function-level tensor,
# which numpy rebuilds from weights/ and weights_out/ (mha: B_h = W_Q^hT W_K^h / sqrt(d_k)
# and C_h = W_O^h W_V^h; grassmann: K_o = W_red^T A_o W_red) to compare the singular
# values of its unfoldings, its norm and the head correlation; the /summary row's
# rank_deviation and correlation are recomputed from scores/ (default reward: heads mode,
# ideal = full rank), and so are the terms beyond chance (mha: each less its value at the
# null's mean; grassmann: 0, no heads), and reward = val_accuracy - 0.1 (rank_deviation
# beyond chance) - 0.1 (correlation beyond chance); the trace's last nulls are the scores'.
for variant in mha grassmann; do
    pycheck "trial file of $variant" "$tmp/$variant.h5" "$variant" <<'EOF'
import sys
import h5py  # raw on purpose: the layout attnsweep score writes (its groups, datasets, attributes)
import numpy as np
from numcheck import close
path, variant = sys.argv[1], sys.argv[2]
bad = []
def want(ok, what, expected, got):
    if not ok:
        bad.append(f"{what}: expected {expected}, got {got}")
def function_tensor(W, O):  # the definitions of src/circuits/circuits.h, from the stored weights
    W, O = W.astype(np.float64), O.astype(np.float64)
    if variant == "mha":  # the whole network's view (d_model + 1 columns), QK weighted by what each head writes
        H, dk, D = W.shape[:3]
        B = np.einsum("hki,hkj->hij", W[..., 0], W[..., 1]) / np.sqrt(dk)
        C = np.einsum("ihk,hkj->hij", O.reshape(D, H, dk), W[..., 2])
        w2 = (C ** 2).sum(axis=(1, 2))
        return np.stack([B * np.sqrt(w2 / w2.mean())[:, None, None], C], axis=-1)
    r, D = W.shape[0], W.shape[2]
    Wr = W.reshape(r, D)
    iu = np.triu_indices(r, 1)
    K = np.empty((D, D, D, 1))
    for o in range(D):
        A = np.zeros((r, r)); A[iu] = O[o]; A -= A.T
        K[o, :, :, 0] = Wr.T @ A @ Wr
    return K
with h5py.File(path, "r") as f:
    t = f["trials/000000"]
    w = t["weights/layer0"].shape
    L = len(t["weights"])
    fdims = [2, 17, 17, 2] if variant == "mha" else [16, 16, 16, 1]
    G = fdims[0]
    want(L == 2, "number of weights/layerK", 2, L)
    want(len(t["weights_out"]) == L, "number of weights_out/layerK", L, len(t["weights_out"]))
    steps = t["curves"]["step"]
    inv = t["invariants"]
    want(list(inv.dtype.names or ()) == ["step", "correlation", "eff_rank", "head_sv", "chance"], "invariants columns",
         ["step", "correlation", "eff_rank", "head_sv", "chance"], inv.dtype.names)
    n = len(steps)
    for name, shape in (("step", (n,)), ("correlation", (n, L)), ("eff_rank", (n, L, 4)), ("head_sv", (n, L, G)),
                        ("chance", (n, L, 4))):
        got = inv[name].shape if name in (inv.dtype.names or ()) else "missing"
        want(got == shape, f"invariants/{name} shape", shape, got)
    if bad:
        print("\n".join(bad)); sys.exit(1)
    want(list(inv["step"][:]) == list(steps), "invariants/step", f"curves step {list(steps)}", list(inv["step"][:]))
    want(list(steps) == [10, 20], "curves step", [10, 20], list(steps))
    sc = t["scores"]
    want(sorted(sc) == [f"layer{k}" for k in range(L)], "scores groups", [f"layer{k}" for k in range(L)], sorted(sc))
    rd_terms, corrs, rd_excess, corr_excess = [], [], [], []
    for k in range(L):
        g = sc[f"layer{k}"]
        cp = ("cp_fits", "cp_roles", "cp_cond") if variant == "mha" else ()  # no CP of the Grassmann kernel
        for a in ("sv_mode0", "sv_mode1", "sv_mode2", "sv_mode3", "dims", "num_rank", "eff_rank", "core_energy",
                  "tucker_ranks", "norm", "correlation", "correlation_chance", "tucker_fit", "tucker_iters",
                  "cp_rank", "cp_fit") + cp:
            want(a in g.attrs, f"scores/layer{k} attribute {a}", "present", "missing")
        if bad:
            continue
        dims = list(g.attrs["dims"])
        want(dims == fdims, f"scores/layer{k}/dims", fdims, dims)
        T = function_tensor(t[f"weights/layer{k}"][()], t[f"weights_out/layer{k}"][()])
        want(list(T.shape) == fdims, f"numpy's tensor of layer {k}", fdims, list(T.shape))
        for m in range(4):
            sn = np.linalg.svd(np.moveaxis(T, m, 0).reshape(T.shape[m], -1), compute_uv=False)
            got = g.attrs[f"sv_mode{m}"]
            # σ² are the eigenvalues of the mode's Gram matrix, accurate to its rounding; a
            # direction the stored float32 weights hold only by their rounding (the mean
            # direction of centred weights: σ ~ 1e-8) is 0 there
            want(len(got) <= len(sn) and close(got ** 2, sn[:len(got)] ** 2, atol=1e-12 * sn[0] ** 2),
                 f"scores/layer{k} sv_mode{m} against numpy", "sigma^2 within 1e-12 of sigma_1^2", got)
        rows = T.reshape(G, -1); Gm = rows @ rows.T; nr = np.sqrt(np.diag(Gm))
        corr_np = (np.abs(Gm) / np.outer(nr, nr)).sum() - G
        corr_np /= G * (G - 1)
        want(close(g.attrs["correlation"], corr_np, rtol=1e-10, atol=1e-12), f"scores/layer{k} correlation against numpy", corr_np,
             g.attrs["correlation"])
        want(close(g.attrs["norm"], np.linalg.norm(T), rtol=1e-10), f"scores/layer{k} norm against numpy",
             np.linalg.norm(T), g.attrs["norm"])
        want(0 < g.attrs["correlation_chance"] < 1, f"scores/layer{k} correlation_chance", "in (0, 1)",
             g.attrs["correlation_chance"])
        for m in range(4):
            rmax = min(dims[m], int(np.prod(dims)) // dims[m])
            want(len(g.attrs[f"sv_mode{m}"]) == rmax, f"scores/layer{k} sv_mode{m} length", rmax,
                 len(g.attrs[f"sv_mode{m}"]))
        eff = g.attrs["eff_rank"]
        # the last evaluation is at the last step: the trace's last row is the final tensor
        want(close(inv["eff_rank"][-1, k], eff, rtol=1e-10), f"invariants/eff_rank[-1, {k}]",
             f"scores/layer{k}/eff_rank {eff}", inv["eff_rank"][-1, k])
        want(close(inv["head_sv"][-1, k], g.attrs["sv_mode0"], rtol=1e-10),
             f"invariants/head_sv[-1, {k}]", f"scores/layer{k} sv_mode0 {g.attrs['sv_mode0']}", inv["head_sv"][-1, k])
        want(close(inv["correlation"][-1, k], g.attrs["correlation"], rtol=1e-10, atol=1e-10),
             f"invariants/correlation[-1, {k}]",
             g.attrs["correlation"], inv["correlation"][-1, k])
        if variant == "mha":
            want(int(g.attrs["cp_rank"]) >= 1 and len(g.attrs["cp_roles"]) == g.attrs["cp_rank"],
                 f"scores/layer{k} cp_roles rows", f"cp_rank {g.attrs['cp_rank']}", len(g.attrs["cp_roles"]))
        else:
            want(int(g.attrs["cp_rank"]) == 0, f"scores/layer{k} cp_rank (no CP of the Grassmann kernel)", 0,
                 int(g.attrs["cp_rank"]))
        r0 = len(g.attrs["sv_mode0"])
        rd_terms.append(abs(eff[0] - r0) / r0)
        corrs.append(g.attrs["correlation"])
        nulls = [g.attrs[a] for a in ("correlation_chance", "correlation_chance_sd", "eff_rank_chance", "eff_rank_chance_sd")]
        if variant == "mha":
            want(int(g.attrs["mixing"]) == 0 and all(np.isfinite(nulls)) and nulls[1] > 0 and nulls[3] > 0,
                 f"scores/layer{k} nulls", "finite, sds > 0", nulls)
            rd_excess.append(rd_terms[-1] - abs(nulls[2] - r0) / r0)
            corr_excess.append(corrs[-1] - nulls[0])
        else:  # no heads: no head terms
            want(int(g.attrs["mixing"]) == 1, f"scores/layer{k} mixing", 1, g.attrs["mixing"])
            nulls[1:] = [np.nan] * 3
            rd_excess.append(0.0)
            corr_excess.append(0.0)
        want(np.allclose(inv["chance"][-1, k], nulls, rtol=1e-10, equal_nan=True), f"invariants/chance[-1, {k}]",
             f"the scores' nulls {nulls}", inv["chance"][-1, k])
    row = f["summary"][0]
    names = row.dtype.names
    for c in ("val_accuracy", "rank_deviation", "correlation", "reward", "rank_deviation_excess", "correlation_excess"):
        want(c in names, f"/summary column {c}", "present", "missing")
    if bad:
        print("\n".join(bad)); sys.exit(1)
    acc, rd, corr, reward = (float(row[c]) for c in ("val_accuracy", "rank_deviation", "correlation", "reward"))
    rdx, cx = float(row["rank_deviation_excess"]), float(row["correlation_excess"])
    want(close(rdx, np.mean(rd_excess), rtol=1e-10, atol=1e-10), "/summary rank_deviation_excess",
         f"mean of each layer's less its value at the null's mean = {np.mean(rd_excess)!r}", rdx)
    want(close(cx, np.mean(corr_excess), rtol=1e-10, atol=1e-10), "/summary correlation_excess",
         f"mean of each layer's less its null's mean = {np.mean(corr_excess)!r}", cx)
    want(close(rd, np.mean(rd_terms), rtol=1e-10, atol=1e-10), "/summary rank_deviation",
         f"mean |eff_rank[heads] - G| / G over layers = {np.mean(rd_terms)!r}", rd)
    want(close(corr, np.mean(corrs), rtol=1e-10, atol=1e-10), "/summary correlation",
         f"mean scores correlation {np.mean(corrs)!r}", corr)
    want(close(reward, acc - 0.1 * rdx - 0.1 * cx, atol=1e-12), "/summary reward",
         f"val_accuracy - 0.1 rank_deviation_excess - 0.1 correlation_excess = {acc - 0.1 * rdx - 0.1 * cx!r}", reward)
    want(0 <= rd <= 1 and 0 <= corr <= 1, "rank_deviation and correlation", "in [0, 1]", (rd, corr))
print("\n".join(bad) if bad else f"val_accuracy {acc:.4f}, RankDeviation {rd:.6f}, Correlation {corr:.6f}, reward {reward:.6f}")
sys.exit(1 if bad else 0)
EOF
    pass "train -o ($variant): invariants shapes, steps and last row = scores/ = numpy on the function-level tensor; summary $(tail -1 "$tmp/check") (= val_accuracy - 0.1 RD beyond chance - 0.1 Corr beyond chance)"
done

# ---------------------------------------------------------------------------
echo "== 2. attnsweep score on 1, 2 and 4 ranks: the same numbers, one BLACS grid  [$((SECONDS - start)) s]"
# mha: the per-layer numbers of --json (every layer field) must agree to 1e-10 relative
# between 1, 2 (2x1 grid) and 4 ranks (2x2, oversubscribed). grassmann: the table names
# the grid, and every dataset and attribute of the output's scores/ agrees to 1e-10.
# Each output file reads in h5py and holds the trial, its scores and a /summary row whose
# rank_deviation, correlation and reward equal the JSON's (mha) and what training
# recorded (the same tensors, the same default reward).
grid_of() { case $1 in 1) echo "1 x 1" ;; 2) echo "2 x 1" ;; 4) echo "2 x 2" ;; esac; }
for np in 1 2 4; do
    for variant in mha grassmann; do
        what="score $variant.h5 on $np rank(s)"
        json=()
        [[ $variant == mha ]] && json=(--json)
        if [[ $np == 1 ]]; then
            # without mpirun (a singleton) and without -o: FILE.scores.h5 beside the input
            run score "$tmp/$variant.h5" "${json[@]}"
            scores=$tmp/$variant.scores.h5
        else
            scores=$tmp/$variant.np$np.h5
            mpi "$np" score "$tmp/$variant.h5" "${json[@]}" -o "$scores"
        fi
        expect_rc 0 "$what"
        expect_quiet_stderr "$what"
        [[ -f $scores ]] && no_partial "$scores" || fail "$what: expected $scores and no .partial, got: $(ls "$tmp")"
        cp "$scores" "$tmp/$variant.np$np.scores.h5"
        if [[ $variant == mha ]]; then
            [[ $(wc -l <"$tmp/out") == 1 ]] || fail "$what: --json: expected one line on stdout, got $(wc -l <"$tmp/out")"
            cp "$tmp/out" "$tmp/mha.np$np.json"
        else
            # the table: the first line names the grid the ranks formed
            want_first="2 layers, function tensor [heads 16, dest_dim 16, src_dim 16, roles 1], on a $(grid_of "$np") grid"
            grep -qF "$want_first" "$tmp/out" ||
                fail "$what: expected '$want_first' in the first line, got '$(head -1 "$tmp/out")'"
            [[ $(grep -cE '^ +[01]  [0-9]+ [0-9]+ [0-9]+ [0-9]+  ' "$tmp/out") == 2 ]] || fail "$what: expected two layer rows"
            grep -qE '^RankDeviation [0-9.]+ \(beyond chance \+0\.0000, heads z nan\)  Correlation [0-9.]+ \(chance [0-9.]+, beyond \+0\.0000, z nan\)$' "$tmp/out" ||
                fail "$what: expected the line 'RankDeviation R (beyond chance +0.0000, heads z nan)  Correlation C (chance X, beyond +0.0000, z nan)' (no heads: no head terms)"
            grep -qE '^reward -?[0-9.]+ = -?[0-9.]+ - 0.1 x \+0\.0000 - 0.1 x \+0\.0000 \(the terms beyond chance\)$' "$tmp/out" ||
                fail "$what: expected the line 'reward W = A - 0.1 x +0.0000 - 0.1 x +0.0000 (the terms beyond chance)'"
            grep -qF "wrote $scores" "$tmp/out" || fail "$what: expected 'wrote $scores'"
        fi
    done
    pass "$np rank(s)$([[ $np == 1 ]] && echo ' (no mpirun, default output FILE.scores.h5)'): exit 0, nothing on stderr, mha --json, grassmann table on a $(grid_of "$np") grid"
done

pycheck "scores on 1, 2 and 4 ranks" "$tmp" <<'EOF'
import json, sys
import h5py  # raw on purpose: the layout attnsweep score writes (its groups, datasets, attributes)
import numpy as np
from numcheck import close
tmp = sys.argv[1]
bad, worst = [], 0.0
def want(ok, what, expected, got):
    if not ok:
        bad.append(f"{what}: expected {expected}, got {got!r}")
def same(a, b, where):  # 1-rank value a, N-rank value b, to 1e-10 relative
    global worst
    if isinstance(a, dict):
        if sorted(a) != sorted(b):
            bad.append(f"{where}: keys: expected {sorted(a)}, got {sorted(b)}"); return
        for k in a: same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            bad.append(f"{where}: length: expected {len(a)}, got {len(b)}"); return
        for i, (x, y) in enumerate(zip(a, b)): same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        pass  # a NaN stored on both sides (cp_fit where no CP runs: the Grassmann kernel)
    elif isinstance(a, (int, float)) or a is None:  # None: JSON's NaN or Inf, never the same
        if isinstance(b, (int, float)) and close(b, a, rtol=1e-10):
            worst = max(worst, abs(a - b) / max(abs(a), 1e-300))
        else:
            bad.append(f"{where}: expected {a!r} (1 rank), got {b!r}")
    elif a != b:
        bad.append(f"{where}: expected {a!r}, got {b!r}")
def scores_of(path):  # every dataset and attribute under trials/000000/scores, as lists
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset): out[name] = obj[()].tolist()
            for k, v in obj.attrs.items(): out[f"{name}@{k}"] = v.tolist() if hasattr(v, "tolist") else v
        f["trials/000000/scores"].visititems(visit)
    return out

for variant in ("mha", "grassmann"):
    with h5py.File(f"{tmp}/{variant}.h5", "r") as src:
        old = src["summary"][0]
    for np_ in (1, 2, 4):
        h5 = f"{tmp}/{variant}.np{np_}.scores.h5"
        with h5py.File(h5, "r") as f:
            want(f.attrs.get("sweep") == "score", f"{h5}: root attribute sweep", "score", f.attrs.get("sweep"))
            for obj in ("trials/000000/scores/layer1", "trials/000000/weights/layer1", "trials/000000/curves"):
                want(obj in f, f"{h5}: {obj}", "present", "missing")
            want(len(f["summary"]) == 1, f"{h5}: /summary rows", 1, len(f["summary"]))
            row = f["summary"][0]
            for c in ("val_accuracy", "test_accuracy", "test_loss", "rank_deviation", "correlation", "reward",
                      "rank_deviation_excess", "correlation_excess", "correlation_z", "eff_rank_z"):
                want(close(row[c], old[c], rtol=1e-10, atol=1e-10) or (np.isnan(row[c]) and np.isnan(old[c])),
                     f"{h5}: /summary {c} against the trial file's", float(old[c]), float(row[c]))
            if variant == "mha":
                d = json.load(open(f"{tmp}/mha.np{np_}.json"))
                want(d.get("ranks") == np_, f"mha.np{np_}.json ranks", np_, d.get("ranks"))
                want(len(d.get("layers", [])) == 2, f"mha.np{np_}.json layers", 2, len(d.get("layers", [])))
                for c in ("reward", "rank_deviation", "correlation", "rank_deviation_excess", "correlation_excess",
                          "correlation_z", "eff_rank_z"):
                    want(close(row[c], d[c], rtol=1e-12, atol=1e-12), f"{h5}: /summary {c}",
                         f"the JSON's {d[c]!r}", float(row[c]))
                for k, layer in enumerate(d.get("layers", [])):
                    eff = f[f"trials/000000/scores/layer{k}"].attrs["eff_rank"]
                    # cJSON prints 15 digits when they read back within about 1 ulp: 1e-14
                    want(close(layer["eff_rank"], eff, rtol=1e-14),
                         f"{h5}: scores/layer{k} eff_rank", layer["eff_rank"], list(eff))
    if variant == "mha":
        ref = json.load(open(f"{tmp}/mha.np1.json"))
        for np_ in (2, 4):
            got = json.load(open(f"{tmp}/mha.np{np_}.json"))
            same(ref["layers"], got["layers"], f"mha --json on {np_} ranks: layers")
            for k in ("rank_deviation", "correlation", "reward", "rank_deviation_excess", "correlation_excess"):
                same(ref[k], got[k], f"mha --json on {np_} ranks: {k}")
    ref = scores_of(f"{tmp}/{variant}.np1.scores.h5")
    for np_ in (2, 4):
        same(ref, scores_of(f"{tmp}/{variant}.np{np_}.scores.h5"), f"{variant} scores/ on {np_} ranks")
print("\n".join(bad) if bad else f"max relative difference {worst:.1e}")
sys.exit(1 if bad else 0)
EOF
pass "every per-layer number on 2 and 4 ranks equals 1 rank to 1e-10 relative (mha --json, grassmann scores/; $(tail -1 "$tmp/check")); each file's /summary = JSON = training's reward"

# ---------------------------------------------------------------------------
echo "== 3. --beta, --gamma, --modes, --ideal-ranks: the reward as the formula says  [$((SECONDS - start)) s]"
# Recomputed from the JSON's per-layer eff_rank and correlation and the tensor's dims
# (r_max of mode n = min(dims[n], product of the others); for the heads mode also the
# length of head_sv): RankDeviation = mean over layers and chosen modes of
# |eff_rank - min(ideal, r_max)| / r_max (ideal: r_max by default), Correlation = mean of
# the layers' correlation; beyond chance: the heads mode's term less |eff_rank_heads_chance
# - ideal| / r_max, the other modes' as measured, Correlation less correlation_chance, and
# none of a mixing (Grassmann) layer's head terms; reward = val_accuracy - beta RD beyond
# chance - gamma Correlation beyond chance, all to 1e-12; the -o file's /summary holds the
# same reward.
leaks=0  # the code paths of section 2 (see the top)
ncase=0
: >"$tmp/cases"
reward_case() {  # reward_case VARIANT BETA GAMMA MODES IDEAL -- ARGS...
    local variant=$1 beta=$2 gamma=$3 modes=$4 ideal=$5
    shift 6
    ncase=$((ncase + 1))
    run score "$tmp/$variant.h5" --json -o "$tmp/case$ncase.h5" "$@"
    expect_rc 0 "score $variant.h5 $*"
    cp "$tmp/out" "$tmp/case$ncase.json"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant ${*:-(defaults)}" "$tmp/$variant.h5" "$tmp/case$ncase" \
        "$beta" "$gamma" "$modes" "$ideal" >>"$tmp/cases"
}
reward_case mha 0.1 0.1 heads "" --
reward_case mha 0.5 0.25 heads "" -- --beta 0.5 --gamma 0.25
reward_case mha 0 0 heads "" -- --beta 0 --gamma 0
reward_case mha 0.1 0.1 heads,src_dim heads=1,src_dim=4 -- --modes heads,src_dim --ideal-ranks heads=1,src_dim=4
reward_case mha 2 0.1 heads,dest_dim,src_dim,roles dest_dim=3.5 -- --modes 0,1,2,3 --ideal-ranks dest_dim=3.5 --beta 2
reward_case mha 0.1 0.1 heads heads=100 -- --ideal-ranks heads=100  # above r_max: clipped to it
reward_case grassmann 0.3 0.7 src_dim,roles roles=1 -- --modes=src_dim,roles --ideal-ranks=roles=1 --beta=0.3 --gamma=0.7
reward_case mha 0.1 0.1 heads,model_dim model_dim=4 -- --tensor parameters --modes heads,model_dim --ideal-ranks model_dim=4
pycheck "reward options" "$tmp/cases" <<'EOF'
import json, sys
import h5py  # raw on purpose: the layout attnsweep score writes (its groups, datasets, attributes)
import numpy as np
from numcheck import close
from attnsweep.results import Results
bad = []
for line in open(sys.argv[1]):
    what, trial, case, beta, gamma, modes, ideal = line.rstrip("\n").split("\t")
    beta, gamma = float(beta), float(gamma)
    d = json.load(open(case + ".json"))
    names = (["heads", "dest_dim", "src_dim", "roles"] if d["tensor"] == "function" else
             ["heads", "head_dim", "model_dim", "roles"])
    modes = [names.index(m) for m in modes.split(",")]
    ideal = {names.index(k): float(v) for k, v in (p.split("=") for p in ideal.split(",") if p)}
    acc = float(Results(trial).summary.val_accuracy[0])
    with h5py.File(case + ".h5", "r") as f:
        dims = list(f["trials/000000/scores/layer0"].attrs["dims"])
        spec = json.loads(f["trials/000000"].attrs["reward_spec"])
    if spec["tensor"] != d["tensor"] or sorted(spec["modes"]) != sorted(names[n] for n in modes):
        bad.append(f"{what}: reward_spec {spec}: expected tensor {d['tensor']} and modes {[names[n] for n in modes]}")
    size = int(np.prod(dims))
    rmax = [min(dims[n], size // dims[n]) for n in range(4)]
    terms, excess, corr_excess = [], [], []
    for layer in d["layers"]:
        if len(layer["head_sv"]) != rmax[0]:
            bad.append(f"{what}: head_sv: expected {rmax[0]} values (r_max of the heads mode), got {len(layer['head_sv'])}")
        heads = not layer["mixing"]
        for n in modes:
            r_ideal = min(ideal.get(n, rmax[n]), rmax[n])
            terms.append(abs(layer["eff_rank"][n] - r_ideal) / rmax[n])
            if n > 0:
                excess.append(terms[-1])
            else:
                excess.append(terms[-1] - abs(layer["eff_rank_heads_chance"] - r_ideal) / rmax[n] if heads else 0.0)
        corr_excess.append(layer["correlation"] - layer["correlation_chance"] if heads else 0.0)
    rd, rdx = float(np.mean(terms)), float(np.mean(excess))
    corr, cx = float(np.mean([layer["correlation"] for layer in d["layers"]])), float(np.mean(corr_excess))
    reward = acc - beta * rdx - gamma * cx
    problems = []
    for k, want in (("rank_deviation", rd), ("correlation", corr), ("rank_deviation_excess", rdx),
                    ("correlation_excess", cx), ("reward", reward)):
        if not close(d[k], want, rtol=1e-12, atol=1e-12):
            problems.append(f"{what}: {k}: expected {want!r} from the formula, got {d[k]!r}")
    with h5py.File(case + ".h5", "r") as f:
        got = float(f["summary"][0]["reward"])
    if not close(got, reward, rtol=1e-12, atol=1e-12):
        problems.append(f"{what}: -o file /summary reward: expected {reward!r}, got {got!r}")
    if beta == 0 and gamma == 0 and d["reward"] != acc:
        problems.append(f"{what}: reward: expected the val_accuracy {acc!r} exactly, got {d['reward']!r}")
    bad += problems
    if not problems:
        print(f"ok   {what}: RankDeviation {rd:.6f} (beyond chance {rdx:+.6f}), Correlation {corr:.6f} (beyond {cx:+.6f}), "
              f"reward {reward:.6f} (val_accuracy {acc:.4f})")
if bad:
    print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
cat "$tmp/check"
checks=$((checks + ncase))

# ---------------------------------------------------------------------------
echo "== 4. a safetensors checkpoint  [$((SECONDS - start)) s]"
leaks=1
"$py" "$here/make_safetensors.py" "$tmp/st"
# bert_f16 has no config.json: the heads come from --heads.
model=$tmp/st/bert_f16/model.safetensors
run score "$model" --heads 4
expect_rc 0 "score bert_f16 --heads 4"
expect_quiet_stderr "score bert_f16 --heads 4"
want_first="(BERT, 4 heads; post-LN: query bias in the QK form, writes centred): 2 layers, function tensor [heads 4, dest_dim 33, src_dim 33, roles 2], on a 1 x 1 grid"
grep -qF "$want_first" "$tmp/out" || fail "score bert_f16: expected '$want_first', got '$(head -1 "$tmp/out")'"
grep -qE '^layer +numerical ranks +effective ranks +head corr +chance +z +heads z +tucker ranks +fit +cp rank +cp fit +time$' "$tmp/out" ||
    fail "score bert_f16: expected the table header line, got '$(sed -n 2p "$tmp/out")'"
[[ $(grep -cE '^ +[01]  [0-9]+ [0-9]+ [0-9]+ [0-9]+ ' "$tmp/out") == 2 ]] ||
    fail "score bert_f16: expected two layer rows"
grep -qE '^RankDeviation [0-9.]+ \(beyond chance [-+][0-9.]+, heads z -?[0-9.]+\)  Correlation [0-9.]+ \(chance [0-9.]+, beyond [-+][0-9.]+, z -?[0-9.]+\)$' "$tmp/out" ||
    fail "score bert_f16: expected 'RankDeviation X (beyond chance ..., heads z ...)  Correlation Y (chance, beyond, z)' and no reward, got '$(grep RankDeviation "$tmp/out")'"
! grep -q '^reward' "$tmp/out" || fail "score bert_f16: a checkpoint has no val_accuracy, so no reward line"
grep -qF "wrote $tmp/st/bert_f16/model.scores.h5" "$tmp/out" || fail "score bert_f16: expected 'wrote .../model.scores.h5'"
pass "bert_f16 --heads 4: a table of 2 layers, no reward line, wrote model.scores.h5"
cp "$tmp/st/bert_f16/model.scores.h5" "$tmp/bert_table.h5"
run score "$model" --heads 4 --json
expect_rc 0 "score bert_f16 --heads 4 --json"
pycheck "bert_f16 scores file" "$tmp/out" "$tmp/st/bert_f16/model.scores.h5" "$tmp/bert_table.h5" 2 \
    "bert.encoder.layer.{k}" <<'EOF'
import json, sys
import h5py  # raw on purpose: the layout attnsweep score writes (its groups, datasets, attributes)
import numpy as np
from numcheck import close
out, h5, h5_table, L, pattern = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
d = json.load(open(out))
bad = []
def want(ok, what, expected, got):
    if not ok:
        bad.append(f"{what}: expected {expected}, got {got!r}")
want("reward" in d and d["reward"] is None, "JSON reward", "null (a checkpoint has no val_accuracy)", d.get("reward"))
want(len(d["layers"]) == L, "JSON layers", L, len(d["layers"]))
for path in (h5, h5_table):
    with h5py.File(path, "r") as f:
        for a in ("rank_deviation", "correlation", "beta", "gamma", "source", "family"):
            want(a in f.attrs, f"{path}: root attribute {a}", "present", "missing")
        want("summary" not in f and "trials" not in f, f"{path}: no /summary or /trials", "absent", list(f))
        want(sorted(f["scores"]) == sorted(f"layer{k}" for k in range(L)), f"{path}: scores groups",
             [f"layer{k}" for k in range(L)], sorted(f["scores"]))
        if bad:
            break
        want(close(f.attrs["rank_deviation"], d["rank_deviation"], atol=1e-12), f"{path}: rank_deviation",
             d["rank_deviation"], f.attrs["rank_deviation"])
        want(close(f.attrs["correlation"], d["correlation"], atol=1e-12), f"{path}: correlation", d["correlation"],
             f.attrs["correlation"])
        for k in range(L):
            g = f[f"scores/layer{k}"]
            name = g.attrs.get("name", "missing")
            want(name == pattern.format(k=k), f"{path}: scores/layer{k} attribute name", pattern.format(k=k), name)
            want(list(g.attrs["dims"]) == [4, 33, 33, 2], f"{path}: scores/layer{k} dims", [4, 33, 33, 2],
                 list(g.attrs["dims"]))
            want(g.attrs.get("tensor") == "function" and g.attrs.get("roles") == "QK,OV",
                 f"{path}: scores/layer{k} tensor and roles", "function, QK,OV",
                 (g.attrs.get("tensor"), g.attrs.get("roles")))
# RankDeviation from the JSON: heads mode, ideal = r_max = len(head_sv)
rd = np.mean([abs(l["eff_rank"][0] - len(l["head_sv"])) / len(l["head_sv"]) for l in d["layers"]])
want(close(d["rank_deviation"], rd, atol=1e-12), "JSON rank_deviation", f"mean |eff_rank[0] - 4| / 4 = {rd!r}",
     d["rank_deviation"])
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
pass "bert_f16 --json: reward null; model.scores.h5 has scores/layer0..1 named bert.encoder.layer.0..1, root rank_deviation/correlation equal to the JSON"

# llama: 12 layers named model.layers.K (config.json gives the heads): scores/layerK is layer K
run score "$tmp/st/llama/model.safetensors" --json -o "$tmp/llama.h5" --no-cp
expect_rc 0 "score llama"
pycheck "llama scores file" "$tmp/out" "$tmp/llama.h5" 12 "model.layers.{k}" <<'EOF'
import json, sys
import h5py  # raw on purpose: the layout attnsweep score writes (its groups, datasets, attributes)
out, h5, L, pattern = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = json.load(open(out))
bad = []
with h5py.File(h5, "r") as f:
    for k in range(L):
        name = f[f"scores/layer{k}"].attrs.get("name", "missing")
        if name != pattern.format(k=k):
            bad.append(f"scores/layer{k} name: expected {pattern.format(k=k)}, got {name!r}")
        if "cp_fits" in f[f"scores/layer{k}"].attrs:
            bad.append(f"scores/layer{k}: --no-cp: expected no cp_fits")
if d["reward"] is not None or len(d["layers"]) != L or any(l["cp_rank"] != 0 for l in d["layers"]):
    bad.append(f"JSON: expected reward null, {L} layers, cp_rank 0 each (--no-cp)")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
pass "llama (12 layers, config.json): scores/layer0..11 named model.layers.0..11 in order; --no-cp skips CP"

# The same checkpoint on 2 ranks gives the same numbers.
mpi 2 score "$model" --heads 4 --json -o "$tmp/bert2.h5"
expect_rc 0 "score bert_f16 on 2 ranks"
"$py" - "$tmp/out" "$tmp/st/bert_f16/model.scores.h5" >"$tmp/check" 2>&1 <<'EOF' || fail "bert_f16 on 2 ranks: $(cat "$tmp/check")"
import json, sys
import h5py  # raw on purpose: the layout attnsweep score writes (its groups, datasets, attributes)
from numcheck import close
d = json.load(open(sys.argv[1]))
with h5py.File(sys.argv[2]) as f:
    for k in ("rank_deviation", "correlation"):
        a, b = f.attrs[k], d[k]
        assert close(b, a, rtol=1e-10), f"{k}: expected {a!r} (1 rank), got {b!r} (2 ranks)"
EOF
pass "bert_f16 on 2 ranks: rank_deviation and correlation equal 1 rank's to 1e-10"

# The parameter tensor of the same checkpoint, and of one without output projections.
for m in bert_f16 bert_no_out; do
    run score "$tmp/st/$m/model.safetensors" --heads 4 --tensor parameters --json -o "$tmp/$m.params.h5"
    expect_rc 0 "score $m --tensor parameters"
    "$py" - "$tmp/out" "$tmp/$m.params.h5" >"$tmp/check" 2>&1 <<'EOF' || fail "$m --tensor parameters: $(cat "$tmp/check")"
import json, sys
import h5py  # raw on purpose: the layout attnsweep score writes (its groups, datasets, attributes)
d = json.load(open(sys.argv[1]))
assert d["tensor"] == "parameters", d["tensor"]
with h5py.File(sys.argv[2]) as f:
    spec = json.loads(f.attrs["reward_spec"])
    assert spec["tensor"] == "parameters" and list(spec["modes"]) == ["heads"], spec
    g = f["scores/layer0"]
    assert list(g.attrs["dims"]) == [4, 8, 33, 3] and g.attrs["roles"] == "Q,K,V", (g.attrs["dims"], g.attrs["roles"])
    assert g.attrs["modes"] == "heads,head_dim,model_dim,roles", g.attrs["modes"]
EOF
done
pass "--tensor parameters: [4, 8, 33, 3] (d_model + 1: the biases) with roles Q,K,V, recorded in reward_spec (also for a checkpoint without output projections)"

# ---------------------------------------------------------------------------
echo "== 5. bad input: exit 2, one line 'attnsweep: ...' on stderr, nothing written  [$((SECONDS - start)) s]"
leaks=0  # error paths end in exit(2); see the top
echo "this is a plain text file, not a model" >"$tmp/notes.txt"
mkdir "$tmp/adir.h5"
"$py" -c 'import h5py, sys; h5py.File(sys.argv[1], "w")["x"] = [1, 2]' "$tmp/other.h5"
"$py" -c 'import h5py, shutil, sys; shutil.copy(sys.argv[1], sys.argv[2]); h5py.File(sys.argv[2], "a").attrs["format_version"] = 2' \
    "$tmp/mha.h5" "$tmp/v2.h5"

# bad_input WHAT KEY_PHRASE ARGS...: `attnsweep score ARGS...` (without mpirun) must exit 2
# with one stderr line containing KEY_PHRASE (grep -F), print nothing on stdout and
# leave neither $tmp/bad.h5 nor a temporary file of it (the -o of most cases).
bad_input() {
    local what=$1 phrase=$2
    shift 2
    expect_bad_input "$what" "$phrase" "$tmp/bad.h5" score "$@"
}
bad_input "missing file" "attnsweep: score: $tmp/nothere.h5: No such file or directory" \
    "$tmp/nothere.h5" -o "$tmp/bad.h5"
bad_input "text file" "notes.txt: neither an HDF5 results file nor a safetensors file" \
    "$tmp/notes.txt" -o "$tmp/bad.h5"
bad_input "truncated safetensors" "lie outside the data buffer of 758 bytes (truncated file?)" \
    "$tmp/st/bad/truncated.safetensors" --heads 2 -o "$tmp/bad.h5"
bad_input "HDF5 file that is not a results file" "other.h5: not an attnsweep results file" \
    "$tmp/other.h5" -o "$tmp/bad.h5"
bad_input "results format 2 (before the validation split)" \
    "attnsweep: score: $tmp/v2.h5: results format 2, this attnsweep reads $(results_format)" "$tmp/v2.h5" -o "$tmp/bad.h5"
bad_input "no such --trial" "attnsweep: score: $tmp/mha.h5: no trial 3" "$tmp/mha.h5" --trial 3 -o "$tmp/bad.h5"
bad_input "--trial not an integer" "--trial must be an integer in [0, 2147483647], got '1.5'" \
    "$tmp/mha.h5" --trial 1.5 -o "$tmp/bad.h5"
bad_input "unknown option" "attnsweep: score: unknown option '--betta' (see attnsweep score --help)" \
    "$tmp/mha.h5" --betta 0.2 -o "$tmp/bad.h5"
bad_input "unknown mode in --modes" "unknown mode 'heds' of the function tensor (allowed: heads, dest_dim, src_dim, roles or 0..3)" \
    "$tmp/mha.h5" --modes heads,heds -o "$tmp/bad.h5"
bad_input "a parameter mode for the function tensor" "unknown mode 'model_dim' of the function tensor" \
    "$tmp/mha.h5" --ideal-ranks model_dim=3 -o "$tmp/bad.h5"
bad_input "unknown mode in --ideal-ranks" "unknown mode 'model' of the parameters tensor (allowed: heads, head_dim, model_dim, roles or 0..3)" \
    "$tmp/mha.h5" --ideal-ranks model=3 --tensor parameters -o "$tmp/bad.h5"
bad_input "unknown --tensor" "--tensor must be function or parameters, got 'weights'" \
    "$tmp/mha.h5" --tensor weights -o "$tmp/bad.h5"
bad_input "empty --modes" "--modes needs at least one mode" "$tmp/mha.h5" --modes , -o "$tmp/bad.h5"
bad_input "--ideal-ranks without =" "--ideal-ranks takes MODE=RANK pairs, got 'heads'" \
    "$tmp/mha.h5" --ideal-ranks heads -o "$tmp/bad.h5"
bad_input "bad --beta value" "--beta must be a number in [0, 1e+06], got 'abc'" "$tmp/mha.h5" --beta abc -o "$tmp/bad.h5"
bad_input "negative --gamma" "--gamma must be a number in [0, 1e+06], got '-0.1'" \
    "$tmp/mha.h5" --gamma=-0.1 -o "$tmp/bad.h5"
bad_input "--beta without a value" "attnsweep: score: --beta needs a value" "$tmp/mha.h5" -o "$tmp/bad.h5" --beta
bad_input "flag given a value" "attnsweep: score: --json takes no value" "$tmp/mha.h5" --json=1 -o "$tmp/bad.h5"
bad_input "no file argument" "attnsweep: score: which file?" --json
bad_input "two files" "one input file only" "$tmp/mha.h5" "$tmp/grassmann.h5" -o "$tmp/bad.h5"
bad_input "safetensors without heads" "number of heads unknown" "$model" -o "$tmp/bad.h5"
bad_input "function view of a checkpoint without output projections" \
    "has no output projections, which the function-level tensor needs; score its parameter tensor with --tensor parameters" \
    "$tmp/st/bert_no_out/model.safetensors" --heads 4 -o "$tmp/bad.h5"
"$py" - "$tmp" <<'PY'
import shutil, struct, sys, h5py, numpy  # raw on purpose: it damages a file for score to refuse
tmp = sys.argv[1]
shutil.copy(f"{tmp}/mha.h5", f"{tmp}/nan.h5")  # as a diverged trial's weights are
with h5py.File(f"{tmp}/nan.h5", "a") as f:
    w = f["trials/000000/weights/layer1"]
    a = w[()]
    a.flat[5] = numpy.nan
    w[...] = a
shutil.copytree(f"{tmp}/st/bert_f32", f"{tmp}/inf")  # every tensor F32, each value made +inf
data = bytearray(open(f"{tmp}/inf/model.safetensors", "rb").read())
n = struct.unpack_from("<Q", data)[0]
data[8 + n:] = struct.pack("<f", float("inf")) * ((len(data) - 8 - n) // 4)
open(f"{tmp}/inf/model.safetensors", "wb").write(data)
PY
bad_input "NaN in a trial's weights" \
    "nan.h5: trial 0 (status ok): layer 1's attention weights hold NaN (a diverged run?): nothing to score" \
    "$tmp/nan.h5" -o "$tmp/bad.h5"
bad_input "an infinity in a checkpoint's weights" 'tensor "bert.encoder.layer.0.attention.self.query.weight" has +Inf at [0, 0]' \
    "$tmp/inf/model.safetensors" -o "$tmp/bad.h5"
bad_input "-o in a missing directory" "attnsweep: score: cannot write /nonexistent/dir/x.h5: No such file or directory" \
    "$tmp/mha.h5" -o /nonexistent/dir/x.h5
bad_input "-o names a directory" "cannot write $tmp/adir.h5: it is a directory" "$tmp/mha.h5" -o "$tmp/adir.h5"
no_partial "$tmp/adir.h5" || fail "-o names a directory: left adir.h5.partial"
cp "$tmp/mha.h5" "$tmp/keep.h5"
bad_input "-o naming the input" "-o $tmp/./keep.h5 is the input file" "$tmp/keep.h5" -o "$tmp/./keep.h5"
cmp -s "$tmp/mha.h5" "$tmp/keep.h5" || fail "-o naming the input: expected the input file unchanged"

# Under mpirun a bad input still ends with exit code 2 and no rank waits for the others
# forever; every rank names the problem (their lines may interleave: die() writes the
# prefix and the message separately) and Open MPI adds its own lines.
mpi 2 score "$tmp/nothere.h5" -o "$tmp/bad.h5"
expect_rc 2 "mpirun -np 2 score of a missing file"
grep -qF "$tmp/nothere.h5: No such file or directory" "$tmp/err" ||
    fail "mpirun -np 2 score of a missing file: expected '...nothere.h5: No such file or directory' on stderr"
[[ ! -e $tmp/bad.h5 ]] || fail "mpirun -np 2 score of a missing file: expected no bad.h5"
pass "mpirun -np 2, missing file: exit 2, the reason on stderr"

# ---------------------------------------------------------------------------
echo "== 6. --help  [$((SECONDS - start)) s]"
run score --help
expect_rc 0 "score --help"
expect_quiet_stderr "score --help"
for opt in --trial --heads --tensor --beta --modes --ideal-ranks --energy --cp-rank-max --json; do
    grep -qF -- "$opt" "$tmp/out" || fail "score --help: expected $opt in the option list"
done
pass "score --help exits 0 and lists every option"

# ---------------------------------------------------------------------------
left=$(find "$tmp" -name '*.partial*')
[[ -z $left ]] || fail "expected no *.partial files, got: $left"
echo "PASS: $checks checks of attnsweep score in $((SECONDS - start)) s"
