#!/usr/bin/env python3
"""Writes a GPTQ Hugging Face directory with the weights of an F16 llama GGUF (e.g. `ferrum make-model`'s
llama-1b), for benchmarking a GPTQ checkpoint against GGUF files quantized from the same weights.

  /usr/bin/python3 bench/make_gptq_dir.py /tmp/fb/llama-1b-F16.gguf /tmp/fb/llama-1b-gptq-4bit-g128 \
      [--bits 4] [--group 128] [--act-order] [--asym]

Round-to-nearest GPTQ in AutoGPTQ's layout (the packing of tests/data/gptq/make_gptq_fixtures.py;
act-order: a random column order per layer input, q/k/v and gate/up sharing theirs). Q/K rows go
back from GGUF's interleaved pairs to the HF rotate-half order. The tokenizer.json is a stand-in
(byte-level BPE over the file's vocabulary size, no merges): benchmarks feed token ids, not text.
Needs python3-numpy. Takes about a minute for the 1B shape.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "data", "gptq"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "data", "lora"))
import make_gptq_fixtures as mg  # noqa: E402  (RTN quantizer and AutoGPTQ packing)
import make_lora as ml  # noqa: E402  (Q/K un-permutation)

SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf(path):
    """Metadata and F16/F32 tensors (numpy views of a memory map, numpy shape = reversed ne)."""
    raw = np.memmap(path, np.uint8, "r")
    b = raw.tobytes() if raw.size < (1 << 20) else bytes(raw[: 64 << 20])  # header fits in 64 MiB
    pos = 0

    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, b, pos)[0]
        pos += struct.calcsize("<" + fmt)
        return v

    def rstr():
        nonlocal pos
        n = rd("Q")
        s = b[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    def rval(t):
        if t == 8:
            return rstr()
        if t == 9:
            et, n = rd("I"), rd("Q")
            return [rval(et) for _ in range(n)]
        return rd(SCALARS[t])

    assert b[:4] == b"GGUF", path
    pos = 4
    assert rd("I") == 3, "GGUF v3 expected"
    n_t, n_kv = rd("Q"), rd("Q")
    meta = {}
    for _ in range(n_kv):
        k = rstr()
        meta[k] = rval(rd("I"))
    infos = []
    for _ in range(n_t):
        name = rstr()
        ne = [rd("Q") for _ in range(rd("I"))]
        infos.append((name, ne, rd("I"), rd("Q")))
    align = meta.get("general.alignment", 32)
    base = (pos + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        dt = {0: np.float32, 1: np.float16}.get(t)
        if dt is None:
            sys.exit("%s: tensor %s has ggml type %d; an F16/F32 file is needed" % (path, name, t))
        n = int(np.prod(ne))
        tensors[name] = np.frombuffer(raw, dt, n, base + off).reshape(list(reversed(ne)))
    return meta, tensors


def fake_tokenizer(n_vocab):
    byte_chars = [chr(c) for c in range(ord("!"), ord("~") + 1)] + [chr(c) for c in range(0xA1, 0xAD)] + \
        [chr(c) for c in range(0xAE, 0x100)]
    byte_chars += [chr(0x100 + i) for i in range(256 - len(byte_chars))]
    vocab = {c: i for i, c in enumerate(byte_chars)}
    for i in range(len(vocab), n_vocab):
        vocab["<tok%d>" % i] = i
    return {"version": "1.0", "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                              "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "vocab": vocab, "merges": []}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("out")
    ap.add_argument("--bits", type=int, default=4)
    ap.add_argument("--group", type=int, default=128)
    ap.add_argument("--act-order", action="store_true")
    ap.add_argument("--asym", action="store_true")
    a = ap.parse_args()
    meta, T = read_gguf(a.gguf)
    arch = meta["general.architecture"]
    assert arch == "llama", "llama GGUF files only"
    k = lambda n: meta["%s.%s" % (arch, n)]
    n_layer, n_head, n_kv = k("block_count"), k("attention.head_count"), k("attention.head_count_kv")
    d, ff = k("embedding_length"), k("feed_forward_length")
    n_vocab = T["token_embd.weight"].shape[0]
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": n_vocab, "hidden_size": d,
           "intermediate_size": ff, "num_hidden_layers": n_layer, "num_attention_heads": n_head,
           "num_key_value_heads": n_kv, "head_dim": d // n_head, "hidden_act": "silu",
           "max_position_embeddings": k("context_length"), "rms_norm_eps": k("attention.layer_norm_rms_epsilon"),
           "rope_theta": k("rope.freq_base"), "tie_word_embeddings": "output.weight" not in T,
           "torch_dtype": "float16", "bos_token_id": 1, "eos_token_id": 2,
           "quantization_config": {"quant_method": "gptq", "bits": a.bits, "group_size": a.group,
                                   "desc_act": a.act_order, "sym": not a.asym, "checkpoint_format": "gptq"}}
    if "rope_freqs.weight" in T:  # Llama-3 rope scaling (ferrum make-model writes these factors)
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    rng = np.random.default_rng(7)
    out = {"model.embed_tokens.weight": np.asarray(T["token_embd.weight"], np.float16),
           "model.norm.weight": np.asarray(T["output_norm.weight"], np.float16)}
    if "output.weight" in T:
        out["lm_head.weight"] = np.asarray(T["output.weight"], np.float16)
    names = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    for l in range(n_layer):
        p, P = "blk.%d." % l, "model.layers.%d." % l
        out[P + "input_layernorm.weight"] = np.asarray(T[p + "attn_norm.weight"], np.float16)
        out[P + "post_attention_layernorm.weight"] = np.asarray(T[p + "ffn_norm.weight"], np.float16)
        perms = {"attn": rng.permutation(d), "ffn": rng.permutation(d)}
        for g, h in names.items():
            w = np.asarray(T[p + g + ".weight"], np.float64)
            if g in ("attn_q", "attn_k"):
                w = ml.unpermute_qk(w, n_head if g == "attn_q" else n_kv)
            cols = w.shape[1]
            shared = perms["attn"] if g in ("attn_q", "attn_k", "attn_v") else \
                perms["ffn"] if g in ("ffn_gate", "ffn_up") else rng.permutation(cols)
            perm = shared if a.act_order else np.arange(cols)
            q, zero, scale16, g_idx, _ = mg.quantize(w, a.bits, a.group, not a.asym, perm, 1)
            for key, v in mg.pack_gptq(q, zero, scale16, g_idx, a.bits, True).items():
                out[P + h + "." + key] = v
        print("layer %d/%d" % (l + 1, n_layer), file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(mg.safetensors_bytes(out))
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    json.dump(fake_tokenizer(n_vocab), open(os.path.join(a.out, "tokenizer.json"), "w"))
    print("wrote", a.out)


if __name__ == "__main__":
    main()
