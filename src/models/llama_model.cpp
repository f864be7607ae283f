#include "models/llama_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "ferrum/error.h"
#include "kernels/cpu/elementwise.h"

namespace ferrum {

namespace {
std::string blk(int l, const char* name) { return fmt::format("blk.{}.{}", l, name); }
}  // namespace

LlamaModel::LlamaModel(ModelConfig cfg, WeightSet weights, ModelOptions opts)
    : cfg_(std::move(cfg)),
      weights_(std::move(weights)),
      opts_(opts),
      capacity_(opts.kv_capacity > 0 ? opts.kv_capacity : std::min<int64_t>(cfg_.n_ctx_train > 0 ? cfg_.n_ctx_train : 4096, 4096)),
      pool_(opts.n_threads),
      kprec_(opts.precision == Precision::Exact ? kernels::Precision::Exact : kernels::Precision::Fast) {
  if (opts_.max_batch <= 0) opts_.max_batch = 256;
  bind_weights();
}

const float* LlamaModel::f32_tensor(const std::string& name, int64_t n, bool required) {
  const TensorView* t = weights_.find(name);
  if (!t) {
    if (required) weights_.get(name);  // throws the standard "missing" error
    return nullptr;
  }
  if (t->type != DType::F32) fail("{}: tensor '{}' has type {}, expected F32", weights_.source(), name, dtype_name(t->type));
  if (t->n_elements() != n)
    fail("{}: tensor '{}' has {} elements (shape {}), expected {}", weights_.source(), name, t->n_elements(), t->shape_string(), n);
  return reinterpret_cast<const float*>(t->data);
}

void LlamaModel::bind_weights() {
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim();
  tok_embd_ = weights_.get("token_embd.weight", {d, cfg_.n_vocab});
  output_norm_ = f32_tensor("output_norm.weight", d);
  if (const TensorView* out = weights_.find("output.weight")) {
    output_ = weights_.get("output.weight", {d, cfg_.n_vocab});
    (void)out;
  } else {
    output_ = tok_embd_;  // tied embeddings
  }
  if (cfg_.rope_freq_factors.empty()) {
    if (const float* ff_t = f32_tensor("rope_freqs.weight", cfg_.n_rot / 2, false))
      cfg_.rope_freq_factors.assign(ff_t, ff_t + cfg_.n_rot / 2);
  }
  layers_.resize(cfg_.n_layer);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    Layer& L = layers_[l];
    L.attn_norm = f32_tensor(blk(l, "attn_norm.weight"), d);
    if (weights_.find(blk(l, "attn_qkv.weight"))) {
      L.qkv.push_back({weights_.get(blk(l, "attn_qkv.weight"), {d, qd + 2 * kvd}), 0});
    } else {
      L.qkv.push_back({weights_.get(blk(l, "attn_q.weight"), {d, qd}), 0});
      L.qkv.push_back({weights_.get(blk(l, "attn_k.weight"), {d, kvd}), qd});
      L.qkv.push_back({weights_.get(blk(l, "attn_v.weight"), {d, kvd}), qd + kvd});
    }
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
    L.wo = weights_.get(blk(l, "attn_output.weight"), {qd, d});
    L.ffn_norm = f32_tensor(blk(l, "ffn_norm.weight"), d);
    L.ffn = make_feed_forward(cfg_, weights_, l);
  }
}

LlamaModel::Sequence& LlamaModel::sequence(int seq) {
  auto it = seqs_.find(seq);
  if (it != seqs_.end()) return it->second;
  Sequence& s = seqs_[seq];
  s.k.resize(cfg_.n_layer);
  s.v.resize(cfg_.n_layer);
  return s;
}

int64_t LlamaModel::seq_len(int seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.len;
}

void LlamaModel::truncate_kv(int seq, int64_t new_len) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("truncate_kv: unknown sequence {}", seq);
  if (new_len < 0 || new_len > it->second.len)
    fail("truncate_kv: sequence {} has {} tokens, cannot truncate to {}", seq, it->second.len, new_len);
  it->second.len = new_len;
}

void LlamaModel::release(int seq) {
  if (seqs_.erase(seq) == 0) fail("release: unknown sequence {}", seq);
}

void LlamaModel::ensure_workspace(int64_t n) {
  if (n <= ws_tokens_) return;
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim();
  x_.resize(n * d);
  h_.resize(n * d);
  qkv_.resize(n * (qd + 2 * kvd));
  attn_.resize(n * qd);
  tmp_.resize(n * std::max<int64_t>(d, cfg_.n_vocab));
  rope_.resize(n * cfg_.n_rot);
  ws_tokens_ = n;
}

void LlamaModel::matmul(const TensorView& w, const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy) {
  kernels::matmul(w, x, ldx, n, y, ldy, pool_, kprec_, mm_scratch_);
}

