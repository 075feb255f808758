#!/usr/bin/env python3
"""A PyTorch trainer of attnsweep's four attention variants on Fashion-MNIST that speaks
attnsweep's trial protocol: a researcher's program to start from.

    python3 examples/torch/train.py --attention=tucker --core_rank=2 --steps=600

The model is the built-in engine's (docs/model.md): a pre-LayerNorm ViT on 7x7
patches (16 tokens and [CLS], learned positions), d_model 64, 4 heads, 2 blocks, MLP 4x,
GELU (tanh form), with one of four attention sublayers:

    mha        softmax(Q Kᵀ/√d_k) V per head, then the output projection
    tucker     the same with W_QKV = G ×₁ U generated from a core G [3, R, d_k·d_model]
               and a factor U [heads, R] (core_rank R)
    linear     φ(q)ᵀ S / (φ(q)·z + 1e-6), φ = elu + 1, S = Σ_s φ(k_s) v_sᵀ, z = Σ_s φ(k_s)
    grassmann  Causal Grassmann mixing: z = W_red h (r dims), the Plücker coordinates of
               z_t ∧ z_s for s = t ± Δ, normalised and averaged, W_plu back to d_model, a
               gate mixing them with h

trained as the engine trains it: AdamW (0.9, 0.999, eps 1e-8) with decoupled weight decay
on matrices, linear warm-up then cosine decay to lr·min_lr_ratio, gradient-norm clipping,
PyTorch's default initialisation (embeddings N(0, 0.02)). Data come from Debian's
dataset-fashion-mnist with the engine's splits: training = the first 55 000 train-images,
validation = the last 5 000 (every metric line), test = t10k (the last line only).

The protocol (docs/trainer.md) is spoken through attnsweep's Python helper,
python/attnsweep/trial.py (attnsweep puts it on the program's PYTHONPATH; run by hand, the
trainer finds it in the source tree): the seed is trial.seed() ($ATTNSWEEP_SEED);
trial.report(step, ...) appends one JSON line per evaluation to $ATTNSWEEP_METRICS;
trial.save_attention() writes the attention weights to $ATTNSWEEP_TRIAL_DIR/model.safetensors
under Hugging Face's BERT names (encoder.layer.N.attention.self.{query,key,value}.weight and
attention.output.dense.weight; Grassmann: encoder.layer.N.grassmann.w_red.weight and
w_plu.weight; the model names its tensors itself, as tucker's are generated) with
config.json beside it, rewritten at every evaluation so that a trial ASHA stops is scored
at its last one; $ATTNSWEEP_TRIAL_DIR/resume.pt holds what a stopped trial needs to go on,
and with $ATTNSWEEP_RESUME_DIR (trial.resume_dir()) the training continues from there.
SIGTERM (trial.should_stop()) saves it and ends the program (exit code 143). Without
attnsweep the lines go to stdout and the files to --out (default: the current directory).
CUDA is used when there is a device.
"""
import argparse
import gzip
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from attnsweep import trial
except ImportError:  # run by hand from the source tree: the helper is in python/
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    from attnsweep import trial

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, SD = 0.2860, 0.3530   # of all 60 000 train-images (the engine's normalisation)
VAL_IMAGES = 5000


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--attention", choices=["mha", "tucker", "linear", "grassmann"], default="mha")
    p.add_argument("--d_model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--mlp_ratio", type=int, default=4)
    p.add_argument("--core_rank", type=int, default=2)
    p.add_argument("--grassmann_rank", type=int, default=32)
    p.add_argument("--grassmann_offsets", default="1,2,4,8,12,16")
    p.add_argument("--steps", type=int, default=430)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min_lr_ratio", type=float, default=0.1)
    p.add_argument("--warmup_frac", type=float, default=0.05)
    p.add_argument("--weight_decay", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--eval_every", type=int, default=0, help="steps between evaluations (0: ten per run)")
    p.add_argument("--eval_batches", type=int, default=0, help="validation batches per evaluation (0: all)")
    p.add_argument("--seed", type=int, default=None, help="default: $ATTNSWEEP_SEED, else 1")
    p.add_argument("--data_dir", default=DATA)
    p.add_argument("--out", default=None, help="default: $ATTNSWEEP_TRIAL_DIR, else the current directory")
    return p.parse_args()


# ---------------------------------------------------------------- data

def read_idx(path):
    with gzip.open(path, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        if magic == 0x803:  # images: rows, columns follow
            rows, cols = struct.unpack(">II", f.read(8))
            return np.frombuffer(f.read(n * rows * cols), np.uint8).reshape(n, rows * cols)
        return np.frombuffer(f.read(n), np.uint8)


def load_data(data_dir, device):
    """(images [N, 784] normalised, labels [N]) for train, validation and test."""
    def split(name):
        x = read_idx(os.path.join(data_dir, f"{name}-images-idx3-ubyte.gz")).astype(np.float32)
        y = read_idx(os.path.join(data_dir, f"{name}-labels-idx1-ubyte.gz")).astype(np.int64)
        return torch.from_numpy((x / 255.0 - MEAN) / SD).to(device), torch.from_numpy(y).to(device)
    x, y = split("train")
    tx, ty = split("t10k")
    return (x[:-VAL_IMAGES], y[:-VAL_IMAGES]), (x[-VAL_IMAGES:], y[-VAL_IMAGES:]), (tx, ty)


def patches(x):
    """[B, 784] images -> [B, 16, 49]: 7x7 patches in raster order, pixels row-major."""
    return x.reshape(-1, 4, 7, 4, 7).permute(0, 1, 3, 2, 4).reshape(-1, 16, 49)


# ---------------------------------------------------------------- the model

def uniform(shape, bound):
    return nn.Parameter(torch.empty(shape).uniform_(-bound, bound))


class SoftmaxFamily(nn.Module):
    """mha, tucker, linear: Q, K, V of each head from one weight [3C, C] (tucker: generated)."""

    def __init__(self, kind, C, H, R):
        super().__init__()
        self.kind, self.C, self.H, self.hs = kind, C, H, C // H
        if kind == "tucker":
            self.core = uniform((3, R, self.hs * C), 1 / math.sqrt(C))
            self.factor = nn.Parameter(torch.randn(H, R) / math.sqrt(R))
            self.qkv_b = uniform((3 * C,), 1 / math.sqrt(C))
        else:
            self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)

    def qkv_weight(self):
        """[3C, C]: row ρ·C + h·d_k + k is feature k of head h's query (ρ 0), key (1) or value (2)."""
        if self.kind != "tucker":
            return self.qkv.weight
        w = torch.einsum("hr,grx->ghx", self.factor, self.core)  # G x_1 U: [3, H, d_k·C]
        return w.reshape(3 * self.C, self.C)

    def forward(self, x):
        B, T, C = x.shape
        bias = self.qkv_b if self.kind == "tucker" else self.qkv.bias
        q, k, v = F.linear(x, self.qkv_weight(), bias).split(C, dim=2)
        q, k, v = (t.reshape(B, T, self.H, self.hs).transpose(1, 2) for t in (q, k, v))
        if self.kind == "linear":  # non-causal: every token sees all (images)
            fq, fk = F.elu(q) + 1, F.elu(k) + 1
            s = fk.transpose(2, 3) @ v                      # [B, H, d_k, d_k]
            z = fk.sum(dim=2, keepdim=True)                 # [B, H, 1, d_k]
            y = (fq @ s) / ((fq * z).sum(-1, keepdim=True) + 1e-6)
        else:
            att = (q @ k.transpose(2, 3)) / math.sqrt(self.hs)
            y = att.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    def export(self, prefix):
        w = self.qkv_weight().detach()
        return {f"{prefix}.attention.self.query.weight": w[:self.C], f"{prefix}.attention.self.key.weight": w[self.C:2 * self.C],
                f"{prefix}.attention.self.value.weight": w[2 * self.C:],
                f"{prefix}.attention.output.dense.weight": self.proj.weight.detach()}


class Grassmann(nn.Module):
    """Grassmann mixing on images: each token paired with the tokens at t - Δ and t + Δ."""

    def __init__(self, C, r, offsets):
        super().__init__()
        self.r, self.offsets = r, offsets
        self.red = nn.Linear(C, r)
        self.plu = nn.Linear(r * (r - 1) // 2, C)
        self.gate = nn.Linear(2 * C, C)
        self.register_buffer("iu", torch.triu_indices(r, r, 1), persistent=False)  # pairs i < j, row-major

    def forward(self, h):
        B, T, _ = h.shape
        z = self.red(h)
        total = h.new_zeros(B, T, self.iu.shape[1])
        count = h.new_zeros(1, T, 1)
        for d in self.offsets:
            if d >= T:
                continue
            for t_slice, s_slice in ((slice(d, T), slice(0, T - d)), (slice(0, T - d), slice(d, T))):
                zt, zs = z[:, t_slice], z[:, s_slice]
                outer = zt.unsqueeze(-1) * zs.unsqueeze(-2)                 # [B, T', r, r]
                p = (outer - outer.transpose(-1, -2))[..., self.iu[0], self.iu[1]]
                p = p / p.norm(dim=-1, keepdim=True).clamp_min(1e-6)
                total[:, t_slice] += p
                count[:, t_slice] += 1
        g = self.plu(total / count.clamp_min(1))
        alpha = torch.sigmoid(self.gate(torch.cat([h, g], dim=-1)))
        return alpha * h + (1 - alpha) * g

    def export(self, prefix):
        return {f"{prefix}.grassmann.w_red.weight": self.red.weight.detach(),
                f"{prefix}.grassmann.w_plu.weight": self.plu.weight.detach()}


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        C = a.d_model
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        if a.attention == "grassmann":
            self.attn = Grassmann(C, a.grassmann_rank, [int(o) for o in a.grassmann_offsets.split(",")])
        else:
            self.attn = SoftmaxFamily(a.attention, C, a.heads, a.core_rank)
        self.fc, self.fcproj = nn.Linear(C, a.mlp_ratio * C), nn.Linear(a.mlp_ratio * C, C)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class ViT(nn.Module):
    def __init__(self, a):
        super().__init__()
        C = a.d_model
        self.patch = nn.Linear(49, C)
        self.cls = nn.Parameter(torch.randn(C) * 0.02)
        self.pos = nn.Parameter(torch.randn(17, C) * 0.02)
        self.blocks = nn.ModuleList(Block(a) for _ in range(a.layers))
        self.lnf, self.head = nn.LayerNorm(C), nn.Linear(C, 10)

    def forward(self, images):
        x = self.patch(patches(images))
        x = torch.cat([self.cls.expand(x.shape[0], 1, -1), x], dim=1) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.lnf(x)[:, 0])

    def attention_tensors(self):
        out = {}
        for i, b in enumerate(self.blocks):
            out.update(b.attn.export(f"encoder.layer.{i}"))
        return out


def decayed(model):
    """AdamW's two groups: matrices decay, biases, LayerNorms, [CLS] and positions do not."""
    decay, plain = [], []
    for name, p in model.named_parameters():
        (decay if p.dim() >= 2 and name != "pos" else plain).append(p)
    return decay, plain


def lr_at(a, step, total):
    """The engine's schedule: linear warm-up, then cosine decay to lr·min_lr_ratio."""
    warmup = int(a.warmup_frac * total + 0.5)
    if step < warmup:
        return a.lr * (step + 1) / warmup
    span = total - warmup
    progress = (step - warmup) / (span - 1) if span > 1 else 1.0
    lo = a.lr * a.min_lr_ratio
    return lo + 0.5 * (a.lr - lo) * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def evaluate(model, x, y, batches, size):
    model.eval()
    loss = correct = n = 0
    for k, start in enumerate(range(0, len(y), size)):
        if batches and k == batches:
            break
        logits = model(x[start:start + size])
        loss += F.cross_entropy(logits, y[start:start + size], reduction="sum").item()
        correct += (logits.argmax(1) == y[start:start + size]).sum().item()
        n += len(logits)
    model.train()
    return loss / n, correct / n


# ---------------------------------------------------------------- files

def save_weights(out, model, a):
    """model.safetensors (written whole, then renamed) and config.json beside it."""
    cfg = {"model_type": "attnsweep-vit", "attention": a.attention, "hidden_size": a.d_model,
           "num_hidden_layers": a.layers}
    trial.save_attention(model.attention_tensors(), os.path.join(out, "model.safetensors"), heads=a.heads, config=cfg)


def main():
    a = parse_args()
    out = a.out or trial.trial_dir()
    seed = a.seed if a.seed is not None else trial.seed()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(seed)
    (xtr, ytr), (xva, yva), (xte, yte) = load_data(a.data_dir, device)
    model = ViT(a).to(device)
    decay, plain = decayed(model)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay}, {"params": plain, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(seed)
    total = a.steps
    eval_every = a.eval_every or max(total // 10, 1)
    state = {"step": 0, "perm": torch.randperm(len(ytr), generator=gen), "cursor": 0, "loss_sum": 0.0, "loss_n": 0}

    resume = trial.resume_dir()
    if resume and os.path.exists(os.path.join(resume, "resume.pt")):
        saved = torch.load(os.path.join(resume, "resume.pt"), map_location=device)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        gen.set_state(saved["gen"])
        state = saved["state"]
        print(f"resumed from step {state['step']} of {resume}", file=sys.stderr)

    def save_resume():
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(), "state": state},
                   os.path.join(out, "resume.pt.partial"))
        os.replace(os.path.join(out, "resume.pt.partial"), os.path.join(out, "resume.pt"))

    trial.should_stop()  # from now on SIGTERM only asks to stop
    n_params = sum(p.numel() for p in model.parameters())
    t0 = time.time()
    while state["step"] < total:
        if trial.should_stop():  # ASHA, the time limit or the sweep's stop: keep what resuming needs
            save_resume()
            sys.exit(143)
        idx, have = [], 0
        while have < a.batch:  # an epoch boundary may fall inside a batch
            if state["cursor"] == len(ytr):
                state["perm"], state["cursor"] = torch.randperm(len(ytr), generator=gen), 0
            take = min(a.batch - have, len(ytr) - state["cursor"])
            idx.append(state["perm"][state["cursor"]:state["cursor"] + take])
            state["cursor"] += take
            have += take
        idx = torch.cat(idx).to(device)
        assert len(idx) == a.batch, (len(idx), a.batch)
        lr = lr_at(a, state["step"], total)
        for g in opt.param_groups:
            g["lr"] = lr
        loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        state["step"] += 1
        state["loss_sum"] += loss.item()
        state["loss_n"] += 1
        step = state["step"]
        if step % eval_every == 0 or step == total:
            val_loss, val_acc = evaluate(model, xva, yva, a.eval_batches, a.batch)
            line = {"lr": lr, "train_loss": state["loss_sum"] / state["loss_n"], "val_loss": val_loss,
                    "val_accuracy": val_acc, "seconds": time.time() - t0}
            state["loss_sum"], state["loss_n"] = 0.0, 0
            save_weights(out, model, a)
            if step == total:  # the test split, once, in the last line
                line["test_loss"], line["test_accuracy"] = evaluate(model, xte, yte, 0, a.batch)
                line["n_params"] = n_params
            else:
                save_resume()
            trial.report(step, **line)
    print(f"{a.attention}: {total} steps in {time.time() - t0:.1f} s on {device}", file=sys.stderr)


if __name__ == "__main__":
    main()
