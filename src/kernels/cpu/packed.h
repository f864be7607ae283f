// Weight matrices repacked at load for the packed kernels of every SIMD tier (AVX-512 in
// packed_avx512.cpp; AVX2 and AVX-VNNI, which read a group as two halves of 8 rows, in
// packed_ymm.h). Rows are interleaved 16 at a time
// so that one zmm holds the same few inputs of 16 rows: a kernel multiplies it by a broadcast of one
// token's activations and gets 16 partial row sums in 16 lanes (an outer-product micro-kernel). A
// loaded weight vector serves every token of the tile from registers, the activations are read as
// scalars, and no horizontal sums are needed: per token and block only one int32->float conversion
// and one fused multiply-add per 16 rows remain besides the integer dot products.
// Every token's arithmetic is the same whatever the number of tokens in the call, so a sequence's
// logits do not depend on what it is batched with.
//
// Layouts (one "group" = 16 consecutive rows; groups are 64-byte aligned). Row r of the group is
// int32 lane r; "[16 rows][4]" below is 64 bytes: 4 consecutive bytes of each of the 16 rows.
//   Q4_0 block: d[16] (F16); qs[4 j][16 rows][4]: bytes 4j..4j+3 of the file's qs (low nibbles:
//         elements 4j..4j+3, high nibbles: elements 16+4j..). Tile of 2 blocks: d d, qs qs (the
//         scales ahead of the levels that need them, so a gemv reads one sequential stream).
//   Q5_0 block: d[16]; h[4 j][2][64 bits]: the fifth bits of the low / high nibbles of step j (bit
//         4r+i: byte i of row r); qs as Q4_0. Tiles as Q4_0.
//   Q8_0 block: d[16]; qs[8 j][16 rows][4]: elements 4j..4j+3 (+128, as u8). Tiles as Q4_0.
//   IQ4_NL block: as Q4_0 (the same block layout; the nibbles index the IQ4 levels). Tiles as Q4_0.
//   MXFP4 block: as Q4_0, the nibbles indexing kMXFP4Values, d the F16 of the block's scale
//         2^(e - 128) (exact for e in [104, 143]; 0 for a block of zeros; other blocks are not
//         packed: packable_values). Tiles as Q4_0.
//   Q4_1 block: d[16], m[16] (F16); qs as Q4_0. Tile of 2 blocks: d d m m, qs qs.
//   Q4_Z block: d[16] (F16), z[16] (the zero points, bytes); qs as Q4_0. Tile of 4 blocks: d d d d,
//         z z z z, qs qs qs qs (1216 bytes, 19 cache lines: the file's 4.75 bits per weight).
//   IQ4_XS super-block: d[16] (F16), 32 bytes of padding, sc[8 sub-blocks][16 rows] (int8: the
//         6-bit scale - 32), then per sub-block of 32 the nibbles as Q4_0's (256 bytes). 2240 bytes
//         per 16x256 vs 2176 in the file (+2.9%).
//   Both: same bytes as the file (a lone last block pads its scales to 64 bytes).
//   Q4_K super-block: sc[8 sub-blocks][16 rows], mn[4 sub-block pairs][16 rows][2] (6-bit values in
//         bytes); d[16], dmin[16] (F16); qs[4 c][8 j][16 rows][4]: bytes 32c+4j.. of the file's qs
//         (low nibbles: sub-block 2c, high: 2c+1). 2368 bytes per 16x256 vs 2304 in the file (+2.8%).
//   Q5_K super-block: as Q4_K, with each chunk c's 512 bytes of nibbles preceded by its fifth bits:
//         for j < 8 a 64-bit mask for the low and one for the high nibbles of step j (bit 4r+i: byte
//         i of row r, as Q5_0). 2880 bytes per 16x256 vs 2816 in the file (+2.3%).
//   Q6_K super-block: sc[16 sub-blocks][16 rows] (int8); d[16] (F16), 32 bytes of padding; then per
//         128-element half h, for j < 8: L j, L j+8, H j (192 bytes, in the order the kernel reads
//         them: with L and H as separate arrays a gemv ran at half the memory bandwidth), where
//         L j = [16 rows][4] bytes 64h+4j.. of the file's ql and H j = bytes 32h+4j.. of its qh (L j
//         and L j+8 take their high bits from H j). 3392 bytes per 16x256 vs 3360 in the file (+1%).
//   Q3_K super-block: d[16] (F16), 32 bytes of padding, sc[16 sub-blocks][16 rows] (int8: the 6-bit
//         scale - 32); then qs[2 c][8 j][16 rows][4]: bytes 32c+4j.. of the file's qs (bits 2i..2i+1:
//         element 128c + 32i + 4j + byte), then hm[8 j][16 rows][4]: bytes 4j.. of the file's hmask
//         (bit 4c+i: the third bit of the same element). 1856 bytes per 16x256 vs 1760 (+5.5%).
//   Q2_K super-block: d[16], dmin[16] (F16); sm[8 sub-block pairs][16 rows][2]: the file's scale
//         byte (scale | min << 4) of sub-blocks 2p and 2p+1; then qs as Q3_K's (two bits per value).
//         1344 bytes per 16x256, as in the file.
//   F16:  [n inputs][16 rows]: input k of the 16 rows in 32 bytes. Same bytes as the file.
//   BF16: [n/2 input pairs][16 rows][2]: inputs 2p, 2p+1 of row r in int32 lane r (the operand
//         layout of vdpbf16ps). Same bytes as the file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/huge_pages.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/bf16_round.h"

