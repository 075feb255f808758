"""What a trial program needs to speak attnsweep's trial protocol (docs/trainer.md, "The trial protocol").

    from attnsweep.trial import report, save_attention, should_stop

    should_stop()                     # once, early: SIGTERM from now on only sets the flag
    for step in range(1, steps + 1):
        ...                           # train a step
        if step % 100 == 0:
            save_attention(model)     # TRIAL_DIR/model.safetensors and config.json
            report(step, val_accuracy=acc, val_loss=loss)
        if should_stop():             # ASHA, the time limit or the sweep's stop
            ...                       # save what resuming needs, then exit

report(step, **metrics) appends one metric line to $ATTNSWEEP_METRICS (stdout when the
program runs without attnsweep). save_attention(model) writes the attention weights of a
PyTorch model as TRIAL_DIR/model.safetensors in a name family `attnsweep score` reads, with
config.json (the heads) beside it. trial_dir(), resume_dir() and seed() read the protocol's
other variables. Only the standard library is imported here; torch and numpy only inside
save_attention.
"""
import json
import math
import numbers
import os
import signal
import struct
import sys

# ---------------------------------------------------------------- the environment


def trial_dir():
    """$ATTNSWEEP_TRIAL_DIR, the trial's own directory; "." without attnsweep."""
    return os.environ.get("ATTNSWEEP_TRIAL_DIR", ".")


def resume_dir():
    """$ATTNSWEEP_RESUME_DIR (an earlier, stopped attempt's directory), or None."""
    return os.environ.get("ATTNSWEEP_RESUME_DIR") or None


def seed(default=1):
    """$ATTNSWEEP_SEED (the sweep's seed·1000 + repeat), or default without attnsweep."""
    value = os.environ.get("ATTNSWEEP_SEED")
    return int(value) if value is not None else default


_stop = []


def should_stop():
    """Whether SIGTERM came (ASHA's stop, the time limit, the sweep's stop). The first call
    installs the handler, so call it once before training: a SIGTERM before that ends the
    program at once. After a SIGTERM attnsweep waits budget.grace seconds (default 10) for
    the program to save what a resumed attempt needs, then sends SIGKILL."""
    if not _stop:
        signal.signal(signal.SIGTERM, lambda sig, frame: _stop.append(sig))
        _stop.append(None)  # installed; a signal appends its number
    return len(_stop) > 1


# ---------------------------------------------------------------- metric lines


def _number(key, value):
    """A metric's value for JSON: an int or float, None for None, NaN and infinities."""
    if value is None:
        return None
    if not isinstance(value, numbers.Number) and hasattr(value, "item"):  # a 0-d tensor or array
        try:
            value = value.item()
        except (ValueError, RuntimeError):
            raise TypeError(f"report: {key} is a tensor of several elements (a metric is one number)") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"report: {key} is {type(value).__name__} {value!r} (a metric is a number or None)")
    if isinstance(value, numbers.Integral):
        return int(value)
    value = float(value)
    return value if math.isfinite(value) else None


def _metric_line(step, metrics):
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or not 0 <= step <= 2**31 - 1:
        raise ValueError(f"report: step is {step!r} (an integer from 0 to 2147483647)")
    line = {"step": int(step)}
    for key, value in metrics.items():
        if key == "checkpoint":
            if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
                raise TypeError(f"report: checkpoint is {value!r} (a path)")
            line[key] = os.fspath(value)
        else:
            line[key] = _number(key, value)
    return json.dumps(line, allow_nan=False) + "\n"


def report(step, **metrics):
    """Append one metric line, {"step": step, **metrics}, to $ATTNSWEEP_METRICS (stdout
    without attnsweep): an evaluation that ASHA reads at once; the last line is the trial's
    result. Values are numbers (Python, numpy, or 0-d torch tensors) or None; NaN and
    infinities are written as null, as attnsweep reads them. `checkpoint=PATH` names the
    weights to score instead of TRIAL_DIR/model.safetensors. Known keys: val_accuracy,
    val_loss, train_loss, lr (the curves), test_accuracy, test_loss, n_params (last line
    only), and the sweep's metric; others are kept in the metrics file."""
    line = _metric_line(step, metrics)
    path = os.environ.get("ATTNSWEEP_METRICS")
    if path:
        with open(path, "a") as f:  # one write of a whole line: the runner reads whole lines only
            f.write(line)
    else:
        sys.stdout.write(line)
        sys.stdout.flush()


