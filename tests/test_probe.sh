#!/usr/bin/env bash
# End-to-end tests of `attnsweep probe` and of the parameter arena every trial stores:
#   1. a tiny Fashion-MNIST mha trial: params/ holds the whole model (numpy rebuilds the
#      forward pass from it alone and gets the stored val_accuracy); its probe: the CKA
#      between layers and between heads against numpy's linear CKA on numpy's own
#      activations, the attention maps against numpy's softmax, σ = 0 of the noise table
#      equal to the stored val_accuracy exactly and σ = 1 below it, the orthogonal
#      matrix orthogonal, the invariants table's original column equal to the trial's
#      stored scores, its transformed column equal to numpy's correlation of the
#      transformed model's stored weights, change and stays as defined; the per-head
#      ablation: its clean pass the stored val metrics exactly, each head's and each
#      layer's ablated loss against numpy's forward with that W_O block zeroed, every
#      head of a layer moving the loss, the redundancy against numpy's head Gram of the
#      stored weights and Spearman's rho against scipy's; the file still reads
#      (attnsweep report) and a second probe replaces the first;
#   2. a tiny charlm linear-attention trial: noise on the embeddings (σ = 0 exact),
#      causal maps whose rows sum to 1, its ablation table, no transform (images only);
#      a grassmann trial: the layers' CKA, no heads' outputs, maps or ablation;
#   3. bad input: a file from before params were stored, a transform on a token task,
#      a missing trial, an unknown option: exit 2, one line, the file untouched; --help.
# Usage: bash tests/test_probe.sh /path/to/attnsweep (from the repository root; ctest
# runs it so). Models are tiny (d_model 32 or 16, 60 or 20 steps): seconds, also under
# AddressSanitizer.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
leaks=1

# pycheck (lib.sh), then count the check
check() {
    pycheck "$@"
    pass "$1"
}

echo "== 1. fashion_mnist mha: params, CKA, noise, maps, the orthogonal transform  [$((SECONDS - start)) s]"
run train --steps 60 --d-model 32 --heads 4 --layers 2 --batch 64 --eval-batches 4 --quiet -o "$tmp/t.h5"
expect_rc 0 "train -o"
run probe "$tmp/t.h5" --cka-examples 100 --seed-control --quiet
expect_rc 0 "probe"
grep -q "^linear CKA between layers" "$tmp/out" || fail "probe: no CKA table on stdout"
grep -q "^val_accuracy  *all" "$tmp/out" || fail "probe: no invariants table on stdout"
grep -q "^per-head ablation (the validation split" "$tmp/out" || fail "probe: no ablation table on stdout"
grep -q "^    1  all " "$tmp/out" || fail "probe: no every-head row of layer 1 on stdout"
grep -q "^Spearman rho(redundancy, dloss) over the heads: layer 0 .* pooled (8 heads)" "$tmp/out" ||
    fail "probe: no rank correlation on stdout"
check "probe of the fashion_mnist trial against numpy" "$tmp/t.h5" <<'EOF'
import gzip, json, sys
import numpy as np
from numcheck import close
from attnsweep.results import Results
bad = []
def want(ok, what, expected, got):
    if not ok:
        bad.append(f"{what}: expected {expected}, got {got}")

rs = Results(sys.argv[1])
t = rs.trial(0)  # its probe, scores and weights groups, read below as stored
cfg = rs.trial_attrs(0)["config"]
row = rs.summary.iloc[0]
tensors = [(name, v.astype(np.float64)) for name, v in rs.params(0)]
n_params = sum(len(v) for _, v in tensors)
want(n_params == row["n_params"], "params size", row["n_params"], n_params)
it = iter(tensors)
def take(name):
    got, v = next(it)
    assert got == name, (got, name)
    return v
C, H, L, F = cfg["d_model"], cfg["heads"], cfg["layers"], cfg["d_model"] * cfg["mlp_ratio"]
hs = C // H
P = {"patch_w": take("patch_w").reshape(C, 49), "patch_b": take("patch_b"), "cls": take("cls"),
     "wpe": take("wpe").reshape(17, C), "blocks": []}
