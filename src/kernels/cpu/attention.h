// Causal (optionally sliding-window) multi-head attention of a chunk of query tokens against one
// sequence's KV cache, GQA-aware. Scores are computed in F32, softmax sums in double.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace ferrum::kernels {

struct AttentionParams {
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  float scale = 1.0f;
  int sliding_window = 0;  // 0 = full causal; else a query at p sees keys at p-window < j <= p
};

struct AttentionScratch {
  std::vector<float> scores;  // n_threads * max kv length, grow-only
};

// q:   n_tok rows of n_head*head_dim floats (row stride ldq)
// k,v: kv_len rows of n_head_kv*head_dim floats (row stride ldkv); row j holds position j
// out: n_tok rows of n_head*head_dim floats (row stride ldo)
// Query t is at position pos0 + t and sees keys [lo, pos0 + t].
void attention(const AttentionParams& p, const float* q, int64_t ldq, int64_t n_tok, int64_t pos0, const float* k,
               const float* v, int64_t ldkv, float* out, int64_t ldo, ThreadPool& pool, AttentionScratch& scratch);

// Dot product of two float vectors (vectorisable, 8 partial sums).
float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace ferrum::kernels
