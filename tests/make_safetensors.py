#!/usr/bin/env python3
"""Write the safetensors files that tests/test_safetensors.c reads (numpy only).

Usage: make_safetensors.py OUTDIR

The format: 8-byte little-endian header length N, N bytes of UTF-8 JSON
{"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the data buffer (offsets relative to its start).

OUTDIR/NAME/model.safetensors   valid checkpoints (BERT, GPT-2, LLaMA, GQA; F32, F16,
                                BF16, F64; nanoGPT, timm ViT, nn.MultiheadAttention,
                                attnsweep's Grassmann), some with config.json beside them
OUTDIR/NAME/model.safetensors.index.json   a sharded checkpoint (HF's index and shards)
OUTDIR/NAME/expected.bin        the W tensors the reader must produce: float32
                                [layers, h, d_k, d_model, 3], layers in natural order
OUTDIR/NAME/expected_bias.bin   the Q | K | V biases the reader must produce, float32
                                [layers, 3·width], for the files that have them
OUTDIR/NAME/expected_out.bin    the output projections the reader must produce: float32
                                [layers, d_model, width]; absent when the file has none.
                                Their values are O[i, j] = i + j/1024 (output feature i,
                                input j), as the file's dtype rounds them
OUTDIR/bad/NAME.safetensors     malformed files, one defect each
OUTDIR/cfg_*/                   a valid file with a broken config.json
OUTDIR/f16_table.bin            float32 bits (uint32 LE) of all 65536 binary16 patterns
"""
import json
import os
import struct
import sys

import numpy as np


def encode(a, dtype):
    """Little-endian bytes of `a` in `dtype` and the float32 values a reader gets back."""
    a = np.asarray(a)
    if dtype == "F32":
        v = a.astype("<f4")
        return v.tobytes(), v.astype(np.float32)
    if dtype == "F64":
        v = a.astype("<f8")
        with np.errstate(over="ignore"):  # the f64_range case holds -1e300 on purpose
            return v.tobytes(), v.astype(np.float32)
    if dtype == "F16":
        v = a.astype("<f2")
        return v.tobytes(), v.astype(np.float32)
    if dtype == "BF16":  # round to nearest even on the upper 16 bits
        bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        hi = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
        return hi.tobytes(), (hi.astype(np.uint32) << 16).view(np.float32)
    if dtype in ("I32", "I64"):
        v = a.astype("<i4" if dtype == "I32" else "<i8")
        return v.tobytes(), None
    raise ValueError(dtype)


def safetensors_bytes(tensors, metadata=None, header_len=None, raw_header=None):
    """tensors: list of (name, dtype, shape, data bytes); raw_header replaces the JSON."""
    header, buf = {}, bytearray()
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(buf), len(buf) + len(data)]}
        buf += data
    if metadata is not None:
        header["__metadata__"] = metadata
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    if raw_header is None:
        h += b" " * (-len(h) % 8)  # the reference writer pads with spaces to 8 bytes
    n = len(h) if header_len is None else header_len
    return struct.pack("<Q", n) + h + bytes(buf)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)


def w_from_linear(q, k, v, heads):
    """W[h, d_k, d_model, 3] from nn.Linear weights [out, in]; K/V heads repeated (GQA)."""
    width, d = q.shape
    dk = width // heads
    kvh = k.shape[0] // dk
    rep = heads // kvh
    wq = q.reshape(heads, dk, d)
    wk = np.repeat(k.reshape(kvh, dk, d), rep, axis=0)
    wv = np.repeat(v.reshape(kvh, dk, d), rep, axis=0)
    return np.stack([wq, wk, wv], axis=-1).astype(np.float32)


def tensor(name, dtype, a):
    data, back = encode(a, dtype)
    return (name, dtype, np.shape(a), data), back


def out_codes(d_model, width):
    """An output projection [d_model, width] whose entries tell where they belong."""
    return np.arange(d_model)[:, None] + np.arange(width)[None, :] / 1024


