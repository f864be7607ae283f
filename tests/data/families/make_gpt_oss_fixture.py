#!/usr/bin/env python3
"""Makes the gpt-oss fixture of tests/models/gpt_oss_test.cpp (own code: numpy, float64): a tiny
random-weight gpt-oss as a Hugging Face directory with MXFP4 experts, an independent float64 forward
over its weights (transformers' modeling_gpt_oss.py semantics, experts as their MXFP4 blocks
decode), and llama.cpp's logits on the GGUF `ferrum convert` writes from it.

What the model exercises: 4 layers, a 16-token window on the even ones (shorter than the prompt),
attention sinks drawn large enough to take a good share of each softmax, q/k/v/o biases, 64-dim
heads (q width 256 != hidden 128), YaRN (factor 32 over 4096 positions, truncate false as gpt-oss
has it), 4 experts of which 2 per token, router bias, the clamped SwiGLU with gate/up pre-activations
wide enough to reach the limit 7, the experts' gate/up rows interleaved and stored as MXFP4 blocks
and E8M0 scales. The tokenizer is the qwen2 fixture's vocabulary with o200k's pre-tokenizer pattern.

  families/gpt-oss/hf/                        config.json, model.safetensors.xz, tokenizer files
  families/gpt-oss/logits/exact-hf-p3.npy.xz        float64 forward, YaRN as transformers (truncate false)
  families/gpt-oss/logits/exact-gguf-p3.npy.xz      float64 forward, YaRN as llama.cpp (ramp ends rounded)
  families/gpt-oss/logits/llamacpp-gguf-p3.npy.xz  llama-results on the converted file
  families/gpt-oss/reference.json             config, prompt, token ids, commands, hashes, distances

Usage (from the repository root; needs build/ferrum, llama.cpp 3f545becc built as in DEVELOPERS.md):
  /usr/bin/python3 tests/data/families/make_gpt_oss_fixture.py --llama-cpp /tmp/llama.cpp
"""
import argparse
import json
import lzma
import os
import shutil
import sys

import numpy as np

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_family_fixtures as mf  # noqa: E402  (paths, run, npy_xz, sha256, llama-results)
ml = mf.ml  # rms, safetensors writer, BF16 rounding

NAME = "gpt-oss"
SEED = 3306
CONFIG = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 128,
          "intermediate_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 64, "num_local_experts": 4, "num_experts_per_tok": 2, "experts_per_token": 2,
          "max_position_embeddings": 131072, "initial_context_length": 4096, "rms_norm_eps": 1e-5,
          "rope_theta": 150000.0, "sliding_window": 16, "swiglu_limit": 7.0, "attention_bias": True,
          "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "bfloat16",
          "layer_types": ["sliding_attention", "full_attention"] * 2,
          "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                           "truncate": False, "original_max_position_embeddings": 4096},
          "quantization_config": {"quant_method": "mxfp4",
                                  "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                             "model.embed_tokens", "lm_head"]}}
ALPHA = 1.702
# o200k's pre-tokenizer pattern (tokenizer.json of gpt-4o / gpt-oss).
O200K = ("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")

# E2M1 values of the 16 nibbles (the OCP MX spec).
FP4 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def mxfp4_quantize(w):
    """w (..., cols) -> HF blocks (..., cols/32, 16) uint8 and scales (..., cols/32) uint8 (E8M0)."""
    b = w.reshape(w.shape[:-1] + (w.shape[-1] // 32, 32))
    amax = np.abs(b).max(-1)
    e = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-30) / 6)), 0).astype(np.int64) + 127
    q = b / np.exp2(e - 127)[..., None]
    nib = np.abs(q[..., None] - FP4).argmin(-1).astype(np.uint8)  # nearest level (the first of equals)
    blocks = (nib[..., 0::2] | (nib[..., 1::2] << 4)).astype(np.uint8)
    return blocks, e.astype(np.uint8)


def mxfp4_dequantize(blocks, scales):
    nib = np.stack([blocks & 15, blocks >> 4], -1).reshape(blocks.shape[:-1] + (32,))
    v = FP4[nib] * np.exp2(scales.astype(np.float64) - 127)[..., None]
    return v.reshape(v.shape[:-2] + (-1,))


