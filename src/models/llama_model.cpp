#include "models/llama_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fail.h"
#include "core/profile.h"
#include "core/quant.h"
#include "formats/family.h"
#include "kernels/cpu/elementwise.h"
#include "models/precision.h"
#include "models/yarn.h"

namespace ferrum {

namespace {
std::string blk(int l, const char* name) {
  return fmt::format("blk.{}.{}", l, name);
}
}  // namespace

LlamaModel::LlamaModel(ModelConfig cfg, WeightSet weights, ModelOptions opts)
    : cfg_(std::move(cfg)),
      weights_(std::move(weights)),
      opts_(opts),
      pool_(opts.n_threads),
      kprec_(kernel_precision(opts.precision)),
      rounding_(weight_rounding(opts.precision)),
      tp_(opts_.tensor_parallel.get()) {
  check_options();
  bind_weights();
}

void LlamaModel::check_options() {
  if (opts_.max_batch <= 0) opts_.max_batch = 256;
  if (opts_.layer_end < 0) opts_.layer_end = cfg_.n_layer;
  if (opts_.layer_begin < 0 || opts_.layer_begin >= opts_.layer_end || opts_.layer_end > cfg_.n_layer)
    fail("{}: layer range [{}, {}) is not a non-empty range of the model's {} layers", weights_.source(),
         opts_.layer_begin, opts_.layer_end, cfg_.n_layer);
}

const float* LlamaModel::f32_tensor(const std::string& name, int64_t n, bool required) {
  const TensorView* t = weights_.find(name);
  if (!t) {
    if (required) weights_.get(name);  // throws the standard "missing" error
    return nullptr;
  }
  if (t->type != DType::F32)
    fail("{}: tensor '{}' has type {}, expected F32", weights_.source(), name, dtype_name(t->type));
  if (t->n_elements() != n)
    fail("{}: tensor '{}' has {} elements (shape {}), expected {}", weights_.source(), name, t->n_elements(),
         t->shape_string(), n);
  return reinterpret_cast<const float*>(t->data);
}

void LlamaModel::bind_weights() {
  const int64_t d = cfg_.n_embd;
  const bool first = opts_.layer_begin == 0, last = opts_.layer_end == cfg_.n_layer;
  const bool head = last && opts_.lm_head;
  const bool tied = !weights_.find("output.weight");
  if (first || (head && tied)) tok_embd_ = weights_.get("token_embd.weight", {d, cfg_.n_vocab});
  if (last) output_norm_ = f32_tensor("output_norm.weight", d);
  head_rows_ = cfg_.n_vocab;
  if (tp_) {
    for (int r = 0; r < tp_->size(); ++r) head_shares_.push_back(vocab_share(cfg_, r, tp_->size()).size());
    head_rows_ = head_shares_[tp_->rank()];
  }
  // Tied embeddings: the output matrix is token_embd (the lookup keeps reading the file's rows).
  if (head)
    output_ = kernels::Linear({tied ? tok_embd_ : weights_.get("output.weight", {d, head_rows_})}, kprec_,
                              pool_, rounding_);
  // RoPE frequency divisors that GGUF files hold as tensors (Llama-3 scaling; Phi-3 LongRoPE).
  auto factors = [&](const char* name, std::vector<float>& to) {
    if (!to.empty()) return;
    if (const float* t = f32_tensor(name, cfg_.n_rot / 2, false)) {
      to.assign(t, t + cfg_.n_rot / 2);
      for (float v : to)  // angles are divided by them
        if (!std::isfinite(v) || v <= 0)
          fail("{}: tensor '{}' holds {}, expected positive RoPE frequency factors", weights_.source(), name,
               v);
    }
  };
  factors("rope_freqs.weight", cfg_.rope_freq_factors);
  factors("rope_factors_long.weight", cfg_.longrope.long_factors);
  factors("rope_factors_short.weight", cfg_.longrope.short_factors);
  if (cfg_.longrope.long_factors.empty() != cfg_.longrope.short_factors.empty())
    fail("{}: LongRoPE needs both rope_factors_long.weight and rope_factors_short.weight", weights_.source());
  if (cfg_.yarn.factor > 0) {  // YaRN: divisors and scale from the config (as llama.cpp computes them)
    if (!cfg_.rope_freq_factors.empty() || !cfg_.longrope.long_factors.empty())
      fail("{}: YaRN RoPE scaling together with RoPE frequency factor tensors", weights_.source());
    cfg_.rope_freq_factors = yarn_freq_factors(cfg_);
    rope_mscale_ = yarn_attn_factor(cfg_);
  }
  layers_.resize(opts_.layer_end - opts_.layer_begin);
  std::vector<uint64_t> layer_bytes;
  uint64_t total = 0, done = 0;
  for (int l = opts_.layer_begin; l < opts_.layer_end; ++l)
    total += layer_bytes.emplace_back(weights_.bytes_with_prefix(fmt::format("blk.{}.", l)));
  for (int l = opts_.layer_begin; l < opts_.layer_end; ++l) {
    bind_layer(l);
    done += layer_bytes[l - opts_.layer_begin];
    if (opts_.load_progress)
      opts_.load_progress(l - opts_.layer_begin + 1, opts_.layer_end - opts_.layer_begin, done, total);
  }
  // The packed copies are what the products read; the file pages of those tensors would only
  // double the resident memory (the embedding lookup re-reads the few rows it needs).
  if (head) weights_.release_packed(output_);
}

void LlamaModel::bind_layer(int l) {
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim();
  Layer& L = layers_[l - opts_.layer_begin];
  L.attn_norm = f32_tensor(blk(l, "attn_norm.weight"), d);
  L.rope = cfg_.layer_uses_rope(l);
  L.rope_swa = cfg_.rope_theta_swa > 0 && cfg_.layer_uses_window(l);
  if (weights_.find(blk(l, "attn_qkv.weight")))
    L.qkv = kernels::Linear({weights_.get(blk(l, "attn_qkv.weight"), {d, qd + 2 * kvd})}, kprec_, pool_,
                            rounding_);
  else
    L.qkv = kernels::Linear(
        {weights_.get(blk(l, "attn_q.weight"), {d, qd}), weights_.get(blk(l, "attn_k.weight"), {d, kvd}),
         weights_.get(blk(l, "attn_v.weight"), {d, kvd})},
        kprec_, pool_, rounding_);
  if (cfg_.qkv_bias) {
    if (const float* b = f32_tensor(blk(l, "attn_qkv.bias"), qd + 2 * kvd, false)) {
      L.bias_qkv = b;
    } else {
      const float* bq = f32_tensor(blk(l, "attn_q.bias"), qd);
      const float* bk = f32_tensor(blk(l, "attn_k.bias"), kvd);
      const float* bv = f32_tensor(blk(l, "attn_v.bias"), kvd);
      float* b3 = reinterpret_cast<float*>(weights_.allocate((qd + 2 * kvd) * sizeof(float)));
      std::memcpy(b3, bq, qd * sizeof(float));
      std::memcpy(b3 + qd, bk, kvd * sizeof(float));
      std::memcpy(b3 + qd + kvd, bv, kvd * sizeof(float));
      L.bias_qkv = b3;
    }
  }
  if (cfg_.qk_norm) {
    L.q_norm = f32_tensor(blk(l, "attn_q_norm.weight"), cfg_.head_dim);
    L.k_norm = f32_tensor(blk(l, "attn_k_norm.weight"), cfg_.head_dim);
  }
  L.wo = kernels::Linear({weights_.get(blk(l, "attn_output.weight"), {qd, d})}, kprec_, pool_, rounding_);
  L.wo_bias = f32_tensor(blk(l, "attn_output.bias"), d, false);
  const Family& family = family_of(cfg_.arch);
  L.sinks = f32_tensor(blk(l, "attn_sinks.weight"), cfg_.n_head, family.attn_sinks);
  L.ffn_norm = f32_tensor(blk(l, family.gguf_ffn_norm), d);
  if (cfg_.post_norms) {
    L.attn_post_norm = f32_tensor(blk(l, "post_attention_norm.weight"), d);
    L.ffn_post_norm = f32_tensor(blk(l, "post_ffw_norm.weight"), d);
  }
  L.ffn = make_feed_forward(cfg_, weights_, l, kprec_, rounding_, pool_);
  weights_.release_packed(L.qkv);
  weights_.release_packed(L.wo);
}

void LlamaModel::embed_tokens(std::span<const int32_t> ids, float* rows) const {
  if (!tok_embd_.data || opts_.layer_begin != 0)
    fail("embed_tokens: this stage starts at layer {}; only the input stage has the token embedding",
         opts_.layer_begin);
  const int64_t d = cfg_.n_embd;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= cfg_.n_vocab)
      fail("token id {} is out of range (vocabulary has {} tokens)", ids[i], cfg_.n_vocab);
    dequantize_row(tok_embd_.type, tok_embd_.row(ids[i]), rows + i * d, d);
  }
}