for l in range(L):
    b = {}
    for name, shape in (("ln1_w", (C,)), ("ln1_b", (C,)), ("qkv_w", (3 * C, C)), ("qkv_b", (3 * C,)),
                        ("proj_w", (C, C)), ("proj_b", (C,)), ("ln2_w", (C,)), ("ln2_b", (C,)), ("fc_w", (F, C)),
                        ("fc_b", (F,)), ("fcproj_w", (C, F)), ("fcproj_b", (C,))):
        b[name] = take(name).reshape(shape)
    P["blocks"].append(b)
for name, shape in (("lnf_w", (C,)), ("lnf_b", (C,)), ("head_w", (10, C)), ("head_b", (10,))):
    P[name] = take(name).reshape(shape)

# The validation split: the last 5000 images of train-images, normalised as the C code does.
with gzip.open("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") as g:
    img = np.frombuffer(g.read(), np.uint8, offset=16).reshape(-1, 28, 28)[-5000:]
with gzip.open("/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz") as g:
    lab = np.frombuffer(g.read(), np.uint8, offset=8)[-5000:]
lut = ((np.arange(256, dtype=np.float32) / np.float32(255) - np.float32(0.2860)) / np.float32(0.3530)).astype(np.float64)

def ln(x, w, b):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + b
def forward(x, drop=None):  # x: (n, 28, 28) normalised; returns logits, x0, block outputs, heads' outputs, maps
    n = len(x)                 # drop: (layer, W_O columns zeroed) or None
    patches = x.reshape(n, 4, 7, 4, 7).transpose(0, 1, 3, 2, 4).reshape(n, 16, 49)
    h = np.concatenate([np.broadcast_to(P["cls"], (n, 1, C)), patches @ P["patch_w"].T + P["patch_b"]], 1) + P["wpe"]
    x0, outs, heads, maps = h, [], [], []
    for b in P["blocks"]:
        a = ln(h, b["ln1_w"], b["ln1_b"]) @ b["qkv_w"].T + b["qkv_b"]
        q, k, v = (a[..., i * C:(i + 1) * C].reshape(n, 17, H, hs).transpose(0, 2, 1, 3) for i in range(3))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs)
        p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
        y = (p @ v).transpose(0, 2, 1, 3).reshape(n, 17, C)
        Wo = b["proj_w"].copy()
        if drop and drop[0] == len(outs): Wo[:, drop[1]] = 0
        h = h + y @ Wo.T + b["proj_b"]
        u = ln(h, b["ln2_w"], b["ln2_b"]) @ b["fc_w"].T + b["fc_b"]
        u = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))
        h = h + u @ b["fcproj_w"].T + b["fcproj_b"]
        outs.append(h); heads.append(y); maps.append(p)
    logits = ln(h, P["lnf_w"], P["lnf_b"])[:, 0] @ P["head_w"].T + P["head_b"]
    return logits, x0, outs, heads, maps

# The stored parameters are the whole model: the evaluated validation examples (4 batches
# of 64) come out with the stored val_accuracy (an argmax tie may differ by one example).
n_eval = cfg["eval_batches"] * cfg["batch"]
logits, x0, outs, heads, maps = forward(lut[img[:n_eval]])
acc = (logits.argmax(1) == lab[:n_eval]).mean()
want(abs(acc - row["val_accuracy"]) <= 1.0 / n_eval, "numpy's accuracy from params", row["val_accuracy"], acc)

pr = t["probe"]
def cka(X, Y):  # linear CKA of Kornblith et al. 2019, on column-centred rows
    X = X - X.mean(0); Y = Y - Y.mean(0)
    return np.linalg.norm(Y.T @ X) ** 2 / (np.linalg.norm(X.T @ X) * np.linalg.norm(Y.T @ Y))
n = int(pr.attrs["examples"])
want(n == 100 and pr.attrs["token_rows"] == 100 * 17, "examples, token_rows", (100, 1700),
     (n, pr.attrs["token_rows"]))
reps = [r[:n].reshape(-1, C) for r in [x0] + outs]
want_l = np.array([[cka(a, b) for b in reps] for a in reps])
want(close(pr["cka_layers"][()], want_l, atol=1e-4), "cka_layers against numpy", want_l, pr["cka_layers"][()])
want_h = np.array([[[cka(heads[l][:n, :, g * hs:(g + 1) * hs].reshape(-1, hs), heads[l][:n, :, k * hs:(k + 1) * hs].reshape(-1, hs))
                     for k in range(H)] for g in range(H)] for l in range(L)])
