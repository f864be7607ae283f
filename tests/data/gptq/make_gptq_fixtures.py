#!/usr/bin/env python3
"""Makes the GPTQ / AWQ fixtures of this folder (own code: numpy, float64). See README.md.

For the tiny llama and qwen2 fixture models (tests/data/models/<m>/hf): round-to-nearest quantized
copies of every decoder linear (and, in one variant, lm_head), written in the packed tensor layouts
that AutoGPTQ (v1 "gptq"), GPTQModel ("gptq_v2") and AutoAWQ (GEMM) checkpoints use, plus float64
reference logits of the DEQUANTIZED models, computed by the numpy forward pass of
tests/data/lora/make_lora.py (checked against llama.cpp's F32 logits of the base models first).

Before anything is written, the serialized safetensors bytes are parsed back and every packed linear
is unpacked by an independent decoder and compared (exactly) with the dequantized weights.

Usage: /usr/bin/python3 tests/data/gptq/make_gptq_fixtures.py   (needs python3-numpy; rewrites the
variant folders of this folder)
"""
import io
import json
import lzma
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lora"))
from make_lora import forward, read_safetensors, rms, rope  # noqa: E402,F401  (rms/rope used by forward)

MODELS = os.path.join(HERE, "..", "models")
LINEARS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
# Linears that see the same input share one act-order permutation (as in GPTQ).
PERM_GROUP = {"self_attn.q_proj": "qkv", "self_attn.k_proj": "qkv", "self_attn.v_proj": "qkv",
              "self_attn.o_proj": "o", "mlp.gate_proj": "gateup", "mlp.up_proj": "gateup",
              "mlp.down_proj": "down"}
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)

VARIANTS = [
    ("llama-gptq-4bit-g32", "llama", 2101,
     {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False, "sym": True,
      "checkpoint_format": "gptq"}),
    ("llama-gptq-4bit-g64-actorder-asym", "llama", 2102,
     {"quant_method": "gptq", "bits": 4, "group_size": 64, "desc_act": True, "sym": False,
      "checkpoint_format": "gptq", "lm_head": True}),
    ("llama-gptq-8bit-g128-actorder", "llama", 2103,
     {"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": True, "sym": True,
      "checkpoint_format": "gptq"}),
    ("qwen2-gptq-4bit-gm1-v2", "qwen2", 2104,
     {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False, "sym": False,
      "checkpoint_format": "gptq_v2"}),
    ("llama-awq-4bit-g32", "llama", 2105,
     {"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": True, "version": "gemm"}),
]


def f16(a):
    return np.asarray(a, np.float64).astype(np.float16).astype(np.float64)


# ------------------------------------------------------------------ quantization (RTN)

def quantize(w, bits, gs, sym, perm, min_zero):
    """w: float64 [rows, cols]. Groups of gs columns of w[:, perm] (gs == -1: one group).

    Returns q [rows, cols] (original column order), zero [n_groups, rows], scale16 [n_groups, rows]
    (float16-representable float64), g_idx [cols], dequantized float64 [rows, cols]."""
    rows, cols = w.shape
    if gs == -1:
        gs = cols
    assert cols % gs == 0
    ng = cols // gs
    maxq = 2 ** bits - 1
    pos = np.empty(cols, np.int64)
    pos[perm] = np.arange(cols)
    g_idx = pos // gs                               # group of each original column
    wp = w[:, perm].reshape(rows, ng, gs)           # permuted columns, grouped
    mn, mx = wp.min(axis=2), wp.max(axis=2)         # [rows, ng]
    if sym:
        xmax = np.maximum(np.abs(mn), np.abs(mx))
        scale = 2 * xmax / maxq
        zero = np.full(scale.shape, float(2 ** (bits - 1)))
    else:
        scale = (mx - mn) / maxq
    scale16 = f16(scale)
    scale16 = np.where(scale16 == 0, 1.0, scale16)  # guard (all-zero group)
    if not sym:
        zero = np.clip(np.round(-mn / scale16), 0, maxq)
    zero = np.maximum(zero, min_zero)
    sc = scale16.T[g_idx].T                          # [rows, cols] per original column
    zc = zero.T[g_idx].T
    q = np.clip(np.round(w / sc) + zc, 0, maxq)
    deq = sc * (q - zc)
    return q.astype(np.int64), zero.T.astype(np.int64), scale16.T, g_idx.astype(np.int64), deq


# ------------------------------------------------------------------ packing (uint32 arithmetic)