def make_weights(cfg, rng):
    d, ff, V, E = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["num_local_experts"]
    H, Hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    f32 = lambda a: ml.rounded(np.asarray(a, np.float64), "BF16")  # noqa: E731  (BF16 values, stored F32)
    mat = lambda r, c, s=1.0: f32(rng.normal(0, s / np.sqrt(c), (r, c)))  # noqa: E731
    vec = lambda n, s: f32(rng.normal(0, s, n))  # noqa: E731
    W = {"model.embed_tokens.weight": f32(rng.normal(0, 1, (V, d))), "model.norm.weight": f32(1 + vec(d, 0.1)),
         "lm_head.weight": mat(V, d)}
    Q = {}  # MXFP4 tensors (uint8), written as U8
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        W[p + "input_layernorm.weight"] = f32(1 + vec(d, 0.1))
        W[p + "post_attention_layernorm.weight"] = f32(1 + vec(d, 0.1))
        for n, rows in (("q", H * hd), ("k", Hkv * hd), ("v", Hkv * hd)):
            W[p + "self_attn.%s_proj.weight" % n] = mat(rows, d)
            W[p + "self_attn.%s_proj.bias" % n] = vec(rows, 0.1)
        W[p + "self_attn.o_proj.weight"] = mat(d, H * hd)
        W[p + "self_attn.o_proj.bias"] = vec(d, 0.1)
        W[p + "self_attn.sinks"] = f32(rng.uniform(-1.0, 4.0, H))  # e^4 ~ 55: several keys' worth
        W[p + "mlp.router.weight"] = mat(E, d)
        W[p + "mlp.router.bias"] = vec(E, 0.5)
        # gate/up rows interleaved (gate 2i, up 2i + 1), 3x wider than unit scale so |gate|, |up| pass 7.
        gb, gs = mxfp4_quantize(rng.normal(0, 3 / np.sqrt(d), (E, 2 * ff, d)))
        db, ds = mxfp4_quantize(rng.normal(0, 1 / np.sqrt(ff), (E, d, ff)))
        Q[p + "mlp.experts.gate_up_proj_blocks"], Q[p + "mlp.experts.gate_up_proj_scales"] = gb, gs
        Q[p + "mlp.experts.down_proj_blocks"], Q[p + "mlp.experts.down_proj_scales"] = db, ds
        W[p + "mlp.experts.gate_up_proj_bias"] = f32(rng.normal(0, 1.0, (E, 2 * ff)))
        W[p + "mlp.experts.down_proj_bias"] = f32(rng.normal(0, 0.1, (E, d)))
    return W, Q


def yarn_tables(cfg, T, truncate):
    """cos, sin (T, hd/2) of transformers' _compute_yarn_parameters; truncate=True rounds the ramp's
    ends (floor/ceil) as llama.cpp's ggml_rope_yarn_corr_dims does."""
    rs, dim, base = cfg["rope_scaling"], cfg["head_dim"], cfg["rope_theta"]
    factor, orig = rs["factor"], rs["original_max_position_embeddings"]
    pos_freqs = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    extra, inter = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    corr = lambda n: dim * np.log(orig / (n * 2 * np.pi)) / (2 * np.log(base))  # noqa: E731
    low, high = corr(rs["beta_fast"]), corr(rs["beta_slow"])
    if truncate:
        low, high = np.floor(low), np.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extra_factor = 1 - ramp
    inv = inter * (1 - extra_factor) + extra * extra_factor
    mscale = 0.1 * np.log(factor) + 1.0
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang) * mscale, np.sin(ang) * mscale


