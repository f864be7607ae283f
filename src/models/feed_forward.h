// The per-layer feed-forward block of a decoder, behind one interface so dense SwiGLU and
// mixture-of-experts layers plug into the same forward pass.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "ferrum/model_config.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "models/lora_apply.h"
#include "models/weights.h"

namespace ferrum {

// Shared state a block may use during a forward pass (the model owns it; no allocation per token).
struct FfnContext {
  ThreadPool& pool;
  kernels::Precision precision;
  kernels::MatmulScratch& scratch;
  LoraBatch* lora = nullptr;  // the step's adapters (null: none in this batch)
  int layer = 0;              // the model's layer number (for the adapters' matrices)
};

class FeedForward {
 public:
  virtual ~FeedForward() = default;
  // x: n rows of n_embd (already normalized); out: n rows of n_embd (overwritten).
  virtual void forward(const float* x, int64_t n, float* out, FfnContext& ctx) = 0;
};

// out = act(gate) * up for n values, by the model's activation (ModelConfig::Activation).
class GatedActivation {
 public:
  explicit GatedActivation(const ModelConfig& cfg)
      : act_(cfg.ffn_act), limit_(cfg.glu_limit), alpha_(cfg.glu_alpha) {}
  void operator()(const float* gate, const float* up, float* out, int64_t n) const;

 private:
  ModelConfig::Activation act_;
  float limit_, alpha_;
};

// SwiGLU: down(silu(gate(x)) * up(x)); gate/up fused (ffn_gate_up) or separate (ffn_gate, ffn_up).
class DenseFeedForward : public FeedForward {
 public:
  DenseFeedForward(const ModelConfig& cfg, WeightSet& w, int layer, kernels::Precision prec,
                   kernels::WeightRounding rounding, ThreadPool& pool);
  void forward(const float* x, int64_t n, float* out, FfnContext& ctx) override;

 private:
  int64_t n_embd_, n_ff_;
  GatedActivation act_;
  kernels::Linear gate_up_;  // gate rows, then up rows (one fused tensor, or gate and up stacked)
  kernels::Linear down_;
  std::vector<float> gu_, act_out_;  // grow-only workspace
};

// Builds the layer's block: mixture of experts when cfg.n_expert > 0, else dense.
// prec, rounding and pool: how the weights are prepared (packed for the Fast kernels, F16/F32 rounded
// to BF16 under WeightRounding::Bf16).
std::unique_ptr<FeedForward> make_feed_forward(const ModelConfig& cfg, WeightSet& w, int layer,
                                               kernels::Precision prec, kernels::WeightRounding rounding,
                                               ThreadPool& pool);

}  // namespace ferrum