# ---------------------------------------------------------------- attention weights
#
# A layer found in the model: its Q, K, V weights [width, d_model] (K and V may have fewer
# rows: grouped-query attention), biases (or None), the output projection [d_model, width]
# (or None), the heads, and what feeds it: "pre_ln" (a LayerNorm, norm = (gain, bias)),
# "post_ln" (the layer writes into a residual that a LayerNorm reads), "rms" (an RMSNorm
# gain) or "none".


class _Layer:
    def __init__(self, name, q, k, v, biases, o, heads, form="none", norm=None):
        self.name, self.q, self.k, self.v, self.biases, self.o = name, q, k, v, biases, o
        self.heads, self.form, self.norm = heads, form, norm


def _parent(model, name):
    return model.get_submodule(name.rpartition(".")[0]) if "." in name else (model if name else None)


def _heads_of(module, model, name, what, given):
    if given is not None:
        return given
    for owner in (module, getattr(model, "config", None)):
        for attr in ("num_heads", "num_attention_heads", "n_heads", "n_head"):
            value = getattr(owner, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    raise ValueError(f"save_attention: {name or 'the model'} has {what} but no num_heads, num_attention_heads, "
                     "n_heads or n_head (on it or on model.config): give heads=")


def _layer_norm(norm, width_of):
    """A LayerNorm's (gain, bias); ones and zeros where it has none (elementwise_affine off)."""
    gain = getattr(norm, "weight", None)
    gain = gain if gain is not None else width_of.new_ones(width_of.shape[1])
    bias = getattr(norm, "bias", None)
    return gain, bias if bias is not None else gain.new_zeros(gain.shape)


def _linear(module, child):
    """(weight, bias) of module's child when it is a 2-D weight's layer, else (None, None)."""
    sub = getattr(module, child, None)
    weight = getattr(sub, "weight", None)
    return (weight, getattr(sub, "bias", None)) if weight is not None and weight.dim() == 2 else (None, None)


def _torch_mha(model, name, m, nn):
    """nn.MultiheadAttention: in_proj_weight is Q | K | V by rows; in nn.TransformerEncoderLayer
    (or a decoder layer's self_attn) norm_first says pre-LN (norm1 feeds it) or post-LN."""
    if m.bias_k is not None:
        raise ValueError(f"save_attention: {name or 'the model'} has add_bias_kv (a learned key and value "
                         "token), which no checkpoint family the scorer reads holds")
    if not m._qkv_same_embed_dim:
        raise ValueError(f"save_attention: {name or 'the model'} reads keys and values of other widths "
                         f"(kdim {m.kdim}, vdim {m.vdim}, embed_dim {m.embed_dim}): the scorer reads self-attention")
    q, k, v = m.in_proj_weight.chunk(3)
    biases = m.in_proj_bias.chunk(3) if m.in_proj_bias is not None else None
    layer = _Layer(name, q, k, v, biases, m.out_proj.weight, m.num_heads)
    parent = _parent(model, name)
    if isinstance(parent, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)) and name.endswith("self_attn"):
        if parent.norm_first:
            layer.form, layer.norm = "pre_ln", _layer_norm(parent.norm1, q)
        else:
            layer.form = "post_ln"
    return layer


def _fused_layer(model, name, m, nn, heads):
    """Q | K | V in one projection: nanoGPT's c_attn (nn.Linear [3·width, d_model]) and
    c_proj, GPT-2's (Hugging Face Conv1D, transposed), timm's qkv and proj; the block's
    ln_1 (norm1 for timm) beside a module named attn is the pre-LN LayerNorm that feeds it."""
    for fused, proj, norm_name in (("c_attn", "c_proj", "ln_1"), ("qkv", "proj", "norm1")):
        w, b = _linear(m, fused)
        if w is None:
            continue
        conv1d = not isinstance(getattr(m, fused), nn.Linear)  # GPT-2's Conv1D: [d_model, 3·width]
        w = w.t() if conv1d else w
        o = _linear(m, proj)[0]
        if w.shape[0] % 3:
            raise ValueError(f"save_attention: {name}.{fused} has {w.shape[0]} outputs (Q | K | V: a multiple of 3)")
        layer = _Layer(name, *w.chunk(3), b.chunk(3) if b is not None else None,
                       o.t() if o is not None and conv1d else o, _heads_of(m, model, name, fused, heads))
        norm = getattr(_parent(model, name), norm_name, None)
        if norm is not None and name.rpartition(".")[2] == "attn":
            layer.form, layer.norm = "pre_ln", _layer_norm(norm, layer.q)
        return layer
    return None


