#!/usr/bin/env python3
"""Makes the LoRA fixtures of tests/models/lora_test.cpp (own code: numpy, float64).

For the tiny llama, qwen2 and qwen3 fixture models (tests/data/models/<m>/hf): random LoRA adapters
with a fixed seed, written in both file forms, and float64 reference logits of the models with the
adapters MERGED into their weights (W + scale * B @ A), computed by an independent numpy forward
pass (Hugging Face layout: rotate-half RoPE; checked against llama.cpp's F32 logits of the base
models, tests/data/models/<m>/logits/F32/p3.npy, to 1e-4 before anything is written).

  <m>-a/                 PEFT directory (adapter_config.json + adapter_model.safetensors; F32 for
                         llama, F16 for qwen2/qwen3): rank 4, alpha 8, all of q/k/v/o/gate/up/down
  <m>-a.gguf             the same adapter as a llama.cpp GGUF LoRA file (same type; Q/K B rows of llama
                         permuted as llama.cpp's convert_lora_to_gguf.py permutes them)
  llama-b/               PEFT, F16, rank 8, alpha 16, use_rslora, q/v/o only
  llama-c/               PEFT, BF16, rank 2, alpha 2, gate/up/down only
  <m>/ref_a.npy          float32 (16, n_vocab): logits of p3's first 16 tokens, base + a merged
  llama/ref_sum.npy      base + 0.5 a + b + c merged (the summed `--lora a:0.5 --lora b --lora c`)
  llama/ref_a_q8_0.npy   base = llama-Q8_0.gguf dequantized (Q8_0 decoded here), + a merged

Usage: /usr/bin/python3 tests/data/lora/make_lora.py   (needs python3-numpy; rewrites this folder)
"""
import io
import json
import lzma
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")
N_TOK = 16
TARGETS = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
           "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}
GGUF_NAME = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
             "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}


# ------------------------------------------------------------------ safetensors

ST_TYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "U8": (np.uint8, 1)}  # U8: raw bytes (MXFP4 blocks)


def read_safetensors(path):
    raw = lzma.open(path + ".xz").read() if not os.path.exists(path) else open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        buf = raw[base + b:base + e]
        if info["dtype"] == "BF16":
            a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(buf, ST_TYPES[info["dtype"]][0])
        out[name] = a.reshape(info["shape"]).astype(np.float64)
    return out


