#!/usr/bin/python3
"""Write PyTorch reference tensors for tests/test_torch_reference.c.

One-block models (embedding, one pre-LN block, final LayerNorm, head) with fixed
random weights and inputs, for the mha and linear attention variants, as encoder
(images, non-causal) and as decoder (tokens, causal). For each case it writes
tests/reference/CASE.json (configuration and a tensor index) and CASE.bin (float32,
little endian): the inputs, every parameter (in attnsweep's arena order and names),
the loss, the logits, the block output, and the gradient of the mean loss with
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
LN_EPS, LIN_EPS = 1e-5, 1e-6


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


def make_case(name, attention, encoder, gen):
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
    param("ln1_w", C, scale=1.0)
    param("ln1_b", C, scale=0.2)
    param("qkv_w", 3 * C, C, scale=1 / 4)
    param("qkv_b", 3 * C, scale=0.2)
    param("proj_w", C, C, scale=1 / 4)
    param("proj_b", C, scale=0.2)
    param("ln2_w", C, scale=1.0)
    param("ln2_b", C, scale=0.2)
    param("fc_w", MLP * C, C, scale=1 / 4)
    param("fc_b", MLP * C, scale=0.2)
    param("fcproj_w", C, MLP * C, scale=1 / 8)
    param("fcproj_b", C, scale=0.2)
    param("lnf_w", C, scale=1.0)
    param("lnf_b", C, scale=0.2)
    param("head_w", K, C, scale=1 / 4)
    param("head_b", K, scale=0.2)
    with torch.no_grad():
        for n in ("ln1_w", "ln2_w", "lnf_w"):
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
    h = F.layer_norm(x, (C,), P["ln1_w"], P["ln1_b"], LN_EPS)
    qkv = h @ P["qkv_w"].T + P["qkv_b"]
    q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in qkv.split(C, dim=-1))
    core = softmax_attention if attention == "mha" else linear_attention
    y = core(q, k, v, causal).transpose(1, 2).reshape(B, T, C)
    x = x + (y @ P["proj_w"].T + P["proj_b"])
    h2 = F.layer_norm(x, (C,), P["ln2_w"], P["ln2_b"], LN_EPS)
    mlp = F.gelu(h2 @ P["fc_w"].T + P["fc_b"], approximate="tanh") @ P["fcproj_w"].T + P["fcproj_b"]
    block_out = x + mlp
    block_out.retain_grad()
    hf = F.layer_norm(block_out, (C,), P["lnf_w"], P["lnf_b"], LN_EPS)
    if encoder:
        hf = hf[:, 0]
    logits = hf @ P["head_w"].T + P["head_b"]
    loss = F.cross_entropy(logits.reshape(-1, K), targets.reshape(-1), ignore_index=-1)
    loss.backward()

    tensors = [("input", inputs), ("targets", targets.float())]
    tensors += [("param:" + n, p.detach()) for n, p in P.items()]
    tensors += [("loss", loss.detach().reshape(1)), ("logits", logits.detach()),
                ("block_out", block_out.detach())]
    tensors += [("grad:" + n, p.grad) for n, p in P.items()]

    index, blobs, offset = [], [], 0
    for tname, t in tensors:
        a = t.detach().contiguous().numpy().astype("<f4").ravel()
        index.append({"name": tname, "offset": offset, "count": int(a.size)})
        blobs.append(a)
        offset += a.size
    meta = {"attention": attention, "task": "fashion_mnist" if encoder else "charlm",
            "d_model": C, "heads": NH, "layers": 1, "mlp_ratio": MLP, "batch": B,
            "seq_len": T, "vocab": V if not encoder else 0, "n_classes": K,
            "torch_version": torch.__version__, "tensors": index}
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


if __name__ == "__main__":
    sys.exit(main())