def bert(rng, dtype, layers=2, d=32, heads=4, extras=True, out=True):
    """BERT-like tensors (shuffled header order), the expected W per layer and the
    expected output projections (None without them). With extras, the MLP's
    intermediate.dense and output.dense (a decoy: not the attention's output.dense)."""
    ts, expect, expect_out = [], [], []
    if extras:
        ts.append(tensor("bert.embeddings.word_embeddings.weight", "F32", rng.standard_normal((10, d)))[0])
        ts.append(tensor("bert.embeddings.position_ids", "I64", np.arange(16).reshape(1, 16))[0])
    for i in range(layers):
        p = f"bert.encoder.layer.{i}."
        back = {}
        for role in ("query", "key", "value"):
            t, back[role] = tensor(p + f"attention.self.{role}.weight", dtype, rng.standard_normal((d, d)) * 0.2)
            ts.append(t)
            if extras:
                ts.append(tensor(p + f"attention.self.{role}.bias", dtype, rng.standard_normal(d))[0])
        if out:
            t, o = tensor(p + "attention.output.dense.weight", dtype, out_codes(d, d))  # nn.Linear [out, in]
            ts.append(t)
            expect_out.append(o)
        if extras:
            ts.append(tensor(p + "intermediate.dense.weight", dtype, rng.standard_normal((4 * d, d)))[0])
            ts.append(tensor(p + "output.dense.weight", dtype, rng.standard_normal((d, 4 * d)))[0])
        expect.append(w_from_linear(back["query"], back["key"], back["value"], heads))
    rng.shuffle(ts)
    return ts, expect, expect_out or None


def gpt2(rng, layers=2, d=32, heads=4, out=True, w=None):
    """GPT-2-like tensors with the MLP's c_fc and c_proj (a decoy: not attn.c_proj);
    attention width w (default d)."""
    w = w or d
    ts, expect, expect_out = [tensor("wte.weight", "F32", rng.standard_normal((20, d)))[0]], [], []
    for i in range(layers):
        c, back = tensor(f"h.{i}.attn.c_attn.weight", "F32", rng.standard_normal((d, 3 * w)))
        ts += [c,
               tensor(f"h.{i}.attn.c_attn.bias", "F32", rng.standard_normal(3 * w))[0],
               tensor(f"h.{i}.attn.bias", "F32", np.tril(np.ones((1, 1, 8, 8))))[0],
               tensor(f"h.{i}.mlp.c_fc.weight", "F32", rng.standard_normal((d, 4 * d)))[0],
               tensor(f"h.{i}.mlp.c_proj.weight", "F32", rng.standard_normal((4 * d, d)))[0]]
        if out:
            t, o = tensor(f"h.{i}.attn.c_proj.weight", "F32", out_codes(d, w).T)  # Conv1D [in, out]
            ts.append(t)
            expect_out.append(o.T)
        q, k, v = back[:, :w].T, back[:, w:2 * w].T, back[:, 2 * w:].T  # Conv1D is [in, out]
        expect.append(w_from_linear(q, k, v, heads))
    return ts, expect, expect_out or None


def llama(rng, dtype, layers, d, heads, kv_heads, dk=None):
    ts, expect, expect_out = [], [], []
    dk = dk or d // heads
    for i in range(layers):
        p = f"model.layers.{i}.self_attn."
        tq, q = tensor(p + "q_proj.weight", dtype, rng.standard_normal((heads * dk, d)) / 3)
        tk, k = tensor(p + "k_proj.weight", dtype, rng.standard_normal((kv_heads * dk, d)) / 3)
        tv, v = tensor(p + "v_proj.weight", dtype, rng.standard_normal((kv_heads * dk, d)) / 3)
        to, o = tensor(p + "o_proj.weight", dtype, out_codes(d, heads * dk))  # reads the query heads
        ts += [tq, tk, tv, to]
        expect.append(w_from_linear(q, k, v, heads))
        expect_out.append(o)
    rng.shuffle(ts)  # the reader must order layers itself (2 before 10)
    return ts, expect, expect_out


def fused(rng, names, layers=2, d=32, heads=4, dtype="F32"):
    """Q, K and V in one nn.Linear weight [3·d, d] (rows Q | K | V) and the output projection
    nn.Linear [d, d], named by names(i) -> (qkv, out, decoys): nanoGPT's c_attn/c_proj,
    timm's attn.qkv/attn.proj, nn.MultiheadAttention's in_proj_weight/out_proj."""
    ts, expect, expect_out = [], [], []
    for i in range(layers):
        qkv_name, out_name, decoys = names(i)
        t, back = tensor(qkv_name, dtype, rng.standard_normal((3 * d, d)) * 0.2)
        to, o = tensor(out_name, dtype, out_codes(d, d))
        ts += [t, to] + [tensor(n, dtype, rng.standard_normal(shape))[0] for n, shape in decoys]
        expect.append(w_from_linear(back[:d], back[d:2 * d], back[2 * d:], heads))
        expect_out.append(o)
    rng.shuffle(ts)
    return ts, expect, expect_out