def forward(W, Q, cfg, ids, truncate, stats=None):
    """float64, transformers' GptOssForCausalLM (eager attention with sinks, top-k router).
    stats (a dict): gets the share of gate and up pre-activations the clamp changed."""
    eps, lim = cfg["rms_norm_eps"], cfg["swiglu_limit"]
    H, Hkv, hd, k_used = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["num_experts_per_tok"]
    T = len(ids)
    cos, sin = yarn_tables(cfg, T, truncate)
    x = W["model.embed_tokens.weight"][ids]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    causal = np.where(j > i, -np.inf, 0.0)
    window = np.where(i - j >= cfg["sliding_window"], -np.inf, 0.0)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = ml.rms(x, W[p + "input_layernorm.weight"], eps)
        q, k, v = (h @ W[p + "self_attn.%s_proj.weight" % n].T + W[p + "self_attn.%s_proj.bias" % n] for n in "qkv")
        q, k, v = q.reshape(T, H, hd), k.reshape(T, Hkv, hd), v.reshape(T, Hkv, hd)
        q, k = mf.rope(q, cos, sin, hd), mf.rope(k, cos, sin, hd)
        mask = causal + (window if cfg["layer_types"][l] == "sliding_attention" else 0)
        att = np.zeros((T, H, hd))
        for hh in range(H):
            kv = hh // (H // Hkv)
            sc = q[:, hh, :] @ k[:, kv, :].T * hd ** -0.5 + mask
            sc = np.concatenate([sc, np.full((T, 1), W[p + "self_attn.sinks"][hh])], axis=1)
            pr = np.exp(sc - sc.max(axis=1, keepdims=True))
            pr = pr / pr.sum(axis=1, keepdims=True)
            att[:, hh, :] = pr[:, :-1] @ v[:, kv, :]
        x = x + att.reshape(T, H * hd) @ W[p + "self_attn.o_proj.weight"].T + W[p + "self_attn.o_proj.bias"]
        h = ml.rms(x, W[p + "post_attention_layernorm.weight"], eps)
        logits = h @ W[p + "mlp.router.weight"].T + W[p + "mlp.router.bias"]
        gu_w = mxfp4_dequantize(Q[p + "mlp.experts.gate_up_proj_blocks"], Q[p + "mlp.experts.gate_up_proj_scales"])
        dn_w = mxfp4_dequantize(Q[p + "mlp.experts.down_proj_blocks"], Q[p + "mlp.experts.down_proj_scales"])
        out = np.zeros_like(x)
        for t in range(T):
            top = np.argsort(-logits[t], kind="stable")[:k_used]
            wts = np.exp(logits[t, top] - logits[t, top].max())
            wts = wts / wts.sum()
            for e, wt in zip(top, wts):
                gu = gu_w[e] @ h[t] + W[p + "mlp.experts.gate_up_proj_bias"][e]
                if stats is not None:
                    stats["n"] = stats.get("n", 0) + len(gu) // 2
                    stats["gate"] = stats.get("gate", 0) + int((gu[0::2] > lim).sum())
                    stats["up"] = stats.get("up", 0) + int((np.abs(gu[1::2]) > lim).sum())
                g, u = np.minimum(gu[0::2], lim), np.clip(gu[1::2], -lim, lim)
                glu = g / (1 + np.exp(-ALPHA * g))
                out[t] += wt * (dn_w[e] @ ((u + 1) * glu) + W[p + "mlp.experts.down_proj_bias"][e])
        x = x + out
    return ml.rms(x, W["model.norm.weight"], eps) @ W["lm_head.weight"].T


