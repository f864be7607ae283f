#!/usr/bin/env python3
"""Regenerates yarn.json: YaRN RoPE parameters (per-pair inverse frequencies and the attention
factor) computed in float64 with numpy following transformers' _compute_yarn_parameters
(modeling_rope_utils.py), for the shapes and rope_scaling dictionaries of real checkpoints
(Qwen2.5/Qwen3 with yarn, gpt-oss, DeepSeek-style mscale) and edge cases. Dev-time only.
Usage: /usr/bin/python3 gen_yarn.py > yarn.json"""
import json
import math
import sys

import numpy as np

CASES = [
    # name, head_dim (rotated dims), rope_theta, max_position_embeddings, rope_scaling
    ("qwen2.5-7b-yarn4", 128, 1000000.0, 32768,
     {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}),
    ("qwen3-yarn4", 128, 1000000.0, 40960,
     {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}),
    ("gpt-oss", 64, 150000.0, 131072,
     {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
      "original_max_position_embeddings": 4096}),
    ("mscale-ratio", 64, 10000.0, 163840,
     {"type": "yarn", "factor": 40.0, "mscale": 1.0, "mscale_all_dim": 0.707,
      "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1}),
    ("attention-factor", 96, 500000.0, 8192,
     {"type": "yarn", "factor": 2.0, "attention_factor": 1.25}),
    ("factor-one", 64, 10000.0, 2048, {"type": "yarn", "factor": 1.0}),
]


def yarn(dim, base, max_pos, rs):
    factor = rs["factor"]
    attention_factor = rs.get("attention_factor")
    mscale = rs.get("mscale")
    mscale_all_dim = rs.get("mscale_all_dim")
    orig = rs.get("original_max_position_embeddings") or max_pos

    def get_mscale(scale, m=1):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
        else:
            attention_factor = get_mscale(factor)
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def corr_dim(rot):
        return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))

    low, high = corr_dim(beta_fast), corr_dim(beta_slow)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    pos_freqs = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    extrap, interp = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    e = 1 - ramp
    inv_freq = interp * (1 - e) + extrap * e
    return inv_freq, attention_factor


out = []
for name, dim, base, max_pos, rs in CASES:
    inv_freq, af = yarn(dim, base, max_pos, rs)
    out.append({"name": name, "head_dim": dim, "rope_theta": base, "max_position_embeddings": max_pos,
                "rope_scaling": rs, "inv_freq": inv_freq.tolist(), "attention_factor": af})
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
