#!/usr/bin/env python3
"""Makes the fixtures of tests/models/family_test.cpp (own code: numpy, float64): for each newer
model family a tiny random-weight Hugging Face directory, an independent float64 forward over it
(Hugging Face semantics), and llama.cpp's logits on the GGUF `ferrum convert` writes from it (which
also proves that file is what llama.cpp expects), plain and quantized by `ferrum quantize`.

  families/<f>/hf/                        config.json, model.safetensors.xz (F32), tokenizer files
  families/<f>/logits/exact-F32-p3.npy.xz      float64 forward over the HF weights (stored f32)
  families/<f>/logits/llamacpp-<T>-p3.npy.xz   llama-results on <f>-<T>.gguf (T: F32, Q8_0, Q4_K_M)
  families/<f>/logits/exact-<Q>-p3.npy.xz      float64 forward over the quantized file's dequantized weights
  families/<f>/reference.json             config, prompt, token ids, commands, file hashes, distances

The GGUF files are not committed: the test writes them again with `ferrum convert` / `ferrum
quantize` and checks their hashes against reference.json (so a change in either is seen).

Usage (from the repository root; needs build/ferrum, llama.cpp 3f545becc built as in DEVELOPERS.md):
  /usr/bin/python3 tests/data/families/make_family_fixtures.py --llama-cpp /tmp/llama.cpp
"""
import argparse
import hashlib
import io
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, ".."))
ROOT = os.path.normpath(os.path.join(DATA, "..", ".."))
sys.path.insert(0, os.path.join(DATA, "lora"))
import make_lora as ml  # noqa: E402  (rms, rotate-half rope, Q/K un-permutation, safetensors writer)

RESULTS_ARGS = ["-t", "2", "-fa", "off", "-ctk", "f32", "-ctv", "f32"]  # + "-c", context
QUANT = ["Q8_0", "Q4_K_M"]
# The prompt and tokenizer of the qwen2 fixture (a byte-level BPE llama.cpp tokenizes as HF does).
TOKENIZER_FROM = "qwen2"

