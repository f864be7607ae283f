#include "models/moe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/fail.h"
#include "kernels/cpu/elementwise.h"
#include "models/precision.h"

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

namespace {
// The k largest of v[0..n) in descending order into ids, their values into top. Strictly greater
// while scanning upwards: a tie keeps the smaller index.
void top_k(const float* v, int n, int k, int32_t* ids, float* top) {
  for (int s = 0; s < k; ++s) {
    int best = -1;
    for (int e = 0; e < n; ++e) {
      bool taken = false;
      for (int j = 0; j < s; ++j) taken |= ids[j] == e;
      if (!taken && (best < 0 || v[e] > v[best])) best = e;
    }
    ids[s] = best;
    top[s] = v[best];
  }
}
}  // namespace

void moe_select(const float* logits, int n, int k, bool renormalize, int32_t* ids, float* weights,
                float* probs) {
  std::memcpy(probs, logits, n * sizeof(float));
  kernels::softmax(probs, n);
  top_k(probs, n, k, ids, weights);
  if (renormalize) {
    float sum = 0;
    for (int s = 0; s < k; ++s) sum += weights[s];
    for (int s = 0; s < k; ++s) weights[s] /= sum;
  }
}

void moe_select_topk_softmax(const float* logits, int n, int k, int32_t* ids, float* weights) {
  top_k(logits, n, k, ids, weights);
  kernels::softmax(weights, k);
}

namespace {
// An optional F32 bias of n_expert rows of `per_expert` values; null when the file has none.
const float* expert_bias(const WeightSet& w, const std::string& name, int64_t per_expert, int64_t n_expert) {
  const TensorView* t = w.find(name);
  if (!t) return nullptr;
  if (t->type != DType::F32 || t->n_elements() != per_expert * n_expert || t->ne[0] != per_expert)
    fail("{}: tensor '{}' is {} {}, expected F32 [{}, {}]", w.source(), name, dtype_name(t->type),
         t->shape_string(), per_expert, n_expert);
  return reinterpret_cast<const float*>(t->data);
}
}  // namespace

MoeFeedForward::MoeFeedForward(const ModelConfig& cfg, WeightSet& w, int l, kernels::Precision prec,
                               kernels::WeightRounding rounding, ThreadPool& pool)
    : layer_(l),
      n_embd_(cfg.n_embd),
      n_ff_(cfg.n_ff_expert),
      n_expert_(cfg.n_expert),
      k_(cfg.n_expert_used),
      renorm_(cfg.norm_topk_prob),
      gating_(cfg.moe_gating),
      act_(cfg) {
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
  router_b_ = expert_bias(w, name("ffn_gate_inp.bias"), E, 1);
  gate_b_ = expert_bias(w, name("ffn_gate_exps.bias"), ff, E);
  up_b_ = expert_bias(w, name("ffn_up_exps.bias"), ff, E);
  down_b_ = expert_bias(w, name("ffn_down_exps.bias"), d, E);
  // Fast precision: each stack packed (rounded to BF16 while it is packed under WeightRounding::Bf16),
  // the packed copy replacing the file pages (as for dense matrices; see WeightSet); a stack that is
  // not packed is rounded as a copy of its own.
  const bool pack =
      prec == kernels::Precision::Fast && kernels::packed_kernels_active() && kernels::packing_enabled();
  for (auto [t, p] : {std::pair{&gate_, &pgate_}, {&up_, &pup_}, {&down_, &pdown_}}) {
    const DType type = kernels::rounded_type(rounding, t->type);
    if (pack && kernels::packed_kernel_for(type) && kernels::packable(type, t->rows(), t->cols()) &&
        kernels::packable_values(*t)) {
      *p = kernels::pack_matrix(std::span<const TensorView>(t, 1), pool, rounding);
      w.release_pages(*t);
      if (w.release_owned(t->name) > 0) t->data = nullptr;  // HF gpt-oss: the rewritten stack
    } else {
      round_matrix(*t, rounding, w, pool, copies_);
    }
  }
}