def _split_layer(model, name, m, nn, heads):
    """Hugging Face's names: q_proj, k_proj, v_proj (o_proj or out_proj) as in LLaMA, OPT,
    BART, with input_layernorm beside self_attn (a LayerNorm, or LLaMA's RMSNorm: a gain
    without a bias); or query, key, value as BERT's self-attention, its output projection the
    sibling output.dense, post-LN (output.LayerNorm)."""
    parent = _parent(model, name)
    for roles in (("q_proj", "k_proj", "v_proj"), ("query", "key", "value")):
        found = [_linear(m, r) for r in roles]
        if any(w is None for w, _ in found):
            continue
        (q, bq), (k, bk), (v, bv) = found
        biases = (bq, bk, bv) if any(b is not None for b in (bq, bk, bv)) else None
        h = _heads_of(m, model, name, ", ".join(roles), heads)
        if roles[0] == "q_proj":
            o = _linear(m, "o_proj")[0]
            layer = _Layer(name, q, k, v, biases, o if o is not None else _linear(m, "out_proj")[0], h)
            norm = getattr(parent, "input_layernorm", None) if name.endswith("self_attn") else None
            if isinstance(norm, nn.LayerNorm) or getattr(norm, "bias", None) is not None:
                layer.form, layer.norm = "pre_ln", _layer_norm(norm, q)
            elif getattr(norm, "weight", None) is not None:
                layer.form, layer.norm = "rms", (norm.weight, None)
            return layer
        out = getattr(parent, "output", None)
        layer = _Layer(name, q, k, v, biases, _linear(out, "dense")[0], h)
        if getattr(out, "LayerNorm", None) is not None:
            layer.form = "post_ln"
        return layer
    return None


def _find_layers(model, heads):
    import torch.nn as nn
    layers, taken = [], []
    for name, m in model.named_modules():
        if any(t == "" or name.startswith(t + ".") for t in taken):  # inside a layer found
            continue
        if isinstance(_parent(model, name), nn.TransformerDecoderLayer) and name.endswith("multihead_attn"):
            taken.append(name)  # cross-attention: keys from another sequence, not a layer the scorer reads
            continue
        if isinstance(m, nn.MultiheadAttention):
            layer = _torch_mha(model, name, m, nn)
        else:
            layer = _fused_layer(model, name, m, nn, heads) or _split_layer(model, name, m, nn, heads)
        if layer is not None:
            layer.heads = heads or layer.heads
            layers.append(layer)
            taken.append(name)
    return layers


# The families written (src/io/safetensors.h): timm's ViT for pre-LN LayerNorm layers
# (norm1 folded, writes centred), BERT's for post-LN, nn.MultiheadAttention's for layers
# with nothing around them, LLaMA's for RMSNorm gains and grouped-query attention.
def _family(layers):
    forms = {l.form for l in layers}
    if len(forms) > 1:
        raise ValueError("save_attention: the model's attention layers are read in different ways ("
                         + ", ".join(f"{l.name}: {l.form}" for l in layers) + "); a checkpoint holds one family")
    form = forms.pop()
    gqa = any(l.k.shape[0] != l.q.shape[0] for l in layers)
    if form == "rms" or (gqa and form == "none"):
        return "llama"
    if gqa:
        raise ValueError("save_attention: grouped-query attention (fewer key/value rows than query rows) "
                         f"under a LayerNorm ({form}): no checkpoint family the scorer reads holds it")
    return {"pre_ln": "timm", "post_ln": "bert", "none": "mha"}[form]


# Per family: the fused Q | K | V weight, its bias and the output projection (timm, MHA), or
# the stem of each role's nn.Linear, the roles and the output projection (BERT, LLaMA).
_FUSED = {"timm": ("attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight"),
          "mha": ("in_proj_weight", "in_proj_bias", "out_proj.weight")}
_SPLIT = {"bert": ("attention.self", ("query", "key", "value"), "attention.output.dense.weight"),
          "llama": ("self_attn", ("q_proj", "k_proj", "v_proj"), "self_attn.o_proj.weight")}