void LlamaModel::ensure_workspace(int64_t n) {
  if (n <= ws_tokens_) return;
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim();
  x_.resize(n * d);
  h_.resize(n * d);
  qkv_.resize(n * (qd + 2 * kvd));
  attn_.resize(n * qd);
  tmp_.resize(n * d);
  rope_.resize(n * cfg_.n_rot);
  if (cfg_.rope_theta_swa > 0) rope_swa_.resize(n * cfg_.n_rot);
  pos_.resize(n);
  ws_tokens_ = n;
}

void LlamaModel::matmul(const kernels::Linear& w, const float* x, int64_t ldx, int64_t n, float* y,
                        int64_t ldy) {
  w.forward(x, ldx, n, y, ldy, pool_, kprec_, mm_scratch_);
}

int64_t LlamaModel::plan(runtime::KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) {
  const int64_t d = cfg_.n_embd;
  if (kv.n_layer() != opts_.layer_end - opts_.layer_begin || kv.n_head_kv() != cfg_.n_head_kv ||
      kv.head_dim() != cfg_.head_dim)
    fail("forward: the KV cache has {} layers of {} x {} heads, this model needs {} layers of {} x {}",
         kv.n_layer(), kv.n_head_kv(), kv.head_dim(), opts_.layer_end - opts_.layer_begin, cfg_.n_head_kv,
         cfg_.head_dim);
  requests_.clear();
  int64_t n = 0;
  for (const SeqInput& it : batch) {
    if (it.tokens.empty() == it.embeds.empty())
      fail("forward: sequence {} needs either token ids or input rows (exactly one of them)", it.seq);
    if (!it.tokens.empty() && opts_.layer_begin != 0)
      fail("forward: this stage starts at layer {}; give sequence {} input rows, not token ids",
           opts_.layer_begin, it.seq);
    if (!it.embeds.empty() && it.embeds.size() % d != 0)
      fail("forward: sequence {} has {} input floats, not a whole number of rows of {}", it.seq,
           it.embeds.size(), d);
    if (!it.cache_ids.empty() && static_cast<int64_t>(it.cache_ids.size()) != it.size(d))
      fail("forward: sequence {} has {} cache ids for {} input rows", it.seq, it.cache_ids.size(), it.size(d));
    if (it.logits != Want::None && !has_logits())
      fail(
          "forward: logits asked for sequence {}, but this model has no LM head (a backbone or a stage "
          "ending at "
          "layer {}); ask for hidden states",
          it.seq, opts_.layer_end);
    const bool gathered_elsewhere = tp_ && tp_->rank() > 0;  // rank 0 receives the logits
    if ((it.logits != Want::None && !out.logits && !gathered_elsewhere) ||
        (it.hidden != Want::None && !out.hidden))
      fail("forward: sequence {} asks for an output with no buffer given", it.seq);
    for (const auto& r : requests_)
      if (r.first == it.seq) fail("forward: sequence {} appears twice in one batch", it.seq);
    for (int32_t t : it.tokens)
      if (t < 0 || t >= cfg_.n_vocab)
        fail("token id {} is out of range (vocabulary has {} tokens)", t, cfg_.n_vocab);
    const int64_t m = it.size(d);
    if (kv.len(it.seq) > 0 && kv.ns(it.seq) != (it.lora ? it.lora->id : 0))
      fail("forward: sequence {} was computed with another LoRA adapter (or none); release it first", it.seq);
    requests_.emplace_back(it.seq, kv.len(it.seq) + m);
    n += m;
  }
  lora_.plan(batch, d, LoraAdapter::shape_of(cfg_));
  kv.reserve(requests_);  // all or nothing
  ensure_workspace(n);
  return n;
}

