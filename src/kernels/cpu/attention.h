// Causal (optionally sliding-window) multi-head attention of a chunk of query tokens against one
// sequence's KV cache, GQA-aware: each K/V row is read (and converted) once per KV head and used
// by every query head of its group. The cache may be contiguous or paged (a block table), and
// hold F32, F16, BF16 or INT8 (per token and head scale) elements. Scores are F32, softmax sums
// in double.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

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
  const uint8_t* k_row(int64_t j) const { return k_base + table[j / block_tokens] * block_bytes + (j % block_tokens) * row_bytes; }
  const uint8_t* v_row(int64_t j) const { return v_base + table[j / block_tokens] * block_bytes + (j % block_tokens) * row_bytes; }
};

struct AttentionParams {
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  float scale = 1.0f;
  int sliding_window = 0;  // 0 = full causal; else a query at p sees keys at p-window < j <= p
};

struct AttentionScratch {
  std::vector<float> buf;  // per thread: scores (group x kv_len) + K/V row + accumulators; grow-only
};

// One query chunk of one sequence: query t (row t of q, stride ldq) is at position pos0 + t and
// sees cached positions [lo, pos0 + t]; results go to row t of out (stride ldo).
struct AttentionJob {
  const float* q = nullptr;
  int64_t ldq = 0;
  int64_t n_tok = 0;
  int64_t pos0 = 0;
  KvSeqView kv;
  float* out = nullptr;
  int64_t ldo = 0;
};

// Runs several jobs (e.g. the sequences of a mixed batch) in one parallel pass.
void attention(const AttentionParams& p, const AttentionJob* jobs, int n_jobs, ThreadPool& pool,
               AttentionScratch& scratch);

}  // namespace ferrum::kernels
