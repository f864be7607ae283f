// The inner steps of tiled (online-softmax) attention over one KV head: load a tile of up to
// kKeyTile cached keys and values (converted from the cache type in registers), score R query rows
// against it, update each row's running max / sum / output. Per ISA (generic C++, AVX2, AVX-512, NEON); the
// driver (attention.cpp) decides which rows and tiles to run.
//
// Every row's arithmetic is the same whatever the other rows of the call (R, blocking): each
// score is one chain of fused multiply-adds in order of the head dimension, each output element one
// chain in order of the key, so a token's result does not depend on how tokens are batched.
#pragma once

#include <cstdint>

#include "kernels/cpu/kv_format.h"

namespace ferrum::kernels {

constexpr int kKeyTile = 64;  // keys per tile: 64 x head_dim floats of K and of V stay in L1
constexpr int kMaxHeadDim = 1024;

// A tile's keys come from kKeyTile / kKvGroup cache groups (kv_format.h): groups[g] holds tile
// columns [16 g, 16 g + 16), nullptr when none of them is in the columns [a, b) used.
constexpr int kTileGroups = kKeyTile / kKvGroup;

// Query rows as the steps read them. For an INT8 cache they are also quantized, once per work
// item (quantize_query_rows): q8 = round(q / qs), qs = max|q| / 127 per row, as llama.cpp's 8-bit
// activations, so scores are integer dot products with the 8-bit keys (VNNI on AVX-512); the
// score of key i is then float(sum_d q8_d k8_id) * (ks_i * (qs * scale)), ks_i the key's scale.
struct QueryRows {
  const float* f = nullptr;        // R x hd
  const int8_t* q8 = nullptr;      // R x hd, INT8 caches only
  const float* qs = nullptr;       // R scales
  const int32_t* q8sum = nullptr;  // R sums of q8 (the keys are stored + kInt8KeyBias)
  int hd = 0;
  // The rows from row r on.
  QueryRows from(int64_t r) const {
    return {f + r * hd, q8 ? q8 + r * hd : nullptr, qs ? qs + r : nullptr, q8sum ? q8sum + r : nullptr, hd};
  }
};
void quantize_query_rows(const float* q, int R, int hd, int8_t* q8, float* qs, int32_t* q8sum);

// INT8 values are summed in integers too: per cache group and row, x_j = p_j * vs_j (probability
// times the token's value scale) is rounded to 16 bits, P_j = round(x_j / ps), ps = max_j x_j /
// kProbLevels, and the row's output gets float(sum_j P_j v8_jd) * ps (one fused multiply-add per
// group). Masked keys have p = 0, so P and ps depend only on the keys a row sees: the result is
// still independent of batching. The rounding costs at most ps / 2 per key, 1/65534 of the
// group's largest term (the 8-bit levels themselves cost 1/254 of each value).
constexpr float kProbLevels = 32767.0f;

// load_keys, load_values, scores and accumulate serve F32/F16/BF16 caches; INT8 caches are scored
// with scores_group and summed with accumulate_rows only (their integer arithmetic, above).
struct AttentionTileOps {
  // Head h of tile columns j in [a, b) (other columns: zeros), F32 out: keys transposed,
  // kt[d * kKeyTile + j] for j < kKeyTile; values as rows, vt[j * hd + d] for j < b.
  void (*load_keys)(const uint8_t* const* groups, int a, int b, KvType t, int h, int n_head_kv, int hd,
                    float* kt);
  void (*load_values)(const uint8_t* const* groups, int a, int b, KvType t, int h, int n_head_kv, int hd,
                      float* vt);
  // s[r * kKeyTile + j] = scale * sum_d q[r * hd + d] * kt[d * kKeyTile + j] for r < R, j < kKeyTile.
  void (*scores)(const float* q, int R, const float* kt, int hd, float scale, float* s);
  // The same for the 16 keys of one cache group, read straight from it: s[r * kKeyTile + i], i < 16
  // (F32/F16/BF16: the same arithmetic as scores on the keys load_keys gives; INT8: the integer
  // dot products of QueryRows, the only way INT8 scores are computed).
  void (*scores_group)(QueryRows q, int R, const uint8_t* group, KvType t, int h, int n_head_kv, int hd,
                       float scale, float* s);
  // One online-softmax step over R rows of s (masked entries -inf, at least one finite per row):
  // m' = max(m, max_j s), c = e^(m - m'), s = e^(s - m'), l = l * c + sum_j s, m = m'.
  void (*softmax_step)(float* s, int R, float* m, float* l, float* c);
  // acc[r * hd + i] = acc[r * hd + i] * c[r] + sum_{j < n} p[r * kKeyTile + j] * vt[j * hd + i].
  void (*accumulate)(const float* p, int R, const float* vt, int n, int hd, const float* c, float* acc);
  // The same with values read (and converted) straight from the cache groups, columns j in [a, n)
  // (the columns before a have p = 0): for few rows, where each value row is used once anyway, and
  // for INT8 caches (any number of rows; integer sums group by group, see kProbLevels).
  // c = nullptr: no rescaling (a later part of the same tile).
  void (*accumulate_rows)(const float* p, int R, const uint8_t* const* groups, int a, int n, KvType t, int h,
                          int n_head_kv, int hd, const float* c, float* acc);
};

// Helpers of the SIMD steps (each compiles its loops per float cache type).
// Calls f.template operator()<T>() for the float cache type t; nothing for INT8.
template <typename F>
void with_float_kv_type(KvType t, F&& f) {
  switch (t) {
    case KvType::F32:
      return f.template operator()<KvType::F32>();
    case KvType::F16:
      return f.template operator()<KvType::F16>();
    case KvType::BF16:
      return f.template operator()<KvType::BF16>();
    case KvType::INT8:
      break;
  }
}
// The value row of tile column j (head h) in its cache group, float cache types.
template <KvType T>
inline const uint8_t* kv_value_row(const uint8_t* const* groups, int j, int h, int hd) {
  return groups[j / kKvGroup] + kv_value_offset(h, j % kKvGroup, hd) * kv_element_bytes(T);
}

const AttentionTileOps& generic_tile_ops();
#if defined(__x86_64__)
const AttentionTileOps& avx2_tile_ops();
const AttentionTileOps& avx512_tile_ops();
#elif defined(__aarch64__)
const AttentionTileOps& neon_tile_ops();  // NEON and NEON + dot product tiers
#endif
// The ops for the active ISA (kernels.h: IsaKernels::tile_ops) and this head size (AVX-512 needs
// hd % 16 == 0, AVX2 and AVX2 + VNNI hd % 8 == 0, NEON hd % 4 == 0).
const AttentionTileOps& attention_tile_ops(int head_dim);

}  // namespace ferrum::kernels