def nanogpt_names(i, d=32):
    p = f"transformer.h.{i}."
    return p + "attn.c_attn.weight", p + "attn.c_proj.weight", [
        (p + "attn.c_attn.bias", (3 * d,)), (p + "mlp.c_fc.weight", (4 * d, d)), (p + "mlp.c_proj.weight", (d, 4 * d))]


def timm_names(i, d=32):
    p = f"blocks.{i}."
    return p + "attn.qkv.weight", p + "attn.proj.weight", [
        (p + "attn.qkv.bias", (3 * d,)), (p + "mlp.fc1.weight", (4 * d, d)), (p + "mlp.fc2.weight", (d, 4 * d))]


def mha_names(i, d=32):
    p = f"encoder.layers.{i}.self_attn."
    return p + "in_proj_weight", p + "out_proj.weight", [(p + "in_proj_bias", (3 * d,)), (p + "out_proj.bias", (d,))]


def grassmann(rng, layers=2, d=16, r=4):
    """attnsweep's Grassmann mixing: W_red [r, d] (W is [r, 1, d, 1]) and W_plu [d, r(r-1)/2]."""
    ts, expect, expect_out = [], [], []
    pairs = r * (r - 1) // 2
    for i in range(layers):
        t, red = tensor(f"blocks.{i}.grassmann.w_red.weight", "F32", rng.standard_normal((r, d)))
        tp, plu = tensor(f"blocks.{i}.grassmann.w_plu.weight", "F32", out_codes(d, pairs))
        ts += [t, tp, tensor(f"blocks.{i}.grassmann.gate.weight", "F32", rng.standard_normal((d, 2 * d)))[0]]
        expect.append(red.reshape(r, 1, d, 1))
        expect_out.append(plu)
    return ts, expect, expect_out


def write_sharded(out, name, ts, expect, expect_out, config, shards=3):
    """The tensors dealt round-robin over shard files, named in model.safetensors.index.json."""
    files = [f"model-{k + 1:05d}-of-{shards:05d}.safetensors" for k in range(shards)]
    parts = [ts[k::shards] for k in range(shards)]
    weight_map = {}
    for f, part in zip(files, parts):
        write(os.path.join(out, name, f), safetensors_bytes(part))
        weight_map.update({t[0]: f for t in part})
    write_json(os.path.join(out, name, "model.safetensors.index.json"),
               {"metadata": {"total_size": sum(len(t[3]) for t in ts)}, "weight_map": weight_map})
    write(os.path.join(out, name, "expected.bin"), np.stack(expect).astype("<f4").tobytes())
    write(os.path.join(out, name, "expected_out.bin"), np.stack(expect_out).astype("<f4").tobytes())
    write(os.path.join(out, name, "expected_bias.bin"), expected_bias(ts).astype("<f4").tobytes())
    write_json(os.path.join(out, name, "config.json"), config)


BIAS_SUFFIXES = [".attn.c_attn.bias", ".attn.qkv.bias", ".in_proj_bias",
                 ".attention.self.query.bias", ".attention.self.key.bias", ".attention.self.value.bias"]