void MoeFeedForward::product(const TensorView& w, const kernels::PackedMatrix* p, int64_t r0, int64_t r1,
                             const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy, ThreadPool& pool,
                             kernels::Precision prec, kernels::MatmulScratch& scratch) const {
  if (p && prec == kernels::Precision::Fast && kernels::packed_kernel_for(p->type))
    kernels::matmul_packed_rows(*p, r0, r1, x, ldx, n, y, ldy, pool, scratch);
  else if (!w.data)
    fail(
        "{}: the expert stack was packed at load and its rows freed; the kernel tier changed since "
        "(load the model again)",
        w.name);
  else
    kernels::matmul_rows(w, r0, r1, x, ldx, n, y, ldy, pool, prec, scratch);
}

void MoeFeedForward::run_expert_rows(int64_t e, int64_t f0, int64_t f1, ThreadPool& pool,
                                     kernels::Precision prec, kernels::MatmulScratch& scratch) {
  const int64_t d = n_embd_, ff = n_ff_, b = offset_[e], m = offset_[e + 1] - b;
  const float* x = &xg_[b * d];
  float* gu = &gu_[b * 2 * ff];
  product(gate_, pgate_.get(), e * ff + f0, e * ff + f1, x, d, m, gu + f0, 2 * ff, pool, prec, scratch);
  product(up_, pup_.get(), e * ff + f0, e * ff + f1, x, d, m, gu + ff + f0, 2 * ff, pool, prec, scratch);
  for (int64_t i = 0; i < m; ++i) {
    float *g = &gu[i * 2 * ff + f0], *u = g + ff;
    if (gate_b_) kernels::add_inplace(g, gate_b_ + e * ff + f0, f1 - f0);
    if (up_b_) kernels::add_inplace(u, up_b_ + e * ff + f0, f1 - f0);
    act_(g, u, &act_out_[(b + i) * ff + f0], f1 - f0);
  }
}

void MoeFeedForward::run_expert_down(int64_t e, int64_t r0, int64_t r1, ThreadPool& pool,
                                     kernels::Precision prec, kernels::MatmulScratch& scratch) {
  const int64_t d = n_embd_, ff = n_ff_, b = offset_[e], m = offset_[e + 1] - b;
  product(down_, pdown_.get(), e * d + r0, e * d + r1, &act_out_[b * ff], ff, m, &yg_[b * d + r0], d, pool,
          prec, scratch);
  if (down_b_)
    for (int64_t i = 0; i < m; ++i)
      kernels::add_inplace(&yg_[(b + i) * d + r0], down_b_ + e * d + r0, r1 - r0);
}

