// How a KV cache stores its tokens and how a sequence's tokens are found in a contiguous or paged
// cache. F32, F16, BF16 or INT8 (symmetric, one float scale per token and head).
//
// Tokens are stored in groups of kKvGroup (16) consecutive positions; a group takes kKvGroup x
// kv_row_bytes bytes. Inside a group, keys are transposed per head, [head][dim][token], so the
// attention kernel reads 16 keys' values of one dimension as one vector (no transposes), and
// values are head-major, [head][token][dim], so a head's 16 value rows are one contiguous run.
// INT8 groups keep each head's run whole, its 16 tokens' float scales then their levels, so a
// head's scales and keys (or values) are one stream, read in memory order (the scales first). INT8 keys are
// stored as unsigned bytes, level + kInt8KeyBias, in quads of dimensions, [dim / 4][token][dim % 4], so one
// u8 x s8 dot-product instruction (VNNI) takes 4 dimensions of 16 keys as they are against quantized queries
// (head sizes are multiples of 4 for INT8). INT8 values keep signed levels, interleaved by token pairs,
// [token / 2][dim][token % 2], so one sign extension gives the 16-bit pairs a vpdpwssd multiplies by two
// tokens' 16-bit probabilities.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ferrum/kv_types.h"

namespace ferrum::kernels {

using ferrum::kv_type_name;
using ferrum::KvType;         // ferrum/kv_types.h: one vocabulary for the API, the runtime and the kernels
constexpr int kKvGroup = 16;  // tokens per storage group (paged block sizes are multiples of it)
constexpr int kInt8KeyBias = 128;
// Bytes per token (all KV heads of one token); INT8 tokens carry one float scale per head.
size_t kv_row_bytes(KvType t, int n_head_kv, int head_dim);
inline size_t kv_element_bytes(KvType t) {
  return t == KvType::F32 ? 4 : t == KvType::INT8 ? 1 : 2;
}
// Element offsets inside a group of F32/F16/BF16 (in elements of the type; INT8: below).
inline size_t kv_key_offset(int h, int d, int i, int head_dim) {
  return (static_cast<size_t>(h) * head_dim + d) * kKvGroup + i;
}
// INT8: bytes of one head's run in a group (scales, then levels).
inline size_t kv_int8_head_bytes(int head_dim) {
  return static_cast<size_t>(kKvGroup) * (head_dim + sizeof(float));
}
// INT8 keys (bytes): quads of dimensions, see above.
inline size_t kv_int8_key_offset(int h, int d, int i, int head_dim) {
  return h * kv_int8_head_bytes(head_dim) + kKvGroup * sizeof(float) + (d / 4) * (4 * kKvGroup) + i * 4 +
         d % 4;
}
inline size_t kv_value_offset(int h, int i, int head_dim) {
  return (static_cast<size_t>(h) * kKvGroup + i) * head_dim;
}
// INT8 values (bytes): token pairs interleaved, see above.
inline size_t kv_int8_value_offset(int h, int i, int d, int head_dim) {
  return h * kv_int8_head_bytes(head_dim) + kKvGroup * sizeof(float) + (i / 2) * (2 * head_dim) + 2 * d +
         i % 2;
}
// The scales of head h's 16 tokens in an INT8 group (keys and values alike).
inline const float* kv_scales(const uint8_t* group, int h, int head_dim) {
  return reinterpret_cast<const float*>(group + h * kv_int8_head_bytes(head_dim));
}
inline float* kv_scales(uint8_t* group, int h, int head_dim) {
  return reinterpret_cast<float*>(group + h * kv_int8_head_bytes(head_dim));
}

// Converts token i of a group (n_head_kv*head_dim floats) into the cache format.
void kv_store_key(KvType t, const float* src, uint8_t* group, int i, int n_head_kv, int head_dim);
void kv_store_value(KvType t, const float* src, uint8_t* group, int i, int n_head_kv, int head_dim);
// Reads head h of token i of a group back as floats.
void kv_load_key(KvType t, const uint8_t* group, int i, int h, int n_head_kv, int head_dim, float* out);
void kv_load_value(KvType t, const uint8_t* group, int i, int h, int n_head_kv, int head_dim, float* out);

// One sequence's K or V tokens for one layer: token j lives in block table[j / block_tokens], in
// group (j % block_tokens) / kKvGroup of it, at index j % kKvGroup. block_tokens is a multiple of
// kKvGroup unless the sequence is one block (contiguous: table = {0}, block_bytes = 0).
struct KvSeqView {
  const uint8_t* k_base = nullptr;
  const uint8_t* v_base = nullptr;
  const int32_t* table = nullptr;
  int64_t block_tokens = 0;
  size_t block_bytes = 0;
  size_t row_bytes = 0;
  KvType type = KvType::F32;
  size_t group_offset(int64_t j) const {
    return table[j / block_tokens] * block_bytes + (j % block_tokens) / kKvGroup * kKvGroup * row_bytes;
  }
  // The groups holding token j (its index there: j % kKvGroup).
  const uint8_t* k_group(int64_t j) const { return k_base + group_offset(j); }
  const uint8_t* v_group(int64_t j) const { return v_base + group_offset(j); }
};

}  // namespace ferrum::kernels