want(close(pr["cka_heads"][()], want_h, atol=1e-4), "cka_heads against numpy", want_h, pr["cka_heads"][()])
want(close(np.diagonal(pr["cka_heads"][()], axis1=1, axis2=2), 1.0, atol=1e-9), "cka_heads diagonal", 1, "not 1")

att = pr["attention"][()]
want(att.shape == (4, L, H, 17, 17), "attention shape", (4, L, H, 17, 17), att.shape)
want_m = np.stack([np.stack([maps[l][e] for l in range(L)]) for e in range(4)])
want(close(att, want_m, atol=1e-5), "attention maps against numpy", "within 1e-5", np.abs(att - want_m).max())

noise = pr["noise"][()]
want(list(noise["sigma"]) == [0, 0.1, 0.25, 0.5, 1], "noise sigmas", [0, 0.1, 0.25, 0.5, 1], list(noise["sigma"]))
want(noise["val_accuracy"][0] == row["val_accuracy"] and noise["val_loss"][0] == row["val_loss"],
     "noise sigma 0 = the stored val_accuracy and val_loss exactly", (row["val_accuracy"], row["val_loss"]),
     (noise["val_accuracy"][0], noise["val_loss"][0]))
want(noise["val_accuracy"][-1] < noise["val_accuracy"][0] - 0.05, "noise sigma 1 well below sigma 0",
     f"< {noise['val_accuracy'][0] - 0.05}", noise["val_accuracy"][-1])

tr = pr["transform"]
want(tr.attrs["kind"] == "patch" and tr.attrs["tolerance"] == 0.1, "transform kind, tolerance", ("patch", 0.1),
     (tr.attrs["kind"], tr.attrs["tolerance"]))
Q = tr["matrix"][()].astype(np.float64)
want(Q.shape == (49, 49) and close(Q @ Q.T, np.eye(49), atol=1e-5), "Q orthogonal", "Q Q^T = I", Q.shape)
tab = tr["invariants"][()]
names = [x.decode() for x in tab["name"]]
def head_gram(W, O):  # the function-level head Gram of one layer from its stored weights (QK weighted by |C_h|/s)
    W, O = W.astype(np.float64), O.astype(np.float64)
    Hh, dk, D = W.shape[:3]
    B = np.einsum("hki,hkj->hij", W[..., 0], W[..., 1]) / np.sqrt(dk)
    Cm = np.einsum("ihk,hkj->hij", O.reshape(D, Hh, dk), W[..., 2])
    w2 = (Cm ** 2).sum(axis=(1, 2)); B = B * np.sqrt(w2 / w2.mean())[:, None, None]
    rows = np.stack([B, Cm], -1).reshape(Hh, -1)
    return rows @ rows.T
def corr(W, O):  # function-level head correlation of one layer
    G = head_gram(W, O); Hh = len(G); nr = np.sqrt(np.diag(G))
    return ((np.abs(G) / np.outer(nr, nr)).sum() - Hh) / (Hh * (Hh - 1))
def value(name, layer, col):
    k = [i for i in range(len(tab)) if names[i] == name and tab["layer"][i] == layer]
    return tab[col][k[0]] if k else np.nan
for m in ("val_accuracy", "rank_deviation", "correlation", "reward"):
    want(close(value(m, -1, "original"), row[m], rtol=1e-9), f"table original {m} = /summary", row[m], value(m, -1, "original"))
tt = tr["transformed"]
for m in ("val_accuracy", "rank_deviation", "correlation", "reward"):
    want(close(value(m, -1, "transformed"), tt.attrs[m], rtol=1e-12), f"table transformed {m} = transformed/ attrs",
         tt.attrs[m], value(m, -1, "transformed"))
for l in range(L):
    s = t[f"scores/layer{l}"].attrs
    for m, v in (("correlation", s["correlation"]), ("eff_rank_heads", s["eff_rank"][0]),
                 ("num_rank_src_dim", s["num_rank"][2]), ("tucker_fit", s["tucker_fit"]), ("cp_rank", s["cp_rank"])):
        want(close(value(m, l, "original"), v, rtol=1e-9), f"table original layer {l} {m} = scores/layer{l}", v,
             value(m, l, "original"))
    c_np = corr(tt[f"weights/layer{l}"][()], tt[f"weights_out/layer{l}"][()])
    want(close(value("correlation", l, "transformed"), c_np, rtol=1e-6), f"table transformed layer {l} correlation against numpy",
         c_np, value("correlation", l, "transformed"))
    c_np = corr(tr[f"control/weights/layer{l}"][()], tr[f"control/weights_out/layer{l}"][()])
    want(close(value("correlation", l, "control"), c_np, rtol=1e-6), f"table control layer {l} correlation against numpy",
         c_np, value("correlation", l, "control"))
