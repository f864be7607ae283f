#!/usr/bin/env python3
"""Makes the bit-exactness fixtures for tests/kernels from the shared GGUF fixtures.

For each type: the raw bytes of the first ROWS rows of one tensor (<type>.bin) and the float32
values llama.cpp's gguf-py numpy dequantizer gives for them (<type>.npy). Also the F32 source rows
of the same tensor (<tensor>.f32.npy) for the quantizer round-trip tests.

Usage: PYTHONPATH=<llama.cpp>/gguf-py python3 make_refs.py <fixtures dir> <dir with the .gguf
(decompressed F32/F16/BF16)> <out dir>
"""
import struct
import sys

import numpy as np
from gguf import quants  # llama.cpp gguf-py: the independent reference dequantizer
from gguf.constants import GGMLQuantizationType as QT

ROWS = 8
# (ggml type id, block size, bytes per block) from ggml-common.h
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24),
         8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
         30: ("BF16", 1, 2)}


def read_gguf(path):
    """Minimal GGUF v3 reader: returns {name: (type, dims, absolute offset)}."""
    b = open(path, "rb").read()
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

    scal = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def rval(t):
        if t == 8:
            return rstr()
        if t == 9:
            et = rd("I")
            n = rd("Q")
            return [rval(et) for _ in range(n)]
        return rd(scal[t])

    assert b[:4] == b"GGUF"
    pos = 4
    rd("I")
    n_t = rd("Q")
    n_kv = rd("Q")
    align = 32
    for _ in range(n_kv):
        k = rstr()
        v = rval(rd("I"))
        if k == "general.alignment":
            align = v
    infos = []
    for _ in range(n_t):
        name = rstr()
        nd = rd("I")
        dims = [rd("Q") for _ in range(nd)]
        t = rd("I")
        off = rd("Q")
        infos.append((name, t, dims, off))
    data = (pos + align - 1) // align * align
    return b, {n: (t, d, data + o) for n, t, d, o in infos}


def take(path, want_type, out, tag, prefer=None):
    b, ts = read_gguf(path)
    names = [n for n, (t, d, o) in ts.items() if t == want_type and len(d) == 2]
    name = prefer if prefer in names else names[0]
    t, dims, off = ts[name]
    tname, bs, ts_ = TYPES[t]
    cols = dims[0]
    nbytes = ROWS * cols // bs * ts_
    raw = np.frombuffer(b[off:off + nbytes], dtype=np.uint8)
    deq = quants.dequantize(raw.reshape(ROWS, -1), QT(t)).astype(np.float32)
    assert deq.shape == (ROWS, cols)
    raw.tofile(f"{out}/{tname}.bin")
    np.save(f"{out}/{tname}.npy", deq)
    print(f"{tname} {ROWS} {cols} {name} {tag}")
    return name


def main():
    fx, gg, out = sys.argv[1:4]
    L = f"{fx}/llama/gguf"
    B = f"{fx}/bert/gguf"
    t = "blk.0.attn_q.weight"
    take(f"{L}/llama-Q8_0.gguf", 8, out, "llama-Q8_0", t)
    take(f"{L}/llama-Q4_0.gguf", 2, out, "llama-Q4_0", t)
    take(f"{L}/llama-Q4_K_M.gguf", 12, out, "llama-Q4_K_M", "blk.0.ffn_gate.weight")
    take(f"{L}/llama-Q5_K_M.gguf", 13, out, "llama-Q5_K_M", "blk.0.ffn_down.weight")
    take(f"{L}/llama-Q6_K.gguf", 14, out, "llama-Q6_K", "blk.0.ffn_down.weight")
    take(f"{B}/bert-Q4_K_M.gguf", 6, out, "bert-Q4_K_M", t)
    take(f"{B}/bert-Q5_K_M.gguf", 7, out, "bert-Q5_K_M", t)
    take(f"{gg}/llama-F16.gguf", 1, out, "llama-F16", t)
    take(f"{gg}/llama-BF16.gguf", 30, out, "llama-BF16", t)
    # F32 source rows of the tensors above (quantizer round trip and quality comparisons).
    b, ts = read_gguf(f"{gg}/llama-F32.gguf")
    for name, tag in ((t, "attn_q"), ("blk.0.ffn_gate.weight", "ffn_gate"), ("blk.0.ffn_down.weight", "ffn_down")):
        typ, dims, off = ts[name]
        assert typ == 0
        rows = np.frombuffer(b[off:off + ROWS * dims[0] * 4], dtype=np.float32).reshape(ROWS, -1)
        np.save(f"{out}/{tag}_f32.npy", rows)

if __name__ == "__main__":
    main()
