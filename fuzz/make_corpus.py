#!/usr/bin/env python3
"""Builds the file-format fuzzers' seed corpora (fuzz/corpus/{gguf,hf,tokenizer,llama2c,jinja}/) from
the test fixtures in tests/data.

The fixtures are shrunk so that each seed is a few KB: models keep their architecture's metadata
and tensor names with tiny dimensions (and deterministic weights), tokenizers keep their
normalizer / pre-tokenizer / decoder / post-processor and the first few hundred vocabulary
entries, chat templates are used as they are. Run from anywhere; rewrites those five directories.
Only the Python standard library is needed.
"""

import json
import lzma
import random
import shutil
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
OUT = ROOT / "fuzz" / "corpus"
SEP = b"\n#--ferrum-fuzz-part--#\n"  # fuzz_util.h kSeparator

rng = random.Random(14)


def read_maybe_xz(path: Path) -> bytes:
    if path.exists():
        return path.read_bytes()
    return lzma.decompress(Path(str(path) + ".xz").read_bytes())


# ---- GGUF (v3) reading and writing ----

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
          U64: "<Q", I64: "<q", F64: "<d"}


def gguf_metadata(blob: bytes) -> dict:
    """Metadata of a GGUF file as {key: (type, value)} (arrays: (ARRAY, (elem_type, [values])))."""
    assert blob[:4] == b"GGUF"
    pos = 8
    n_tensors, n_kv = struct.unpack_from("<QQ", blob, pos)
    pos += 16

    def string():
        nonlocal pos
        (n,) = struct.unpack_from("<Q", blob, pos)
        s = blob[pos + 8: pos + 8 + n]
        pos += 8 + n
        return s

    def value(t):
        nonlocal pos
        if t == STRING:
            return string()
        if t == ARRAY:
            et, n = struct.unpack_from("<IQ", blob, pos)
            pos += 12
            return (et, [value(et) for _ in range(n)])
        fmt = SCALAR[t]
        (v,) = struct.unpack_from(fmt, blob, pos)
        pos += struct.calcsize(fmt)
        return v

    out = {}
    for _ in range(n_kv):
        key = string().decode()
        (t,) = struct.unpack_from("<I", blob, pos)
        pos += 4
        out[key] = (t, value(t))
    return out


def gguf_write(path: Path, kv: dict, tensors: list):
    """tensors: (name, ggml type, ne list, bytes)."""

    def string(s):
        if isinstance(s, str):
            s = s.encode()
        return struct.pack("<Q", len(s)) + s

    def value(t, v):
        if t == STRING:
            return string(v)
        if t == ARRAY:
            et, items = v
            return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
        return struct.pack(SCALAR[t], v)

    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, (t, v) in kv.items():
        head += string(k) + struct.pack("<I", t) + value(t, v)
    data = b""
    infos = b""
    for name, gtype, ne, raw in tensors:
        infos += string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", gtype, len(data))
        data += raw + b"\0" * ((-len(raw)) % 32)
    body = head + infos
    body += b"\0" * ((-len(body)) % 32)
    path.write_bytes(body + data)


GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8


def f32(n, scale=0.1):
    return struct.pack("<%df" % n, *[rng.uniform(-scale, scale) for _ in range(n)])


def ones(n):
    return struct.pack("<%df" % n, *([1.0] * n))