void LlamaModel::prefill(int seq, std::span<const int32_t> tokens, float* logits, bool all_logits) {
  if (tokens.empty()) fail("prefill: no tokens for sequence {}", seq);
  for (int32_t t : tokens)
    if (t < 0 || t >= cfg_.n_vocab) fail("token id {} is out of range (vocabulary has {} tokens)", t, cfg_.n_vocab);
  Sequence& s = sequence(seq);
  if (s.len + static_cast<int64_t>(tokens.size()) > capacity_)
    throw CapacityError(fmt::format("sequence {}: {} cached + {} new tokens exceed the KV capacity of {} tokens", seq,
                                    s.len, tokens.size(), capacity_));
  const int64_t n = tokens.size();
  for (int64_t b = 0; b < n; b += opts_.max_batch) {
    const int64_t m = std::min(opts_.max_batch, n - b);
    const bool last = b + m == n;
    float* out = all_logits ? logits + b * cfg_.n_vocab : (last ? logits : nullptr);
    forward_chunk(s, tokens.data() + b, m, out, all_logits);
  }
}

void LlamaModel::decode(int seq, int32_t token, int64_t pos, float* logits) {
  const int64_t have = seq_len(seq);
  if (pos != have) fail("decode: position {} does not match sequence {} length {}", pos, seq, have);
  prefill(seq, std::span<const int32_t>(&token, 1), logits, false);
}

void LlamaModel::forward_chunk(Sequence& s, const int32_t* tokens, int64_t n, float* logits, bool all_logits) {
  ensure_workspace(n);
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), hd = cfg_.head_dim;
  const int64_t wqkv = qd + 2 * kvd;
  const int64_t pos0 = s.len;
  const float eps = cfg_.norm_eps;

  for (int64_t t = 0; t < n; ++t) dequantize_row(tok_embd_.type, tok_embd_.row(tokens[t]), &x_[t * d], d);

  const float* ffac = cfg_.rope_freq_factors.empty() ? nullptr : cfg_.rope_freq_factors.data();
  for (int64_t t = 0; t < n; ++t)
    kernels::rope_cache(&rope_[t * cfg_.n_rot], pos0 + t, cfg_.n_rot, cfg_.rope_theta, cfg_.rope_freq_scale, ffac);

  kernels::AttentionParams ap;
  ap.n_head = cfg_.n_head;
  ap.n_head_kv = cfg_.n_head_kv;
  ap.head_dim = cfg_.head_dim;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  ap.sliding_window = cfg_.sliding_window;

  for (int l = 0; l < cfg_.n_layer; ++l) {
    Layer& L = layers_[l];
    for (int64_t t = 0; t < n; ++t) kernels::rms_norm(&x_[t * d], L.attn_norm, &h_[t * d], d, eps);
    for (const Part& p : L.qkv) matmul(p.w, h_.data(), d, n, qkv_.data() + p.col, wqkv);
    for (int64_t t = 0; t < n; ++t) {
      float* row = &qkv_[t * wqkv];
      if (L.bias_qkv) kernels::add_inplace(row, L.bias_qkv, wqkv);
      const float* cs = &rope_[t * cfg_.n_rot];
      for (int h = 0; h < cfg_.n_head; ++h) {
        float* qh = row + h * hd;
        if (L.q_norm) kernels::rms_norm(qh, L.q_norm, qh, hd, eps);
        kernels::rope_apply(qh, cs, cfg_.n_rot, cfg_.rope_interleaved);
      }
      for (int h = 0; h < cfg_.n_head_kv; ++h) {
        float* kh = row + qd + h * hd;
        if (L.k_norm) kernels::rms_norm(kh, L.k_norm, kh, hd, eps);
        kernels::rope_apply(kh, cs, cfg_.n_rot, cfg_.rope_interleaved);
      }
    }
    // Append K and V of this chunk to the cache.
    std::vector<float>& K = s.k[l];
    std::vector<float>& V = s.v[l];
    const size_t need = static_cast<size_t>((pos0 + n) * kvd);
    if (K.size() < need) {
      const size_t cap = std::min<size_t>(std::max(need, K.size() * 2), static_cast<size_t>(capacity_ * kvd));
      K.resize(cap);
      V.resize(cap);
    }
    for (int64_t t = 0; t < n; ++t) {
      std::memcpy(&K[(pos0 + t) * kvd], &qkv_[t * wqkv + qd], kvd * sizeof(float));
      std::memcpy(&V[(pos0 + t) * kvd], &qkv_[t * wqkv + qd + kvd], kvd * sizeof(float));
    }
    kernels::attention(ap, qkv_.data(), wqkv, n, pos0, K.data(), V.data(), kvd, attn_.data(), qd, pool_, attn_scratch_);
    matmul(L.wo, attn_.data(), qd, n, tmp_.data(), d);
    kernels::add_inplace(x_.data(), tmp_.data(), n * d);

    for (int64_t t = 0; t < n; ++t) kernels::rms_norm(&x_[t * d], L.ffn_norm, &h_[t * d], d, eps);
    FfnContext fctx{pool_, kprec_, mm_scratch_};
    L.ffn->forward(h_.data(), n, tmp_.data(), fctx);
    kernels::add_inplace(x_.data(), tmp_.data(), n * d);
  }
  s.len = pos0 + n;

  if (!logits) return;
  const int64_t first = all_logits ? 0 : n - 1;
  const int64_t rows = n - first;
  for (int64_t t = first; t < n; ++t) kernels::rms_norm(&x_[t * d], output_norm_, &h_[(t - first) * d], d, eps);
  matmul(output_, h_.data(), d, rows, logits, cfg_.n_vocab);
}

}  // namespace ferrum