FAMILIES = {
    # SmolLM3: Llama with RoPE left out of every 4th layer (no_rope_layers), tied embeddings.
    "smollm3": {
        "seed": 3301,
        "config": {"architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "hidden_size": 128,
                   "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 32, "hidden_act": "silu",
                   "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 5000000.0,
                   "tie_word_embeddings": True, "no_rope_layers": [1, 1, 1, 0], "no_rope_layer_interval": 4,
                   "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32"},
    },
    # Phi-3/3.5/4: fused qkv_proj and gate_up_proj, LongRoPE (short factors up to
    # original_max_position_embeddings, long beyond, cos/sin scaled by sqrt(1 + ln(s)/ln(orig))),
    # partial rotary dimensions (Phi-4-mini: 0.75 of each head).
    "phi3": {
        "seed": 3302,
        "config": {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 128,
                   "intermediate_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "hidden_act": "silu", "max_position_embeddings": 1024,
                   "original_max_position_embeddings": 256, "partial_rotary_factor": 0.75,
                   "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
                   "sliding_window": None, "attention_bias": False, "torch_dtype": "float32",
                   "rope_scaling": {"type": "longrope"}},  # factors added below (seeded)
        # The factors follow the context size (llama.cpp pads it to a multiple of 256): p3 with a
        # 256-token context uses the short ones (as transformers does for a prompt within the original
        # context), p3 six times over (~300 tokens, past it) with a 512-token context the long ones (as
        # transformers does then). The main p3 runs are made with a 512-token context: long factors.
        "prompts": [("short", None, 256), ("long", 6, 512)],
    },
    # Gemma 2: embeddings times sqrt(hidden), RMSNorm scales 1 + w (GGUF stores 1 + w), sandwich norms,
    # GeGLU (tanh GELU), scores scaled by query_pre_attn_scalar^-1/2 (= head_dim, llama.cpp's rule
    # below 27B) and soft-capped, logits soft-capped, a 16-token window on the even layers (shorter
    # than the 51-token prompt). Caps lowered from 50/30 so that random weights reach them.
    "gemma2": {
        "seed": 3303,
        "config": {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 128,
                   "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 64, "query_pre_attn_scalar": 64,
                   "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
                   "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "attn_logit_softcapping": 5.0,
                   "final_logit_softcapping": 10.0, "sliding_window": 16, "tie_word_embeddings": True,
                   "attention_bias": False, "torch_dtype": "float32"},
        # llama.cpp's GELU reads an F16 table (ggml's GGML_GELU_FP16): ~1.5e-3 at every position
        # (a 15- or 17-token window instead of 16 would be ~2).
        "llamacpp_tolerance": 5e-3,
    },
    # Gemma 3 (text): as Gemma 2 without soft-capping, plus per-head q/k RMS norms (scale 1 + w), a
    # 16-token window on 5 of every 6 layers with their own RoPE base (rope_local_base_freq, unscaled),
    # the global layer with rope_theta 1e6 and linear scaling (factor 8, as the 4B-27B checkpoints).
    "gemma3": {
        "seed": 3304,
        "config": {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 128,
                   "intermediate_size": 256, "num_hidden_layers": 6, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 64, "query_pre_attn_scalar": 64,
                   "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 32768,
                   "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
                   "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "sliding_window": 16,
                   "sliding_window_pattern": 6, "attn_logit_softcapping": None, "final_logit_softcapping": None,
                   "tie_word_embeddings": True, "attention_bias": False, "torch_dtype": "float32"},
        "llamacpp_tolerance": 5e-3,  # its F16 GELU table, as for gemma2
    },
    # Mistral: Llama with a sliding window, here 16 tokens, shorter than the 51-token prompt.
    # llama.cpp's llama architecture (mistral files are "llama") has no window: it does not run these.
    "mistral": {
        "seed": 3305,
        "config": {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 128,
                   "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 32, "hidden_act": "silu",
                   "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                   "sliding_window": 16, "tie_word_embeddings": False, "torch_dtype": "float32"},
        "llamacpp": False,
    },
}


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def npy_xz(a):
    b = io.BytesIO()
    np.save(b, np.asarray(a, np.float32))
    return lzma.compress(b.getvalue(), preset=9)


def run(cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


# ------------------------------------------------------------------ weights and the float64 forward

def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def n_rot(cfg):
    return int(cfg.get("partial_rotary_factor", 1.0) * head_dim(cfg))


def make_weights(cfg, seed):
    rng = np.random.default_rng(seed)
    if cfg.get("rope_scaling", {}).get("type") == "longrope":
        half = n_rot(cfg) // 2
        cfg["rope_scaling"]["long_factor"] = [float(np.float32(v)) for v in np.linspace(1.0, 24.0, half) *
                                              (1 + 0.1 * rng.random(half))]
        cfg["rope_scaling"]["short_factor"] = [float(np.float32(v)) for v in 1 + 0.2 * rng.random(half)]
    d, ff, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, Hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    # Values BF16 holds, stored as F32: exact in every path, and the files compress to half.
    f32 = lambda a: ml.rounded(np.asarray(a, np.float64), "BF16")  # noqa: E731
    mat = lambda r, c: f32(rng.normal(0, 1 / np.sqrt(c), (r, c)))  # noqa: E731
    gemma = cfg["model_type"].startswith("gemma")  # norms hold w of the scale 1 + w
    norm = lambda n: f32((0 if gemma else 1) + 0.1 * rng.normal(size=n))  # noqa: E731
    W = {"model.embed_tokens.weight": f32(rng.normal(0, 1, (V, d))), "model.norm.weight": norm(d)}
    if not cfg.get("tie_word_embeddings"):
        W["lm_head.weight"] = mat(V, d)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        W[p + "input_layernorm.weight"] = norm(d)
        W[p + "post_attention_layernorm.weight"] = norm(d)
        if gemma:
            W[p + "pre_feedforward_layernorm.weight"] = norm(d)
            W[p + "post_feedforward_layernorm.weight"] = norm(d)
        W[p + "self_attn.q_proj.weight"] = mat(H * hd, d)
        W[p + "self_attn.k_proj.weight"] = mat(Hkv * hd, d)
        W[p + "self_attn.v_proj.weight"] = mat(Hkv * hd, d)
        W[p + "self_attn.o_proj.weight"] = mat(d, H * hd)
        W[p + "mlp.gate_proj.weight"] = mat(ff, d)
        W[p + "mlp.up_proj.weight"] = mat(ff, d)
        W[p + "mlp.down_proj.weight"] = mat(d, ff)
        if cfg["model_type"] == "gemma3_text":
            W[p + "self_attn.q_norm.weight"] = norm(hd)
            W[p + "self_attn.k_norm.weight"] = norm(hd)
        if cfg["model_type"] == "phi3":  # stored fused
            W[p + "self_attn.qkv_proj.weight"] = np.concatenate(
                [W.pop(p + "self_attn.%s_proj.weight" % n) for n in "qkv"])
            W[p + "mlp.gate_up_proj.weight"] = np.concatenate(
                [W.pop(p + "mlp.gate_proj.weight"), W.pop(p + "mlp.up_proj.weight")])
    return W


def uses_rope(cfg, l):
    if "no_rope_layers" in cfg:
        return bool(cfg["no_rope_layers"][l])
    return True


def rope_tables(cfg, T, ctx, local=False):
    """cos, sin (T, rot/2) as transformers builds them; LongRoPE factors chosen by the context size
    `ctx` (llama.cpp's rule; transformers' too when ctx is on the same side of the original context
    as the prompt's length)."""
    rot, theta = n_rot(cfg), cfg.get("rope_theta", 10000.0)
    if local:  # Gemma 3's windowed layers: their own base, no scaling
        theta = cfg["rope_local_base_freq"]
    inv = 1.0 / theta ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    scale = 1.0
    rs = {} if local else (cfg.get("rope_scaling") or {})
    if rs.get("rope_type") == "linear":
        inv = inv / rs["factor"]
    if rs.get("type") == "longrope":
        orig = cfg["original_max_position_embeddings"]
        inv = inv / np.asarray(rs["long_factor"] if ctx > orig else rs["short_factor"], np.float64)
        s = cfg["max_position_embeddings"] / orig
        scale = np.sqrt(1 + np.log(s) / np.log(orig)) if s > 1 else 1.0
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang) * scale, np.sin(ang) * scale


def rope(x, cos, sin, rot):  # x: (T, H, hd); rotate-half over the first rot dims
    r, rest = x[..., :rot], x[..., rot:]
    h = rot // 2
    c, s_ = cos[:, None, :], sin[:, None, :]
    r1, r2 = r[..., :h], r[..., h:]
    return np.concatenate([r1 * c - r2 * s_, r2 * c + r1 * s_, rest], axis=-1)


def forward(W, cfg, ids, ctx=512):
    """float64, Hugging Face semantics (transformers' modeling_<family>.py)."""
    eps = cfg["rms_norm_eps"]
    H, Hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    ff = cfg["intermediate_size"]
    T = len(ids)
    gemma = cfg["model_type"].startswith("gemma")
    nw = (lambda w: 1 + w) if gemma else (lambda w: w)  # noqa: E731  (the RMSNorm scale)
    cos, sin = rope_tables(cfg, T, ctx)
    local_tables = rope_tables(cfg, T, ctx, local=True) if "rope_local_base_freq" in cfg else None
    x = W["model.embed_tokens.weight"][ids]
    if gemma:
        x = x * np.float64(np.float32(np.sqrt(cfg["hidden_size"])))  # transformers' normalizer, in float32
    mask = np.triu(np.full((T, T), -np.inf), 1)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    window = np.where(i - j >= cfg["sliding_window"], -np.inf, 0.0) if cfg.get("sliding_window") else 0
    scale = cfg.get("query_pre_attn_scalar", hd) ** -0.5
    cap = cfg.get("attn_logit_softcapping")
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = ml.rms(x, nw(W[p + "input_layernorm.weight"]), eps)
        if p + "self_attn.qkv_proj.weight" in W:
            qkv = h @ W[p + "self_attn.qkv_proj.weight"].T
            q, k, v = qkv[:, :H * hd], qkv[:, H * hd:(H + Hkv) * hd], qkv[:, (H + Hkv) * hd:]
        else:
            q, k, v = (h @ W[p + "self_attn.%s_proj.weight" % n].T for n in "qkv")
        q, k, v = q.reshape(T, H, hd), k.reshape(T, Hkv, hd), v.reshape(T, Hkv, hd)
        if p + "self_attn.q_norm.weight" in W:  # per head, before RoPE
            q = ml.rms(q, nw(W[p + "self_attn.q_norm.weight"]), eps)
            k = ml.rms(k, nw(W[p + "self_attn.k_norm.weight"]), eps)
        if uses_rope(cfg, l):
            c_, s_ = local_tables if local_tables and sliding(cfg, l) else (cos, sin)
            q, k = rope(q, c_, s_, n_rot(cfg)), rope(k, c_, s_, n_rot(cfg))
        att = np.zeros((T, H, hd))
        for hh in range(H):
            kv = hh // (H // Hkv)
            sc = q[:, hh, :] @ k[:, kv, :].T * scale
            if cap:
                sc = cap * np.tanh(sc / cap)
            sc = sc + mask + (window if sliding(cfg, l) else 0)
            sc = np.exp(sc - sc.max(axis=1, keepdims=True))
            att[:, hh, :] = (sc / sc.sum(axis=1, keepdims=True)) @ v[:, kv, :]
        o = att.reshape(T, H * hd) @ W[p + "self_attn.o_proj.weight"].T
        if gemma:
            x = x + ml.rms(o, nw(W[p + "post_attention_layernorm.weight"]), eps)
            h = ml.rms(x, nw(W[p + "pre_feedforward_layernorm.weight"]), eps)
        else:
            x = x + o
            h = ml.rms(x, W[p + "post_attention_layernorm.weight"], eps)
        if p + "mlp.gate_up_proj.weight" in W:
            gu = h @ W[p + "mlp.gate_up_proj.weight"].T
            g, u = gu[:, :ff], gu[:, ff:]
        else:
            g, u = h @ W[p + "mlp.gate_proj.weight"].T, h @ W[p + "mlp.up_proj.weight"].T
        if gemma:  # GeGLU, tanh GELU; the output normed before the residual
            act = 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3)))
            x = x + ml.rms((act * u) @ W[p + "mlp.down_proj.weight"].T,
                           nw(W[p + "post_feedforward_layernorm.weight"]), eps)
        else:
            x = x + (g / (1 + np.exp(-g)) * u) @ W[p + "mlp.down_proj.weight"].T
    h = ml.rms(x, nw(W["model.norm.weight"]), eps)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    logits = h @ head.T
    if cfg.get("final_logit_softcapping"):
        c = cfg["final_logit_softcapping"]
        logits = c * np.tanh(logits / c)
    return logits