void LlamaModel::load_inputs(const runtime::KvCache& kv, std::span<const SeqInput> batch) {
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), wqkv = qd + 2 * cfg_.kv_dim();
  const float* ffac = cfg_.rope_freq_factors.empty() ? nullptr : cfg_.rope_freq_factors.data();
  float mscale = rope_mscale_;
  if (const auto& lr = cfg_.longrope; !lr.long_factors.empty()) {  // by context size, as llama.cpp
    ffac = kv.options().seq_capacity > lr.orig_ctx ? lr.long_factors.data() : lr.short_factors.data();
    mscale = lr.attn_factor;
  }
  jobs_.resize(batch.size());
  for (size_t i = 0, off = 0; i < batch.size(); ++i) {
    const SeqInput& it = batch[i];
    const int64_t pos0 = kv.len(it.seq), m = it.size(d);
    if (!it.tokens.empty())
      for (int64_t t = 0; t < m; ++t)
        dequantize_row(tok_embd_.type, tok_embd_.row(it.tokens[t]), &x_[(off + t) * d], d);
    else
      std::memcpy(&x_[off * d], it.embeds.data(), m * d * sizeof(float));
    // Gemma: the input rows times sqrt(n_embd), token ids or embeddings alike (not a later stage's
    // input: the previous stage's hidden states).
    if (cfg_.embed_scale > 0 && opts_.layer_begin == 0)
      for (int64_t i = static_cast<int64_t>(off) * d; i < (static_cast<int64_t>(off) + m) * d; ++i)
        x_[i] *= cfg_.embed_scale;
    for (int64_t t = 0; t < m; ++t) {
      pos_[off + t] = pos0 + t;
      kernels::rope_cache(&rope_[(off + t) * cfg_.n_rot], pos0 + t, cfg_.n_rot, cfg_.rope_theta,
                          cfg_.rope_freq_scale, ffac, mscale);
      if (cfg_.rope_theta_swa > 0)
        kernels::rope_cache(&rope_swa_[(off + t) * cfg_.n_rot], pos0 + t, cfg_.n_rot, cfg_.rope_theta_swa,
                            1.0f, nullptr);
    }
    kernels::AttentionJob& j = jobs_[i];
    j.q = qkv_.data() + off * wqkv;
    j.ldq = wqkv;
    j.n_tok = m;
    j.pos0 = pos0;
    j.out = attn_.data() + off * qd;
    j.ldo = qd;
    off += m;
  }
}

