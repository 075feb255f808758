#!/usr/bin/env python3
"""The whole network's symmetries leave every function-level score unchanged; real changes
of function move them (tests/test_whole_network.sh runs this).

Usage: whole_network.py ATTNSWEEP WORKDIR [ENGINE_TRIAL.h5 ...]

For GPT-2- (pre-LN LayerNorm), BERT- (post-LN) and LLaMA-shaped (RMSNorm, rotary
positions) models with random weights, and for engine models trained by `attnsweep train`
(read from their results file and written under GPT-2's names), every transformation below
is applied in float64 numpy; a float64 forward of the whole model shows that it leaves the
logits unchanged (relative 1e-9) or, for the real changes, that it changes them; each
model is written as an F64 safetensors checkpoint and scored by `attnsweep score --json`,
and every metric of every layer must agree with the untransformed model's to 1e-6
(relative) for a symmetry, and at least one must move by more than 1e-3 for a real change.

The groups (circuits/circuits.h):
  pre-LN LayerNorm (GPT-2, engine)  ln_1's gain and bias folded into c_attn (a scalar, and per
      feature), reading weights centred (a row's mean added to W diag(γ)), writing weights
      centred (c_proj's output shifted along 1), the key bias (softmax cancels it), the value
      bias moved into c_proj's bias, a dead head's W_Q redrawn, per-head A on QK (biases
      too) and M on OV, head permutations, and of two heads of one QK form (head 1's
      factors head 0's under a per-head A): output traded between them (2.9× and −0.9× of
      one OV map), one component of their OV maps exchanged
  post-LN (BERT)  no folding (the layer reads the residual stream itself); writes centred,
      key bias, value bias into the output bias, dead head, per-head A and M, permutations,
      the two of one QK form
  RMSNorm (LLaMA)  the gain folded; no centring (RMSNorm keeps the mean); per-head A on QK
      that commutes with the rotary positions (a scaled rotation of each frequency's pair),
      M on OV, dead head, permutations, the two of one QK form
Real changes: a query bias (not LLaMA: it has none), a per-head temperature with its output
gain (B_h ↦ τB_h, C_h ↦ C_h/τ), 30 % weight noise.
"""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attnsweep.results import Results  # noqa: E402

D, H, DK, T, V, L = 16, 4, 4, 6, 11, 2
TOL_SAME, TOL_MOVED = 1e-6, 1e-3

# ---------------------------------------------------------------------------- forwards


def layernorm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rmsnorm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def rope(x):
    """HF LLaMA's rotary positions on (heads, T, dk): pairs (i, i + dk/2)."""
    half = x.shape[-1] // 2
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    ang = np.arange(x.shape[1])[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)


def attention(x, p, causal, rotary=False):
    """x (T, D) read by the layer; p: Wq, Wk, Wv (width, D), bq, bk, bv, Wo (D, width), bo."""
    q = (x @ p["Wq"].T + p["bq"]).reshape(T, H, DK).transpose(1, 0, 2)
    k = (x @ p["Wk"].T + p["bk"]).reshape(T, H, DK).transpose(1, 0, 2)
    v = (x @ p["Wv"].T + p["bv"]).reshape(T, H, DK).transpose(1, 0, 2)
    if rotary:
        q, k = rope(q), rope(k)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(DK)
    if causal:
        s = s + np.triu(np.full((T, T), -np.inf), 1)
    y = (softmax(s) @ v).transpose(1, 0, 2).reshape(T, H * DK)
    return y @ p["Wo"].T + p["bo"]