def sliding(cfg, l):
    """Whether layer l has the sliding window (Gemma 2: the even layers)."""
    if not cfg.get("sliding_window"):
        return False
    if cfg["model_type"] == "gemma2":
        return l % 2 == 0
    if cfg["model_type"] == "gemma3_text":
        return (l + 1) % cfg.get("sliding_window_pattern", 6) != 0
    return True


def hf_from_gguf(G, cfg):
    """GGUF tensor names -> HF names (Q/K rows back to rotate-half where the family permutes them)."""
    W = {"model.embed_tokens.weight": G["token_embd.weight"], "model.norm.weight": G["output_norm.weight"]}
    if "output.weight" in G:
        W["lm_head.weight"] = G["output.weight"]
    permuted = cfg["model_type"] in ("llama", "mistral", "smollm3")
    gemma = cfg["model_type"].startswith("gemma")
    if gemma:  # GGUF norms hold 1 + w
        W["model.norm.weight"] = W["model.norm.weight"] - 1
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
             "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_qkv": "self_attn.qkv_proj",
             "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_down": "mlp.down_proj"}
    if gemma:
        names.update({"post_attention_norm": "post_attention_layernorm", "ffn_norm": "pre_feedforward_layernorm",
                      "post_ffw_norm": "post_feedforward_layernorm"})
    for l in range(cfg["num_hidden_layers"]):
        for gn, hn in names.items():
            key = "blk.%d.%s.weight" % (l, gn)
            if key not in G:
                continue
            w = G[key]
            if gemma and gn.endswith("norm"):
                w = w - 1
            if permuted and gn == "attn_q":
                w = ml.unpermute_qk(w, cfg["num_attention_heads"])
            if permuted and gn == "attn_k":
                w = ml.unpermute_qk(w, cfg["num_key_value_heads"])
            W["model.layers.%d.%s.weight" % (l, hn)] = w
        up = G["blk.%d.ffn_up.weight" % l]
        fused = up.shape[0] == 2 * cfg["intermediate_size"]
        W["model.layers.%d.mlp.%s.weight" % (l, "gate_up_proj" if fused else "up_proj")] = up
    return W