// out[t] = rms_norm(x[t]) * w for the n rows of the residual stream.
void LlamaModel::norm_rows(const float* x, const float* w, float* out, int64_t n) {
  const profile::Scope scope(profile::Op::Norm);
  const int64_t d = cfg_.n_embd;
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(x + t * d, w, out + t * d, d, cfg_.norm_eps);
}

// Biases, per-head q/k norms and RoPE on the n rows of qkv_.
void LlamaModel::rope_qk(const Layer& L, int64_t n) {
  const profile::Scope scope(profile::Op::Rope);
  const int64_t qd = cfg_.q_dim(), hd = cfg_.head_dim, wqkv = qd + 2 * cfg_.kv_dim();
  const float eps = cfg_.norm_eps;
  for (int64_t t = 0; t < n; ++t) {
    float* row = &qkv_[t * wqkv];
    if (L.bias_qkv) kernels::add_inplace(row, L.bias_qkv, wqkv);
    const float* cs = &(L.rope_swa ? rope_swa_ : rope_)[t * cfg_.n_rot];
    for (int h = 0; h < cfg_.n_head; ++h) {
      float* qh = row + h * hd;
      if (L.q_norm) kernels::rms_norm(qh, L.q_norm, qh, hd, eps);
      if (L.rope) kernels::rope_apply(qh, cs, cfg_.n_rot, cfg_.rope_interleaved);
    }
    for (int h = 0; h < cfg_.n_head_kv; ++h) {
      float* kh = row + qd + h * hd;
      if (L.k_norm) kernels::rms_norm(kh, L.k_norm, kh, hd, eps);
      if (L.rope) kernels::rope_apply(kh, cs, cfg_.n_rot, cfg_.rope_interleaved);
    }
  }
}

