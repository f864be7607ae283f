// How a KV cache stores its rows (one row = all KV heads of one token for one layer) and how a
// sequence's rows are found in a contiguous or paged cache. F32, F16, BF16 or INT8 (symmetric, one
// float scale per token and head after the row's levels).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferrum::kernels {

enum class KvType : int { F32 = 0, F16 = 1, BF16 = 2, INT8 = 3 };
const char* kv_type_name(KvType t);
// Bytes of one cached row (all KV heads of one token); INT8 rows carry one float scale per head.
size_t kv_row_bytes(KvType t, int n_head_kv, int head_dim);
// Converts a row of n_head_kv*head_dim floats into the cache format (dst: kv_row_bytes bytes).
void kv_store_row(KvType t, const float* src, uint8_t* dst, int n_head_kv, int head_dim);
// Reads head h of a cached row back as floats.
void kv_load_head(KvType t, const uint8_t* row, int h, int n_head_kv, int head_dim, float* out);

// One sequence's K or V rows for one layer: row j lives in block table[j / block_tokens] at
// offset (j % block_tokens) * row_bytes from base + block * block_bytes.
struct KvSeqView {
  const uint8_t* k_base = nullptr;
  const uint8_t* v_base = nullptr;
  const int32_t* table = nullptr;
  int64_t block_tokens = 0;
  size_t block_bytes = 0;
  size_t row_bytes = 0;
  KvType type = KvType::F32;
  const uint8_t* k_row(int64_t j) const {
    return k_base + table[j / block_tokens] * block_bytes + (j % block_tokens) * row_bytes;
  }
  const uint8_t* v_row(int64_t j) const {
    return v_base + table[j / block_tokens] * block_bytes + (j % block_tokens) * row_bytes;
  }
};

}  // namespace ferrum::kernels