def q8_0(n):
    """n values (a multiple of 32) as Q8_0 blocks: f16 scale + 32 int8."""
    out = b""
    for _ in range(n // 32):
        out += struct.pack("<e", 0.01) + bytes(rng.randrange(256) for _ in range(32))
    return out


def tokenizer_kv(vocab_file: str, n_tokens: int) -> dict:
    """tokenizer.* keys of a fixture vocabulary cut to its first n_tokens (merges among them)."""
    meta = gguf_metadata(read_maybe_xz(DATA / "tokenizer" / "gguf" / vocab_file))
    out = {}
    toks = meta["tokenizer.ggml.tokens"][1][1][:n_tokens]
    have = set(toks)
    for k, (t, v) in meta.items():
        if not k.startswith("tokenizer."):
            continue
        if t == ARRAY and k == "tokenizer.ggml.merges":
            keep = [m for m in v[1] if b" " in m[1:] and
                    m.split(b" ", 1)[0] in have and m.split(b" ", 1)[1] in have and m.replace(b" ", b"", 1) in have]
            out[k] = (t, (v[0], keep[:200]))
        elif t == ARRAY:
            out[k] = (t, (v[0], v[1][:n_tokens]))
        elif k.endswith("_token_id") and v >= n_tokens:
            continue
        else:
            out[k] = (t, v)
    return out


def decoder_gguf(path: Path, arch: str, vocab_file: str, n_vocab: int, extra_kv=None, chat_template=None):
    d, n_head, n_kv, hd, ff, layers = 32, 2, 1, 16, 32, 1
    kv = {"general.architecture": (STRING, arch), "general.name": (STRING, "fuzz-" + arch),
          f"{arch}.block_count": (U32, layers), f"{arch}.embedding_length": (U32, d),
          f"{arch}.attention.head_count": (U32, n_head), f"{arch}.attention.head_count_kv": (U32, n_kv),
          f"{arch}.feed_forward_length": (U32, ff), f"{arch}.context_length": (U32, 64),
          f"{arch}.rope.dimension_count": (U32, hd), f"{arch}.rope.freq_base": (F32, 10000.0),
          f"{arch}.attention.layer_norm_rms_epsilon": (F32, 1e-5)}
    kv.update(extra_kv or {})
    kv.update(tokenizer_kv(vocab_file, n_vocab))
    if chat_template:
        kv["tokenizer.chat_template"] = (STRING, chat_template)
    T = [("token_embd.weight", GGML_Q8_0, [d, n_vocab], q8_0(d * n_vocab)),
         ("output_norm.weight", GGML_F32, [d], ones(d))]
    for l in range(layers):
        b = f"blk.{l}."
        T += [(b + "attn_norm.weight", GGML_F32, [d], ones(d)),
              (b + "attn_q.weight", GGML_Q8_0, [d, n_head * hd], q8_0(d * n_head * hd)),
              (b + "attn_k.weight", GGML_Q8_0, [d, n_kv * hd], q8_0(d * n_kv * hd)),
              (b + "attn_v.weight", GGML_F32, [d, n_kv * hd], f32(d * n_kv * hd)),
              (b + "attn_output.weight", GGML_Q8_0, [n_head * hd, d], q8_0(d * n_head * hd)),
              (b + "ffn_norm.weight", GGML_F32, [d], ones(d))]
        if arch == "qwen2":
            T += [(b + "attn_q.bias", GGML_F32, [n_head * hd], f32(n_head * hd)),
                  (b + "attn_k.bias", GGML_F32, [n_kv * hd], f32(n_kv * hd)),
                  (b + "attn_v.bias", GGML_F32, [n_kv * hd], f32(n_kv * hd))]
        if arch in ("qwen3", "qwen3moe"):
            T += [(b + "attn_q_norm.weight", GGML_F32, [hd], ones(hd)),
                  (b + "attn_k_norm.weight", GGML_F32, [hd], ones(hd))]
        if arch == "qwen3moe":
            E, eff = 4, 32
            T += [(b + "ffn_gate_inp.weight", GGML_F32, [d, E], f32(d * E)),
                  (b + "ffn_gate_exps.weight", GGML_Q8_0, [d, eff, E], q8_0(d * eff * E)),
                  (b + "ffn_up_exps.weight", GGML_Q8_0, [d, eff, E], q8_0(d * eff * E)),
                  (b + "ffn_down_exps.weight", GGML_Q8_0, [eff, d, E], q8_0(d * eff * E))]
        else:
            T += [(b + "ffn_gate.weight", GGML_Q8_0, [d, ff], q8_0(d * ff)),
                  (b + "ffn_up.weight", GGML_Q8_0, [d, ff], q8_0(d * ff)),
                  (b + "ffn_down.weight", GGML_Q8_0, [ff, d], q8_0(d * ff))]
    gguf_write(path, kv, T)


# ggml type id -> (block elements, block bytes, byte offset of an F16 scale to keep finite or None),
# from the block layouts (ggml-common.h): the low-bit types of #30.
LOWBIT = {3: (32, 20, 0), 10: (256, 84, 80), 11: (256, 110, 108), 16: (256, 66, 0), 17: (256, 74, 0),
          18: (256, 98, 0), 19: (256, 50, 0), 20: (32, 18, 0), 21: (256, 110, 0), 22: (256, 82, 0),
          23: (256, 136, 0), 29: (256, 56, None)}


def lowbit(r, gtype, n):
    """n values (a multiple of the block size) of a low-bit type: random bytes, a finite scale."""
    k, size, d_at = LOWBIT[gtype]
    out = b""
    for _ in range(n // k):
        blk = bytearray(r.randrange(256) for _ in range(size))
        if d_at is not None:
            blk[d_at:d_at + 2] = struct.pack("<e", 0.01)
        else:  # IQ1_M: the F16 scale is the top nibbles of its 4 scale words (0x2148, about 0.01)
            for i, nib in enumerate((0x8, 0x4, 0x1, 0x2)):
                blk[49 + 2 * i] = (blk[49 + 2 * i] & 0x0F) | (nib << 4)
        out += bytes(blk)
    return out


def lowbit_gguf(path: Path):
    """A llama decoder 256 wide whose matrices use every low-bit type (Q2_K, Q3_K, Q4_1, IQ1..IQ4)."""
    r = random.Random(30)  # its own generator: the other seeds stay as they were
    d, n_head, n_kv, hd, ff, n_vocab = 256, 2, 1, 16, 32, 128
    kv = {"general.architecture": (STRING, "llama"), "general.name": (STRING, "fuzz-lowbit"),
          "llama.block_count": (U32, 1), "llama.embedding_length": (U32, d),
          "llama.attention.head_count": (U32, n_head), "llama.attention.head_count_kv": (U32, n_kv),
          "llama.feed_forward_length": (U32, ff), "llama.context_length": (U32, 64),
          "llama.rope.dimension_count": (U32, hd), "llama.attention.layer_norm_rms_epsilon": (F32, 1e-5),
          "llama.attention.key_length": (U32, hd), "llama.attention.value_length": (U32, hd)}
    kv.update(tokenizer_kv("ggml-vocab-llama-spm.gguf", n_vocab))
    q = lambda name, t, cols, rows: (name, t, [cols, rows], lowbit(r, t, cols * rows))
    T = [q("token_embd.weight", 10, d, n_vocab), ("output_norm.weight", GGML_F32, [d], ones(d)),
         q("output.weight", 19, d, n_vocab), ("blk.0.attn_norm.weight", GGML_F32, [d], ones(d)),
         q("blk.0.attn_q.weight", 16, d, n_head * hd), q("blk.0.attn_k.weight", 21, d, n_kv * hd),
         q("blk.0.attn_v.weight", 29, d, n_kv * hd), q("blk.0.attn_output.weight", 3, n_head * hd, d),
         ("blk.0.ffn_norm.weight", GGML_F32, [d], ones(d)), q("blk.0.ffn_gate.weight", 11, d, ff),
         q("blk.0.ffn_up.weight", 23, d, ff), q("blk.0.ffn_down.weight", 20, ff, d)]
    gguf_write(path, kv, T)
    # The other grid types on a second file: IQ2_XS, IQ2_S, IQ3_XXS.
    T2 = [t for t in T if t[0] not in ("blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight")]
    T2 += [q("blk.0.attn_q.weight", 17, d, n_head * hd), q("blk.0.attn_k.weight", 22, d, n_kv * hd),
           q("blk.0.attn_v.weight", 18, d, n_kv * hd)]
    gguf_write(path.with_name(path.name + "-grids"), kv, T2)


def bert_gguf(path: Path):
    d, ff, n_vocab, n_pos = 32, 32, 128, 8
    kv = {"general.architecture": (STRING, "bert"), "bert.block_count": (U32, 1),
          "bert.embedding_length": (U32, d), "bert.attention.head_count": (U32, 2),
          "bert.feed_forward_length": (U32, ff), "bert.context_length": (U32, n_pos),
          "bert.attention.layer_norm_epsilon": (F32, 1e-12), "bert.pooling_type": (U32, 1)}
    kv.update(tokenizer_kv("ggml-vocab-bert-bge.gguf", n_vocab))
    T = [("token_embd.weight", GGML_Q8_0, [d, n_vocab], q8_0(d * n_vocab)),
         ("position_embd.weight", GGML_F32, [d, n_pos], f32(d * n_pos)),
         ("token_types.weight", GGML_F32, [d, 2], f32(d * 2)),
         ("token_embd_norm.weight", GGML_F32, [d], ones(d)), ("token_embd_norm.bias", GGML_F32, [d], f32(d))]
    b = "blk.0."
    for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
        T += [(b + n + ".weight", GGML_Q8_0, [d, d], q8_0(d * d)), (b + n + ".bias", GGML_F32, [d], f32(d))]
    T += [(b + "ffn_up.weight", GGML_Q8_0, [d, ff], q8_0(d * ff)), (b + "ffn_up.bias", GGML_F32, [ff], f32(ff)),
          (b + "ffn_down.weight", GGML_Q8_0, [ff, d], q8_0(d * ff)), (b + "ffn_down.bias", GGML_F32, [d], f32(d))]
    for n in ("attn_output_norm", "layer_output_norm"):
        T += [(b + n + ".weight", GGML_F32, [d], ones(d)), (b + n + ".bias", GGML_F32, [d], f32(d))]
    gguf_write(path, kv, T)


# ---- Hugging Face directories ----

def safetensors(tensors: dict) -> bytes:
    """tensors: name -> (shape [outer first], dtype) with deterministic contents."""
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, (shape, dtype) in tensors.items():
        n = 1
        for s in shape:
            n *= s
        raw = f32(n) if dtype == "F32" else b"".join(struct.pack("<e", rng.uniform(-0.1, 0.1)) for _ in range(n))
        if dtype == "BF16":
            raw = b"".join(f32(1)[2:4] for _ in range(n))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * ((-len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data


def hf_seed(fixture: str, dtype: str, with_tokenizer: bool) -> bytes:
    cfg = json.loads((DATA / "formats" / "hf" / fixture / "config.json").read_text())
    d, n_head, n_kv, hd, ff, V = 16, 2, 1, 8, 32, 32
    cfg.update({"vocab_size": V, "hidden_size": d, "intermediate_size": ff, "num_hidden_layers": 1,
                "num_attention_heads": n_head})
    if cfg.get("model_type") == "bert":
        cfg.update({"max_position_embeddings": 8, "intermediate_size": ff})
        T = {"embeddings.word_embeddings.weight": ([V, d], dtype),
             "embeddings.position_embeddings.weight": ([8, d], dtype),
             "embeddings.token_type_embeddings.weight": ([2, d], dtype),
             "embeddings.LayerNorm.weight": ([d], "F32"), "embeddings.LayerNorm.bias": ([d], "F32")}
        L = "encoder.layer.0."
        for n in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            T[L + n + ".weight"] = ([d, d], dtype)
            T[L + n + ".bias"] = ([d], "F32")
        T[L + "intermediate.dense.weight"] = ([ff, d], dtype)
        T[L + "intermediate.dense.bias"] = ([ff], "F32")
        T[L + "output.dense.weight"] = ([d, ff], dtype)
        T[L + "output.dense.bias"] = ([d], "F32")
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            T[L + n + ".weight"] = ([d], "F32")
            T[L + n + ".bias"] = ([d], "F32")
        parts = [json.dumps(cfg, indent=1).encode(), safetensors(T)]
        words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s"]
        vocab = {w: i for i, w in enumerate(words + [f"[unused{i}]" for i in range(V - len(words))])}
        tj = {"model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                        "vocab": {k: v for k, v in sorted(vocab.items(), key=lambda kv: kv[1])}},
              "normalizer": {"type": "BertNormalizer", "lowercase": True},
              "pre_tokenizer": {"type": "BertPreTokenizer"}}
        return SEP.join(parts + [json.dumps(tj).encode()])
    cfg["num_key_value_heads"] = n_kv
    cfg["head_dim"] = hd
    if "num_experts" in cfg:
        cfg.update({"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16})
    T = {"model.embed_tokens.weight": ([V, d], dtype), "model.norm.weight": ([d], dtype)}
    if not cfg.get("tie_word_embeddings", False):
        T["lm_head.weight"] = ([V, d], dtype)
    L = "model.layers.0."
    T.update({L + "input_layernorm.weight": ([d], dtype), L + "post_attention_layernorm.weight": ([d], dtype),
              L + "self_attn.q_proj.weight": ([n_head * hd, d], dtype),
              L + "self_attn.k_proj.weight": ([n_kv * hd, d], dtype),
              L + "self_attn.v_proj.weight": ([n_kv * hd, d], dtype),
              L + "self_attn.o_proj.weight": ([d, n_head * hd], dtype)})
    if cfg.get("model_type") == "qwen2":
        for p, n in (("q", n_head), ("k", n_kv), ("v", n_kv)):
            T[L + f"self_attn.{p}_proj.bias"] = ([n * hd], dtype)
    if cfg.get("model_type") in ("qwen3", "qwen3_moe"):
        T[L + "self_attn.q_norm.weight"] = ([hd], dtype)
        T[L + "self_attn.k_norm.weight"] = ([hd], dtype)
    if "num_experts" in cfg:
        for e in range(4):
            T[L + f"mlp.experts.{e}.gate_proj.weight"] = ([16, d], dtype)
            T[L + f"mlp.experts.{e}.up_proj.weight"] = ([16, d], dtype)
            T[L + f"mlp.experts.{e}.down_proj.weight"] = ([d, 16], dtype)
        T[L + "mlp.gate.weight"] = ([4, d], dtype)
    else:
        T[L + "mlp.gate_proj.weight"] = ([ff, d], dtype)
        T[L + "mlp.up_proj.weight"] = ([ff, d], dtype)
        T[L + "mlp.down_proj.weight"] = ([d, ff], dtype)
    parts = [json.dumps(cfg, indent=1).encode(), safetensors(T)]
    if with_tokenizer:
        parts.append(json.dumps(shrink_tokenizer(
            json.loads((DATA / "models" / "llama" / "hf" / "tokenizer.json").read_text()), V)).encode())
    return SEP.join(parts)


def gptq_seed(method: str, bits: int, act_order: bool) -> bytes:
    """A one-layer llama whose linears are GPTQ/AWQ packed int32 tensors (formats/hf_quant.h)."""
    cfg = json.loads((DATA / "formats" / "hf" / "llama" / "config.json").read_text())
    d, n_head, n_kv, hd, ff, V, gs = 32, 2, 1, 16, 64, 32, 32
    cfg.update({"vocab_size": V, "hidden_size": d, "intermediate_size": ff, "num_hidden_layers": 1,
                "num_attention_heads": n_head, "num_key_value_heads": n_kv, "head_dim": hd})
    if method == "awq":
        cfg["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": gs, "zero_point": True,
                                      "version": "gemm"}
    else:
        cfg["quantization_config"] = {"quant_method": "gptq", "bits": bits, "group_size": gs, "desc_act": act_order,
                                      "sym": bits == 8, "checkpoint_format": "gptq"}
    words = lambda n: b"".join(struct.pack("<I", rng.getrandbits(32)) for _ in range(n))
    halves = lambda n: b"".join(struct.pack("<e", rng.uniform(0.001, 0.01)) for _ in range(n))
    header, data = {"__metadata__": {"format": "pt"}}, b""

    def add(name, dtype, shape, raw):
        nonlocal data
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw

    add("model.embed_tokens.weight", "F32", [V, d], f32(V * d))
    add("lm_head.weight", "F32", [V, d], f32(V * d))
    for n in ("model.norm.weight", "model.layers.0.input_layernorm.weight",
              "model.layers.0.post_attention_layernorm.weight"):
        add(n, "F32", [d], ones(d))
    perm = list(range(d))
    rng.shuffle(perm)
    for name, rows, cols in (("self_attn.q_proj", n_head * hd, d), ("self_attn.k_proj", n_kv * hd, d),
                             ("self_attn.v_proj", n_kv * hd, d), ("self_attn.o_proj", d, n_head * hd),
                             ("mlp.gate_proj", ff, d), ("mlp.up_proj", ff, d), ("mlp.down_proj", d, ff)):
        L, groups = "model.layers.0." + name, cols // gs
        if method == "awq":
            add(L + ".qweight", "I32", [cols, rows // 8], words(cols * rows // 8))
            add(L + ".qzeros", "I32", [groups, rows // 8], words(groups * rows // 8))
        else:
            per = 32 // bits
            zero = (1 << (bits - 1)) - 1  # v1: zero point minus one
            zword = sum(zero << (bits * j) for j in range(per))
            add(L + ".qweight", "I32", [cols // per, rows], words(cols // per * rows))
            add(L + ".qzeros", "I32", [groups, rows // per],
                struct.pack("<I", zword) * (groups * rows // per))
            gidx = [perm.index(c) // gs if act_order and cols == d else c // gs for c in range(cols)]
            add(L + ".g_idx", "I32", [cols], struct.pack("<%di" % cols, *gidx))
        add(L + ".scales", "F16", [groups, rows], halves(groups * rows))
    h = json.dumps(header).encode()
    h += b" " * ((-len(h)) % 8)
    return SEP.join([json.dumps(cfg, indent=1).encode(), struct.pack("<Q", len(h)) + h + data])


def gpt_oss_seed() -> bytes:
    """A one-layer gpt-oss with MXFP4 experts (U8 blocks and scales), sinks and biases (formats/hf_gpt_oss.h)."""
    d, n_head, n_kv, hd, ff, V, E = 32, 2, 1, 16, 32, 32, 2
    cfg = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": d,
           "intermediate_size": ff, "num_hidden_layers": 1, "num_attention_heads": n_head,
           "num_key_value_heads": n_kv, "head_dim": hd, "num_local_experts": E, "num_experts_per_tok": 1,
           "vocab_size": V, "sliding_window": 4, "layer_types": ["sliding_attention"], "rms_norm_eps": 1e-5,
           "rope_theta": 150000.0, "max_position_embeddings": 64, "swiglu_limit": 7.0,
           "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                            "truncate": False},
           "quantization_config": {"quant_method": "mxfp4"}}
    header, data = {"__metadata__": {"format": "pt"}}, b""

    def add(name, dtype, shape, raw):
        nonlocal data
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw

    u8 = lambda n, lo=0, hi=255: bytes(rng.randint(lo, hi) for _ in range(n))  # noqa: E731
    add("model.embed_tokens.weight", "F32", [V, d], f32(V * d))
    add("lm_head.weight", "F32", [V, d], f32(V * d))
    for n in ("model.norm.weight", "model.layers.0.input_layernorm.weight",
              "model.layers.0.post_attention_layernorm.weight"):
        add(n, "F32", [d], ones(d))
    L = "model.layers.0."
    for n, rows in (("q", n_head * hd), ("k", n_kv * hd), ("v", n_kv * hd)):
        add(L + "self_attn.%s_proj.weight" % n, "F32", [rows, d], f32(rows * d))
        add(L + "self_attn.%s_proj.bias" % n, "F32", [rows], f32(rows))
    add(L + "self_attn.o_proj.weight", "F32", [d, n_head * hd], f32(d * n_head * hd))
    add(L + "self_attn.o_proj.bias", "F32", [d], f32(d))
    add(L + "self_attn.sinks", "F32", [n_head], f32(n_head, 1.0))
    add(L + "mlp.router.weight", "F32", [E, d], f32(E * d))
    add(L + "mlp.router.bias", "F32", [E], f32(E))
    for proj, rows, cols in (("gate_up_proj", 2 * ff, d), ("down_proj", d, ff)):
        add(L + "mlp.experts.%s_blocks" % proj, "U8", [E, rows, cols // 32, 16], u8(E * rows * cols // 2))
        add(L + "mlp.experts.%s_scales" % proj, "U8", [E, rows, cols // 32], u8(E * rows * cols // 32, 120, 130))
        add(L + "mlp.experts.%s_bias" % proj, "F32", [E, rows], f32(E * rows))
    h = json.dumps(header).encode()
    h += b" " * ((-len(h)) % 8)
    return SEP.join([json.dumps(cfg, indent=1).encode(), struct.pack("<Q", len(h)) + h + data])


# ---- tokenizers ----

def shrink_tokenizer(tj: dict, n: int) -> dict:
    """The first n vocabulary entries, merges among them, added tokens renumbered after them."""
    model = tj["model"]
    vocab = model["vocab"]
    if isinstance(vocab, dict):
        keep = dict(sorted(vocab.items(), key=lambda kv: kv[1])[:n])
        model["vocab"] = keep
        have = set(keep)
        if "merges" in model:
            ms = []
            for m in model["merges"]:
                a, b = (m.split(" ", 1) if isinstance(m, str) else m)
                if a in have and b in have and a + b in have:
                    ms.append(m)
            model["merges"] = ms[:300]
    else:  # Unigram list
        model["vocab"] = vocab[:n]
    base = len(model["vocab"])
    for i, a in enumerate(tj.get("added_tokens", [])[:40]):
        if a["id"] >= base:
            a["id"] = base + i
    tj["added_tokens"] = tj.get("added_tokens", [])[:40]
    pp = tj.get("post_processor")
    if isinstance(pp, dict):
        for st in (pp.get("special_tokens") or {}).values():
            st["ids"] = [x if x < base else base for x in st.get("ids", [])]
    return tj


def main():
    for t in ("gguf", "hf", "tokenizer", "llama2c", "jinja"):  # only these: other targets' seeds stay
        if (OUT / t).exists():
            shutil.rmtree(OUT / t)
        (OUT / t).mkdir(parents=True)

    tpl = lambda n: (DATA / "chat" / "templates" / n).read_text()
    decoder_gguf(OUT / "gguf" / "llama-spm", "llama", "ggml-vocab-llama-spm.gguf", 128,
                 chat_template=tpl("llama3-tokenizer_config.jinja"))
    decoder_gguf(OUT / "gguf" / "qwen2-bpe", "qwen2", "ggml-vocab-gpt-2.gguf", 128,
                 {"tokenizer.ggml.pre": (STRING, "qwen2")}, chat_template=tpl("Qwen-Qwen2.5-7B-Instruct.jinja"))
    decoder_gguf(OUT / "gguf" / "qwen3-bpe", "qwen3", "ggml-vocab-gpt-2.gguf", 128)
    decoder_gguf(OUT / "gguf" / "qwen3moe", "qwen3moe", "ggml-vocab-llama-spm.gguf", 128,
                 {"qwen3moe.expert_count": (U32, 4), "qwen3moe.expert_used_count": (U32, 2),
                  "qwen3moe.expert_feed_forward_length": (U32, 32)})
    decoder_gguf(OUT / "gguf" / "mistral-phi3", "llama", "ggml-vocab-phi-3.gguf", 128,
                 {"llama.attention.sliding_window": (U32, 8), "llama.rope.scaling.type": (STRING, "linear"),
                  "llama.rope.scaling.factor": (F32, 2.0)}, chat_template=tpl("phi-3.jinja"))
    bert_gguf(OUT / "gguf" / "bert")

    for fx, dtype, tok in (("llama", "F32", True), ("qwen2", "BF16", False), ("qwen3", "F16", False),
                           ("qwen3moe", "BF16", False), ("bert", "F32", True),
                           ("llama3-ropescaled", "F16", False)):
        (OUT / "hf" / fx).write_bytes(hf_seed(fx, dtype, tok))
    (OUT / "hf" / "gptq-4bit-actorder").write_bytes(gptq_seed("gptq", 4, True))
    (OUT / "hf" / "gptq-8bit").write_bytes(gptq_seed("gptq", 8, False))
    (OUT / "hf" / "awq-4bit").write_bytes(gptq_seed("awq", 4, False))

    texts = [json.loads(l)["text"] for l in (DATA / "tokenizer" / "corpus.jsonl").read_text().split("\n") if l]
    texts = [t for t in texts if 0 < len(t) < 200]
    rng.shuffle(texts)
    hf_tok = DATA / "tokenizer" / "hf"
    for i, name in enumerate(sorted(p.name for p in hf_tok.iterdir())):
        d = hf_tok / name
        cfg_path = d / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
        cfg.pop("added_tokens_decoder", None)
        if (d / "tokenizer.json").exists() or (d / "tokenizer.json.xz").exists():
            tj = shrink_tokenizer(json.loads(read_maybe_xz(d / "tokenizer.json")), 300)
        else:  # vocab.txt (BERT): as the WordPiece tokenizer.json it stands for
            words = (d / "vocab.txt").read_text().splitlines()[:300]
            tj = {"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {w: j for j, w in enumerate(words)}},
                  "normalizer": {"type": "BertNormalizer"}, "pre_tokenizer": {"type": "BertPreTokenizer"},
                  "decoder": {"type": "WordPiece", "prefix": "##"}}
        parts = [json.dumps(tj, ensure_ascii=False).encode(), json.dumps(cfg).encode(), texts[i].encode()]
        (OUT / "tokenizer" / name).write_bytes(SEP.join(parts))

    # llama2.c: a tiny checkpoint (shared and separate classifier) + the first tokens of tok512.bin.
    tok = (DATA / "tokenizer" / "tok512.bin").read_bytes()
    for name, V_sign in (("shared", 1), ("wcls", -1)):
        dim, hid, L, H, KV, V, seq = 8, 16, 1, 2, 1, 32, 4
        hd = dim // H
        floats = V * dim + L * (dim + dim * dim + 2 * dim * KV * hd + dim * dim + dim + 3 * dim * hid) + dim
        floats += 2 * seq * (hd // 2) + (V * dim if V_sign < 0 else 0)
        ckpt = struct.pack("<7i", dim, hid, L, H, KV, V * V_sign, seq) + f32(floats)
        pos, toks = 4, tok[:4]
        for _ in range(V):
            (ln,) = struct.unpack_from("<i", tok, pos + 4)
            toks += tok[pos: pos + 8 + ln]
            pos += 8 + ln
        (OUT / "llama2c" / name).write_bytes(ckpt + SEP + toks)

    # Jinja: every fixture chat template with a conversation, and the interpreter's test cases.
    conv = json.dumps([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
                       {"role": "assistant", "content": "Yo", "reasoning_content": "r"},
                       {"role": "user", "content": [{"type": "text", "text": "x"}]}]).encode()
    for p in sorted((DATA / "chat" / "templates").iterdir()):
        (OUT / "jinja" / p.stem).write_bytes(p.read_bytes() + SEP + conv)
    cases = json.loads((DATA / "chat" / "jinja_cases.json").read_text())["cases"]
    for c in cases[::3]:
        (OUT / "jinja" / ("case-" + c["name"])).write_bytes(c["template"].encode())

    lowbit_gguf(OUT / "gguf" / "lowbit")  # last, with its own random generator
    (OUT / "hf" / "gpt-oss-mxfp4").write_bytes(gpt_oss_seed())  # after it: the others' draws are unchanged

    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"corpus: {sum(1 for f in OUT.rglob('*') if f.is_file())} files, {total} bytes")


if __name__ == "__main__":
    main()