namespace ferrum::kernels {

constexpr int kPackRows = 16;

// Software prefetch of a group's bytes (one sequential stream), kAhead bytes past what a kernel
// reads now, for the kernels that make several tokens' products per pass over a group: they
// compute long enough per byte that the hardware prefetchers alone leave one thread waiting on
// memory (AVX-512 Q4_0 1B model, 1 thread, 8 sequences decoding: 66 -> 88 tokens/s; 4096 bytes
// ahead better than 512-2048, as good as 8192). An AVX-512 gemv (one token) streams as fast
// without it except on Zen 5 (packed_avx512.cpp); the 256-bit tiers' gemvs need it (packed_ymm.h).
// The first kAhead bytes of a group were asked for by the group before it, when the same thread
// ran that one.
class StreamPrefetch {
 public:
  explicit StreamPrefetch(const uint8_t* group) : next_(reinterpret_cast<uintptr_t>(group) + kAhead) {}
  // Asks for the lines up to kAhead bytes past `end` (the end of the bytes read now).
  void upto(const uint8_t* end) {
    for (const uintptr_t last = reinterpret_cast<uintptr_t>(end) + kAhead; next_ < last; next_ += 64)
      __builtin_prefetch(reinterpret_cast<const void*>(next_), 0, 3);
  }

