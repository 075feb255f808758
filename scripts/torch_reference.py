#!/usr/bin/python3
"""Write PyTorch reference tensors for tests/test_torch_reference.c.

Small models (embedding, pre-LN blocks, final LayerNorm, head) with fixed random
weights and inputs: one block of mha and of linear attention, as encoder (images,
non-causal) and as decoder (tokens, causal); and Causal Grassmann mixing in the paper's
post-LN block (two causal layers with their own offsets, and an encoder) and in the
pre-LN block, written here from the paper's equations. For each case it writes
tests/reference/CASE.json (configuration and a tensor index) and CASE.bin (float32,
little endian): the inputs, every parameter (in attnsweep's arena order and names),
the loss, the logits, the last block's output, and the gradient of the mean loss with
respect to every parameter.

Run with Debian's python3-torch:  /usr/bin/python3 scripts/torch_reference.py
The outputs are committed, so the test runs without torch.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference")
C, NH, MLP, B = 16, 2, 4, 2
LN_EPS, LIN_EPS, PLU_EPS = 1e-5, 1e-6, 1e-6
R = 4  # grassmann: reduced dimension r, M = r(r-1)/2 = 6 Plücker coordinates


def softmax_attention(q, k, v, causal):
    # q, k, v: (B, NH, T, hs)
    hs = q.shape[-1]
    s = q @ k.transpose(-1, -2) / math.sqrt(hs)
    if causal:
        T = q.shape[2]
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def linear_attention(q, k, v, causal):
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if causal:
        S = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=2)  # (B,NH,T,hs,hs)
        z = torch.cumsum(fk, dim=2)
        num = torch.einsum("bhti,bhtij->bhtj", fq, S)
        den = (fq * z).sum(-1, keepdim=True) + LIN_EPS
    else:
        S = torch.einsum("bhti,bhtj->bhij", fk, v)
        z = fk.sum(2)
        num = torch.einsum("bhti,bhij->bhtj", fq, S)
        den = torch.einsum("bhti,bhi->bht", fq, z).unsqueeze(-1) + LIN_EPS
    return num / den


def grassmann_mix(h, P, pre, offsets, causal):
    """Causal Grassmann mixing: z = W_red h + b; for every offset Δ the partner s = t − Δ
    (and t + Δ when not causal), the Plücker vector p_ij = z_t,i z_s,j − z_t,j z_s,i
    (i < j) normalised by max(‖p‖, ε), its mean over the valid partners (0 if none),
    g = W_plu p̄ + b, α = σ(W_gate [h; g] + b), out = α h + (1 − α) g."""
    Bn, T, _ = h.shape
    z = h @ P[pre + "red_w"].T + P[pre + "red_b"]
    iu, ju = torch.triu_indices(R, R, 1)
    total = torch.zeros(Bn, T, len(iu))
    count = torch.zeros(1, T, 1)
    for delta in offsets:
        for sign in ((-1,) if causal else (-1, 1)):
            for t in range(T):
                s = t + sign * delta
                if s < 0 or s >= T:
                    continue
                p = z[:, t, iu] * z[:, s, ju] - z[:, t, ju] * z[:, s, iu]
                norm = p.norm(dim=-1, keepdim=True).clamp(min=PLU_EPS)
                total[:, t] = total[:, t] + p / norm
                count[0, t] += 1
    pbar = total / count.clamp(min=1)
    g = pbar @ P[pre + "plu_w"].T + P[pre + "plu_b"]
    alpha = torch.sigmoid(torch.cat([h, g], dim=-1) @ P[pre + "gate_w"].T + P[pre + "gate_b"])
    return alpha * h + (1 - alpha) * g


def make_case(name, attention, encoder, gen, block="preln", schedule=None):
    """schedule (grassmann): one list of offsets per layer."""
    layers = len(schedule) if schedule else 1
    T = 17 if encoder else 8
    V = 13
    K = 10 if encoder else V
    P = {}  # parameters in attnsweep's arena order

    def param(pname, *shape, scale):
        P[pname] = ((torch.rand(*shape, generator=gen) * 2 - 1) * scale).requires_grad_()

    if encoder:
        param("patch_w", C, 49, scale=1 / 7)
        param("patch_b", C, scale=1 / 7)
        param("cls", C, scale=0.5)
    else:
        param("wte", V, C, scale=0.5)
    param("wpe", T, C, scale=0.5)
    M = R * (R - 1) // 2
    for l in range(layers):
        pre = f"{l}."
        param(pre + "ln1_w", C, scale=1.0)
        param(pre + "ln1_b", C, scale=0.2)
        if attention == "grassmann":
            param(pre + "red_w", R, C, scale=1 / 4)
            param(pre + "red_b", R, scale=0.2)
            param(pre + "plu_w", C, M, scale=1 / 2)
            param(pre + "plu_b", C, scale=0.2)
            param(pre + "gate_w", C, 2 * C, scale=1 / 4)
            param(pre + "gate_b", C, scale=0.2)
        else:
            param(pre + "qkv_w", 3 * C, C, scale=1 / 4)
            param(pre + "qkv_b", 3 * C, scale=0.2)
            param(pre + "proj_w", C, C, scale=1 / 4)
            param(pre + "proj_b", C, scale=0.2)
        param(pre + "ln2_w", C, scale=1.0)
        param(pre + "ln2_b", C, scale=0.2)
        param(pre + "fc_w", MLP * C, C, scale=1 / 4)
        param(pre + "fc_b", MLP * C, scale=0.2)
        param(pre + "fcproj_w", C, MLP * C, scale=1 / 8)
        param(pre + "fcproj_b", C, scale=0.2)
    param("lnf_w", C, scale=1.0)
    param("lnf_b", C, scale=0.2)
    param("head_w", K, C, scale=1 / 4)
    param("head_b", K, scale=0.2)
    with torch.no_grad():
        for n in P:
            if n.endswith(("ln1_w", "ln2_w", "lnf_w")):
                P[n] += 1.0  # LayerNorm gains around 1

    if encoder:
        images = torch.randn(B, 784, generator=gen)
        targets = torch.randint(0, K, (B,), generator=gen)
        patches = images.view(B, 4, 7, 4, 7).permute(0, 1, 3, 2, 4).reshape(B, 16, 49)
        pemb = patches @ P["patch_w"].T + P["patch_b"]
        x = torch.cat([P["cls"].expand(B, 1, C), pemb], dim=1) + P["wpe"]
        inputs = images
    else:
        tokens = torch.randint(0, V, (B, T), generator=gen)
        targets = torch.randint(0, K, (B, T), generator=gen)
        targets[0, 3] = -1  # ignored positions
        targets[1, 0] = -1
        x = P["wte"][tokens] + P["wpe"]
        inputs = tokens.float()

    causal = not encoder
    hs = C // NH

    def ln(x, pre, which):
        return F.layer_norm(x, (C,), P[pre + which + "_w"], P[pre + which + "_b"], LN_EPS)

    def mlp(x, pre):
        hidden = F.gelu(x @ P[pre + "fc_w"].T + P[pre + "fc_b"], approximate="tanh")
        return hidden @ P[pre + "fcproj_w"].T + P[pre + "fcproj_b"]

    for l in range(layers):
        pre = f"{l}."
        if attention == "grassmann" and block == "paper":
            # the paper's block: mix -> LN -> FFN -> add -> LN, the gate the only skip
            u = ln(grassmann_mix(x, P, pre, schedule[l], causal), pre, "ln1")
            x = ln(u + mlp(u, pre), pre, "ln2")
            continue
        h = ln(x, pre, "ln1")
        if attention == "grassmann":
            x = x + grassmann_mix(h, P, pre, schedule[l], causal)
        else:
            qkv = h @ P[pre + "qkv_w"].T + P[pre + "qkv_b"]
            q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in qkv.split(C, dim=-1))
            core = softmax_attention if attention == "mha" else linear_attention
            y = core(q, k, v, causal).transpose(1, 2).reshape(B, T, C)
            x = x + (y @ P[pre + "proj_w"].T + P[pre + "proj_b"])
        x = x + mlp(ln(x, pre, "ln2"), pre)
    block_out = x
    block_out.retain_grad()
    hf = F.layer_norm(block_out, (C,), P["lnf_w"], P["lnf_b"], LN_EPS)
    if encoder:
        hf = hf[:, 0]
    logits = hf @ P["head_w"].T + P["head_b"]
    loss = F.cross_entropy(logits.reshape(-1, K), targets.reshape(-1), ignore_index=-1)
    loss.backward()

    tensors = [("input", inputs), ("targets", targets.float())]
    arena = lambda n: n.split(".")[-1]  # attnsweep's arena names, repeated layer after layer
    tensors += [("param:" + arena(n), p.detach()) for n, p in P.items()]
    tensors += [("loss", loss.detach().reshape(1)), ("logits", logits.detach()),
                ("block_out", block_out.detach())]
    tensors += [("grad:" + arena(n), p.grad) for n, p in P.items()]

    index, blobs, offset = [], [], 0
    for tname, t in tensors:
        a = t.detach().contiguous().numpy().astype("<f4").ravel()
        index.append({"name": tname, "offset": offset, "count": int(a.size)})
        blobs.append(a)
        offset += a.size
    meta = {"attention": attention, "task": "fashion_mnist" if encoder else "charlm",
            "d_model": C, "heads": NH, "layers": layers, "mlp_ratio": MLP, "batch": B,
            "seq_len": T, "vocab": V if not encoder else 0, "n_classes": K,
            "torch_version": torch.__version__, "tensors": index}
    if attention == "grassmann":
        meta.update(grassmann_rank=R, grassmann_block=block,
                    grassmann_offsets=";".join(",".join(map(str, g)) for g in schedule))
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
    np.concatenate(blobs).tofile(os.path.join(OUT, name + ".bin"))
    print(f"{name}: loss {loss.item():.6f}, {offset} floats")


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(20261129)
    for attention in ("mha", "linear"):
        for encoder in (True, False):
            name = f"{attention}_{'encoder' if encoder else 'decoder'}"
            make_case(name, attention, encoder, gen)
    make_case("grassmann_paper_decoder", "grassmann", False, gen, "paper", [[1, 3], [2]])
    make_case("grassmann_paper_encoder", "grassmann", True, gen, "paper", [[1, 4]])
    make_case("grassmann_preln_decoder", "grassmann", False, gen, "preln", [[1, 2, 4]])


if __name__ == "__main__":
    sys.exit(main())
