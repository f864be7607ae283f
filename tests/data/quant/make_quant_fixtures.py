#!/usr/bin/env python3
"""Makes the fixtures for the low-bit GGUF quantization types (own code: numpy, float64).

From the tiny random `llama` and `qwen3moe` fixture models (tests/data/models/<m>/gguf/<m>-F32.gguf.xz)
this script RUNS llama.cpp's tools (llama-imatrix, llama-quantize, llama-results) and IMPORTS llama.cpp's
gguf-py package (its numpy dequantizers are the independent reference decoder); nothing of llama.cpp is
copied into the repository. Everything else (GGUF reader, float64 forward pass, top-k files) is ours.

Writes (under tests/data):
  models/llama/imatrix.gguf                  llama-imatrix over a fixed text (prompts + tokenizer corpus)
  models/<m>/gguf/<m>-<PRESET>.gguf          llama-quantize [--imatrix imatrix.gguf] <m>-F32.gguf out PRESET 2
  models/<m>/logits/<PRESET>/topk.json.xz    llama-results top-32 logits, every prompt (same format as the
                                             existing logits/<Q>/topk.json)
  models/<m>/exact/<PRESET>/p3.npy.xz        float64 forward over the file's dequantized weights, stored f32
  models/qwen3moe/routing/<PRESET>.json      float64 routing (top-k ids, weights, router margin), p1..p4
  models/<m>/quant_reference.json            commands, per-tensor types, sha256, checks, llama.cpp-vs-exact
  kernels/<TYPE>.bin / <TYPE>.npy            first 8 rows of one tensor per new ggml type + gguf-py dequant

Checks done before anything is written (the run stops if one fails):
  * the float64 forward reproduces llama.cpp's F32 logits (logits/F32/p3) and the existing exact references
    of Q4_K_M (exact/Q4_K_M/p3) to 1e-4, and the existing qwen3moe routing/Q4_K_M.json ids;
  * llama-results on the existing Q4_K_M files reproduces the existing topk.json byte for byte (same build
    and same file format);
  * gguf-py's dequantization equals ggml's own `to_float` (libggml-base.so via ctypes) bit for bit on
    every quantized tensor of every new file;
  * llama.cpp's token ids equal reference.json's for every prompt.

Usage (one command; under a minute on 2 cores):
  /usr/bin/python3 tests/data/quant/make_quant_fixtures.py --llama-cpp /tmp/llama.cpp
    --llama-cpp DIR   llama.cpp checkout at commit 3f545becc (uses DIR/gguf-py and DIR/build-native/bin)
    --bin DIR         llama.cpp binaries + libggml-base.so (default: DIR/build-native/bin)
    --scratch DIR     work directory (default /tmp/qfix/work; wiped and re-created)
Needs python3-numpy. Deterministic: a rerun gives identical files.
"""
import argparse
import ctypes
import hashlib
import io
import json
import lzma
import os
import shlex
import shutil
import struct
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in tests/data/lora
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, ".."))
MODELS = os.path.join(DATA, "models")
KERNELS = os.path.join(DATA, "kernels")
sys.path.insert(0, os.path.join(DATA, "lora"))
import make_lora as ml  # noqa: E402  (own float64 helpers: rms, rotate-half rope, Q/K un-permutation)

# (preset, uses the importance matrix). IQ2_M is llama-quantize's preset whose main type is IQ2_S (its
# "IQ2_S" preset makes IQ2_XS tensors); IQ3_S is the preset that makes IQ3_S tensors (IQ3_M mixes in Q4_K).
PRESETS = {
    "llama": [("Q4_1", False), ("Q2_K", False), ("Q3_K_S", False), ("Q3_K_M", False), ("Q3_K_L", False),
              ("IQ4_NL", False), ("IQ4_XS", False), ("IQ3_XXS", True), ("IQ3_S", True), ("IQ2_XXS", True),
              ("IQ2_XS", True), ("IQ2_M", True), ("IQ1_S", True), ("IQ1_M", True)],
    "qwen3moe": [("Q3_K_M", False), ("IQ4_XS", False)],
}
# Presets whose files are not kept: only the tensor types llama-quantize gives them (recipe_types.json,
# tests/models/quant_recipe_test.cpp), with the importance matrix (llama) or without (both models).
RECIPE_ONLY = [("llama", p, True, []) for p in ("IQ2_S", "IQ2_XXS", "IQ3_M", "IQ3_XS", "IQ4_XS", "Q2_K_S", "Q4_0")] + \
              [("llama", p, False, []) for p in ("IQ3_M", "IQ3_S")] + \
              [("qwen3moe", p, False, []) for p in ("IQ3_M", "IQ3_S", "Q4_0")] + \
              [("llama", p, True, []) for p in ("Q4_K_M", "Q3_K_M", "Q2_K")] + \
              [("llama", "Q4_K_M", False, ["--pure"]),  # llama-quantize's type flags
               ("llama", "Q4_K_M", False, ["--output-tensor-type", "q8_0", "--token-embedding-type", "q4_0"]),
               ("llama", "Q4_0", False, ["--leave-output-tensor", "--tensor-type", "attn_v=q8_0", "--tensor-type",
                                         "FFN_(up|gate)=q5_k"]),
               ("llama", "F16", False, ["--output-tensor-type", "q8_0"]),
               ("qwen3moe", "Q4_K_M", False, ["--tensor-type", "exps=q8_0", "--pure"])]
