// Weight matrices repacked at load for the AVX-512 VNNI kernels: rows are interleaved 8 at a time
// so one pass over a block of the 8 rows yields 8 outputs per token while the token's activation
// block is loaded once for all of them (a row-at-a-time gemv reloads it per row and pays the block
// scale handling per row). Every token's arithmetic is the same whatever the number of tokens in
// the call, so a sequence's logits do not depend on what it is batched with.
//
// Layouts (one "group" = 8 consecutive rows; groups are 64-byte aligned). Blocks are stored in tiles
// of 4 blocks (2 super-blocks for Q4_K), each tile all of its fields one after the other, so a gemv
// reads one sequential stream (separate per-field arrays made 2-5 short streams per group, which the
// hardware prefetcher followed badly: measured 8 vs 16 GB/s per core for Q4_K).
//   Q4_0 block: qs[8 rows][16] (the file's nibbles); d[8] (F16). Tile: d x4, qs x4. Same bytes as the file.
//   Q8_0 block: qs[2 row quads][2 halves][4 rows][16] (levels + 128 as u8: elements 0-15 | 16-31);
//         d[8]. Tile: d x4, qs x4. Same bytes as the file.
//   Q4_K super-block: qs[4 pairs][2 halves][2 row quads][4 rows][16] (the file's nibbles of
//         sub-blocks 2c/2c+1); sc[8 sub-blocks][8 rows], mins[8 rows][8 sub-blocks] (6-bit values in
//         bytes); d[8], dmin[8] (F16). Tile: sc x2, mins x2, d x2, dmin x2, qs x2: 1184 bytes per
//         8x256 vs 1152 in the file (+2.8%).
//   F16:  two 4-row halves one after the other, each [n/32 chunks][4 rows][32 values]. Same bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace ferrum::kernels {

constexpr int kPackRows = 8;

// Byte offsets of block b's fields inside its group (nb blocks per row; qs_bytes 128 for Q4_0, 256
// for Q8_0). A tile is [d x4 (64 bytes)][qs x4]: the scales come first so the one sequential stream
// reaches them before the levels that need them.
struct Q32Offsets {
  size_t qs, d;
};
inline Q32Offsets q32_offsets(int64_t b, int64_t nb, size_t qs_bytes) {
  (void)nb;
  const int64_t tile = b / 4, j = b % 4;
  const size_t base = static_cast<size_t>(tile) * (64 + 4 * qs_bytes);
  return {base + 64 + j * qs_bytes, base + j * 16};
}
inline size_t q32_group_bytes(int64_t nb, size_t qs_bytes) {
  const int64_t tail = nb % 4;
  return static_cast<size_t>(nb / 4) * (64 + 4 * qs_bytes) + (tail ? 64 + tail * qs_bytes : 0);
}
// Q4_K tile: [sc x2][mins x2][d x2][dmin x2] padded to 64 bytes, then [qs x2].
struct Q4KOffsets {
  size_t qs, sc, mn, d, dmin;
};
inline Q4KOffsets q4k_offsets(int64_t b, int64_t nsb) {
  const int64_t tile = b / 2, j = b % 2, tb = nsb - 2 * tile < 2 ? nsb - 2 * tile : 2;
  const size_t base = static_cast<size_t>(tile) * 2368;  // full tiles: 320 + 2 * 1024
  const size_t meta = tb == 2 ? 320 : 192;
  return {base + meta + j * 1024, base + j * 64, base + tb * 64 + j * 64, base + tb * 128 + j * 16,
          base + tb * 144 + j * 16};
}
inline size_t q4k_group_bytes(int64_t nsb) {
  return static_cast<size_t>(nsb / 2) * 2368 + (nsb % 2 ? 1216 : 0);
}

struct PackedMatrix {
  DType type = DType::F32;  // the file type the values came from
  int64_t rows = 0, cols = 0;
  size_t group_bytes = 0;  // bytes per 8-row group (a multiple of 64)
  std::unique_ptr<uint8_t, void (*)(uint8_t*)> data{nullptr, nullptr};
  const uint8_t* group(int64_t g) const { return data.get() + static_cast<size_t>(g) * group_bytes; }
  size_t bytes() const { return group_bytes * static_cast<size_t>(rows / kPackRows); }
};

// Whether a rows x cols matrix of type t can be packed: Q4_0, Q8_0, Q4_K or F16 (F16: cols a multiple
// of 32), rows a multiple of 8.
bool packable(DType t, int64_t rows, int64_t cols);

// Packs the rows of all parts, stacked in order (e.g. q, k, v into one matrix). The parts must have
// one packable type, the same number of columns and a multiple of 8 rows each; otherwise throws.
// Packing is spread over `pool`.
std::unique_ptr<PackedMatrix> pack_matrix(std::span<const TensorView> parts, ThreadPool& pool);

// Row r of a packed matrix as floats (exactly the values of the file's row); for tests and checks.
void unpack_row(const PackedMatrix& p, int64_t r, float* out);

}  // namespace ferrum::kernels
