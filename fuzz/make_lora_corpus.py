#!/usr/bin/env python3
"""Seed corpus of fuzz_lora (fuzz/corpus/lora/): small adapters for the tiny llama fixture, written
with tests/data/lora/make_lora.py's own writers: a PEFT directory as adapter_config.json, the
separator line, adapter_model.safetensors (F16, rank 1, two targets), and the same as a GGUF LoRA
file (F32). Usage: /usr/bin/python3 fuzz/make_lora_corpus.py (needs python3-numpy)."""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "data", "lora"))
import make_lora  # noqa: E402

SEP = b"\n#--ferrum-fuzz-part--#\n"


def main():
    out = os.path.join(HERE, "corpus", "lora")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(5)
    a_q, b_q = rng.standard_normal((1, 256)) * 0.1, rng.standard_normal((256, 1)) * 0.1
    a_d, b_d = rng.standard_normal((1, 512)) * 0.1, rng.standard_normal((256, 1)) * 0.1
    cfg = {"peft_type": "LORA", "r": 1, "lora_alpha": 2, "use_rslora": False, "fan_in_fan_out": False,
           "target_modules": ["q_proj", "down_proj"]}
    p = "base_model.model.model.layers."
    tensors = [(p + "0.self_attn.q_proj.lora_A.weight", a_q, "F16"), (p + "0.self_attn.q_proj.lora_B.weight", b_q, "F16"),
               (p + "1.mlp.down_proj.lora_A.weight", a_d, "F16"), (p + "1.mlp.down_proj.lora_B.weight", b_d, "F16")]
    tmp = os.path.join(out, "tmp.safetensors")
    make_lora.write_safetensors(tmp, tensors)
    with open(os.path.join(out, "peft"), "wb") as f:
        f.write(json.dumps(cfg).encode() + SEP + open(tmp, "rb").read())
    os.remove(tmp)
    make_lora.write_gguf_lora(os.path.join(out, "gguf"), "llama", 2.0,
                              [("blk.0.attn_q.weight.lora_a", a_q), ("blk.0.attn_q.weight.lora_b", b_q),
                               ("blk.1.ffn_down.weight.lora_a", a_d), ("blk.1.ffn_down.weight.lora_b", b_d)], "F32")


if __name__ == "__main__":
    main()