def _tensors(layers, family):
    """{name: tensor} of the layers under the family's names, each layer as layers.I, and
    {layers.I: the module's name in the model}."""
    import torch
    out, names = {}, {}
    for i, l in enumerate(layers):
        p = f"layers.{i}"
        names[p] = l.name
        qkv = (l.q, l.k, l.v)
        if family in _FUSED:
            weight, bias, o = _FUSED[family]
            out[f"{p}.{weight}"] = torch.cat(qkv)
            if l.biases is not None:  # a role without a bias has bias 0
                out[f"{p}.{bias}"] = torch.cat([b if b is not None else w.new_zeros(w.shape[0])
                                                 for b, w in zip(l.biases, qkv)])
        else:
            stem, roles, o = _SPLIT[family]
            for role, w, b in zip(roles, qkv, l.biases or (None,) * 3):
                out[f"{p}.{stem}.{role}.weight"] = w
                if b is not None:
                    out[f"{p}.{stem}.{role}.bias"] = b
        if l.o is not None:
            out[f"{p}.{o}"] = l.o
        if family == "timm":
            out[f"{p}.norm1.weight"], out[f"{p}.norm1.bias"] = l.norm
        if family == "llama" and l.norm is not None:
            out[f"{p}.input_layernorm.weight"] = l.norm[0]
    return out, names


def _write_atomic(path, data):
    """path written whole through path.partial and renamed: the runner never reads half a file."""
    with open(path + ".partial", "wb") as f:
        f.write(data)
    os.replace(path + ".partial", path)


def _safetensors_bytes(tensors, metadata):
    """The safetensors format: 8-byte little-endian header length, the JSON header (padded
    with spaces to 8 bytes), then each tensor's float32 little-endian bytes."""
    import numpy as np
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        if hasattr(t, "detach"):
            t = t.detach().to("cpu").float().contiguous().numpy()
        a = np.ascontiguousarray(t, dtype="<f4")
        if not np.isfinite(a).all():
            raise ValueError(f"save_attention: {name} holds NaN or infinity (the scorer reads finite weights)")
        data = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def save_attention(model, path=None, heads=None, config=None):
    """Write the attention weights of model to path (default TRIAL_DIR/model.safetensors) in
    a name family `attnsweep score` reads, and config.json beside it ({"num_attention_heads":
    heads} and the entries of config); returns path.

    model is a torch.nn.Module: its nn.MultiheadAttention layers (in_proj_weight, in_proj_bias,
    out_proj; inside nn.TransformerEncoderLayer with norm_first its norm1 is folded as a
    pre-LN ViT's, without it the layer is post-LN as BERT's; a decoder layer's cross-attention
    multihead_attn is left out), Hugging Face style attention modules (q_proj, k_proj,
    v_proj with o_proj or out_proj, and LLaMA's input_layernorm; or BERT's query, key, value
    with output.dense) and fused ones (nanoGPT's and GPT-2's c_attn and c_proj, timm's qkv and
    proj, with ln_1 or norm1 beside a module named attn folded as pre-LN), biases included.
    heads: from num_heads, num_attention_heads, n_heads or n_head of the module or
    model.config, unless given. Or model is a dict of tensors
    already under names the scorer reads (docs/score.md), written as they are
    (heads then needed unless they are Grassmann's). A model without attention, layers of
    different heads, NaN or infinite weights: ValueError, and nothing is written."""
    if path is None:
        path = os.path.join(trial_dir(), "model.safetensors")
    if isinstance(model, dict):
        tensors, names = model, {}
        if not tensors:
            raise ValueError("save_attention: the dict of tensors is empty")
    else:
        layers = _find_layers(model, heads)
        if not layers:
            raise ValueError(f"save_attention: {type(model).__name__} has no attention layer (nn.MultiheadAttention, "
                             "q_proj/k_proj/v_proj, query/key/value, c_attn or qkv modules); give a dict of tensors under "
                             "names attnsweep score reads")
        found = sorted({l.heads for l in layers})
        if len(found) > 1:
            raise ValueError(f"save_attention: the layers have {found} heads (config.json holds one number)")
        if [l.o is None for l in layers].count(True) not in (0, len(layers)):
            raise ValueError("save_attention: " + ", ".join(l.name for l in layers if l.o is None)
                             + " have no output projection and the other layers have one (all or none)")
        heads = found[0]
        tensors, names = _tensors(layers, _family(layers))
    metadata = {"format": "pt", "writer": "attnsweep.trial"}
    metadata.update({f"layer {p}": name or "(the model)" for p, name in names.items()})
    data = _safetensors_bytes(tensors, metadata)
    cfg = dict(config or {})
    if heads is not None:
        cfg["num_attention_heads"] = int(heads)
    _write_atomic(path, data)
    _write_atomic(os.path.join(os.path.dirname(os.path.abspath(path)), "config.json"), json.dumps(cfg).encode())
    return path