# ------------------------------------------------------------------ GGUF (dequantized with gguf-py)

def gguf_weights(path, quants, QT):
    """Every tensor of a GGUF file dequantized by llama.cpp's gguf-py, float64, numpy shape reversed(ne)."""
    from gguf import GGUFReader
    out = {}
    for t in GGUFReader(path).tensors:
        shape = list(reversed([int(n) for n in t.shape]))
        a = quants.dequantize(np.asarray(t.data), QT(int(t.tensor_type)))
        out[t.name] = np.asarray(a, np.float64).reshape(shape)
    return out


def results(bin_dir, gguf, text, cwd, ctx=512):
    args = RESULTS_ARGS + ["-c", str(ctx)]
    cmd = [os.path.join(bin_dir, "llama-results"), "-m", gguf, "-p", text, "-o", "out.gguf"] + args
    run(cmd, cwd)
    from gguf import GGUFReader
    r = GGUFReader(os.path.join(cwd, "out.gguf"))
    t = {x.name: x for x in r.tensors}
    toks = np.asarray(t["tokens"].data).astype(np.int64).reshape(-1).tolist()
    logits = np.asarray(t["logits"].data, np.float32).reshape(len(toks), -1)
    os.remove(os.path.join(cwd, "out.gguf"))
    return " ".join(["$BIN/llama-results", "-m", os.path.basename(gguf), "-p", repr(text), "-o", "out.gguf"] +
                    args), toks, logits