want(json.loads(tt.attrs["config"]) == cfg and json.loads(tr["control"].attrs["config"])["seed"] == cfg["seed"] + 1,
     "transformed config = the trial's, control's seed + 1", cfg["seed"] + 1, json.loads(tr["control"].attrs["config"])["seed"])
ch = (tab["transformed"] - tab["original"]) / np.abs(tab["original"])
finite = tab["original"] != 0
want(close(tab["change"][finite], ch[finite], rtol=1e-12), "change = (transformed - original) / |original|", ch, tab["change"])
want(list(tab["stays"]) == list((np.abs(tab["change"]) <= 0.1).astype(int)), "stays = |change| <= tolerance",
     (np.abs(tab["change"]) <= 0.1).astype(int), tab["stays"])
want(len(tab) == 4 + 12 * L, "table rows", 4 + 12 * L, len(tab))

from scipy.stats import spearmanr
ab = pr["ablation"]
for k, shape in (("loss", (L, H)), ("accuracy", (L, H)), ("delta_loss", (L, H)), ("redundancy", (L, H)),
                 ("layer_loss", (L,)), ("layer_accuracy", (L,)), ("layer_delta_loss", (L,)), ("spearman", (L,))):
    want(ab[k].shape == shape, f"ablation/{k} shape", shape, ab[k].shape)
want(ab.attrs["clean_loss"] == row["val_loss"] and ab.attrs["clean_accuracy"] == row["val_accuracy"],
     "ablation clean pass = the stored val_loss, val_accuracy exactly", (row["val_loss"], row["val_accuracy"]),
     (ab.attrs["clean_loss"], ab.attrs["clean_accuracy"]))
want(close(ab["delta_loss"][()], ab["loss"][()] - ab.attrs["clean_loss"], rtol=1e-12), "delta_loss = loss - clean",
     ab["loss"][()] - ab.attrs["clean_loss"], ab["delta_loss"][()])
want((np.abs(ab["layer_delta_loss"][()]) > 1e-3).all(), "every head of a layer removed moves the loss", "|dloss| > 1e-3",
     ab["layer_delta_loss"][()])
def nll(logits):
    z = logits - logits.max(1, keepdims=True)
    return float((np.log(np.exp(z).sum(1)) - z[np.arange(n_eval), lab[:n_eval]]).mean())
want(close(ab.attrs["clean_loss"], nll(logits), atol=1e-4), "clean loss against numpy", nll(logits), ab.attrs["clean_loss"])
for l in range(L):
    for h in list(range(H)) + ["all"]:
        cols = np.arange(C) if h == "all" else np.arange(h * hs, (h + 1) * hs)
        lg = forward(lut[img[:n_eval]], (l, cols))[0]
        got = ab["layer_loss"][l] if h == "all" else ab["loss"][l, h]
        want(close(got, nll(lg), atol=1e-4), f"layer {l} head {h} ablated loss against numpy", nll(lg), got)
        got = ab["layer_accuracy"][l] if h == "all" else ab["accuracy"][l, h]
        acc_np = (lg.argmax(1) == lab[:n_eval]).mean()
        want(abs(got - acc_np) <= 1.0 / n_eval, f"layer {l} head {h} ablated accuracy against numpy", acc_np, got)
red = np.zeros((L, H))
for l in range(L):
    G = head_gram(t[f"weights/layer{l}"][()], t[f"weights_out/layer{l}"][()])
    cos = np.abs(G) / np.sqrt(np.outer(np.diag(G), np.diag(G)))
    np.fill_diagonal(cos, -1)
    red[l] = cos.max(1)
    rho = spearmanr(ab["redundancy"][l], ab["delta_loss"][l]).correlation
    want(close(ab["spearman"][l], rho, atol=1e-9), f"layer {l} spearman against scipy", rho, ab["spearman"][l])