def decoded(dtype, data):
    """float32 values of a tensor's bytes, as the reader converts them."""
    if dtype == "BF16":
        return (np.frombuffer(data, "<u2").astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(data, {"F32": "<f4", "F64": "<f8", "F16": "<f2"}[dtype]).astype(np.float32)


def expected_bias(ts):
    """Each layer's Q | K | V bias as the reader returns it (layers in natural order: their
    number), or None when the file has no such bias."""
    per = {}
    for name, dtype, _, data in ts:
        for k, suf in enumerate(BIAS_SUFFIXES):
            if name.endswith(suf):
                layer = int("".join(ch for ch in name[:-len(suf)] if ch.isdigit()) or 0)
                per.setdefault(layer, {})[max(0, k - 3)] = decoded(dtype, data)
    if not per:
        return None
    return np.concatenate([np.concatenate([per[l][r] for r in sorted(per[l])]) for l in sorted(per)])


def write_model(out, name, ts, expect, expect_out=None, config=None, metadata=None):
    write(os.path.join(out, name, "model.safetensors"), safetensors_bytes(ts, metadata))
    bias = expected_bias(ts)
    if bias is not None:
        write(os.path.join(out, name, "expected_bias.bin"), bias.astype("<f4").tobytes())
    write(os.path.join(out, name, "expected.bin"), np.stack(expect).astype("<f4").tobytes())
    if expect_out is not None:
        write(os.path.join(out, name, "expected_out.bin"), np.stack(expect_out).astype("<f4").tobytes())
    if config is not None:
        write_json(os.path.join(out, name, "config.json"), config)


SMALL_NAMES = {"query": "attention.self.query.weight", "key": "attention.self.key.weight",
               "value": "attention.self.value.weight", "output": "attention.output.dense.weight"}


def small(rng, d=8, dtype="F32", layer="enc.layer.0", shapes=None, values=None, out=False):
    """One small BERT layer as a list of tensors, with per-role shape/value overrides;
    its output projection ("output") with out or when overridden."""
    shapes = shapes or {}
    values = values or {}
    roles = ["query", "key", "value"] + (["output"] if out or "output" in shapes or "output" in values else [])
    ts = []
    for role in roles:
        a = values.get(role, rng.standard_normal(shapes.get(role, (d, d))))
        ts.append(tensor(f"{layer}.{SMALL_NAMES[role]}", dtype, a)[0])
    return ts


def raw(header_text, buf=b""):
    h = header_text.encode() if isinstance(header_text, str) else header_text
    return struct.pack("<Q", len(h)) + h + buf


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(20240611)

    # ---- valid checkpoints
    meta = {"format": "pt"}
    write_model(out, "bert_f32", *bert(rng, "F32"), {"num_attention_heads": 4, "hidden_size": 32}, meta)
    write_model(out, "bert_f16", *bert(rng, "F16"))  # no config.json: heads must be passed
    write_model(out, "bert_bf16", *bert(rng, "BF16"), {"num_attention_heads": 4})
    write_model(out, "gpt2", *gpt2(rng), {"n_head": 4, "n_embd": 32})
    write_model(out, "llama", *llama(rng, "F64", layers=12, d=16, heads=4, kv_heads=4),
                {"num_attention_heads": 4, "num_key_value_heads": 4})
    write_model(out, "llama_gqa", *llama(rng, "F32", layers=2, d=16, heads=4, kv_heads=2),
                {"text_config": {"num_attention_heads": 4, "num_key_value_heads": 2}})
    # attention width other than d_model: c_proj [4, 8]; o_proj [8, 16] after k/v [8, 8]
    write_model(out, "gpt2_narrow", *gpt2(rng, d=8, heads=2, w=4), {"n_head": 2})
    write_model(out, "llama_gqa_wide", *llama(rng, "F32", layers=2, d=8, heads=4, kv_heads=2, dk=4),
                {"num_attention_heads": 4})
    # small enough (< 16 KiB) to seed the libFuzzer target with every name it reads
    write_model(out, "bert_small", *bert(rng, "F32", d=8, heads=2), {"num_attention_heads": 2})
    # no output projections, only the MLP's decoys: out stays NULL
    write_model(out, "bert_no_out", *bert(rng, "F32", out=False), {"num_attention_heads": 4})
    write_model(out, "gpt2_no_out", *gpt2(rng, out=False), {"n_head": 4})
    # fused Q, K, V as nn.Linear [3d, d]: nanoGPT, timm ViT (heads passed: timm writes no
    # heads), nn.MultiheadAttention (a TransformerEncoder's layers)
    write_model(out, "nanogpt", *fused(rng, nanogpt_names), {"n_head": 4, "n_embd": 32})
    write_model(out, "timm", *fused(rng, timm_names), {"num_heads": 4})
    write_model(out, "mha", *fused(rng, mha_names), {"num_heads": 4})
    write_model(out, "grassmann", *grassmann(rng))
    # BART-like: q_proj, k_proj, v_proj beside out_proj (not an nn.MultiheadAttention's): no outputs
    ts, expect, _ = llama(rng, "F32", layers=2, d=16, heads=4, kv_heads=4)
    ts = [t for t in ts if "o_proj" not in t[0]] + [
        tensor(f"model.layers.{i}.self_attn.out_proj.weight", "F32", np.ones((16, 16)))[0] for i in range(2)]
    write_model(out, "bart_like", ts, expect, None, {"num_attention_heads": 4})
    # sharded: BERT's layers over three files, the config beside the index
    write_sharded(out, "bert_sharded", *bert(rng, "F32", layers=3), {"num_attention_heads": 4})

    # half-precision specials that are finite: subnormals, ±0, extremes
    special = np.array([2.0 ** -24, -(2.0 ** -24), 2.0 ** -15, 1023 * 2.0 ** -24, 2.0 ** -14, 65504.0,
                        -65504.0, -0.0, 0.0, 1.0 / 3, 1e-7, 6e-8], dtype=np.float64)
    q = rng.standard_normal((8, 8))
    q.flat[:special.size] = special
    t = small(rng, values={"query": q}, dtype="F16")
    back = [np.frombuffer(x[3], "<f2").astype(np.float32).reshape(8, 8) for x in t]
    write_model(out, "f16_special", t, [w_from_linear(*back, 2)])

    bits = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    write(os.path.join(out, "f16_table.bin"), bits.astype("<u4").tobytes())

    # ---- malformed files (tests/test_safetensors.c knows each one's message)
    bad = lambda name, data: write(os.path.join(out, "bad", name + ".safetensors"), data)
    good = safetensors_bytes(small(rng))
    n = struct.unpack("<Q", good[:8])[0]
    bad("short", b"\x10\x00\x00\x00\x00")
    bad("header_past_eof", struct.pack("<Q", n + 1000) + good[8:])
    bad("header_absurd", struct.pack("<Q", 1 << 40) + good[8:])
    bad("truncated", good[:-10])
    bad("not_object", raw("[1, 2, 3]"))
    bad("bad_json", raw('{"a": {"dtype": "F32", '))
    bad("trailing", raw('{} x'))
    bad("not_utf8", raw(b'{"q\xff": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}'))
    bad("overlong_utf8", raw(b'{"q\xc0\x80": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}'))
    bad("nul", raw(b'{"q\x00": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}'))
    bad("escaped_nul", raw('{"x\\u0000y": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}'))
    bad("escaped_backslash", raw('{"x\\\\u0000y": 5}'))  # x\\u0000y: no NUL, the entry is bad
    bad("long_name", raw('{"' + "n" * 300 + '": 5}'))  # names in messages are cut after 100 bytes
    bad("entry_not_object", raw('{"x": 5}'))
    bad("metadata_not_object", raw('{"__metadata__": [1]}'))
    bad("no_dtype", raw('{"x": {"shape": [1], "data_offsets": [0, 4]}}', bytes(4)))
    bad("dtype_not_string", raw('{"x": {"dtype": 32, "shape": [1], "data_offsets": [0, 4]}}', bytes(4)))
    bad("unknown_dtype", raw('{"x": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}}', bytes(1)))
    bad("no_shape", raw('{"x": {"dtype": "F32", "data_offsets": [0, 4]}}', bytes(4)))
    bad("shape_not_array", raw('{"x": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}}', bytes(4)))
    bad("shape_negative", raw('{"x": {"dtype": "F32", "shape": [-1, 8], "data_offsets": [0, 4]}}', bytes(4)))
    bad("shape_fraction", raw('{"x": {"dtype": "F32", "shape": [1.5, 8], "data_offsets": [0, 4]}}', bytes(4)))
    bad("shape_huge", raw('{"x": {"dtype": "F32", "shape": [1e30, 8], "data_offsets": [0, 4]}}', bytes(4)))
    bad("shape_string", raw('{"x": {"dtype": "F32", "shape": [2, "8"], "data_offsets": [0, 4]}}', bytes(4)))
    # 2^32 x 2^32 elements: the count wraps to 0 in 64 bits and would match [0, 0];
    # 2^32 x 2^30 F32 elements fit, their 2^67 bits do not
    bad("shape_overflow", raw('{"x": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}}'))
    bad("shape_bytes_overflow",
        raw('{"x": {"dtype": "F32", "shape": [4294967296, 1073741824], "data_offsets": [0, 0]}}'))
    bad("no_offsets", raw('{"x": {"dtype": "F32", "shape": [1]}}', bytes(4)))
    bad("offsets_count", raw('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}', bytes(4)))
    bad("offsets_reversed", raw('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}}', bytes(8)))
    bad("offsets_outside", raw('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', bytes(4)))
    bad("offsets_negative", raw('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}}', bytes(4)))
    bad("size_mismatch", raw('{"x": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}}', bytes(16)))
    bad("overlap", raw('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},'
                       ' "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}', bytes(12)))
    bad("duplicate", raw('{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},'
                         ' "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', bytes(8)))
    bad("deep_json", raw('{"__metadata__": ' + "[" * 5000 + "]" * 5000 + "}"))
    bad("deep_array", raw('{"__metadata__": ' + "[" * 500 + "]" * 500 + "}"))
    bad("no_attention", safetensors_bytes([tensor("embeddings.weight", "F32", np.ones((4, 8)))[0],
                                           tensor("encoder.layer.0.attention.q_lin.weight", "F32",
                                                  np.ones((8, 8)))[0]]))
    bad("attention_int", safetensors_bytes(
        small(rng)[1:] + [tensor("enc.layer.0.attention.self.query.weight", "I32", np.ones((8, 8)))[0]]))
    bad("q_without_k", safetensors_bytes([small(rng)[0], small(rng)[2]]))
    bad("qkv_shapes", safetensors_bytes(small(rng, shapes={"key": (4, 8)})))
    bad("three_d", safetensors_bytes(small(rng, shapes={"query": (2, 4, 8)})))
    bad("empty_weight", safetensors_bytes(small(rng, shapes={"query": (0, 8), "key": (0, 8), "value": (0, 8)})))
    bad("layers_differ", safetensors_bytes(small(rng, d=8) + small(rng, d=16, layer="enc.layer.1")))
    bad("two_kinds", safetensors_bytes(small(rng) + [
        tensor("model.layers.0.self_attn." + r + "_proj.weight", "F32", np.ones((8, 8)))[0] for r in "qkv"]))
    q = rng.standard_normal((8, 8))
    q[2, 3] = np.nan
    bad("nan", safetensors_bytes(small(rng, values={"query": q})))
    k = rng.standard_normal((8, 8))
    k[0, 1] = np.inf
    bad("inf_f16", safetensors_bytes(small(rng, dtype="F16", values={"key": k})))
    v = rng.standard_normal((8, 8))
    v[7, 7] = -1e300
    bad("f64_range", safetensors_bytes(small(rng, dtype="F64", values={"value": v})))
    bad("gpt2_columns", safetensors_bytes([tensor("h.0.attn.c_attn.weight", "F32", np.ones((8, 25)))[0]]))
    bad("gqa_rows", safetensors_bytes([
        tensor("model.layers.0.self_attn.q_proj.weight", "F32", np.ones((8, 8)))[0],
        tensor("model.layers.0.self_attn.k_proj.weight", "F32", np.ones((6, 8)))[0],
        tensor("model.layers.0.self_attn.v_proj.weight", "F32", np.ones((6, 8)))[0]]))
    bad("llama_kv_differ", safetensors_bytes([
        tensor("model.layers.0.self_attn.q_proj.weight", "F32", np.ones((8, 8)))[0],
        tensor("model.layers.0.self_attn.k_proj.weight", "F32", np.ones((4, 8)))[0],
        tensor("model.layers.0.self_attn.v_proj.weight", "F32", np.ones((8, 8)))[0]]))
    # output projections: some layers without, of the wrong shape, type or values, alone
    bad("out_missing", safetensors_bytes(small(rng, out=True) + small(rng, layer="enc.layer.1")))
    bad("out_missing_first", safetensors_bytes(small(rng) + small(rng, layer="enc.layer.1", out=True)))
    bad("out_linear_shape", safetensors_bytes([  # o_proj with the K/V width, not the query width
        tensor("model.layers.0.self_attn.q_proj.weight", "F32", np.ones((8, 8)))[0],
        tensor("model.layers.0.self_attn.k_proj.weight", "F32", np.ones((4, 8)))[0],
        tensor("model.layers.0.self_attn.v_proj.weight", "F32", np.ones((4, 8)))[0],
        tensor("model.layers.0.self_attn.o_proj.weight", "F32", np.ones((8, 4)))[0]]))
    bad("out_conv1d_shape", safetensors_bytes([  # c_proj as nn.Linear would store it
        tensor("h.0.attn.c_attn.weight", "F32", np.ones((8, 12)))[0],
        tensor("h.0.attn.c_proj.weight", "F32", np.ones((8, 4)))[0]]))
    bad("out_3d", safetensors_bytes(small(rng, shapes={"output": (2, 4, 8)})))
    bad("out_int", safetensors_bytes(small(rng) + [
        tensor("enc.layer.0.attention.output.dense.weight", "I32", np.ones((8, 8)))[0]]))
    o = out_codes(8, 8)
    o[1, 5] = np.nan
    bad("out_nan_bf16", safetensors_bytes(small(rng, dtype="BF16", values={"output": o})))
    bad("out_alone", safetensors_bytes([tensor("h.0.attn.c_proj.weight", "F32", np.ones((8, 8)))[0]]))

    # sharded checkpoints gone wrong: a tensor the map puts in the wrong shard, a shard
    # outside the index's directory, a missing shard, an index without a weight map
    one = safetensors_bytes(small(rng))
    for name, index, shards in (
            ("shard_wrong", {"weight_map": {"enc.layer.0.attention.self.query.weight": "b.safetensors",
                                            "enc.layer.0.attention.self.key.weight": "a.safetensors"}},
             {"a.safetensors": one, "b.safetensors": safetensors_bytes([])}),
            ("shard_escape", {"weight_map": {"x": "../a.safetensors"}}, {}),
            ("shard_missing", {"weight_map": {"x": "gone.safetensors"}}, {}),
            ("shard_no_map", {"metadata": {}}, {})):
        write_json(os.path.join(out, name, "model.safetensors.index.json"), index)
        for f, data in shards.items():
            write(os.path.join(out, name, f), data)
    write(os.path.join(out, "shard_twice", "a.safetensors"), one)
    write(os.path.join(out, "shard_twice", "b.safetensors"), one)
    write_json(os.path.join(out, "shard_twice", "model.safetensors.index.json"),
               {"weight_map": {"enc.layer.0.attention.self.query.weight": "a.safetensors",
                               "enc.layer.0.attention.self.key.weight": "b.safetensors"}})
    bad("fused_rows", safetensors_bytes([tensor("blocks.0.attn.qkv.weight", "F32", np.ones((25, 8)))[0]]))
    # what a layer reads through and its biases (read beside its weights): bad shapes, dtypes, values
    qkv8 = tensor("h.0.attn.c_attn.weight", "F32", np.ones((8, 24)))[0]  # GPT-2's Conv1D, d_model 8, width 8
    bad("bias_short", safetensors_bytes([qkv8, tensor("h.0.attn.c_attn.bias", "F32", np.ones(23))[0]]))
    bad("ln_int", safetensors_bytes([qkv8, tensor("h.0.ln_1.weight", "I32", np.ones(8))[0]]))
    bad("bias_nan", safetensors_bytes([qkv8, tensor("h.0.attn.c_attn.bias", "F32", np.r_[np.ones(5), np.nan, np.ones(18)])[0]]))
    bad("grassmann_plu", safetensors_bytes([tensor("b.0.grassmann.w_red.weight", "F32", np.ones((4, 8)))[0],
                                            tensor("b.0.grassmann.w_plu.weight", "F32", np.ones((8, 5)))[0]]))

    # ---- config.json problems beside a valid file
    for name, cfg in (("cfg_no_key", '{"hidden_size": 8}'), ("cfg_bad_value", '{"num_attention_heads": "two"}'),
                      ("cfg_invalid", '{"num_attention_heads": 2'), ("cfg_zero", '{"n_head": 0}')):
        write(os.path.join(out, name, "model.safetensors"), good)
        with open(os.path.join(out, name, "config.json"), "w") as f:
            f.write(cfg)


if __name__ == "__main__":
    main()
