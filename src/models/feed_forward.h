// The per-layer feed-forward block of a decoder, behind one interface so dense SwiGLU and
// mixture-of-experts layers plug into the same forward pass.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "ferrum/model_config.h"
#include "kernels/cpu/matmul.h"
#include "models/weights.h"

namespace ferrum {

// Shared state a block may use during a forward pass (the model owns it; no allocation per token).
struct FfnContext {
  ThreadPool& pool;
  kernels::Precision precision;
  kernels::MatmulScratch& scratch;
};

class FeedForward {
 public:
  virtual ~FeedForward() = default;
  // x: n rows of n_embd (already normalized); out: n rows of n_embd (overwritten).
  virtual void forward(const float* x, int64_t n, float* out, FfnContext& ctx) = 0;
};

// SwiGLU: down(silu(gate(x)) * up(x)); gate/up fused (ffn_gate_up) or separate (ffn_gate, ffn_up).
class DenseFeedForward : public FeedForward {
 public:
  DenseFeedForward(const ModelConfig& cfg, const WeightSet& w, int layer);
  void forward(const float* x, int64_t n, float* out, FfnContext& ctx) override;

 private:
  struct Part {
    TensorView w;
    int64_t col = 0;
  };
  int64_t n_embd_, n_ff_;
  std::vector<Part> gate_up_;  // gate at col 0, up at col n_ff
  TensorView down_;
  std::vector<float> gu_, act_;  // grow-only workspace
};

// Builds the layer's block: mixture of experts when cfg.n_expert > 0, else dense.
std::unique_ptr<FeedForward> make_feed_forward(const ModelConfig& cfg, const WeightSet& w, int layer);

}  // namespace ferrum