def bf16_bits(a):
    """Round-to-nearest-even float32 -> bfloat16 bits."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_safetensors(path, tensors):
    """tensors: list of (name, array, dtype 'F32'|'F16'|'BF16'|'U8'): float64 values, or U8 raw bytes."""
    header, blobs, off = {}, [], 0
    for name, a, dt in tensors:
        if dt == "BF16":
            b = bf16_bits(a).tobytes()
        else:
            b = np.ascontiguousarray(a, ST_TYPES[dt][0]).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ------------------------------------------------------------------ GGUF

def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf_lora(path, arch, alpha, tensors, dt):
    """tensors: list of (name, float64 2-D array [rows, cols]); stored as dt (F32/F16), ne = (cols, rows)."""
    kv = [("general.architecture", 8, gguf_str(arch)), ("general.type", 8, gguf_str("adapter")),
          ("adapter.type", 8, gguf_str("lora")), ("adapter.lora.alpha", 6, struct.pack("<f", alpha))]
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, t, v in kv:
        out += gguf_str(k) + struct.pack("<I", t) + v
    data, off = b"", 0
    for name, a in tensors:
        rows, cols = a.shape
        out += gguf_str(name) + struct.pack("<IQQIQ", 2, cols, rows, 0 if dt == "F32" else 1, off)
        b = np.ascontiguousarray(a, np.float32 if dt == "F32" else np.float16).tobytes()
        b += b"\0" * ((32 - len(b) % 32) % 32)
        data += b
        off += len(b)
    out += b"\0" * ((32 - len(out) % 32) % 32)
    with open(path, "wb") as f:
        f.write(out + data)


def read_gguf(path):
    """F32 and Q8_0 tensors of a GGUF file as float64 arrays [rows, cols]."""
    raw = open(path, "rb").read()
    pos = 4
    version, n_t, n_kv = struct.unpack_from("<IQQ", raw, pos)
    pos += 20
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip_value(t, p):
        if t == 8:
            return p + 8 + struct.unpack_from("<Q", raw, p)[0]
        if t == 9:
            et, n = struct.unpack_from("<IQ", raw, p)
            p += 12
            for _ in range(n):
                p = skip_value(et, p)
            return p
        return p + sizes[t]

    for _ in range(n_kv):
        n = struct.unpack_from("<Q", raw, pos)[0]
        pos += 8 + n
        t = struct.unpack_from("<I", raw, pos)[0]
        pos = skip_value(t, pos + 4)
    infos = []
    for _ in range(n_t):
        n = struct.unpack_from("<Q", raw, pos)[0]
        name = raw[pos + 8:pos + 8 + n].decode()
        pos += 8 + n
        nd = struct.unpack_from("<I", raw, pos)[0]
        ne = struct.unpack_from("<%dQ" % nd, raw, pos + 4)
        pos += 4 + 8 * nd
        t, off = struct.unpack_from("<IQ", raw, pos)
        pos += 12
        infos.append((name, ne, t, off))
    base = (pos + 31) // 32 * 32
    out = {}
    for name, ne, t, off in infos:
        n = int(np.prod(ne))
        p = base + off
        if t == 0:
            a = np.frombuffer(raw, np.float32, n, p).astype(np.float64)
        elif t == 8:  # Q8_0: blocks of (f16 d, 32 x int8)
            blk = np.frombuffer(raw, np.uint8, n // 32 * 34, p).reshape(-1, 34)
            d = blk[:, :2].copy().view(np.float16).astype(np.float64)
            q = blk[:, 2:].copy().view(np.int8).astype(np.float64)
            a = (q * d).reshape(-1)
        else:
            raise ValueError("%s: tensor %s has type %d (only F32/Q8_0 decoded here)" % (path, name, t))
        out[name] = a.reshape(list(reversed(ne))) if len(ne) > 1 else a
    return out


def permute_qk(w, n_head):
    """HF rotate-half rows -> GGUF interleaved pairs (llama.cpp's convert permute)."""
    rows = w.shape[0]
    hd = rows // n_head
    return w.reshape(n_head, 2, hd // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute_qk(w, n_head):
    rows = w.shape[0]
    hd = rows // n_head
    return w.reshape(n_head, hd // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_from_gguf(g, cfg):
    """GGUF tensor names -> HF names (Q/K rows back to the HF order)."""
    W = {"model.embed_tokens.weight": g["token_embd.weight"], "model.norm.weight": g["output_norm.weight"]}
    if "output.weight" in g:
        W["lm_head.weight"] = g["output.weight"]
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
             "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    for l in range(cfg["num_hidden_layers"]):
        for gn, hn in names.items():
            w = g["blk.%d.%s.weight" % (l, gn)]
            if gn == "attn_q":
                w = unpermute_qk(w, cfg["num_attention_heads"])
            if gn == "attn_k":
                w = unpermute_qk(w, cfg["num_key_value_heads"])
            W["model.layers.%d.%s.weight" % (l, hn)] = w
    return W


# ------------------------------------------------------------------ float64 forward (HF layout)

def rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, theta):  # x: (T, H, hd), rotate-half
    hd = x.shape[-1]
    inv = theta ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def forward(W, cfg, ids):
    eps, theta = cfg["rms_norm_eps"], cfg.get("rope_theta", 10000.0)
    H, Hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    x = W["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = rms(x, W[p + "input_layernorm.weight"], eps)
        proj = {}
        for n in ("q", "k", "v"):
            proj[n] = h @ W[p + "self_attn.%s_proj.weight" % n].T
            if p + "self_attn.%s_proj.bias" % n in W:
                proj[n] = proj[n] + W[p + "self_attn.%s_proj.bias" % n]
        q, k, v = proj["q"].reshape(T, H, hd), proj["k"].reshape(T, Hkv, hd), proj["v"].reshape(T, Hkv, hd)
        if p + "self_attn.q_norm.weight" in W:
            q = rms(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k = rope(q, pos, theta), rope(k, pos, theta)
        att = np.zeros((T, H, hd))
        for hh in range(H):
            kv = hh // (H // Hkv)
            s = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            att[:, hh, :] = (s / s.sum(axis=1, keepdims=True)) @ v[:, kv, :]
        x = x + att.reshape(T, H * hd) @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"], eps)
        g, u = h @ W[p + "mlp.gate_proj.weight"].T, h @ W[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ W[p + "mlp.down_proj.weight"].T
    h = rms(x, W["model.norm.weight"], eps)
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    if cfg.get("tie_word_embeddings"):
        head = W["model.embed_tokens.weight"]
    return h @ head.T


# ------------------------------------------------------------------ adapters

def rounded(a, dt):
    if dt == "F16":
        return a.astype(np.float16).astype(np.float64)
    if dt == "BF16":
        return (bf16_bits(a).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float32).astype(np.float64)


def make_adapter(W, cfg, seed, r, alpha, rslora, targets, dt):
    """Random A/B (values exactly representable in dt), sized so scale*B@A is ~30% of W."""
    rng = np.random.default_rng(seed)
    scale = alpha / np.sqrt(r) if rslora else alpha / r
    ad = {"r": r, "alpha": alpha, "rslora": rslora, "dtype": dt, "scale": scale, "pairs": {}}
    for l in range(cfg["num_hidden_layers"]):
        for t in targets:
            w = W["model.layers.%d.%s.%s.weight" % (l, TARGETS[t], t)]
            out, inp = w.shape
            a = rng.standard_normal((r, inp)) / np.sqrt(inp)
            # std(scale * B @ A) = scale * sqrt(r) * sb / sqrt(inp) = 0.3 * std(W)
            sb = 0.3 * w.std() * np.sqrt(inp) / (scale * np.sqrt(r))
            b = rng.standard_normal((out, r)) * sb
            ad["pairs"][(l, t)] = (rounded(a, dt), rounded(b, dt))
    return ad


def merged(W, adapters):
    """W + sum of scale_i * factor_i * B @ A over (adapter, factor) pairs."""
    M = dict(W)
    for ad, factor in adapters:
        for (l, t), (a, b) in ad["pairs"].items():
            key = "model.layers.%d.%s.%s.weight" % (l, TARGETS[t], t)
            M[key] = M[key] + factor * ad["scale"] * (b @ a)
    return M


def write_peft(path, ad, base_dir):
    os.makedirs(path, exist_ok=True)
    targets = sorted({t for (_, t) in ad["pairs"]})
    cfg = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": base_dir, "r": ad["r"],
           "lora_alpha": ad["alpha"], "use_rslora": ad["rslora"], "fan_in_fan_out": False, "bias": "none",
           "lora_dropout": 0.0, "target_modules": targets}
    with open(os.path.join(path, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    tensors = []
    for (l, t), (a, b) in sorted(ad["pairs"].items()):
        p = "base_model.model.model.layers.%d.%s.%s." % (l, TARGETS[t], t)
        tensors += [(p + "lora_A.weight", a, ad["dtype"]), (p + "lora_B.weight", b, ad["dtype"])]
    write_safetensors(os.path.join(path, "adapter_model.safetensors"), tensors)


def write_gguf(path, ad, cfg, arch):
    tensors = []
    for (l, t), (a, b) in sorted(ad["pairs"].items()):
        if arch == "llama" and t == "q_proj":
            b = permute_qk(b, cfg["num_attention_heads"])
        if arch == "llama" and t == "k_proj":
            b = permute_qk(b, cfg["num_key_value_heads"])
        n = "blk.%d.%s.weight" % (l, GGUF_NAME[t])
        tensors += [(n + ".lora_a", a), (n + ".lora_b", b)]
    write_gguf_lora(path, arch, float(ad["alpha"]), tensors, ad["dtype"])


def save_ref(path, logits):
    np.save(path, logits.astype("<f4"))


def main():
    seeds = {"llama": 1801, "qwen2": 1802, "qwen3": 1803}
    for m, seed in seeds.items():
        hf = os.path.join(MODELS, m, "hf")
        cfg = json.load(open(os.path.join(hf, "config.json")))
        W = read_safetensors(os.path.join(hf, "model.safetensors"))
        ids = json.load(open(os.path.join(MODELS, m, "reference.json")))["prompts"][2]["token_ids"][:N_TOK]
        base = forward(W, cfg, ids)
        want = np.load(io.BytesIO(lzma.open(os.path.join(MODELS, m, "logits", "F32", "p3.npy.xz")).read()))[:N_TOK]
        assert np.abs(base - want).max() < 1e-4, "the numpy forward disagrees with llama.cpp on " + m
        a = make_adapter(W, cfg, seed, 4, 8, False, list(TARGETS), "F32" if m == "llama" else "F16")
        write_peft(os.path.join(HERE, m + "-a"), a, "tests/data/models/%s/hf" % m)
        write_gguf(os.path.join(HERE, m + "-a.gguf"), a, cfg, m)
        os.makedirs(os.path.join(HERE, m), exist_ok=True)
        save_ref(os.path.join(HERE, m, "ref_a.npy"), forward(merged(W, [(a, 1.0)]), cfg, ids))
        if m != "llama":
            continue
        b = make_adapter(W, cfg, seed + 10, 8, 16, True, ["q_proj", "v_proj", "o_proj"], "F16")
        c = make_adapter(W, cfg, seed + 20, 2, 2, False, ["gate_proj", "up_proj", "down_proj"], "BF16")
        write_peft(os.path.join(HERE, "llama-b"), b, "tests/data/models/llama/hf")
        write_peft(os.path.join(HERE, "llama-c"), c, "tests/data/models/llama/hf")
        save_ref(os.path.join(HERE, m, "ref_sum.npy"), forward(merged(W, [(a, 0.5), (b, 1.0), (c, 1.0)]), cfg, ids))
        g = read_gguf(os.path.join(MODELS, m, "gguf", "llama-Q8_0.gguf"))
        save_ref(os.path.join(HERE, m, "ref_a_q8_0.npy"), forward(merged(hf_from_gguf(g, cfg), [(a, 1.0)]), cfg, ids))
        print("llama: |merged a - base| max %.3f" % np.abs(forward(merged(W, [(a, 1.0)]), cfg, ids) - base).max())


if __name__ == "__main__":
    main()