def pack_fields(vals, bits):
    """vals: int [n, m] in [0, 2^bits); packs groups of 32/bits consecutive entries along axis 0
    (field j at bit bits*j) into uint32 [n*bits/32, m], returned viewed as int32."""
    per = 32 // bits
    n, m = vals.shape
    assert n % per == 0
    v = vals.astype(np.uint32).reshape(n // per, per, m)
    out = np.zeros((n // per, m), np.uint32)
    for j in range(per):
        out |= v[:, j, :] << np.uint32(bits * j)
    return out.view(np.int32)


def pack_gptq(q, zero, scale16, g_idx, bits, v1):
    """AutoGPTQ layout: qweight [cols*bits/32, rows], qzeros [ng, rows*bits/32], scales [ng, rows]."""
    stored = zero - 1 if v1 else zero
    assert stored.min() >= 0, "v1 GPTQ zeros must be >= 1"
    return {"qweight": pack_fields(q.T, bits),            # along input columns
            "qzeros": pack_fields(stored.T, bits).T.copy(),  # along output rows
            "scales": scale16.astype(np.float16),
            "g_idx": g_idx.astype(np.int32)}


def pack_awq(q, zero, scale16):
    """AutoAWQ GEMM layout: qweight [cols, rows/8], qzeros [ng, rows/8], nibble k <- row 8j+ORDER[k]."""
    def inter(a):  # a: [n, rows] -> int32 [n, rows/8]
        n, rows = a.shape
        a = a.astype(np.uint32).reshape(n, rows // 8, 8)
        out = np.zeros((n, rows // 8), np.uint32)
        for k in range(8):
            out |= a[:, :, AWQ_ORDER[k]] << np.uint32(4 * k)
        return out.view(np.int32)
    return {"qweight": inter(q.T), "qzeros": inter(zero), "scales": scale16.astype(np.float16)}


# ------------------------------------------------------------------ independent unpack (checker)

def field(x, bits, j):
    """Field j of int32 array x (signed arithmetic shift, then mask)."""
    return (x.astype(np.int64) >> (bits * j)) & ((1 << bits) - 1)


def dequant_gptq(t, bits, v1):
    qw, qz, sc, gi = t["qweight"], t["qzeros"], t["scales"].astype(np.float64), t["g_idx"].astype(np.int64)
    assert qw.dtype == np.int32 and qz.dtype == np.int32 and t["g_idx"].dtype == np.int32
    per = 32 // bits
    rows = qw.shape[1]
    cols = qw.shape[0] * per
    q = np.zeros((rows, cols), np.int64)
    for i in range(cols):                 # input column i lives in row i // per, field i % per
        q[:, i] = field(qw[i // per, :], bits, i % per)
    ng = qz.shape[0]
    z = np.zeros((ng, rows), np.int64)
    for r in range(rows):                 # output row r lives in column r // per, field r % per
        z[:, r] = field(qz[:, r // per], bits, r % per)
    if v1:
        z = z + 1
    w = np.zeros((rows, cols))
    for i in range(cols):
        g = gi[i]
        w[:, i] = sc[g, :] * (q[:, i] - z[g, :])
    return w


def dequant_awq(t, gs):
    qw, qz, sc = t["qweight"], t["qzeros"], t["scales"].astype(np.float64)
    assert qw.dtype == np.int32 and qz.dtype == np.int32
    cols, rows = qw.shape[0], qw.shape[1] * 8
    q = np.zeros((cols, rows), np.int64)
    z = np.zeros((qz.shape[0], rows), np.int64)
    for k in range(8):
        q[:, AWQ_ORDER[k]::8] = field(qw, 4, k)
        z[:, AWQ_ORDER[k]::8] = field(qz, 4, k)
    g = np.arange(cols) // gs
    return (sc[g, :] * (q - z[g, :])).T


# ------------------------------------------------------------------ safetensors I/O (F16/F32/I32)

ST_DT = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}
ST_NP = {"F16": "<f2", "F32": "<f4", "I32": "<i4"}


def safetensors_bytes(tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": ST_DT[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def parse_safetensors(raw):
    n = struct.unpack("<Q", raw[:8])[0]
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + e], ST_NP[info["dtype"]]).reshape(info["shape"])
    return out


def npy_xz(a):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a, "<f4"))
    return lzma.compress(buf.getvalue(), preset=9)


# ------------------------------------------------------------------ variants

def build(name, m, seed, qc, W, cfg):
    """Returns (safetensors tensors, dequantized float64 HF weights for the reference)."""
    rng = np.random.default_rng(seed)
    awq = qc["quant_method"] == "awq"
    bits, gs = qc["bits"], qc["group_size"]
    sym = qc.get("sym", False)
    actorder = qc.get("desc_act", False)
    v1 = not awq and qc.get("checkpoint_format", "gptq") == "gptq"
    tensors, R = {}, {}

    def quant_linear(prefix, w, perm):
        rows, cols = w.shape
        q, zero, scale16, g_idx, deq = quantize(w, bits, gs, sym, perm, 1 if v1 else 0)
        t = pack_awq(q, zero, scale16) if awq else pack_gptq(q, zero, scale16, g_idx, bits, v1)
        for k, v in t.items():
            tensors[prefix + "." + k] = v
        R[prefix + ".weight"] = deq

    for key, w in W.items():
        if any(key.endswith(l + ".weight") for l in LINEARS):
            continue
        if key == "lm_head.weight" and qc.get("lm_head"):
            continue
        tensors[key] = w.astype(np.float16)  # embedding, norms, lm_head, q/k/v biases
        R[key] = f16(w)
    for l in range(cfg["num_hidden_layers"]):
        perms = {}
        for lin in LINEARS:
            w = W["model.layers.%d.%s.weight" % (l, lin)]
            cols = w.shape[1]
            if PERM_GROUP[lin] not in perms:
                perms[PERM_GROUP[lin]] = rng.permutation(cols) if actorder else np.arange(cols)
            quant_linear("model.layers.%d.%s" % (l, lin), w, perms[PERM_GROUP[lin]])
    if qc.get("lm_head"):
        w = W["lm_head.weight"]
        quant_linear("lm_head", w, rng.permutation(w.shape[1]) if actorder else np.arange(w.shape[1]))
    return tensors, R


def check(raw, R, qc, cfg):
    """Parse the serialized bytes and check every packed linear against the dequantized weights."""
    T = parse_safetensors(raw)
    awq = qc["quant_method"] == "awq"
    v1 = not awq and qc.get("checkpoint_format", "gptq") == "gptq"
    prefixes = ["model.layers.%d.%s" % (l, lin) for l in range(cfg["num_hidden_layers"]) for lin in LINEARS]
    if qc.get("lm_head"):
        prefixes.append("lm_head")
        assert "lm_head.weight" not in T
    for p in prefixes:
        t = {k: T[p + "." + k] for k in ("qweight", "qzeros", "scales") + (() if awq else ("g_idx",))}
        assert p + ".weight" not in T
        rows, cols = R[p + ".weight"].shape
        if awq:
            assert t["qweight"].shape == (cols, rows // 8) and t["qzeros"].shape[1] == rows // 8
            w = dequant_awq(t, qc["group_size"])
        else:
            per = 32 // qc["bits"]
            assert t["qweight"].shape == (cols // per, rows) and t["qzeros"].shape[1] == rows // per
            assert t["g_idx"].shape == (cols,)
            w = dequant_gptq(t, qc["bits"], v1)
        assert t["scales"].shape == (t["qzeros"].shape[0], rows) and t["scales"].dtype == np.float16
        assert np.array_equal(w, R[p + ".weight"]), p
    for k, v in T.items():
        if k in R:
            assert np.array_equal(v.astype(np.float64), R[k]), k
    return len(prefixes)


def main():
    bases = {}
    for m in ("llama", "qwen2"):
        hf = os.path.join(MODELS, m, "hf")
        cfg = json.load(open(os.path.join(hf, "config.json")))
        W = read_safetensors(os.path.join(hf, "model.safetensors"))  # reads the .xz in memory
        ids = json.load(open(os.path.join(MODELS, m, "reference.json")))["prompts"][2]["token_ids"]
        base = forward(W, cfg, ids)
        want = np.load(io.BytesIO(lzma.open(os.path.join(MODELS, m, "logits", "F32", "p3.npy.xz")).read()))
        err = np.abs(base - want).max()
        assert base.shape == want.shape and err < 1e-4, "the numpy forward disagrees with llama.cpp on %s (%g)" % (m, err)
        print("%s: base forward vs llama.cpp F32 p3: max |diff| %.2e" % (m, err))
        bases[m] = (hf, cfg, W, ids, base)

    for name, m, seed, qc in VARIANTS:
        hf, cfg, W, ids, base = bases[m]
        tensors, R = build(name, m, seed, qc, W, cfg)
        raw = safetensors_bytes(tensors)
        n_lin = check(raw, R, qc, cfg)
        logits = forward(R, cfg, ids)
        out = os.path.join(HERE, name)
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.makedirs(os.path.join(out, "reference"))
        c = dict(cfg)
        c["torch_dtype"] = "float16"
        c["quantization_config"] = qc
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(c, f, indent=2)
            f.write("\n")
        for fn in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(hf, fn), os.path.join(out, fn))
        files = {"model.safetensors.xz": lzma.compress(raw, preset=9),
                 "reference/p3.npy.xz": npy_xz(logits),
                 "reference/blk0_q_proj.npy.xz": npy_xz(R["model.layers.0.self_attn.q_proj.weight"]),
                 "reference/blk0_down_proj.npy.xz": npy_xz(R["model.layers.0.mlp.down_proj.weight"])}
        for fn, b in files.items():
            with open(os.path.join(out, fn), "wb") as f:
                f.write(b)
        sizes = ", ".join("%s %d KB" % (fn, (len(b) + 512) // 1024) for fn, b in files.items())
        print("%s: %d packed linears checked; max |logits - base| %.4f (mean %.4f); safetensors %d KB; %s"
              % (name, n_lin, np.abs(logits - base).max(), np.abs(logits - base).mean(), len(raw) // 1024, sizes))


if __name__ == "__main__":
    main()