void MoeFeedForward::forward(const float* x, int64_t n, float* out, FfnContext& ctx) {
  const int64_t d = n_embd_, ff = n_ff_, E = n_expert_, k = k_, P = n * k_;
  if (static_cast<int64_t>(logits_.size()) < n * E) {
    logits_.resize(n * E);
    ids_.resize(P);
    weights_.resize(P);
    order_.resize(P);
    row_of_pair_.resize(P);
    xg_.resize(P * d);
    gu_.resize(P * 2 * ff);
    act_out_.resize(P * ff);
    yg_.resize(P * d);
  }
  probs_.resize(E);
  count_.assign(E, 0);
  offset_.resize(E + 1);

  // Router in F32 activations whatever the precision (llama.cpp keeps it F32 too).
  kernels::matmul(router_, x, d, n, logits_.data(), E, ctx.pool, kernels::Precision::Exact, ctx.scratch);
  for (int64_t t = 0; t < n; ++t) {
    float* lg = &logits_[t * E];
    if (router_b_) kernels::add_inplace(lg, router_b_, E);
    if (gating_ == ModelConfig::MoeGating::SoftmaxTopK)
      moe_select_topk_softmax(lg, static_cast<int>(E), k_, &ids_[t * k], &weights_[t * k]);
    else
      moe_select(lg, static_cast<int>(E), k_, renorm_, &ids_[t * k], &weights_[t * k], probs_.data());
    for (int64_t s = 0; s < k; ++s) ++count_[ids_[t * k + s]];
  }
  if (const MoeTraceFn& fn = trace_fn()) {
    MoeRouting r{layer_, n, k_, ids_.data(), weights_.data(), logits_.data(), static_cast<int>(E)};
    fn(r);
  }

  // Group the (token, slot) pairs by expert, gathering each pair's input row: every active
  // expert then reads its weights once for all of its tokens.
  offset_[0] = 0;
  for (int64_t e = 0; e < E; ++e) offset_[e + 1] = offset_[e] + count_[e];
  std::vector<int32_t>& cursor = count_;  // reused as the per-expert write cursor
  for (int64_t e = 0; e < E; ++e) cursor[e] = offset_[e];
  for (int64_t p = 0; p < P; ++p) {
    const int32_t row = cursor[ids_[p]]++;
    order_[row] = static_cast<int32_t>(p);
    row_of_pair_[p] = row;
    std::memcpy(&xg_[row * d], x + (p / k) * d, d * sizeof(float));
  }

  const int nth = ctx.pool.size();
  if (n <= 16 && nth > 1) {
    // Few tokens: the per-expert matrices are small, so split the work over (expert, row range)
    // items and run each item on one thread instead of paying a pool dispatch per expert matmul.
    if (static_cast<int>(solo_.size()) < nth) {
      solo_.clear();
      for (int i = 0; i < nth; ++i) solo_.push_back(std::make_unique<ThreadPool>(1));
      solo_scratch_.resize(nth);
    }
    int64_t active = 0;
    for (int64_t e = 0; e < E; ++e) active += offset_[e + 1] > offset_[e];
    const int64_t split = std::max<int64_t>(1, (2 * nth + active - 1) / active);
    auto stage = [&](int64_t rows, bool down) {
      const int64_t chunk = ((rows + split - 1) / split + 15) / 16 * 16;  // multiple of 16 rows
      const int64_t per_expert = (rows + chunk - 1) / chunk;
      ctx.pool.run([&](int ith, int nth_) {
        int64_t item = 0;
        for (int64_t e = 0; e < E; ++e) {
          if (offset_[e + 1] == offset_[e]) continue;
          for (int64_t c = 0; c < per_expert; ++c, ++item) {
            if (item % nth_ != ith) continue;
            const int64_t r0 = c * chunk, r1 = std::min(rows, r0 + chunk);
            if (down)
              run_expert_down(e, r0, r1, *solo_[ith], ctx.precision, solo_scratch_[ith]);
            else
              run_expert_rows(e, r0, r1, *solo_[ith], ctx.precision, solo_scratch_[ith]);
          }
        }
      });
    };
    stage(ff, false);
    stage(d, true);
  } else {
    for (int64_t e = 0; e < E; ++e) {
      if (offset_[e + 1] == offset_[e]) continue;
      run_expert_rows(e, 0, ff, ctx.pool, ctx.precision, ctx.scratch);
      run_expert_down(e, 0, d, ctx.pool, ctx.precision, ctx.scratch);
    }
  }

  // Weighted sum in slot order, so a token's result does not depend on the rest of the batch.
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * d;
    for (int64_t s = 0; s < k; ++s) {
      const float wgt = weights_[t * k + s];
      const float* y = &yg_[static_cast<int64_t>(row_of_pair_[t * k + s]) * d];
      if (s == 0) {
        for (int64_t i = 0; i < d; ++i) o[i] = wgt * y[i];
      } else {
        for (int64_t i = 0; i < d; ++i) o[i] += wgt * y[i];
      }
    }
  }
}

}  // namespace ferrum