// The batch's keys and values into layer kl of the cache; each job gets its view of the cache.
void LlamaModel::write_kv(int kl, runtime::KvCache& kv, std::span<const SeqInput> batch) {
  const profile::Scope scope(profile::Op::KvWrite);
  const int64_t qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), wqkv = qd + 2 * kvd;
  kv_rows_.clear();
  for (size_t i = 0, off = 0; i < batch.size(); off += jobs_[i].n_tok, ++i)
    kv_rows_.push_back({batch[i].seq, jobs_[i].n_tok, &pos_[off], &qkv_[off * wqkv + qd],
                        &qkv_[off * wqkv + qd + kvd], wqkv});
  kv.write_rows(kl, kv_rows_, pool_);
  for (size_t i = 0; i < batch.size(); ++i) jobs_[i].kv = kv.view(kl, batch[i].seq);
}

void LlamaModel::add_residual(const float* y, int64_t n) {
  const profile::Scope scope(profile::Op::Elementwise);
  kernels::add_inplace(x_.data(), y, n * cfg_.n_embd);
}

void LlamaModel::sum_over_ranks(float* y, int64_t n) {
  if (!tp_) return;
  const profile::Scope scope(profile::Op::Exchange);
  tp_->sum(y, n * cfg_.n_embd);
}

void LlamaModel::run_layer(int l, runtime::KvCache& kv, std::span<const SeqInput> batch, int64_t n) {
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), hd = cfg_.head_dim;
  const int64_t wqkv = qd + 2 * kvd;
  const int kl = l - opts_.layer_begin;  // the cache holds only this stage's layers
  Layer& L = layers_[kl];
  profile::set_layer(l);
  norm_rows(x_.data(), L.attn_norm, h_.data(), n);
  matmul(L.qkv, h_.data(), d, n, qkv_.data(), wqkv);
  LoraBatch* lora = lora_.active() ? &lora_ : nullptr;
  if (lora) lora->apply(l, LoraSite::Qkv, h_.data(), d, qkv_.data(), wqkv, pool_, kprec_, mm_scratch_);
  rope_qk(L, n);
  write_kv(kl, kv, batch);
  kernels::AttentionParams ap;
  ap.n_head = cfg_.n_head;
  ap.n_head_kv = cfg_.n_head_kv;
  ap.head_dim = cfg_.head_dim;
  ap.scale = cfg_.attn_scale > 0 ? cfg_.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  ap.sliding_window = cfg_.layer_uses_window(l) ? cfg_.sliding_window : 0;
  ap.softcap = cfg_.attn_softcap;
  ap.sinks = L.sinks;
  {
    const profile::Scope scope(profile::Op::Attention);
    kernels::attention(ap, jobs_.data(), static_cast<int>(jobs_.size()), pool_, attn_scratch_);
  }
  matmul(L.wo, attn_.data(), qd, n, tmp_.data(), d);
  if (lora) lora->apply(l, LoraSite::Out, attn_.data(), qd, tmp_.data(), d, pool_, kprec_, mm_scratch_);
  sum_over_ranks(tmp_.data(), n);  // before the bias and the post-norm, which see the whole output
  if (L.wo_bias)
    for (int64_t t = 0; t < n; ++t) kernels::add_inplace(&tmp_[t * d], L.wo_bias, d);
  if (L.attn_post_norm) norm_rows(tmp_.data(), L.attn_post_norm, tmp_.data(), n);
  add_residual(tmp_.data(), n);

  norm_rows(x_.data(), L.ffn_norm, h_.data(), n);
  FfnContext fctx{pool_, kprec_, mm_scratch_, lora, l};
  L.ffn->forward(h_.data(), n, tmp_.data(), fctx);
  sum_over_ranks(tmp_.data(), n);
  if (L.ffn_post_norm) norm_rows(tmp_.data(), L.ffn_post_norm, tmp_.data(), n);
  add_residual(tmp_.data(), n);
  profile::set_layer(-1);
}

