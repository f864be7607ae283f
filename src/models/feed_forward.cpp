#include "models/feed_forward.h"

#include <fmt/format.h>

#include "core/fail.h"
#include "core/profile.h"
#include "kernels/cpu/elementwise.h"
#include "models/moe.h"

namespace ferrum {

void GatedActivation::operator()(const float* gate, const float* up, float* out, int64_t n) const {
  switch (act_) {
    case ModelConfig::Activation::SiLU:
      return kernels::swiglu(gate, up, out, n);
    case ModelConfig::Activation::GeluTanh:
      return kernels::geglu_tanh(gate, up, out, n);
    case ModelConfig::Activation::SiLUClamped:
      return kernels::swiglu_clamped(gate, up, out, n, limit_, alpha_);
  }
}

DenseFeedForward::DenseFeedForward(const ModelConfig& cfg, WeightSet& w, int l, kernels::Precision prec,
                                   kernels::WeightRounding rounding, ThreadPool& pool)
    : n_embd_(cfg.n_embd), n_ff_(cfg.n_ff), act_(cfg) {
  const int64_t d = n_embd_, ff = n_ff_;
  auto name = [&](const char* n) { return fmt::format("blk.{}.{}", l, n); };
  const TensorView* up = w.find(name("ffn_up.weight"));
  if (w.find(name("ffn_gate_up.weight")))
    gate_up_ = kernels::Linear({w.get(name("ffn_gate_up.weight"), {d, 2 * ff})}, prec, pool, rounding);
  else if (!w.find(name("ffn_gate.weight")) && up && up->rows() == 2 * ff)  // gate|up in one (GGUF phi3)
    gate_up_ = kernels::Linear({w.get(name("ffn_up.weight"), {d, 2 * ff})}, prec, pool, rounding);
  else
    gate_up_ = kernels::Linear(
        {w.get(name("ffn_gate.weight"), {d, ff}), w.get(name("ffn_up.weight"), {d, ff})}, prec, pool,
        rounding);
  down_ = kernels::Linear({w.get(name("ffn_down.weight"), {ff, d})}, prec, pool, rounding);
  w.release_packed(gate_up_);  // the packed copies replace the file pages (see WeightSet)
  w.release_packed(down_);
}

void DenseFeedForward::forward(const float* x, int64_t n, float* out, FfnContext& ctx) {
  const int64_t ff = n_ff_;
  if (static_cast<int64_t>(gu_.size()) < n * 2 * ff) {
    gu_.resize(n * 2 * ff);
    act_out_.resize(n * ff);
  }
  gate_up_.forward(x, n_embd_, n, gu_.data(), 2 * ff, ctx.pool, ctx.precision, ctx.scratch);
  if (ctx.lora)
    ctx.lora->apply(ctx.layer, LoraSite::GateUp, x, n_embd_, gu_.data(), 2 * ff, ctx.pool, ctx.precision,
                    ctx.scratch);
  {
    const profile::Scope scope(profile::Op::Elementwise);
    for (int64_t t = 0; t < n; ++t) {
      const float* gate = &gu_[t * 2 * ff];
      act_(gate, gate + ff, &act_out_[t * ff], ff);
    }
  }
  down_.forward(act_out_.data(), ff, n, out, n_embd_, ctx.pool, ctx.precision, ctx.scratch);
  if (ctx.lora)
    ctx.lora->apply(ctx.layer, LoraSite::Down, act_out_.data(), ff, out, n_embd_, ctx.pool, ctx.precision,
                    ctx.scratch);
}

std::unique_ptr<FeedForward> make_feed_forward(const ModelConfig& cfg, WeightSet& w, int layer,
                                               kernels::Precision prec, kernels::WeightRounding rounding,
                                               ThreadPool& pool) {
  if (cfg.n_expert > 0) return std::make_unique<MoeFeedForward>(cfg, w, layer, prec, rounding, pool);
  return std::make_unique<DenseFeedForward>(cfg, w, layer, prec, rounding, pool);
}

}  // namespace ferrum