def forward(m, tokens):
    """Logits (T, V) of model m (a dict: kind, emb, pos, layers [...], final, head)."""
    kind = m["kind"]
    x = m["emb"][tokens] + m["pos"][: len(tokens)]
    if kind == "bert":
        x = layernorm(x, *m["emb_ln"])
    for p in m["layers"]:
        if kind == "pre_ln":
            x = x + attention(layernorm(x, p["ln1_w"], p["ln1_b"]), p, True)
            h = layernorm(x, p["ln2_w"], p["ln2_b"])
            x = x + gelu(h @ p["W1"].T + p["b1"]) @ p["W2"].T + p["b2"]
        elif kind == "bert":
            x = layernorm(x + attention(x, p, False), p["ln1_w"], p["ln1_b"])
            x = layernorm(x + gelu(x @ p["W1"].T + p["b1"]) @ p["W2"].T + p["b2"], p["ln2_w"], p["ln2_b"])
        else:  # llama
            x = x + attention(rmsnorm(x, p["ln1_w"]), p, True, rotary=True)
            h = rmsnorm(x, p["ln2_w"])
            a, b = h @ p["W1"].T, h @ p["W3"].T
            x = x + (a / (1 + np.exp(-a)) * b) @ p["W2"].T
    if kind == "pre_ln":
        x = layernorm(x, *m["final"])
    elif kind == "llama":
        x = rmsnorm(x, m["final"][0])
    return x @ m["head"].T


def random_model(kind, rng):
    n = lambda *shape, s=0.3: rng.normal(0, s, shape)
    m = {"kind": kind, "emb": n(V, D, s=1.0), "pos": n(T, D, s=0.5), "head": n(V, D), "layers": []}
    nobias = kind == "llama"
    zero = lambda *shape: np.zeros(shape)
    for _ in range(L):
        p = {w: n(H * DK, D) for w in ("Wq", "Wk", "Wv")}
        p["Wo"] = n(D, H * DK)
        for b, size in (("bq", H * DK), ("bk", H * DK), ("bv", H * DK), ("bo", D), ("b1", 4 * D), ("b2", D)):
            p[b] = zero(size) if nobias else n(size, s=0.2)
        p["W1"], p["W2"] = n(4 * D, D), n(D, 4 * D)
        if kind == "llama":
            p["W3"] = n(4 * D, D)
            p["ln1_w"], p["ln2_w"] = 1 + n(D, s=0.2), 1 + n(D, s=0.2)
        else:
            p["ln1_w"], p["ln1_b"] = 1 + n(D, s=0.2), n(D, s=0.2)
            p["ln2_w"], p["ln2_b"] = 1 + n(D, s=0.2), n(D, s=0.2)
        m["layers"].append(p)
    if kind == "bert":
        m["emb_ln"] = (1 + n(D, s=0.2), n(D, s=0.2))
    m["final"] = (1 + n(D, s=0.2), n(D, s=0.2))
    return m


def copy(m):
    out = dict(m)
    out["layers"] = [{k: v.copy() for k, v in p.items()} for p in m["layers"]]
    return out


# ---------------------------------------------------------------------------- files


def write_safetensors(path, tensors):
    header, buf = {}, bytearray()
    for name, a in tensors.items():
        data = np.ascontiguousarray(a, dtype="<f8").tobytes()
        header[name] = {"dtype": "F64", "shape": list(a.shape), "data_offsets": [len(buf), len(buf) + len(data)]}
        buf += data
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + bytes(buf))


def checkpoint(m, path):
    """m under its family's names (GPT-2 for pre-LN, BERT, LLaMA)."""
    t = {}
    for i, p in enumerate(m["layers"]):
        if m["kind"] == "pre_ln":
            pre = f"h.{i}"
            t[pre + ".ln_1.weight"], t[pre + ".ln_1.bias"] = p["ln1_w"], p["ln1_b"]
            t[pre + ".attn.c_attn.weight"] = np.concatenate([p["Wq"], p["Wk"], p["Wv"]]).T  # Conv1D [D, 3 width]
            t[pre + ".attn.c_attn.bias"] = np.concatenate([p["bq"], p["bk"], p["bv"]])
            t[pre + ".attn.c_proj.weight"], t[pre + ".attn.c_proj.bias"] = p["Wo"].T, p["bo"]
        elif m["kind"] == "bert":
            pre = f"bert.encoder.layer.{i}"
            for role, w in (("query", "q"), ("key", "k"), ("value", "v")):
                t[f"{pre}.attention.self.{role}.weight"] = p["W" + w]
                t[f"{pre}.attention.self.{role}.bias"] = p["b" + w]
            t[pre + ".attention.output.dense.weight"], t[pre + ".attention.output.dense.bias"] = p["Wo"], p["bo"]
        else:
            pre = f"model.layers.{i}"
            t[pre + ".input_layernorm.weight"] = p["ln1_w"]
            for w in "qkv":
                t[f"{pre}.self_attn.{w}_proj.weight"] = p["W" + w]
            t[pre + ".self_attn.o_proj.weight"] = p["Wo"]
    write_safetensors(path, t)