def build(name, fam, args, quants, QT):
    tok_dir = os.path.join(DATA, "models", TOKENIZER_FROM, "hf")
    tref = json.load(open(os.path.join(DATA, "models", TOKENIZER_FROM, "reference.json")))
    prompt = tref["prompts"][2]
    tcfg = json.load(open(os.path.join(tok_dir, "config.json")))
    cfg = dict(fam["config"], vocab_size=tcfg["vocab_size"], bos_token_id=tcfg.get("bos_token_id"),
               eos_token_id=tcfg.get("eos_token_id"))
    W = make_weights(cfg, fam["seed"])
    out = os.path.join(HERE, name)
    if os.path.exists(out):
        shutil.rmtree(out)
    hf = os.path.join(out, "hf")
    os.makedirs(hf)
    os.makedirs(os.path.join(out, "logits"))
    json.dump(cfg, open(os.path.join(hf, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(tok_dir, f), os.path.join(hf, f))
    scratch = os.path.join(args.scratch, name)
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    os.makedirs(scratch)
    st = os.path.join(scratch, "model.safetensors")
    ml.write_safetensors(st, [(n, a, "F32") for n, a in W.items()])
    open(os.path.join(hf, "model.safetensors.xz"), "wb").write(lzma.compress(open(st, "rb").read(), preset=9))
    shutil.copy(st, os.path.join(scratch, "hf-model.safetensors"))
    hf_scratch = os.path.join(scratch, "hf")
    shutil.copytree(hf, hf_scratch, ignore=shutil.ignore_patterns("*.xz"))
    shutil.copy(st, os.path.join(hf_scratch, "model.safetensors"))

    ids = prompt["token_ids"]
    exact = forward(W, cfg, ids)
    open(os.path.join(out, "logits", "exact-F32-p3.npy.xz"), "wb").write(npy_xz(exact))
    ref = {"family": name, "config": cfg, "prompt": {"id": "p3", "text": prompt["text"], "token_ids": ids},
           "made_by": "tests/data/families/make_family_fixtures.py", "llama_cpp": "3f545becc", "files": {},
           "distances": {}}
    ferrum = os.path.join(ROOT, "build", "ferrum")
    f32 = os.path.join(scratch, "%s-F32.gguf" % name)
    run([ferrum, "convert", hf_scratch, f32])
    files = {"F32": f32}
    ref["files"]["F32"] = {"command": "ferrum convert hf %s-F32.gguf" % name, "sha256": sha256(f32)}
    for q in QUANT:
        files[q] = os.path.join(scratch, "%s-%s.gguf" % (name, q))
        run([ferrum, "quantize", f32, files[q], q])
        ref["files"][q] = {"command": "ferrum quantize %s-F32.gguf %s-%s.gguf %s" % (name, name, q, q),
                           "sha256": sha256(files[q])}
    # llama.cpp runs the files, except where it does not do what the family does (its llama
    # architecture ignores a sliding window: the mistral fixture has the float64 references only).
    ref["llama_cpp_runs"] = fam.get("llamacpp", True)
    for t, path in files.items():
        if ref["llama_cpp_runs"]:
            cmd, toks, lc = results(args.bin, path, prompt["text"], scratch)
            assert toks == ids, "llama.cpp tokenized the prompt differently: %s" % toks
            ref["files"][t]["llama_results"] = cmd
            open(os.path.join(out, "logits", "llamacpp-%s-p3.npy.xz" % t), "wb").write(npy_xz(lc))
        if t == "F32":
            if ref["llama_cpp_runs"]:
                d = float(np.abs(lc - exact).max())
                print("%s: llama.cpp F32 vs float64 forward: max |diff| %.3g" % (name, d))
                assert d < fam.get("llamacpp_tolerance", 1e-4), "llama.cpp and the float64 forward disagree on %s" % name
                ref["distances"]["llamacpp_F32_vs_exact_max"] = d
            continue
        G = gguf_weights(path, quants, QT)
        Wq = hf_from_gguf(G, cfg)
        ex = forward(Wq, cfg, ids)
        open(os.path.join(out, "logits", "exact-%s-p3.npy.xz" % t), "wb").write(npy_xz(ex))
        if not ref["llama_cpp_runs"]:
            continue
        d = np.abs(lc - ex)
        agree = int((lc.argmax(1) == ex.argmax(1)).sum())
        print("%s %s: llama.cpp vs exact over its weights: max %.3g mean %.3g, top-1 %d/%d" %
              (name, t, d.max(), d.mean(), agree, len(ids)))
        ref["distances"]["llamacpp_%s_vs_exact" % t] = {"max": float(d.max()), "mean": float(d.mean()),
                                                        "top1_agree": agree}
    # More prompts (F32 only), each run by llama.cpp with its own context size.
    ref["extra_prompts"] = []
    for pid, repeat, ctx in fam.get("prompts", []):
        text = " ".join([prompt["text"]] * (repeat or 1))
        cmd, toks, lc = results(args.bin, f32, text, scratch, ctx)
        ex = forward(W, cfg, toks, ctx)
        if len(toks) > 64:  # the last 32 positions (the file stays small)
            ex, lc = ex[-32:], lc[-32:]
        d = float(np.abs(lc - ex).max())
        print("%s %s (%d tokens, context %d): llama.cpp F32 vs float64 forward: max |diff| %.3g" %
              (name, pid, len(toks), ctx, d))
        assert d < fam.get("llamacpp_tolerance", 1e-4), "llama.cpp and the float64 forward disagree on %s %s" % (name, pid)
        open(os.path.join(out, "logits", "exact-F32-%s.npy.xz" % pid), "wb").write(npy_xz(ex))
        open(os.path.join(out, "logits", "llamacpp-F32-%s.npy.xz" % pid), "wb").write(npy_xz(lc))
        ref["extra_prompts"].append({"id": pid, "text": text, "context": ctx, "token_ids": toks,
                                     "llama_results": cmd, "llamacpp_F32_vs_exact_max": d})
    json.dump(ref, open(os.path.join(out, "reference.json"), "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", default="/tmp/llama.cpp")
    ap.add_argument("--bin", default=None)
    ap.add_argument("--scratch", default="/tmp/family-fixtures")
    ap.add_argument("families", nargs="*", default=list(FAMILIES))
    args = ap.parse_args()
    args.bin = args.bin or os.path.join(args.llama_cpp, "build-native", "bin")
    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    from gguf import quants
    from gguf.constants import GGMLQuantizationType as QT
    for name in args.families:
        build(name, FAMILIES[name], args, quants, QT)


if __name__ == "__main__":
    main()