want(close(ab["redundancy"][()], red, atol=1e-6), "redundancy against numpy's head Gram", red, ab["redundancy"][()])
rho = spearmanr(ab["redundancy"][()].ravel(), ab["delta_loss"][()].ravel()).correlation
want(close(ab.attrs["spearman_pooled"], rho, atol=1e-9), "pooled spearman against scipy", rho, ab.attrs["spearman_pooled"])
if bad:
    print("\n".join(bad)); sys.exit(1)
EOF
run report "$tmp/t.h5"
expect_rc 0 "report of the probed file"
"$py" "$here/../scripts/analyze.py" "$tmp/t.h5" -o "$tmp/plots" >"$tmp/out" 2>"$tmp/err" || fail "analyze.py of the probed file"
check "analyze.py plots the probes as stored" "$tmp/t.h5" "$tmp/plots" <<'EOF'
import json, os, sys
import numpy as np
from numcheck import close
from attnsweep.results import Results
p = Results(sys.argv[1]).probe(0)
figs = json.load(open(os.path.join(sys.argv[2], "plots.json")))["figures"]
bad = [f"{n}: not written" for n in ("probe_trial000000.png", "probe_attention_trial000000.png")
       if n not in figs or not os.path.getsize(os.path.join(sys.argv[2], n))]
if not bad:
    r = figs["probe_trial000000.png"]
    if not close(r["cka_layers"], p["cka_layers"][()]): bad.append("plots.json cka_layers differ from the file's")
    if not close(r["noise"]["val_accuracy"], p["noise"]["val_accuracy"]): bad.append("plots.json noise differs")
    if not close(r["transform"]["change"], p["transform/invariants"]["change"]): bad.append("plots.json change differs")
if bad: print("\n".join(bad)); sys.exit(1)
EOF
leaks=0  # the code paths below were leak-checked above (and leak checks are slow)
run probe "$tmp/t.h5" --transform none --maps 2 --sigma 0,2 --cka-examples 50 --quiet
expect_rc 0 "second probe"
check "a second probe replaces the first" "$tmp/t.h5" <<'EOF'
import sys
from attnsweep.results import Results
p = Results(sys.argv[1]).probe(0)
bad = []
if "transform" in p: bad.append("transform: expected gone after --transform none")
if p["attention"].shape[0] != 2: bad.append(f"attention: expected 2 maps, got {p['attention'].shape[0]}")
if list(p["noise"]["sigma"]) != [0, 2]: bad.append(f"noise sigma: expected [0, 2], got {list(p['noise']['sigma'])}")
if p.attrs["examples"] != 50: bad.append(f"examples: expected 50, got {p.attrs['examples']}")
if bad: print("\n".join(bad)); sys.exit(1)
EOF

echo "== 2. charlm linear: noise on the embeddings, causal maps; grassmann  [$((SECONDS - start)) s]"
run train --task charlm --attention linear --steps 20 --seq-len 16 --d-model 16 --heads 2 --layers 2 --batch 16 \
    --eval-batches 4 --quiet -o "$tmp/lm.h5"
expect_rc 0 "train charlm -o"
leaks=1  # noise on the embeddings, linear attention's maps: leak-checked once
run probe "$tmp/lm.h5" --cka-examples 64 --quiet
leaks=0
expect_rc 0 "probe charlm"
check "probe of the charlm trial" "$tmp/lm.h5" <<'EOF'
import sys
import numpy as np
from numcheck import close
from attnsweep.results import Results
rs = Results(sys.argv[1])
row, p = rs.summary.iloc[0], rs.probe(0)
bad = []
nz = p["noise"][()]
if not (nz["val_accuracy"][0] == row["val_accuracy"] and nz["val_loss"][0] == row["val_loss"]):
    bad.append(f"noise sigma 0: expected {row['val_accuracy']}, {row['val_loss']}, got {nz[0]}")
if not nz["val_loss"][-1] > nz["val_loss"][0]:
    bad.append(f"noise sigma 1: expected a loss above sigma 0's, got {nz['val_loss']}")
