#!/usr/bin/python3
"""PyTorch twin of attnsweep's character language model, for the sequence-length benchmark.

`attnsweep train --task charlm --batch 8 --seq-len L` with the default model: byte tokens
(vocabulary 256) + learned positions (L, 64), d_model 64, 4 heads, 2 pre-LayerNorm blocks,
MLP 4x with tanh-GELU, final LayerNorm, a next-byte head at every position, cross-entropy,
AdamW (decay on matrices only), float32. The attention sublayer is one of attnsweep's four
variants, written the plain PyTorch way:

  mha        q kᵀ/√d_k, the causal mask, softmax, times v: (B, heads, L, L) per layer;
  tucker     as mha, with the QKV weight generated each step as W = G ×₁ U (core rank 2);
  linear     φ = elu + 1, the causal sums S_t = Σ_{s≤t} φ(k_s) v_sᵀ and z_t by cumsum;
  grassmann  causal Grassmann mixing (r = 32, offsets 1,2,4,8,12,16): per offset the
             Plücker coordinates of (z_t, z_{t−Δ}), normalised, averaged over the valid
             offsets, projected back and gated with the block's input.

The tokens are random bytes (the step's cost does not depend on them). Prints one JSON
line: optimizer steps per second over --steps timed steps after --warmup untimed ones,
the parameter count, and the peak resident memory (MB) with the interpreter's and
torch's own memory before the model was built.
    /usr/bin/python3 scripts/bench/lm_torch.py --attention mha --seq-len 1024 --steps 10
"""
import argparse
import json
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

C, NH, LAYERS, MLP, V = 64, 4, 2, 4, 256
LR, LN_EPS, LIN_EPS, GM_EPS = 2e-3, 1e-5, 1e-6, 1e-6
CORE_RANK, GM_RANK, GM_OFFSETS = 2, 32, (1, 2, 4, 8, 12, 16)


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Attention(nn.Module):
    """mha, tucker or linear: the QKV projection, the core, the output projection."""

    def __init__(self, kind):
        super().__init__()
        self.kind, hs = kind, C // NH
        if kind == "tucker":
            self.core = nn.Parameter(torch.empty(3, CORE_RANK, hs * C).uniform_(-C ** -0.5, C ** -0.5))
            self.factor = nn.Parameter(torch.randn(NH, CORE_RANK) / math.sqrt(CORE_RANK))
            self.qkv_b = nn.Parameter(torch.zeros(3 * C))
        else:
            self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, hs = x.shape[0], x.shape[1], C // NH
        if self.kind == "tucker":  # W[ρ, h, k, m] = Σ_r U[h, r] G[ρ, r, k·C + m]
            w = torch.einsum("hr,prn->phn", self.factor, self.core).reshape(3 * C, C)
            qkv = F.linear(x, w, self.qkv_b)
        else:
            qkv = self.qkv(x)
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in qkv.split(C, dim=-1))
        if self.kind == "linear":
            fq, fk = F.elu(q) + 1, F.elu(k) + 1
            S = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=2)  # (B, NH, T, hs, hs)
            z = torch.cumsum(fk, dim=2)
            num = torch.einsum("bhti,bhtij->bhtj", fq, S)
            y = num / ((fq * z).sum(-1, keepdim=True) + LIN_EPS)
        else:
            s = q @ k.transpose(-1, -2) / math.sqrt(hs)
            mask = torch.ones(T, T, dtype=torch.bool).triu(1)
            y = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class Grassmann(nn.Module):
    """Causal Grassmann mixing, as attnsweep's attn_grassmann.h defines it."""

    def __init__(self):
        super().__init__()
        self.red = nn.Linear(C, GM_RANK)
        M = GM_RANK * (GM_RANK - 1) // 2
        self.plu = nn.Linear(M, C)
        self.gate = nn.Linear(2 * C, C)
        self.i, self.j = torch.triu_indices(GM_RANK, GM_RANK, 1)

    def forward(self, h):
        B, T = h.shape[0], h.shape[1]
        z = self.red(h)  # (B, T, r)
        total = torch.zeros(B, T, self.i.numel())
        count = torch.zeros(T, 1)
        for d in GM_OFFSETS:
            if d >= T:
                continue
            zt, zs = z[:, d:], z[:, :-d]  # token t and its partner t − d
            p = zt[..., self.i] * zs[..., self.j] - zt[..., self.j] * zs[..., self.i]
            p = p / p.norm(dim=-1, keepdim=True).clamp_min(GM_EPS)
            total = total + F.pad(p, (0, 0, d, 0))
            count[d:] += 1
        g = self.plu(total / count.clamp_min(1))
        a = torch.sigmoid(self.gate(torch.cat([h, g], dim=-1)))
        return a * h + (1 - a) * g


class Block(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C, eps=LN_EPS), nn.LayerNorm(C, eps=LN_EPS)
        self.attn = Grassmann() if kind == "grassmann" else Attention(kind)
        self.fc, self.fc_proj = nn.Linear(C, MLP * C), nn.Linear(MLP * C, C)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class CharLM(nn.Module):
    def __init__(self, kind, T):
        super().__init__()
        self.wte = nn.Parameter(torch.randn(V, C) * 0.02)
        self.wpe = nn.Parameter(torch.randn(T, C) * 0.02)
        self.blocks = nn.ModuleList(Block(kind) for _ in range(LAYERS))
        self.lnf = nn.LayerNorm(C, eps=LN_EPS)
        self.head = nn.Linear(C, V)

    def forward(self, tokens):
        x = self.wte[tokens] + self.wpe
        for block in self.blocks:
            x = block(x)
        return self.head(self.lnf(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attention", choices=("mha", "tucker", "linear", "grassmann"), default="mha")
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20, help="timed optimizer steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before timing")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rss_before = peak_rss_mb()
    B, T = args.batch, args.seq_len
    model = CharLM(args.attention, T)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed)

    def step():
        tokens = torch.randint(0, V, (B, T + 1), generator=gen)
        loss = F.cross_entropy(model(tokens[:, :-1]).reshape(-1, V), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    seconds = time.perf_counter() - t0
    print(json.dumps({"steps_per_second": args.steps / seconds, "steps": args.steps, "attention": args.attention,
                      "seq_len": T, "batch": B, "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "params": sum(p.numel() for p in model.parameters()), "loss": round(loss.item(), 4),
                      "peak_rss_mb": peak_rss_mb(), "rss_before_model_mb": rss_before}))


if __name__ == "__main__":
    sys.exit(main())
