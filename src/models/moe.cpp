#include "models/moe.h"

#include <fmt/format.h>

#include <cstring>

#include "ferrum/error.h"
#include "kernels/cpu/elementwise.h"

namespace ferrum {

namespace {
MoeTraceFn& trace_fn() {
  static MoeTraceFn fn;
  return fn;
}
}  // namespace

void set_moe_trace(MoeTraceFn fn) {
  trace_fn() = std::move(fn);
}

void moe_select(const float* logits, int n, int k, bool renormalize, int32_t* ids, float* weights,
                float* probs) {
  std::memcpy(probs, logits, n * sizeof(float));
  kernels::softmax(probs, n);
  for (int s = 0; s < k; ++s) {
    int best = -1;
    for (int e = 0; e < n; ++e) {
      bool taken = false;
      for (int j = 0; j < s; ++j) taken |= ids[j] == e;
      // Strictly greater while scanning upwards: a tie keeps the smaller index.
      if (!taken && (best < 0 || probs[e] > probs[best])) best = e;
    }
    ids[s] = best;
    weights[s] = probs[best];
  }
  if (renormalize) {
    float sum = 0;
    for (int s = 0; s < k; ++s) sum += weights[s];
    for (int s = 0; s < k; ++s) weights[s] /= sum;
  }
}

MoeFeedForward::MoeFeedForward(const ModelConfig& cfg, const WeightSet& w, int l)
    : layer_(l),
      n_embd_(cfg.n_embd),
      n_ff_(cfg.n_ff_expert),
      n_expert_(cfg.n_expert),
      k_(cfg.n_expert_used),
      renorm_(cfg.norm_topk_prob) {
  const std::string src = w.source();
  if (n_expert_ <= 0) fail("{}: expert count must be positive, got {}", src, n_expert_);
  if (k_ <= 0 || k_ > n_expert_)
    fail("{}: experts used per token ({}) must be between 1 and the expert count ({})", src, k_, n_expert_);
  if (n_ff_ <= 0) fail("{}: expert feed-forward length must be positive, got {}", src, n_ff_);
  auto name = [&](const char* n) { return fmt::format("blk.{}.{}", l, n); };
  const int64_t d = n_embd_, ff = n_ff_, E = n_expert_;
  const TensorView& r = w.get(name("ffn_gate_inp.weight"));
  if (r.ne[0] != d || r.ne[2] != 1 || r.ne[3] != 1)
    fail("{}: router '{}' has shape {}, expected [{}, {}] (n_embd, expert count)", src, r.name,
         r.shape_string(), d, E);
  if (r.ne[1] != E)
    fail("{}: router '{}' has {} outputs (shape {}) but the model has {} experts", src, r.name, r.ne[1],
         r.shape_string(), E);
  router_ = r;
  gate_ = w.get(name("ffn_gate_exps.weight"), {d, ff, E});
  up_ = w.get(name("ffn_up_exps.weight"), {d, ff, E});
  down_ = w.get(name("ffn_down_exps.weight"), {ff, d, E});
}

void MoeFeedForward::forward(const float* x, int64_t n, float* out, FfnContext& ctx) {
  const int64_t d = n_embd_, ff = n_ff_, E = n_expert_, k = k_;
  if (static_cast<int64_t>(logits_.size()) < n * E) {
    logits_.resize(n * E);
    ids_.resize(n * k);
    weights_.resize(n * k);
    order_.resize(n * k);
    xe_.resize(n * d);
    gu_.resize(n * 2 * ff);
    act_.resize(n * ff);
    ye_.resize(n * d);
    slot_out_.resize(n * k * d);
  }
  probs_.resize(E);
  count_.assign(E, 0);
  offset_.resize(E + 1);

  // Router in F32 activations whatever the precision (llama.cpp keeps it F32 too).
  kernels::matmul(router_, x, d, n, logits_.data(), E, ctx.pool, kernels::Precision::Exact, ctx.scratch);
  for (int64_t t = 0; t < n; ++t) {
    moe_select(&logits_[t * E], static_cast<int>(E), k_, renorm_, &ids_[t * k], &weights_[t * k],
               probs_.data());
    for (int64_t s = 0; s < k; ++s) ++count_[ids_[t * k + s]];
  }
  if (const MoeTraceFn& fn = trace_fn()) {
    MoeRouting r{layer_, n, k_, ids_.data(), weights_.data(), logits_.data(), static_cast<int>(E)};
    fn(r);
  }

  // Group the (token, slot) pairs by expert: each active expert's weights are read once.
  offset_[0] = 0;
  for (int64_t e = 0; e < E; ++e) offset_[e + 1] = offset_[e] + count_[e];
  {
    std::vector<int32_t>& fill = count_;  // reused as the per-expert write cursor
    for (int64_t e = 0; e < E; ++e) fill[e] = offset_[e];
    for (int64_t p = 0; p < n * k; ++p) order_[fill[ids_[p]]++] = static_cast<int32_t>(p);
  }
  for (int64_t e = 0; e < E; ++e) {
    const int64_t b = offset_[e], m = offset_[e + 1] - b;
    if (m == 0) continue;
    for (int64_t i = 0; i < m; ++i) std::memcpy(&xe_[i * d], x + (order_[b + i] / k) * d, d * sizeof(float));
    kernels::matmul_rows(gate_, e * ff, (e + 1) * ff, xe_.data(), d, m, gu_.data(), 2 * ff, ctx.pool,
                         ctx.precision, ctx.scratch);
    kernels::matmul_rows(up_, e * ff, (e + 1) * ff, xe_.data(), d, m, gu_.data() + ff, 2 * ff, ctx.pool,
                         ctx.precision, ctx.scratch);
    for (int64_t i = 0; i < m; ++i)
      kernels::swiglu(&gu_[i * 2 * ff], &gu_[i * 2 * ff + ff], &act_[i * ff], ff);
    kernels::matmul_rows(down_, e * d, (e + 1) * d, act_.data(), ff, m, ye_.data(), d, ctx.pool,
                         ctx.precision, ctx.scratch);
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(&slot_out_[order_[b + i] * d], &ye_[i * d], d * sizeof(float));
  }
  // Weighted sum in slot order, so a token's result does not depend on the rest of the batch.
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * d;
    for (int64_t s = 0; s < k; ++s) {
      const float wgt = weights_[t * k + s];
      const float* y = &slot_out_[(t * k + s) * d];
      if (s == 0) {
        for (int64_t i = 0; i < d; ++i) o[i] = wgt * y[i];
      } else {
        for (int64_t i = 0; i < d; ++i) o[i] += wgt * y[i];
      }
    }
  }
}

}  // namespace ferrum