a = p["attention"][()]
if a.shape != (4, 2, 2, 16, 16): bad.append(f"attention shape: expected (4, 2, 2, 16, 16), got {a.shape}")
elif not (close(np.triu(a, 1), 0.0) and close(a.sum(-1), 1.0, atol=1e-5) and (a >= 0).all()):
    bad.append("attention: expected causal rows of non-negative weights summing to 1")
if "transform" in p: bad.append("transform: expected none for charlm")
ab = p["ablation"]
if ab["loss"].shape != (2, 2) or ab["layer_loss"].shape != (2,): bad.append(f"ablation shapes: {ab['loss'].shape}")
if not (ab.attrs["clean_loss"] == row["val_loss"] and ab.attrs["clean_accuracy"] == row["val_accuracy"]):
    bad.append(f"ablation clean pass: expected {row['val_loss']}, got {ab.attrs['clean_loss']}")
if not (np.abs(ab["layer_delta_loss"][()]) > 1e-4).all(): bad.append(f"layer dloss: {ab['layer_delta_loss'][()]}")
if p.attrs["token_rows"] != 64 * 16: bad.append(f"token_rows: expected 1024, got {p.attrs['token_rows']}")
if not close(np.diagonal(p["cka_layers"][()]), 1.0, atol=1e-9): bad.append("cka_layers: diagonal not 1")
if bad: print("\n".join(bad)); sys.exit(1)
EOF

run train --attention grassmann --grassmann-rank 4 --steps 10 --d-model 16 --heads 2 --layers 2 --batch 32 \
    --eval-batches 2 --quiet -o "$tmp/gm.h5"
expect_rc 0 "train grassmann -o"
run probe "$tmp/gm.h5" --cka-examples 32 --transform none --quiet
expect_rc 0 "probe grassmann"
grep -q "^per-head ablation: none (grassmann mixing has no heads)" "$tmp/out" || fail "probe grassmann: no word on ablation"
check "probe of a grassmann trial: layers' CKA and noise, no heads' outputs or maps" "$tmp/gm.h5" <<'EOF'
import sys
from numcheck import close
from attnsweep.results import Results
rs = Results(sys.argv[1])
row, p = rs.summary.iloc[0], rs.probe(0)
bad = [f"{k}: expected absent" for k in ("cka_heads", "attention", "transform", "ablation") if k in p]
if p["cka_layers"].shape != (3, 3) or not close(p["cka_layers"][()].diagonal(), 1.0, atol=1e-9):
    bad.append(f"cka_layers: expected 3 x 3 with a unit diagonal, got {p['cka_layers'][()]}")
if p["noise"]["val_accuracy"][0] != row["val_accuracy"]: bad.append("noise sigma 0: not the stored val_accuracy")
if bad: print("\n".join(bad)); sys.exit(1)
EOF

echo "== 3. bad input  [$((SECONDS - start)) s]"
"$py" - "$tmp/t.h5" "$tmp/old.h5" <<'EOF'
import shutil, sys
import h5py  # raw on purpose: it removes the groups probe needs
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "a") as f:
    del f["trials/000000/params"]
    del f["trials/000000/probe"]
EOF
sum_before=$(md5sum <"$tmp/old.h5")
expect_bad_input "a file without params" "trial 0 has no stored parameters" "$tmp/nothing" probe "$tmp/old.h5"
[[ $(md5sum <"$tmp/old.h5") == "$sum_before" ]] || fail "a file without params: the file changed"
[[ ! -e $tmp/old.h5.partial ]] || fail "a file without params: left old.h5.partial"
expect_bad_input "a transform on charlm" "--transform patch applies to fashion_mnist only" "$tmp/nothing" \
    probe "$tmp/lm.h5" --transform patch
expect_bad_input "no such trial" "no trial 3" "$tmp/nothing" probe "$tmp/t.h5" --trial 3
expect_bad_input "unknown option" "--sigmas" "$tmp/nothing" probe "$tmp/t.h5" --sigmas 1
expect_bad_input "a bad sigma" "--sigma" "$tmp/nothing" probe "$tmp/t.h5" --sigma 0,x
run probe --help
expect_rc 0 "probe --help"
for o in --trial --cka-examples --sigma --noise-seed --maps --transform --transform-seed --tolerance --seed-control; do
    grep -q -- "$o" "$tmp/out" || fail "probe --help: no $o"
done
pass "probe --help lists every option"

echo "test_probe: $checks checks passed in $((SECONDS - start)) s"