# Of those, the files kept (models/llama/gguf/imatrix/llama-<P>.gguf): the K-quant presets made with the
# importance matrix, the references of tests/models/quantize_test.cpp's weighted K-quants.
RECIPE_KEPT = [("llama", p, True, []) for p in ("Q4_K_M", "Q3_K_M", "Q2_K")]
RESULTS_ARGS = ["-t", "2", "-fa", "off", "-ctk", "f32", "-ctv", "f32", "-c", "512"]
K = 32
# Kernel fixtures: ggml type -> (preset file, tensor). 256 or 512 columns (ffn_down has 512).
KERNEL_TENSORS = [
    ("Q4_1", "Q4_1", "blk.0.attn_q.weight"),
    ("Q2_K", "Q2_K", "blk.0.ffn_gate.weight"),
    ("Q3_K", "Q3_K_S", "blk.0.ffn_down.weight"),
    ("IQ4_NL", "IQ4_NL", "blk.0.attn_q.weight"),
    ("IQ4_XS", "IQ4_XS", "blk.0.ffn_down.weight"),
    ("IQ3_XXS", "IQ3_XXS", "blk.0.ffn_gate.weight"),
    ("IQ3_S", "IQ3_S", "blk.0.ffn_down.weight"),
    ("IQ2_XXS", "IQ2_XXS", "blk.0.ffn_gate.weight"),
    ("IQ2_XS", "IQ2_XS", "blk.0.ffn_down.weight"),
    ("IQ2_S", "IQ2_M", "blk.0.ffn_gate.weight"),
    ("IQ1_S", "IQ1_S", "blk.0.ffn_down.weight"),
    ("IQ1_M", "IQ1_M", "blk.0.ffn_gate.weight"),
]
KERNEL_ROWS = 8

quants = QT = GGML_QUANT_SIZES = None  # gguf-py, imported in main()


# ------------------------------------------------------------------ small utilities

def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def f32(v):
    """Shortest repr of a float32 value, as a Python float (what the existing JSON fixtures hold)."""
    return float(str(np.float32(v)))


def npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a, dtype="<f4"))
    return buf.getvalue()


def xz(b):
    return lzma.compress(b, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=9)


def load_npy(path):
    raw = lzma.open(path).read() if path.endswith(".xz") else open(path, "rb").read()
    return np.load(io.BytesIO(raw))


def load_model_file(m, rel):
    """tests/data/models/<m>/<rel> or its .xz."""
    p = os.path.join(MODELS, m, rel)
    return p if os.path.exists(p) else p + ".xz"


def write(path, data, written):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    written.append(path)


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.stderr.write(r.stdout.decode(errors="replace")[-4000:])
        raise RuntimeError("failed (rc %d): %s" % (r.returncode, " ".join(cmd)))
    return r.stdout.decode(errors="replace")


def shown(cmd, bin_dir):
    """The command as recorded: binaries as $BIN/<name>, arguments shell-quoted."""
    return " ".join("$BIN/" + os.path.basename(c) if i == 0 else shlex.quote(c) for i, c in enumerate(cmd))


# ------------------------------------------------------------------ GGUF (own reader)

GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class Gguf:
    """Minimal GGUF v3 reader: metadata values, tensor infos, raw bytes; any ggml type (sizes from gguf-py)."""

    def __init__(self, path):
        self.raw = open(path, "rb").read()
        b = self.raw
        pos = 0

        def rd(fmt):
            nonlocal pos
            v = struct.unpack_from("<" + fmt, b, pos)
            pos += struct.calcsize("<" + fmt)
            return v[0]

        def rstr():
            nonlocal pos
            n = rd("Q")
            s = b[pos:pos + n].decode()
            pos += n
            return s

        def rval(t):
            if t == 8:
                return rstr()
            if t == 9:
                et = rd("I")
                n = rd("Q")
                return [rval(et) for _ in range(n)]
            return rd(GGUF_SCALARS[t])

        assert b[:4] == b"GGUF", path
        pos = 4
        assert rd("I") == 3
        n_t, n_kv = rd("Q"), rd("Q")
        self.meta = {}
        for _ in range(n_kv):
            k = rstr()
            self.meta[k] = rval(rd("I"))
        align = self.meta.get("general.alignment", 32)
        infos = []
        for _ in range(n_t):
            name = rstr()
            nd = rd("I")
            ne = [rd("Q") for _ in range(nd)]
            t = rd("I")
            off = rd("Q")
            infos.append((name, t, ne, off))
        base = (pos + align - 1) // align * align
        self.tensors = {}  # name -> (ggml type id, ne, absolute offset, nbytes)
        for name, t, ne, off in infos:
            bs, ts = GGML_QUANT_SIZES[QT(t)]
            n = int(np.prod(ne))
            assert n % bs == 0
            self.tensors[name] = (t, ne, base + off, n // bs * ts)

    def type_name(self, name):
        return QT(self.tensors[name][0]).name

    def bytes_of(self, name):
        t, ne, off, nb = self.tensors[name]
        return np.frombuffer(self.raw, np.uint8, nb, off)

    def dequant(self, name):
        """gguf-py dequantization, float32, numpy shape = reversed(ne)."""
        t, ne, off, nb = self.tensors[name]
        shape = list(reversed(ne))
        raw = self.bytes_of(name)
        if t == 0:
            return raw.view(np.float32).reshape(shape)
        rows = int(np.prod(shape[:-1]))
        return quants.dequantize(raw.reshape(rows, -1), QT(t)).reshape(shape)

    def weights(self):
        return {n: self.dequant(n).astype(np.float64) for n in self.tensors}


def read_results(path):
    """llama-results output: tokens (I32) and logits (F32, n_tokens x n_vocab, row = position)."""
    g = Gguf(path)
    toks = g.bytes_of("tokens").view(np.int32).tolist()
    logits = g.bytes_of("logits").view(np.float32).reshape(len(toks), -1)
    return toks, logits


# ------------------------------------------------------------------ ggml's own dequantizer (ctypes check)

class _Traits(ctypes.Structure):
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64), ("type_size", ctypes.c_size_t),
                ("is_quantized", ctypes.c_bool), ("to_float", ctypes.c_void_p), ("from_float_ref", ctypes.c_void_p)]


class GgmlDequant:
    def __init__(self, bin_dir):
        self.lib = ctypes.CDLL(os.path.join(bin_dir, "libggml-base.so"))
        self.lib.ggml_get_type_traits.restype = ctypes.POINTER(_Traits)
        self.lib.ggml_get_type_traits.argtypes = [ctypes.c_int]
        self.fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64)

    def __call__(self, raw, t, n):
        tr = self.lib.ggml_get_type_traits(t).contents
        src = np.ascontiguousarray(raw)
        out = np.empty(n, np.float32)
        self.fn(tr.to_float)(src.ctypes.data, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), n)
        return out


def check_dequant_bitexact(g, ggml_deq):
    """gguf-py vs ggml to_float on every quantized tensor; returns the number of tensors compared."""
    n_cmp = 0
    for name, (t, ne, off, nb) in g.tensors.items():
        if t in (0, 1, 30):
            continue
        ours = g.dequant(name).reshape(-1)
        theirs = ggml_deq(g.bytes_of(name), t, ours.size)
        if not np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)):
            raise RuntimeError("gguf-py and ggml dequantize %s (%s) differently" % (name, QT(t).name))
        n_cmp += 1
    return n_cmp


# ------------------------------------------------------------------ float64 forward over GGUF weights