def scores(binary, path):
    out = subprocess.run([binary, "score", path, "--heads", str(H), "--json", "-o", path + ".scores.h5"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL: attnsweep score {path}: exit {out.returncode}\n{out.stderr}")
    os.remove(path + ".scores.h5")
    return json.loads(out.stdout)["layers"]


def flat(layers):
    """Every metric of every layer, as (name, value) pairs."""
    out = []
    for i, layer in enumerate(layers):
        for k, v in layer.items():
            for j, x in enumerate(v if isinstance(v, list) else [v]):
                out.append((f"layer {i} {k}[{j}]", float("nan") if x is None else float(x)))
    return out


def largest_change(a, b):
    """The largest relative change between two score lists, and where (NaN-aware: a NaN anywhere fails).
    A z-score's change is taken relative to 1 at least (its unit: one sd of the null)."""
    worst, where = 0.0, ""
    for (name, x), (_, y) in zip(flat(a), flat(b)):
        if np.isnan(x) or np.isnan(y):
            return float("inf"), name + " is NaN"
        d = abs(x - y) / max(abs(x), abs(y), 1.0 if "_z[" in name else 1e-3)
        if d > worst or where == "":
            worst, where = d, f"{name} {x:.9g} -> {y:.9g}"
    return worst, where


# ---------------------------------------------------------------------------- transformations


def heads_of(p, name):
    """Views of head h's rows (Wq/Wk/Wv/bq/bk/bv) or columns (Wo)."""
    return [p[name][h * DK:(h + 1) * DK] if name != "Wo" else p["Wo"][:, h * DK:(h + 1) * DK] for h in range(H)]


def fold_scalar_gain(m, rng):
    for p in m["layers"]:
        c = 0.37
        for g in ("ln1_w", "ln1_b"):
            if g in p:
                p[g] = p[g] / c
        for w in ("Wq", "Wk", "Wv"):
            p[w] = p[w] * c


def fold_gain(m, rng):
    for p in m["layers"]:
        for w, b in (("Wq", "bq"), ("Wk", "bk"), ("Wv", "bv")):
            if "ln1_b" in p:
                p[b] = p[b] + p[w] @ p["ln1_b"]
            p[w] = p[w] * p["ln1_w"]
        p["ln1_w"] = np.ones(D)
        if "ln1_b" in p:
            p["ln1_b"] = np.zeros(D)


def centre_reads(m, rng):  # after folding: the normalised input has mean 0
    fold_gain(m, rng)
    for p in m["layers"]:
        for w in ("Wq", "Wk", "Wv"):
            p[w] = p[w] + rng.normal(0, 0.5, (H * DK, 1))


def centre_writes(m, rng):
    for p in m["layers"]:
        p["Wo"] = p["Wo"] + rng.normal(0, 0.5, (1, H * DK))
        p["bo"] = p["bo"] + rng.normal(0, 0.5)


def key_bias(m, rng):
    for p in m["layers"]:
        p["bk"] = p["bk"] + rng.normal(0, 1.0, H * DK)


def value_bias_into_output_bias(m, rng):
    for p in m["layers"]:
        d = rng.normal(0, 1.0, H * DK)
        p["bv"] = p["bv"] + d
        p["bo"] = p["bo"] - p["Wo"] @ d


def kill_head(m, rng):  # the base model of the dead-head case (a real change, taken as given)
    for p in m["layers"]:
        p["Wo"][:, :DK] = 0.0


def redraw_dead_query(m, rng):
    for p in m["layers"]:
        p["Wq"][:DK] = rng.normal(0, 0.3, (DK, D))
        p["bq"][:DK] = rng.normal(0, 0.2, DK) if m["kind"] != "llama" else 0.0


def share_qk(m, rng):  # the base of the shared-QK cases: head 1 attends as head 0 (a real change, taken as given)
    for p in m["layers"]:
        a = rotary_commuting(DK, rng) if m["kind"] == "llama" else random_invertible(DK, rng)
        ait = np.linalg.inv(a).T
        p["Wq"][DK:2 * DK], p["bq"][DK:2 * DK] = a @ p["Wq"][:DK], a @ p["bq"][:DK]
        p["Wk"][DK:2 * DK], p["bk"][DK:2 * DK] = ait @ p["Wk"][:DK], ait @ p["bk"][:DK]


def copy_head(m, rng):  # the base of the traded-output case: head 1 a copy of head 0 but for its QK factors
    share_qk(m, rng)
    for p in m["layers"]:
        p["Wv"][DK:2 * DK], p["bv"][DK:2 * DK], p["Wo"][:, DK:2 * DK] = p["Wv"][:DK], p["bv"][:DK], p["Wo"][:, :DK]


def trade_output(m, rng):  # heads 0 and 1 one function: head 0 writes 2.9×, head 1 −0.9× (the same sum)
    for p in m["layers"]:
        p["Wo"][:, :DK] *= 2.9
        p["Wo"][:, DK:2 * DK] *= -0.9


def exchange_ov_component(m, rng):  # heads 0 and 1 one QK form: they swap one V row and its O column
    for p in m["layers"]:
        for w in ("Wv", "bv"):
            p[w][[1, DK + 1]] = p[w][[DK + 1, 1]]
        p["Wo"][:, [1, DK + 1]] = p["Wo"][:, [DK + 1, 1]]


def random_invertible(n, rng):
    q1, _ = np.linalg.qr(rng.normal(size=(n, n)))
    q2, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return q1 @ np.diag(np.exp(rng.uniform(-0.7, 0.7, n))) @ q2


def rotary_commuting(n, rng):
    """A scaled rotation of each rotary pair (i, i + n/2): commutes with the positions' rotations."""
    half, a = n // 2, np.zeros((n, n))
    for i in range(half):
        s, th = np.exp(rng.uniform(-0.7, 0.7)), rng.uniform(0, 2 * np.pi)
        a[i, i], a[i, i + half], a[i + half, i], a[i + half, i + half] = (s * np.cos(th), -s * np.sin(th),
                                                                        s * np.sin(th), s * np.cos(th))
    return a


def per_head_maps(m, rng):
    for p in m["layers"]:
        for h in range(H):
            r = slice(h * DK, (h + 1) * DK)
            a = rotary_commuting(DK, rng) if m["kind"] == "llama" else random_invertible(DK, rng)
            ait, mm = np.linalg.inv(a).T, random_invertible(DK, rng)
            p["Wq"][r], p["bq"][r] = a @ p["Wq"][r], a @ p["bq"][r]
            p["Wk"][r], p["bk"][r] = ait @ p["Wk"][r], ait @ p["bk"][r]
            p["Wv"][r], p["bv"][r] = mm @ p["Wv"][r], mm @ p["bv"][r]
            p["Wo"][:, r] = p["Wo"][:, r] @ np.linalg.inv(mm)


def permute_heads(m, rng):
    for p in m["layers"]:
        perm = rng.permutation(H)
        rows = np.concatenate([np.arange(h * DK, (h + 1) * DK) for h in perm])
        for w in ("Wq", "Wk", "Wv", "bq", "bk", "bv"):
            p[w] = p[w][rows]
        p["Wo"] = p["Wo"][:, rows]


def query_bias(m, rng):
    for p in m["layers"]:
        p["bq"] = p["bq"] + rng.normal(0, 1.0, H * DK)


def temperature(m, rng):
    for p in m["layers"]:
        tau = 2.0
        p["Wq"][:DK] *= tau
        p["bq"][:DK] *= tau
        p["Wo"][:, :DK] /= tau


def noise(m, rng):
    for p in m["layers"]:
        for w in ("Wq", "Wk", "Wv", "Wo"):
            p[w] = p[w] * (1 + rng.normal(0, 0.3, p[w].shape))


SYMMETRIES = {
    "pre_ln": [fold_scalar_gain, fold_gain, centre_reads, centre_writes, key_bias, value_bias_into_output_bias,
               per_head_maps, permute_heads],
    "bert": [centre_writes, key_bias, value_bias_into_output_bias, per_head_maps, permute_heads],
    "llama": [fold_scalar_gain, fold_gain, per_head_maps, permute_heads],
}
CHANGES = {"pre_ln": [query_bias, temperature, noise], "bert": [query_bias, temperature, noise],
           "llama": [temperature, noise]}


# ---------------------------------------------------------------------------- engine models


def engine_model(path):
    """An `attnsweep train` model (charlm, mha or tucker) as a pre_ln model of this file's shapes."""
    with Results(path) as rs:
        names = [(name, v.astype(np.float64)) for name, v in rs.params(0)]
        cfg = rs.trial_attrs(0)["config"]
    first = lambda key: next(v for k, v in names if k == key)
    per_block = lambda key: [v for k, v in names if k == key]
    c, heads = cfg["d_model"], cfg["heads"]
    assert (c, heads, cfg["layers"]) == (D, H, L), "the engine model's shape must be this file's"
    m = {"kind": "pre_ln", "emb": first("wte").reshape(-1, c), "pos": first("wpe").reshape(-1, c),
         "head": first("head_w").reshape(-1, c), "layers": [], "final": (first("lnf_w"), first("lnf_b"))}
    qkv = per_block("qkv_w")
    if not qkv:  # tucker: W_ρ = U G_ρ, rows ρ·C + h·hs + k
        R = cfg["core_rank"]
        qkv = [np.concatenate([(u.reshape(H, R) @ g.reshape(3, R, DK * c)[r]).reshape(H * DK, c) for r in range(3)])
               for g, u in zip(per_block("core"), per_block("factor"))]
    for l in range(L):
        w = qkv[l].reshape(3 * c, c)
        b = per_block("qkv_b")[l]
        p = {"Wq": w[:c], "Wk": w[c:2 * c], "Wv": w[2 * c:], "bq": b[:c], "bk": b[c:2 * c], "bv": b[2 * c:],
             "Wo": per_block("proj_w")[l].reshape(c, c), "bo": per_block("proj_b")[l],
             "ln1_w": per_block("ln1_w")[l], "ln1_b": per_block("ln1_b")[l],
             "ln2_w": per_block("ln2_w")[l], "ln2_b": per_block("ln2_b")[l],
             "W1": per_block("fc_w")[l].reshape(-1, c), "b1": per_block("fc_b")[l],
             "W2": per_block("fcproj_w")[l].reshape(c, -1), "b2": per_block("fcproj_b")[l]}
        m["layers"].append({k: np.array(v, dtype=np.float64) for k, v in p.items()})
    return m


# ---------------------------------------------------------------------------- the checks

checks = 0


def ok(msg):
    global checks
    checks += 1
    print("ok   " + msg)


def check_family(binary, work, label, base, rng):
    global checks
    tokens = rng.integers(0, V, T)
    ref = forward(base, tokens)
    scale = np.abs(ref).max()
    path0 = os.path.join(work, label + ".safetensors")
    checkpoint(base, path0)
    s0 = scores(binary, path0)
    cases = [(f, True) for f in SYMMETRIES[base["kind"]]] + [(f, False) for f in CHANGES[base["kind"]]]
    # symmetries of derived models, each against its own base: a dead head's W_Q redrawn;
    # two heads of one QK form trading their output, or one component of their OV maps
    derived = {"dead": (kill_head, redraw_dead_query, "a dead head's query redrawn"),
               "trade": (copy_head, trade_output, "output traded between two heads of one QK form"),
               "exchange": (share_qk, exchange_ov_component, "an OV component exchanged between two heads of one QK form")}
    cases += [(key, True) for key in derived]
    for f, symmetry in cases:
        if isinstance(f, str):
            make, change, name = derived[f]
            m0 = copy(base)
            make(m0, rng)
            m1 = copy(m0)
            change(m1, rng)
            ref0 = forward(m0, tokens)
            path_a = os.path.join(work, f"{label}.{f}.base.safetensors")
            checkpoint(m0, path_a)
            sa = scores(binary, path_a)
        else:
            name, m0, m1, ref0, sa = f.__name__.replace("_", " "), base, copy(base), ref, s0
            f(m1, rng)
        logits = forward(m1, tokens)
        diff = np.abs(logits - ref0).max() / scale
        path1 = os.path.join(work, f"{label}.{f if isinstance(f, str) else f.__name__}.safetensors")
        checkpoint(m1, path1)
        change, where = largest_change(sa, scores(binary, path1))
        if symmetry:
            if not diff <= 1e-9:
                sys.exit(f"FAIL: {label}: {name} is no symmetry: the float64 logits moved by {diff:.3g}")
            if not change <= TOL_SAME:
                sys.exit(f"FAIL: {label}: {name} leaves the logits unchanged ({diff:.1e}) but moves a score by "
                         f"{change:.3g}: {where}")
            ok(f"{label}: {name}: logits within {diff:.1e}, every score within {change:.1e}")
        else:
            if not diff > 1e-3:
                sys.exit(f"FAIL: {label}: {name} should change the function (logits moved {diff:.3g})")
            if not change > TOL_MOVED:
                sys.exit(f"FAIL: {label}: {name} changes the logits by {diff:.3g} but no score moves "
                         f"(largest {change:.3g}: {where})")
            ok(f"{label}: {name}: logits moved {diff:.2g}, a score moved {change:.2g} ({where})")


def check_engine(binary, work, trial_path, rng):
    """The engine's scores of its own trial file equal the GPT-2 reader's of the same model, then its group."""
    label = "engine " + os.path.basename(trial_path)
    m = engine_model(trial_path)
    path = os.path.join(work, os.path.basename(trial_path) + ".safetensors")
    checkpoint(m, path)
    out = subprocess.run([binary, "score", trial_path, "--json", "-o", trial_path + ".scores.h5"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL: attnsweep score {trial_path}: {out.stderr}")
    change, where = largest_change(json.loads(out.stdout)["layers"], scores(binary, path))
    if not change <= 1e-5:  # float32 weights, the same arithmetic but for where the fold rounds
        sys.exit(f"FAIL: {label}: the trial's scores and its GPT-2 checkpoint's differ by {change:.3g}: {where}")
    ok(f"{label}: scores of the trial file and of the model under GPT-2's names agree within {change:.1e}")
    check_family(binary, work, label, m, rng)


def main():
    binary, work, trials = sys.argv[1], sys.argv[2], sys.argv[3:]
    rng = np.random.default_rng(20261206)
    for kind, label in (("pre_ln", "GPT-2"), ("bert", "BERT"), ("llama", "LLaMA")):
        check_family(binary, work, label, random_model(kind, rng), rng)
    for t in trials:
        check_engine(binary, work, t, rng)
    print(f"whole_network: {checks} checks passed")


if __name__ == "__main__":
    main()
