// Mixture-of-experts feed-forward block (Qwen3-MoE, gpt-oss): a linear router (with a bias in
// gpt-oss) picks the top-k of n_expert gated experts per token, whose outputs are summed with the
// router's weights (ModelConfig::MoeGating). gpt-oss's experts have biases on their three products. Expert
// weights stay in their file type, stacked as in GGUF (ffn_{gate,up}_exps ne = [n_embd, n_ff_exp, n_expert],
// ffn_down_exps ne = [n_ff_exp, n_embd, n_expert]); expert e is the row range [e*rows, (e+1)*rows) of the
// stacked matrix.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/feed_forward.h"

namespace ferrum {

// Routing of one forward call of one layer: for token t < n_tokens, slot s < k:
// experts[t*k + s] and weights[t*k + s] (slots in descending router probability).
struct MoeRouting {
  int layer = 0;
  int64_t n_tokens = 0;
  int k = 0;
  const int32_t* experts = nullptr;
  const float* weights = nullptr;
  const float* router_logits = nullptr;  // n_tokens x n_expert
  int n_expert = 0;
};
// Process-wide observer of every MoE routing decision (tests, debugging); empty = none. Not
// thread-safe to change while a model runs.
using MoeTraceFn = std::function<void(const MoeRouting&)>;
void set_moe_trace(MoeTraceFn fn);

// Top-k selection over one token's router logits: softmax over all n experts, the k largest
// probabilities (ties go to the smaller index), renormalized to sum 1 when `renormalize`.
void moe_select(const float* logits, int n, int k, bool renormalize, int32_t* ids, float* weights,
                float* probs_tmp);
// gpt-oss's selection: the k largest logits (ties go to the smaller index), weights the softmax of
// those k logits.
void moe_select_topk_softmax(const float* logits, int n, int k, int32_t* ids, float* weights);

class MoeFeedForward : public FeedForward {
 public:
  // rounding Bf16: F16/F32 expert matrices are multiplied as BF16 copies made here (the router stays
  // as in the file, multiplied in F32). Fast precision: each stack of experts is repacked for the
  // packed kernels when its type has a packed layout (an expert's rows are then a row range of it),
  // and the stack's own copy in `w` is released (file pages dropped, a rewritten buffer freed).
  MoeFeedForward(const ModelConfig& cfg, WeightSet& w, int layer, kernels::Precision prec,
                 kernels::WeightRounding rounding, ThreadPool& pool);
  void forward(const float* x, int64_t n, float* out, FfnContext& ctx) override;

 private:
  int layer_;
  int64_t n_embd_, n_ff_, n_expert_;
  int k_;
  bool renorm_;
  ModelConfig::MoeGating gating_;
  GatedActivation act_;
  TensorView router_, gate_, up_, down_;
  std::shared_ptr<const kernels::PackedMatrix> pgate_, pup_, pdown_;  // packed stacks (or null)
  // Biases (gpt-oss; null when absent): router [n_expert], gate/up [n_ff x n_expert], down [n_embd x
  // n_expert].
  const float *router_b_ = nullptr, *gate_b_ = nullptr, *up_b_ = nullptr, *down_b_ = nullptr;
  std::vector<std::shared_ptr<const uint8_t>> copies_;  // BF16 copies of the experts (rounding Bf16)

  // Expert e's (token, slot) pairs are rows [offset_[e], offset_[e+1]) of the pair-ordered
  // buffers below; each expert runs once over all its rows.
  void run_expert_rows(int64_t e, int64_t ff_begin, int64_t ff_end, ThreadPool& pool, kernels::Precision prec,
                       kernels::MatmulScratch& scratch);
  void run_expert_down(int64_t e, int64_t row_begin, int64_t row_end, ThreadPool& pool,
                       kernels::Precision prec, kernels::MatmulScratch& scratch);
  // Rows [r0, r1) of a stack: packed when it is and the precision is Fast, else from the file.
  void product(const TensorView& w, const kernels::PackedMatrix* p, int64_t r0, int64_t r1, const float* x,
               int64_t ldx, int64_t n, float* y, int64_t ldy, ThreadPool& pool, kernels::Precision prec,
               kernels::MatmulScratch& scratch) const;

  // Grow-only workspace (no allocation once the largest batch has been seen).
  std::vector<float> logits_, probs_, weights_;
  std::vector<int32_t> ids_;
  std::vector<int32_t> count_, offset_, order_, row_of_pair_;
  std::vector<float> xg_, gu_, act_out_, yg_;
  // Few tokens: experts run side by side, one thread each (single-thread pools, own scratch).
  std::vector<std::unique_ptr<ThreadPool>> solo_;
  std::vector<kernels::MatmulScratch> solo_scratch_;
};

}  // namespace ferrum