def write_safetensors(path, W, Q):
    ml.write_safetensors(path, [(n, a, "F32") for n, a in W.items()] + [(n, a, "U8") for n, a in Q.items()])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", default="/tmp/llama.cpp")
    ap.add_argument("--scratch", default="/tmp/family-fixtures")
    args = ap.parse_args()
    bin_dir = os.path.join(args.llama_cpp, "build-native", "bin")
    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))

    tok_dir = os.path.join(mf.DATA, "models", mf.TOKENIZER_FROM, "hf")
    prompt = json.load(open(os.path.join(mf.DATA, "models", mf.TOKENIZER_FROM, "reference.json")))["prompts"][2]
    tcfg = json.load(open(os.path.join(tok_dir, "config.json")))
    cfg = dict(CONFIG, vocab_size=tcfg["vocab_size"], bos_token_id=tcfg.get("bos_token_id"),
               eos_token_id=tcfg.get("eos_token_id"))
    W, Q = make_weights(cfg, np.random.default_rng(SEED))
    out = os.path.join(HERE, NAME)
    if os.path.exists(out):
        shutil.rmtree(out)
    hf = os.path.join(out, "hf")
    os.makedirs(hf)
    os.makedirs(os.path.join(out, "logits"))
    json.dump(cfg, open(os.path.join(hf, "config.json"), "w"), indent=2)
    for f in ("tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(tok_dir, f), os.path.join(hf, f))
    tok = json.load(open(os.path.join(tok_dir, "tokenizer.json")))
    tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = O200K
    json.dump(tok, open(os.path.join(hf, "tokenizer.json"), "w"), ensure_ascii=False)
    scratch = os.path.join(args.scratch, NAME)
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    hf_scratch = os.path.join(scratch, "hf")
    shutil.copytree(hf, hf_scratch)
    st = os.path.join(hf_scratch, "model.safetensors")
    write_safetensors(st, W, Q)
    open(os.path.join(hf, "model.safetensors.xz"), "wb").write(lzma.compress(open(st, "rb").read(), preset=9))

    ferrum = os.path.join(mf.ROOT, "build", "ferrum")
    gguf = os.path.join(scratch, "%s.gguf" % NAME)
    mf.run([ferrum, "convert", hf_scratch, gguf])
    cmd, ids, lc = mf.results(bin_dir, gguf, prompt["text"], scratch)
    stats = {}
    exact_hf = forward(W, Q, cfg, ids, truncate=False, stats=stats)
    # What the fixture must exercise: the clamp on both halves, and sinks that move the logits.
    clamped = (stats["gate"] / stats["n"], stats["up"] / stats["n"])
    no_sinks = dict(W)
    for l in range(cfg["num_hidden_layers"]):
        no_sinks["model.layers.%d.self_attn.sinks" % l] = np.full(cfg["num_attention_heads"], -1e30)
    sinks_effect = float(np.abs(forward(no_sinks, Q, cfg, ids, truncate=False) - exact_hf).max())
    print("clamped: gate %.3f, up %.3f of pre-activations; sinks move the logits by up to %.3g" %
          (clamped + (sinks_effect,)))
    assert min(clamped) > 0.005 and sinks_effect > 0.5
    exact_gguf = forward(W, Q, cfg, ids, truncate=True)
    d = float(np.abs(lc - exact_gguf).max())
    mean = float(np.abs(lc - exact_gguf).mean())
    d_hf = float(np.abs(exact_hf - exact_gguf).max())
    agree = int((lc.argmax(1) == exact_gguf.argmax(1)).sum())
    print("gpt-oss: %d tokens; llama.cpp vs float64 (rounded YaRN ramp): max %.3g mean %.3g, top-1 %d/%d; "
          "truncate false vs true: %.3g" % (len(ids), d, mean, agree, len(ids), d_hf))
    # llama.cpp multiplies MXFP4 by activations rounded to Q8_0 (0.02 on average here, a logit where
    # the rounding changes a token's experts), so it is held to the float64 forward loosely; the
    # test holds ferrum's fast path, which rounds activations the same way, to llama.cpp closely.
    assert mean < 0.05 and agree >= len(ids) - 3, "llama.cpp and the float64 forward disagree"
    for n, a in (("exact-hf-p3", exact_hf), ("exact-gguf-p3", exact_gguf), ("llamacpp-gguf-p3", lc)):
        open(os.path.join(out, "logits", n + ".npy.xz"), "wb").write(mf.npy_xz(a))
    ref = {"family": NAME, "config": cfg, "made_by": "tests/data/families/make_gpt_oss_fixture.py",
           "llama_cpp": "3f545becc", "prompt": {"id": "p3", "text": prompt["text"], "token_ids": ids},
           "files": {"gguf": {"command": "ferrum convert hf %s.gguf" % NAME, "sha256": mf.sha256(gguf),
                              "llama_results": cmd}},
           "distances": {"llamacpp_vs_exact_gguf_max": d, "llamacpp_vs_exact_gguf_mean": mean,
                         "llamacpp_top1_agree": agree,
                         "exact_hf_vs_exact_gguf_max": d_hf, "clamped_gate_share": clamped[0],
                         "clamped_up_share": clamped[1], "sinks_effect_max": sinks_effect}}
    json.dump(ref, open(os.path.join(out, "reference.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
