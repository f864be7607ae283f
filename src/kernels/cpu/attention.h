// Causal (optionally sliding-window) or bidirectional multi-head attention of a chunk of query
// tokens against one sequence's KV cache, tiled with an online softmax (flash-attention style): a work item
// is one block of query tokens x one KV head (all query heads of its GQA group), which reads its keys and
// values tile by tile straight from the cache (contiguous or paged; F32, F16, BF16 or INT8,
// converted in registers; INT8 keys are scored with integer dot products against the queries
// rounded to 8 bits, attention_tile.h), so memory stays O(tile) at any context length. A query's keys are cut
// into chunks of kAttentionChunk at fixed positions, each chunk's softmax state is computed on its
// own and the states are merged in order: long decodes split their chunks over threads (split-K)
// and get exactly the same numbers as when one thread does them all, so results do not depend on
// batching, chunking or the number of threads.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/kv_format.h"

namespace ferrum::kernels {

struct AttentionParams {
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  float scale = 1.0f;
  int sliding_window = 0;  // 0 = full causal; else a query at p sees keys at p-window < j <= p
  float softcap = 0;       // Gemma 2: scores = softcap * tanh(scores / softcap) before the mask; 0 = none
  // Attention sinks (gpt-oss): a learned logit per query head (n_head values) that joins every
  // softmax's denominator and weighs no value; null: none. Applied once per query row when its
  // chunks' states are merged, so any chunking or thread count gives the same numbers.
  const float* sinks = nullptr;
  // false: bidirectional (encoders): every query token of a job sees all of the job's keys,
  // [0, pos0 + n_tok); a batch of sentences is one job per sentence, which is the padding mask.
  // No sliding window then.
  bool causal = true;
};

constexpr int64_t kAttentionChunk = 1024;  // keys per softmax chunk (a multiple of the key tile)

// One unit of work: query tokens [t0, t1) of a job, KV heads [h0, h1), key chunks [c0, c1);
// `partial` >= 0 stores the (single) chunk's state in that slot for a later merge instead of
// writing the output.
struct AttentionItem {
  int job = 0, h0 = 0, h1 = 0;
  int64_t t0 = 0, t1 = 0, c0 = 0, c1 = 0, partial = -1;
};

struct AttentionScratch {              // grow-only buffers reused across calls
  std::vector<float> buf;              // per thread: query rows, K/V tile, scores, softmax states
  std::vector<int32_t> ints;           // per thread: quantized query rows (INT8 caches)
  std::vector<const uint8_t*> groups;  // per thread: the tile's K and V cache groups
  std::vector<float> partials;         // split chunks' states
  std::vector<AttentionItem> items, merges;
};

// One query chunk of one sequence: query t (row t of q, stride ldq) is at position pos0 + t and
// sees cached positions [lo, pos0 + t] (bidirectional: [0, pos0 + n_tok)); results go to row t
// of out (stride ldo).
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
