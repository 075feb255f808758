#!/usr/bin/python3
"""PyTorch twin of attnsweep's default `attnsweep train` model, for speed comparison.

Fashion-MNIST ViT: 7x7 patches -> 16 tokens + [CLS] at position 0, learned positions
(17, 64), d_model 64, 4 heads, 2 pre-LayerNorm blocks, MLP 4x with tanh-GELU, final
LayerNorm, linear head on [CLS] -> 10 classes, cross-entropy, batch 128, AdamW
(decay on matrices only, as attnsweep), linear warm-up + cosine decay, gradient-norm
clipping 1.0, float32: 105,098 parameters. The block's math is the one in
scripts/torch_reference.py (the reference attnsweep's gradients are tested against).

Prints one JSON line: optimizer steps per second over --steps steps, timed after
--warmup untimed steps. Run with Debian's python3-torch:
    /usr/bin/python3 scripts/bench/vit_torch.py --steps 300 --warmup 20 --threads 1
"""
import argparse
import gzip
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530          # Fashion-MNIST pixel statistics (as attnsweep)
C, NH, LAYERS, MLP, T, K = 64, 4, 2, 4, 17, 10
BATCH, LR, MIN_LR_RATIO, WARMUP_FRAC = 128, 2e-3, 0.1, 0.05
LN_EPS = 1e-5


def load_train():
    """Training images as one normalised (60000, 784) float tensor, labels as int64."""
    with gzip.open(f"{DATA}/train-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(f"{DATA}/train-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    x = torch.from_numpy(images.copy()).float()   # copy: frombuffer is read-only
    x.div_(255).sub_(MEAN).div_(STD)                # in place: no 188 MB temporaries
    return x, torch.from_numpy(labels.astype(np.int64))


class Block(nn.Module):
    """Pre-LN block: x += proj(attn(LN1 x)); x += fc_proj(gelu_tanh(fc(LN2 x)))."""

    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(C, eps=LN_EPS)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C, eps=LN_EPS)
        self.fc = nn.Linear(C, MLP * C)
        self.fc_proj = nn.Linear(MLP * C, C)

    def forward(self, x):
        B, hs = x.shape[0], C // NH
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(C, dim=-1))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hs), dim=-1)  # (B, NH, T, T)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Linear(49, C)
        self.cls = nn.Parameter(torch.randn(C) * 0.02)
        self.wpe = nn.Parameter(torch.randn(T, C) * 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.lnf = nn.LayerNorm(C, eps=LN_EPS)
        self.head = nn.Linear(C, K)

    def forward(self, images):  # images: (B, 784)
        B = images.shape[0]
        patches = images.view(B, 4, 7, 4, 7).permute(0, 1, 3, 2, 4).reshape(B, 16, 49)
        x = torch.cat([self.cls.expand(B, 1, C), self.patch(patches)], dim=1) + self.wpe
        for block in self.blocks:
            x = block(x)
        return self.head(self.lnf(x)[:, 0])


def lr_at(step, total):
    """Linear warm-up, then cosine decay to MIN_LR_RATIO * LR (as attnsweep)."""
    warm = max(1, int(WARMUP_FRAC * total))
    if step < warm:
        return LR * (step + 1) / warm
    p = (step - warm) / max(1, total - warm)
    return LR * (MIN_LR_RATIO + (1 - MIN_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300, help="timed optimizer steps")
    ap.add_argument("--warmup", type=int, default=20, help="untimed steps before timing")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x_train, y_train = load_train()
    model = ViT()
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed)
    total = args.warmup + args.steps

    def step(i):
        idx = torch.randint(0, x_train.shape[0], (BATCH,), generator=gen)
        for g in opt.param_groups:
            g["lr"] = lr_at(i, total)
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for i in range(args.warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(args.warmup, total):
        loss = step(i)
    seconds = time.perf_counter() - t0

    print(json.dumps({"steps_per_second": args.steps / seconds, "steps": args.steps,
                      "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "params": n_params, "loss": round(loss.item(), 4)}))


if __name__ == "__main__":
    sys.exit(main())