def model_config(g, spec):
    arch = g.meta["general.architecture"]
    a = lambda k, d=None: g.meta.get("%s.%s" % (arch, k), d)  # noqa: E731
    H = a("attention.head_count")
    return {"arch": arch, "n_layer": a("block_count"), "H": H, "Hkv": a("attention.head_count_kv"),
            "hd": a("attention.key_length", a("embedding_length") // H), "eps": spec["eps"],
            "theta": spec["rope_theta"], "n_used": a("expert_used_count", 0)}


def forward(W, cfg, ids):
    """float64 forward, HF semantics. Returns (logits (T, V), routing per layer or None).

    llama: GGUF Q/K rows are un-permuted back to the HF order, then rotate-half RoPE (= llama.cpp's
    'normal' RoPE on the GGUF rows). qwen3moe: per-head RMSNorm of Q and K before NEOX (rotate-half)
    RoPE; router softmax over all experts, top-k, the k weights renormalised (norm_topk_prob); tied output.
    """
    H, Hkv, hd, eps = cfg["H"], cfg["Hkv"], cfg["hd"], cfg["eps"]
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    x = W["token_embd.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    routing = []
    for li in range(cfg["n_layer"]):
        p = "blk.%d." % li
        h = ml.rms(x, W[p + "attn_norm.weight"], eps)
        wq, wk = W[p + "attn_q.weight"], W[p + "attn_k.weight"]
        if cfg["arch"] == "llama":
            wq, wk = ml.unpermute_qk(wq, H), ml.unpermute_qk(wk, Hkv)
        q = (h @ wq.T).reshape(T, H, hd)
        k = (h @ wk.T).reshape(T, Hkv, hd)
        v = (h @ W[p + "attn_v.weight"].T).reshape(T, Hkv, hd)
        if p + "attn_q_norm.weight" in W:
            q = ml.rms(q, W[p + "attn_q_norm.weight"], eps)
            k = ml.rms(k, W[p + "attn_k_norm.weight"], eps)
        q, k = ml.rope(q, pos, cfg["theta"]), ml.rope(k, pos, cfg["theta"])
        att = np.zeros((T, H, hd))
        for hh in range(H):
            kv = hh // (H // Hkv)
            s = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            att[:, hh, :] = (s / s.sum(axis=1, keepdims=True)) @ v[:, kv, :]
        x = x + att.reshape(T, H * hd) @ W[p + "attn_output.weight"].T
        h = ml.rms(x, W[p + "ffn_norm.weight"], eps)
        if p + "ffn_gate_inp.weight" in W:
            kk = cfg["n_used"]
            r = h @ W[p + "ffn_gate_inp.weight"].T  # (T, E) router logits
            pr = np.exp(r - r.max(axis=1, keepdims=True))
            pr /= pr.sum(axis=1, keepdims=True)
            order = np.argsort(-r, axis=1, kind="stable")
            sel = order[:, :kk]
            rows = np.arange(T)[:, None]
            w = pr[rows, sel]
            w = w / w.sum(axis=1, keepdims=True)
            margin = r[np.arange(T), order[:, kk - 1]] - r[np.arange(T), order[:, kk]]
            routing.append((sel, w, margin))
            gate, up, down = (W[p + "ffn_%s_exps.weight" % n] for n in ("gate", "up", "down"))
            out = np.zeros_like(x)
            for t in range(T):
                for j in range(kk):
                    e = sel[t, j]
                    gg, uu = gate[e] @ h[t], up[e] @ h[t]
                    out[t] += w[t, j] * (down[e] @ (gg / (1 + np.exp(-gg)) * uu))
            x = x + out
        else:
            gg, uu = h @ W[p + "ffn_gate.weight"].T, h @ W[p + "ffn_up.weight"].T
            x = x + (gg / (1 + np.exp(-gg)) * uu) @ W[p + "ffn_down.weight"].T
    h = ml.rms(x, W["output_norm.weight"], eps)
    head = W.get("output.weight", W["token_embd.weight"])
    return h @ head.T, (routing or None)


# ------------------------------------------------------------------ output formats

def topk_json(variant, per_prompt):
    """per_prompt: list of (pid, tokens, float32 logits (T, V)) -> the topk.json text."""
    prompts = {}
    for pid, toks, L in per_prompt:
        order = np.argsort(-L, axis=1, kind="stable")[:, :K]
        top = np.take_along_axis(L, order, axis=1)
        L64 = L.astype(np.float64)
        mx = L64.max(axis=1, keepdims=True)
        lse = (mx[:, 0] + np.log(np.exp(L64 - mx).sum(axis=1)))
        prompts[pid] = {"tokens": list(toks), "k": K, "first_position": 0, "top_ids": order.tolist(),
                        "top_logits": [[f32(v) for v in row] for row in top],
                        "logsumexp": [f32(v) for v in lse]}
    return json.dumps({"variant": variant, "prompts": prompts}, separators=(",", ":"))


def routing_json(variant, per_prompt):
    """per_prompt: list of (pid, routing from forward()) -> the routing/<TYPE>.json text."""
    prompts = {}
    for pid, routing in per_prompt:
        prompts[pid] = {"topk_ids": [sel.tolist() for sel, w, m in routing],
                        "topk_weights": [[[f32(v) for v in row] for row in w] for sel, w, m in routing],
                        "margin": [[f32(v) for v in m] for sel, w, m in routing]}
    return json.dumps({"variant": variant, "computed_by": "float64 numpy forward over this variant's dequantized weights",
                       "prompts": prompts}, separators=(",", ":"))


def llamacpp_vs_exact(lc, ex, margin_mask=None):
    """llama.cpp p3 logits vs the exact reference (both float32 (T, V)): top-1 agreement over positions whose
    exact top-2 margin is >= 0.05, and |diff| over llama.cpp's top-32 ids."""
    T = lc.shape[0]
    keep = np.ones(T, bool) if margin_mask is None else margin_mask
    ex_sorted = np.sort(ex, axis=1)
    tie = (ex_sorted[:, -1] - ex_sorted[:, -2]) < np.float32(0.05)
    cnt = keep & ~tie
    agree = int(((np.argmax(lc, axis=1) == np.argmax(ex, axis=1)) & cnt).sum())
    ids = np.argsort(-lc, axis=1, kind="stable")[:, :K]
    d = np.abs(np.take_along_axis(lc, ids, 1).astype(np.float64) - np.take_along_axis(ex, ids, 1))[keep]
    return {"positions": int(keep.sum()), "near_ties_excluded": int((keep & tie).sum()),
            "top1_agree": agree, "top1_counted": int(cnt.sum()),
            "top32_max_abs_diff": round(float(d.max()), 6), "top32_mean_abs_diff": round(float(d.mean()), 6)}


# ------------------------------------------------------------------ main

def write_recipe_types(BIN, scratch, imatrix_path, written):
    """recipe_types.json: the tensor types llama-quantize gives the RECIPE_ONLY presets (scratch/<m> holds
    <m>-F32.gguf)."""
    cases = []
    for m, preset, use_imatrix, flags in RECIPE_ONLY:
        cwd = os.path.join(scratch, m)
        out = "types-%s-%s-%d.gguf" % (preset, use_imatrix, len(cases))
        imatrix = ["--imatrix", imatrix_path] if use_imatrix else []
        run([BIN("llama-quantize")] + imatrix + flags + ["%s-F32.gguf" % m, out, preset, "2"], cwd)
        g = Gguf(os.path.join(cwd, out))
        if (m, preset, use_imatrix, flags) in RECIPE_KEPT:
            write(os.path.join(MODELS, m, "gguf", "imatrix", "%s-%s.gguf" % (m, preset)),
                  open(os.path.join(cwd, out), "rb").read(), written)
        cases.append({"model": m, "preset": preset, "imatrix": use_imatrix, "flags": flags,
                      "types": {n: g.type_name(n) for n in g.tensors}})
    recipe = {"source": "llama-quantize (llama.cpp 3f545becc) on tests/data/models/<m>/gguf/<m>-F32.gguf, with "
                        "--imatrix tests/data/models/llama/imatrix.gguf where 'imatrix' is true and the 'flags' given; the "
                        "tensor types of its output", "cases": cases}
    write(os.path.join(DATA, "quant", "recipe_types.json"), (json.dumps(recipe, indent=0, sort_keys=True) +
                                                              "\n").encode(), written)


def main():
    global quants, QT, GGML_QUANT_SIZES
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", default="/tmp/llama.cpp")
    ap.add_argument("--bin", default=None)
    ap.add_argument("--scratch", default="/tmp/qfix/work")
    args = ap.parse_args()
    bin_dir = args.bin or os.path.join(args.llama_cpp, "build-native", "bin")
    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    from gguf import quants as _q  # llama.cpp gguf-py: the independent reference dequantizer
    from gguf.constants import GGML_QUANT_SIZES as _s, GGMLQuantizationType as _t
    quants, QT, GGML_QUANT_SIZES = _q, _t, _s
    BIN = lambda n: os.path.join(bin_dir, n)  # noqa: E731
    ggml_deq = GgmlDequant(bin_dir)

    scratch = os.path.abspath(args.scratch)
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    os.makedirs(scratch)
    written = []
    reports = {}
    refs = {m: json.load(open(os.path.join(MODELS, m, "reference.json"))) for m in PRESETS}

    # --- scratch copies of the F32 models (checked against reference.json's hashes)
    for m in PRESETS:
        os.makedirs(os.path.join(scratch, m))
        dst = os.path.join(scratch, m, "%s-F32.gguf" % m)
        with open(dst, "wb") as f:
            f.write(lzma.open(os.path.join(MODELS, m, "gguf", "%s-F32.gguf.xz" % m)).read())
        assert sha256(dst) == refs[m]["gguf"]["F32"]["uncompressed_sha256"], dst

    def results(m, cwd, gguf_name, pid_text):
        """llama-results on one prompt: (command, tokens, float32 logits)."""
        cmd = [BIN("llama-results"), "-m", gguf_name, "-p", pid_text, "-o", "out.gguf"] + RESULTS_ARGS
        run(cmd, cwd)
        toks, L = read_results(os.path.join(cwd, "out.gguf"))
        os.remove(os.path.join(cwd, "out.gguf"))
        return shown(cmd, bin_dir), toks, L

    # --- check 1: the float64 forward vs llama.cpp F32 and the existing exact Q4_K_M references
    checks = {}
    for m in PRESETS:
        spec = refs[m]["spec"]
        p3 = [p for p in refs[m]["prompts"] if p["id"] == "p3"][0]["token_ids"]
        g = Gguf(os.path.join(scratch, m, "%s-F32.gguf" % m))
        cfg = model_config(g, spec)
        ours, _ = forward(g.weights(), cfg, p3)
        d_f32 = float(np.abs(ours - load_npy(load_model_file(m, "logits/F32/p3.npy"))).max())
        gq = Gguf(os.path.join(MODELS, m, "gguf", "%s-Q4_K_M.gguf" % m))
        ours_q, rout_q = forward(gq.weights(), cfg, p3)
        d_q = float(np.abs(ours_q.astype(np.float32) - load_npy(load_model_file(m, "exact/Q4_K_M/p3.npy"))).max())
        print("check %-8s float64 forward vs llama.cpp F32 p3: max |diff| %.3g; vs existing exact/Q4_K_M/p3: %.3g"
              % (m, d_f32, d_q))
        assert d_f32 < 1e-4 and d_q < 1e-4, "the float64 forward does not reproduce the references"
        checks[m] = {"forward_vs_llamacpp_F32_p3_max_abs": d_f32, "forward_vs_existing_exact_Q4_K_M_p3_max_abs": d_q}
        if rout_q:
            old = json.load(open(os.path.join(MODELS, m, "routing", "Q4_K_M.json")))["prompts"]["p3"]
            same = all(sel.tolist() == old["topk_ids"][li] for li, (sel, w, mg) in enumerate(rout_q))
            dm = max(float(np.abs(mg - np.array(old["margin"][li])).max()) for li, (sel, w, mg) in enumerate(rout_q))
            print("check %-8s routing of Q4_K_M p3 vs existing routing/Q4_K_M.json: ids equal %s, max margin diff %.3g"
                  % (m, same, dm))
            assert same and dm < 1e-5
            checks[m]["routing_vs_existing_Q4_K_M_p3"] = {"ids_equal": same, "max_margin_diff": dm}

    # --- check 2: llama-results on the existing Q4_K_M files reproduces their topk.json byte for byte
    for m in PRESETS:
        cwd = os.path.join(scratch, m)
        shutil.copy(os.path.join(MODELS, m, "gguf", "%s-Q4_K_M.gguf" % m), cwd)
        per = [(p["id"],) + results(m, cwd, "%s-Q4_K_M.gguf" % m, p["text"])[1:] for p in refs[m]["prompts"]]
        mine = topk_json("Q4_K_M", per).encode()
        old = open(load_model_file(m, "logits/Q4_K_M/topk.json"), "rb").read()
        if load_model_file(m, "logits/Q4_K_M/topk.json").endswith(".xz"):
            old = lzma.decompress(old)
        print("check %-8s llama-results + our topk writer on the existing Q4_K_M == existing topk.json: %s"
              % (m, mine == old))
        assert mine == old, "this llama.cpp build or the topk format differs from the existing fixtures"
        checks[m]["existing_Q4_K_M_topk_json_reproduced_byte_for_byte"] = True
        os.remove(os.path.join(cwd, "%s-Q4_K_M.gguf" % m))

    # --- importance matrix (llama only: the qwen3moe presets below do not use one)
    texts = [p["text"] for p in refs["llama"]["prompts"] if p["text"].strip()]
    texts += [json.loads(l)["text"] for l in open(os.path.join(DATA, "tokenizer", "corpus.jsonl"))]
    text = "\n".join(t for t in texts if t.strip()) + "\n"
    lcwd = os.path.join(scratch, "llama")
    with open(os.path.join(lcwd, "imatrix_text.txt"), "w") as f:
        f.write(text)
    imat_cmd = [BIN("llama-imatrix"), "-m", "llama-F32.gguf", "-f", "imatrix_text.txt", "-o", "imatrix.gguf",
                "-c", "256", "-t", "2"]
    run(imat_cmd, lcwd)
    gi = Gguf(os.path.join(lcwd, "imatrix.gguf"))
    imatrix_info = {
        "command": shown(imat_cmd, bin_dir),
        "text": "imatrix_text.txt = the non-empty prompt texts of models/llama/reference.json (p2, p3, p4) and then every "
                "non-blank `text` of tests/data/tokenizer/corpus.jsonl in file order, joined with '\\n', plus a final '\\n'",
        "text_sha256": hashlib.sha256(text.encode()).hexdigest(), "text_bytes": len(text.encode()),
        "chunks": gi.meta["imatrix.chunk_count"], "chunk_size": gi.meta["imatrix.chunk_size"],
        "tokens_used": gi.meta["imatrix.chunk_count"] * gi.meta["imatrix.chunk_size"],
        "entries": sorted(n[:-len(".in_sum2")] for n in gi.tensors if n.endswith(".in_sum2")),
        "format": "GGUF imatrix (general.type = imatrix; <tensor>.in_sum2 and <tensor>.counts, F32)",
        "file": "imatrix.gguf", "sha256": sha256(os.path.join(lcwd, "imatrix.gguf")),
        "size": os.path.getsize(os.path.join(lcwd, "imatrix.gguf")),
    }
    print("imatrix: %d chunks x %d tokens, %d entries" % (imatrix_info["chunks"], imatrix_info["chunk_size"],
                                                         len(imatrix_info["entries"])))

    # --- quantize, llama.cpp logits, exact references
    kernel_src = {}
    for m, presets in PRESETS.items():
        cwd = os.path.join(scratch, m)
        mdir = os.path.join(MODELS, m)
        spec = refs[m]["spec"]
        prompts = refs[m]["prompts"]
        rep = {"model": m, "llama_cpp": {"commit": "3f545becc", "binaries_shown_as": "$BIN = <llama.cpp build dir>/bin",
                                         "build": "clang-16, Release, -march=native (AMX via native flags), OpenMP"},
               "generator": "tests/data/quant/make_quant_fixtures.py", "checks": checks[m], "presets": {}}
        if m == "llama":
            rep["imatrix"] = imatrix_info
        for preset, use_imatrix in presets:
            out = "%s-%s.gguf" % (m, preset)
            cmd = [BIN("llama-quantize")] + (["--imatrix", "imatrix.gguf"] if use_imatrix else []) + \
                  ["%s-F32.gguf" % m, out, preset, "2"]
            run(cmd, cwd)
            path = os.path.join(cwd, out)
            g = Gguf(path)
            n_bitexact = check_dequant_bitexact(g, ggml_deq)
            types = {n: g.type_name(n) for n in g.tensors}
            summary = {}
            for t in types.values():
                summary[t] = summary.get(t, 0) + 1
            cfg = model_config(g, spec)
            W = g.weights()
            # llama.cpp logits, every prompt
            per, cmds = [], {}
            for p in prompts:
                c, toks, L = results(m, cwd, out, p["text"])
                assert toks == p["token_ids"], "%s %s: llama.cpp token ids differ from reference.json" % (out, p["id"])
                per.append((p["id"], toks, L))
                cmds[p["id"]] = c
            # exact float64 reference: p3 (all prompts for the qwen3moe routing file)
            exact, rout = {}, []
            for p in prompts:
                if p["id"] != "p3" and m != "qwen3moe":
                    continue
                lg, r = forward(W, cfg, p["token_ids"])
                exact[p["id"]] = lg.astype(np.float32)
                if r:
                    rout.append((p["id"], r))
            lc3 = [L for pid, toks, L in per if pid == "p3"][0]
            stats = {"all_positions": llamacpp_vs_exact(lc3, exact["p3"])}
            if rout:
                mm = np.min([mg for sel, w, mg in dict(rout)["p3"]], axis=0)
                stats["router_margin_ge_0.01"] = llamacpp_vs_exact(lc3, exact["p3"], mm >= 0.01)
            # write
            write(os.path.join(mdir, "gguf", out), open(path, "rb").read(), written)
            write(os.path.join(mdir, "logits", preset, "topk.json.xz"), xz(topk_json(preset, per).encode()), written)
            write(os.path.join(mdir, "exact", preset, "p3.npy.xz"), xz(npy_bytes(exact["p3"])), written)
            if rout:
                write(os.path.join(mdir, "routing", preset + ".json"), routing_json(preset, rout).encode(), written)
            rep["presets"][preset] = {
                "command": shown(cmd, bin_dir), "uses_imatrix": use_imatrix, "file": "gguf/" + out,
                "sha256": sha256(path), "size": os.path.getsize(path),
                "tensor_types_summary": dict(sorted(summary.items())), "tensor_types": types,
                "gguf_py_dequant_equals_ggml_to_float": "%d quantized tensors, bit-exact" % n_bitexact,
                "llama_results_commands": cmds, "llama_results_cwd": "the folder holding %s" % out,
                "token_ids_equal_reference_json": True,
                "logits_file": "logits/%s/topk.json.xz" % preset, "exact_file": "exact/%s/p3.npy.xz" % preset,
                "llamacpp_vs_exact_p3": stats,
            }
            if rout:
                rep["presets"][preset]["routing_file"] = "routing/%s.json" % preset
            s = stats["all_positions"]
            print("%-8s %-8s %-60s top-1 %d/%d (%d near-ties) top-32 |lc-exact| max %.3f mean %.4f" % (
                m, preset, " ".join("%s:%d" % kv for kv in sorted(summary.items())), s["top1_agree"],
                s["top1_counted"], s["near_ties_excluded"], s["top32_max_abs_diff"], s["top32_mean_abs_diff"]))
            if "router_margin_ge_0.01" in stats:
                s = stats["router_margin_ge_0.01"]
                print("%-8s %-8s  router margin >= 0.01 (%d positions): top-1 %d/%d top-32 max %.3f mean %.4f" % (
                    m, preset, s["positions"], s["top1_agree"], s["top1_counted"], s["top32_max_abs_diff"],
                    s["top32_mean_abs_diff"]))
            if m == "llama":
                kernel_src[preset] = path
        if m == "llama":
            write(os.path.join(mdir, "imatrix.gguf"), open(os.path.join(lcwd, "imatrix.gguf"), "rb").read(), written)
        reports[m] = rep

    # --- kernel bit-exactness fixtures
    kinfo = {}
    for tname, preset, tensor in KERNEL_TENSORS:
        g = Gguf(kernel_src[preset])
        t, ne, off, nb = g.tensors[tensor]
        assert QT(t).name == tname, (preset, tensor, QT(t).name)
        cols = ne[0]
        bs, ts = GGML_QUANT_SIZES[QT(t)]
        n = KERNEL_ROWS * cols // bs * ts
        raw = g.bytes_of(tensor)[:n]
        deq = quants.dequantize(raw.reshape(KERNEL_ROWS, -1), QT(t)).astype(np.float32)
        assert deq.shape == (KERNEL_ROWS, cols)
        assert np.array_equal(deq.reshape(-1).view(np.uint32), ggml_deq(raw, t, deq.size).view(np.uint32))
        write(os.path.join(KERNELS, tname + ".bin"), raw.tobytes(), written)
        write(os.path.join(KERNELS, tname + ".npy"), npy_bytes(deq), written)
        kinfo[tname] = {"file": "llama-%s.gguf" % preset, "tensor": tensor, "rows": KERNEL_ROWS, "cols": cols}
        print("kernel %-8s %d x %d from llama-%s %s" % (tname, KERNEL_ROWS, cols, preset, tensor))
    reports["llama"]["kernel_fixtures"] = kinfo

    write_recipe_types(BIN, scratch, os.path.join(lcwd, "imatrix.gguf"), written)

    for m, rep in reports.items():
        write(os.path.join(MODELS, m, "quant_reference.json"), (json.dumps(rep, indent=1) + "\n").encode(), written)

    total = 0
    for p in written:
        total += os.path.getsize(p)
    print("wrote %d files, %.2f MB" % (len(written), total / 1e6))


if __name__ == "__main__":
    main()