 private:
  static constexpr uintptr_t kAhead = 4096;
  uintptr_t next_;
};
// Tokens per pass over a group from which the AVX-512 kernels prefetch.
constexpr int kPrefetchTokens = 4;

// Byte offsets of block b's fields inside its Q4_0/Q5_0/Q8_0 group (qs_bytes 256 for Q4_0, 320 for
// Q5_0 (fifth bits, then nibbles), 512 for Q8_0).
struct Q32Offsets {
  size_t qs, d, sc = 0, m = 0;  // sc: IQ4_XS's sub-block scales; m: Q4_1's mins, Q4_Z's zero points
};
inline Q32Offsets q32_offsets(int64_t b, size_t qs_bytes) {
  const int64_t tile = b / 2, j = b % 2;
  const size_t base = static_cast<size_t>(tile) * (64 + 2 * qs_bytes);
  return {base + 64 + j * qs_bytes, base + j * 32};
}
inline size_t q32_group_bytes(int64_t nb, size_t qs_bytes) {
  return static_cast<size_t>(nb / 2) * (64 + 2 * qs_bytes) + (nb % 2 ? 64 + qs_bytes : 0);
}
// Q4_1: block b of a group (tiles of two blocks: [d d m m 128][qs qs 512]).
inline Q32Offsets q41_offsets(int64_t b) {
  const size_t base = static_cast<size_t>(b / 2) * 640, j = static_cast<size_t>(b % 2);
  return {base + 128 + 256 * j, base + 32 * j, 0, base + 64 + 32 * j};
}
inline size_t q41_group_bytes(int64_t nb) {
  return static_cast<size_t>(nb / 2) * 640 + (nb % 2 ? 128 + 256 : 0);
}
// Q4_Z: block b of a group (tiles of four blocks: [d x4 128][z x4 64][qs x4 1024]; m: the zero points).
constexpr size_t kQ4ZTileBytes = 1216;
inline Q32Offsets q4z_offsets(int64_t b) {
  const size_t base = static_cast<size_t>(b / 4) * kQ4ZTileBytes, j = static_cast<size_t>(b % 4);
  return {base + 192 + 256 * j, base + 32 * j, 0, base + 128 + 16 * j};
}
inline size_t q4z_group_bytes(int64_t nb) {  // a last tile of 1-3 blocks keeps the full tile's offsets
  return static_cast<size_t>((nb + 3) / 4) * kQ4ZTileBytes;
}
// IQ4_XS: sub-block b (of 32 inputs) of a group, in super-block b / 8.
constexpr size_t kIQ4XSBlockBytes = 2240;
inline Q32Offsets iq4xs_offsets(int64_t b) {
  const size_t base = static_cast<size_t>(b / 8) * kIQ4XSBlockBytes, k = static_cast<size_t>(b % 8);
  return {base + 192 + 256 * k, base, base + 64 + 16 * k};
}
// Q4_K super-block b of a group: [sc 128][mn 128][d 32][dmin 32][4 chunks of 512: qs]; Q5_K the
// same with chunks of 640: [fifth-bit masks 128][qs 512].
constexpr size_t kQ4KBlockBytes = 2368, kQ5KBlockBytes = 2880;
constexpr size_t kQ4KChunkBytes = 512, kQ5KMaskBytes = 128, kQ5KChunkBytes = kQ5KMaskBytes + kQ4KChunkBytes;
struct Q4KOffsets {
  size_t qs, sc, mn, d, dmin;
};
inline Q4KOffsets q4k_offsets(int64_t b, size_t block_bytes = kQ4KBlockBytes) {
  const size_t base = static_cast<size_t>(b) * block_bytes;
  return {base + 320, base, base + 128, base + 256, base + 288};
}

// Q6_K super-block b of a group: [sc 256][d 32][pad 32][half 0: 8 x (L j, L j+8, H j)][half 1].
constexpr size_t kQ6KBlockBytes = 3392;
struct Q6KOffsets {
  size_t sc, d, qs;
};
inline Q6KOffsets q6k_offsets(int64_t b) {
  const size_t base = static_cast<size_t>(b) * kQ6KBlockBytes;
  return {base, base + 256, base + 320};
}
// Offsets from qs of L j (j < 16) and H j (j < 8) of half h.
inline size_t q6k_l(int h, int j) {
  return 1536 * h + 192 * (j % 8) + 64 * (j / 8);
}
inline size_t q6k_h(int h, int j) {
  return 1536 * h + 192 * j + 128;
}
// Which of a step's 4 values v (L j low / high nibble, L j+8 low / high) lies in which sub-block of
// its half: 8 h + this + j / 4; its inputs start 16 x this into the half.
constexpr int q6k_value_sub_block(int v) {
  return v == 0 ? 0 : v == 1 ? 4 : v == 2 ? 2 : 6;
}

// Q3_K super-block b of a group: [d 32][pad 32][sc 256][qs 1024][hm 512].
constexpr size_t kQ3KBlockBytes = 1856;
struct Q3KOffsets {
  size_t d, sc, qs, hm;
};
inline Q3KOffsets q3k_offsets(int64_t b) {
  const size_t base = static_cast<size_t>(b) * kQ3KBlockBytes;
  return {base, base + 64, base + 320, base + 1344};
}

// Q2_K super-block b of a group: [d 32][dmin 32][sm 256][qs 1024].
constexpr size_t kQ2KBlockBytes = 1344;
struct Q2KOffsets {
  size_t d, dmin, sm, qs;
};
inline Q2KOffsets q2k_offsets(int64_t b) {
  const size_t base = static_cast<size_t>(b) * kQ2KBlockBytes;
  return {base, base + 32, base + 64, base + 320};
}

// Index (in 16-bit values) of input k of row r inside an F16 or BF16 group.
inline size_t float_group_index(DType t, int64_t k, int r) {
  return t == DType::BF16 ? static_cast<size_t>((k / 2 * kPackRows + r) * 2 + k % 2)
                          : static_cast<size_t>(k * kPackRows + r);
}

struct PackedMatrix {
  DType type = DType::F32;  // the type of the values: the file's, or BF16 for F16/F32 rounded at load
  int64_t rows = 0, cols = 0;
  size_t group_bytes = 0;  // bytes per 16-row group (a multiple of 64)
  HugeBytes data;
  const uint8_t* group(int64_t g) const { return data.get() + static_cast<size_t>(g) * group_bytes; }
  size_t bytes() const { return group_bytes * static_cast<size_t>(rows / kPackRows); }
};

// Whether a rows x cols matrix of type t has a packed layout: Q4_0, Q4_1, Q4_Z, Q5_0, Q8_0, IQ4_NL, IQ4_XS,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, F16 or BF16 (F16/BF16: cols a multiple of 32), rows a multiple of 16. (A tier
// may lack the kernel of a layout: PackedKernels::has.)
bool packable(DType t, int64_t rows, int64_t cols);

// Whether packing keeps every value of t (an MXFP4 matrix: every block's scale is one F16 holds, or
// the block is all zeros); the other packable types always. pack_matrix throws when it would not.
bool packable_values(const TensorView& t);

// False when FERRUM_PACK=0 is in the environment: weights are then multiplied from the file's rows.
bool packing_enabled();

// Packs the rows of all parts, stacked in order (e.g. q, k, v into one matrix). The parts must have
// one packable type, the same number of columns and a multiple of 16 rows each; otherwise throws.
// Packing is spread over `pool`. With WeightRounding::Bf16, F16 and F32 parts are rounded to BF16
// while they are packed (as round_row_to_bf16; no copy of the whole matrix) and packed as BF16, so
// F16, F32 and BF16 parts then count as one type.
std::unique_ptr<PackedMatrix> pack_matrix(std::span<const TensorView> parts, ThreadPool& pool,
                                          WeightRounding rounding = WeightRounding::None);

// Row r of a packed matrix as floats (exactly the values of the file's row, or of its BF16 rounding);
// for tests and checks.
void unpack_row(const PackedMatrix& p, int64_t r, float* out);

}  // namespace ferrum::kernels