void LlamaModel::write_outputs(std::span<const SeqInput> batch, ForwardOut out) {
  const int64_t d = cfg_.n_embd;
  const float eps = cfg_.norm_eps;
  auto first_row = [](Want w, int64_t m) { return w == Want::All ? 0 : w == Want::Last ? m - 1 : m; };
  // Hidden states: normed when this stage ends the network, else the residual stream as is.
  int64_t rows = 0;
  for (size_t i = 0, off = 0; i < batch.size(); off += jobs_[i].n_tok, ++i)
    for (int64_t t = first_row(batch[i].hidden, jobs_[i].n_tok); t < jobs_[i].n_tok; ++t, ++rows) {
      const float* x = &x_[(off + t) * d];
      if (output_norm_)
        kernels::rms_norm(x, output_norm_, out.hidden + rows * d, d, eps);
      else
        std::memcpy(out.hidden + rows * d, x, d * sizeof(float));
    }
  // Logits: the final norm of the rows that need them, packed, then one output matmul.
  rows = 0;
  {
    const profile::Scope scope(profile::Op::Norm);
    for (size_t i = 0, off = 0; i < batch.size(); off += jobs_[i].n_tok, ++i)
      for (int64_t t = first_row(batch[i].logits, jobs_[i].n_tok); t < jobs_[i].n_tok; ++t, ++rows)
        kernels::rms_norm(&x_[(off + t) * d], output_norm_, &h_[rows * d], d, eps);
  }
  if (rows > 0) head_logits(h_.data(), rows, out.logits);
}

// The LM head over `rows` normed rows; under tensor parallelism each rank computes its vocabulary
// share and rank 0 gathers them.
void LlamaModel::head_logits(const float* h, int64_t rows, float* logits) {
  const int64_t d = cfg_.n_embd, V = cfg_.n_vocab;
  float* y = logits;
  if (tp_) {
    if (static_cast<int64_t>(logit_part_.size()) < rows * head_rows_) logit_part_.resize(rows * head_rows_);
    y = logit_part_.data();
  }
  matmul(output_, h, d, rows, y, head_rows_);
  if (const float cap = cfg_.final_softcap; cap > 0)  // Gemma 2: logits = cap * tanh(logits / cap)
    for (int64_t i = 0; i < rows * head_rows_; ++i) y[i] = cap * std::tanh(y[i] / cap);
  if (tp_) {
    const profile::Scope scope(profile::Op::Exchange);
    tp_->gather_columns(y, rows, head_shares_, logits, V);
  }
}

void LlamaModel::forward(KvCache& cache, std::span<const SeqInput> batch, ForwardOut out) {
  if (batch.empty()) return;
  runtime::KvCache& kv = cache.impl();
  const int64_t n = plan(kv, batch, out);
  load_inputs(kv, batch);
  for (int l = opts_.layer_begin; l < opts_.layer_end; ++l) run_layer(l, kv, batch, n);
  for (const SeqInput& it : batch) {
    const uint64_t ns = it.lora ? it.lora->id : 0;  // prefix blocks are shared per adapter
    if (!it.tokens.empty()) {
      kv.append(it.seq, it.tokens, ns);
    } else if (!it.cache_ids.empty()) {  // rows of known tokens (a pipeline's later stage)
      kv.append(it.seq, it.cache_ids, ns);
    } else {
      no_ids_.assign(it.size(cfg_.n_embd), -1);
      kv.append(it.seq, no_ids_, ns);
    }
  }
  ++stats_.forward_calls;
  stats_.forward_tokens += n;
  profile::count_pass();
  write_outputs(batch, out);
}

}  // namespace ferrum
