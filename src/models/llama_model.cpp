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

runtime::KvCacheOptions kv_cache_options(const KvOptions& o, int64_t default_capacity) {
  runtime::KvCacheOptions r;
  if (o.layout == "contiguous") {
    r.layout = runtime::KvLayout::Contiguous;
  } else if (o.layout == "paged") {
    r.layout = runtime::KvLayout::Paged;
  } else {
    fail("KV layout '{}' is not known (use contiguous or paged)", o.layout);
  }
  if (o.type == "f32") {
    r.type = kernels::KvType::F32;
  } else if (o.type == "f16") {
    r.type = kernels::KvType::F16;
  } else if (o.type == "bf16") {
    r.type = kernels::KvType::BF16;
  } else if (o.type == "int8") {
    r.type = kernels::KvType::INT8;
  } else {
    fail("KV type '{}' is not known (use f32, f16, bf16 or int8)", o.type);
  }
  if (o.capacity < 0) fail("KV capacity must be positive, got {}", o.capacity);
  if (o.pool_tokens < 0) fail("KV pool size must be positive, got {}", o.pool_tokens);
  r.seq_capacity = o.capacity > 0 ? o.capacity : default_capacity;
  r.pool_tokens = o.pool_tokens;
  r.prefix_cache = o.prefix_cache;
  if (o.prefix_cache && r.layout != runtime::KvLayout::Paged) fail("the prefix cache needs --kv-layout paged");
  return r;
}

LlamaModel::LlamaModel(ModelConfig cfg, WeightSet weights, ModelOptions opts)
    : cfg_(std::move(cfg)),
      weights_(std::move(weights)),
      opts_(opts),
      pool_(opts.n_threads),
      kprec_(opts.precision == Precision::Exact ? kernels::Precision::Exact : kernels::Precision::Fast),
      kv_(cfg_.n_layer, cfg_.n_head_kv, cfg_.head_dim,
          kv_cache_options(opts.kv, std::min<int64_t>(cfg_.n_ctx_train > 0 ? cfg_.n_ctx_train : 4096, 4096))) {
  if (opts_.max_batch <= 0) opts_.max_batch = 256;
  opts_.kv.capacity = kv_.options().seq_capacity;
  opts_.kv.pool_tokens = kv_.options().pool_tokens;
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
  // Tied embeddings: the output matrix is token_embd (the lookup keeps reading the file's rows).
  output_ = kernels::Linear({weights_.find("output.weight") ? weights_.get("output.weight", {d, cfg_.n_vocab})
                                                            : tok_embd_},
                            kprec_, pool_);
  if (cfg_.rope_freq_factors.empty()) {
    if (const float* ff_t = f32_tensor("rope_freqs.weight", cfg_.n_rot / 2, false)) {
      cfg_.rope_freq_factors.assign(ff_t, ff_t + cfg_.n_rot / 2);
      for (float v : cfg_.rope_freq_factors)  // angles are divided by them
        if (!std::isfinite(v) || v <= 0)
          fail("{}: tensor 'rope_freqs.weight' holds {}, expected positive RoPE frequency factors",
               weights_.source(), v);
    }
  }
  layers_.resize(cfg_.n_layer);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    Layer& L = layers_[l];
    L.attn_norm = f32_tensor(blk(l, "attn_norm.weight"), d);
    if (weights_.find(blk(l, "attn_qkv.weight")))
      L.qkv = kernels::Linear({weights_.get(blk(l, "attn_qkv.weight"), {d, qd + 2 * kvd})}, kprec_, pool_);
    else
      L.qkv = kernels::Linear({weights_.get(blk(l, "attn_q.weight"), {d, qd}), weights_.get(blk(l, "attn_k.weight"), {d, kvd}),
                               weights_.get(blk(l, "attn_v.weight"), {d, kvd})},
                              kprec_, pool_);
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
    L.wo = kernels::Linear({weights_.get(blk(l, "attn_output.weight"), {qd, d})}, kprec_, pool_);
    L.ffn_norm = f32_tensor(blk(l, "ffn_norm.weight"), d);
    L.ffn = make_feed_forward(cfg_, weights_, l, kprec_, pool_);
    weights_.release_packed(L.qkv);
    weights_.release_packed(L.wo);
  }
  // The packed copies are what the products read; the file pages of those tensors would only
  // double the resident memory (the embedding lookup re-reads the few rows it needs).
  weights_.release_packed(output_);
}

void LlamaModel::truncate_kv(int seq, int64_t new_len) {
  if (!kv_.has(seq)) fail("truncate_kv: unknown sequence {}", seq);
  kv_.truncate(seq, new_len);
}

void LlamaModel::prepare(int seq, int64_t max_tokens) { kv_.reserve(seq, max_tokens); }

KvUsage LlamaModel::kv_usage() const {
  const runtime::KvStats s = kv_.stats();
  return KvUsage{s.seq_capacity, s.block_tokens, s.total_blocks, s.free_blocks, s.used_tokens, s.sequences,
                 s.bytes_per_token, s.pool_bytes};
}

nlohmann::json LlamaModel::metrics_json() const {
  return {{"kv", kv_.metrics_json()}, {"forward_calls", forward_calls_}, {"forward_tokens", forward_tokens_}};
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
  pos_.resize(n);
  ws_tokens_ = n;
}

void LlamaModel::matmul(const kernels::Linear& w, const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy) {
  w.forward(x, ldx, n, y, ldy, pool_, kprec_, mm_scratch_);
}

void LlamaModel::unified_forward(std::span<const SeqTokens> items, float* logits) {
  if (items.empty()) return;
  const int64_t d = cfg_.n_embd, qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), hd = cfg_.head_dim;
  const int64_t wqkv = qd + 2 * kvd;
  const float eps = cfg_.norm_eps;

  // Validate, then reserve cache room for every item at once (all or nothing).
  requests_.clear();
  int64_t n = 0;
  for (const SeqTokens& it : items) {
    if (it.tokens.empty()) fail("forward: no tokens for sequence {}", it.seq);
    for (const auto& r : requests_)
      if (r.first == it.seq) fail("forward: sequence {} appears twice in one batch", it.seq);
    for (int32_t t : it.tokens)
      if (t < 0 || t >= cfg_.n_vocab) fail("token id {} is out of range (vocabulary has {} tokens)", t, cfg_.n_vocab);
    requests_.emplace_back(it.seq, kv_.len(it.seq) + static_cast<int64_t>(it.tokens.size()));
    n += it.tokens.size();
  }
  kv_.reserve(requests_);
  ensure_workspace(n);

  // Embeddings and RoPE angles of every token.
  const float* ffac = cfg_.rope_freq_factors.empty() ? nullptr : cfg_.rope_freq_factors.data();
  jobs_.resize(items.size());
  for (size_t i = 0, off = 0; i < items.size(); ++i) {
    const int64_t pos0 = kv_.len(items[i].seq);
    for (size_t t = 0; t < items[i].tokens.size(); ++t, ++off) {
      const int32_t tok = items[i].tokens[t];
      dequantize_row(tok_embd_.type, tok_embd_.row(tok), &x_[off * d], d);
      pos_[off] = pos0 + t;
      kernels::rope_cache(&rope_[off * cfg_.n_rot], pos_[off], cfg_.n_rot, cfg_.rope_theta, cfg_.rope_freq_scale, ffac);
    }
    kernels::AttentionJob& j = jobs_[i];
    j.q = qkv_.data() + (off - items[i].tokens.size()) * wqkv;
    j.ldq = wqkv;
    j.n_tok = items[i].tokens.size();
    j.pos0 = pos0;
    j.out = attn_.data() + (off - items[i].tokens.size()) * qd;
    j.ldo = qd;
  }

  kernels::AttentionParams ap;
  ap.n_head = cfg_.n_head;
  ap.n_head_kv = cfg_.n_head_kv;
  ap.head_dim = cfg_.head_dim;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  ap.sliding_window = cfg_.sliding_window;
  FfnContext fctx{pool_, kprec_, mm_scratch_};

  for (int l = 0; l < cfg_.n_layer; ++l) {
    Layer& L = layers_[l];
    for (int64_t t = 0; t < n; ++t) kernels::rms_norm(&x_[t * d], L.attn_norm, &h_[t * d], d, eps);
    matmul(L.qkv, h_.data(), d, n, qkv_.data(), wqkv);
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
    for (size_t i = 0, off = 0; i < items.size(); ++i) {
      for (size_t t = 0; t < items[i].tokens.size(); ++t, ++off)
        kv_.write(l, items[i].seq, pos_[off], &qkv_[off * wqkv + qd], &qkv_[off * wqkv + qd + kvd]);
      jobs_[i].kv = kv_.view(l, items[i].seq);
    }
    kernels::attention(ap, jobs_.data(), static_cast<int>(jobs_.size()), pool_, attn_scratch_);
    matmul(L.wo, attn_.data(), qd, n, tmp_.data(), d);
    kernels::add_inplace(x_.data(), tmp_.data(), n * d);

    for (int64_t t = 0; t < n; ++t) kernels::rms_norm(&x_[t * d], L.ffn_norm, &h_[t * d], d, eps);
    L.ffn->forward(h_.data(), n, tmp_.data(), fctx);
    kernels::add_inplace(x_.data(), tmp_.data(), n * d);
  }
  for (const SeqTokens& it : items) kv_.append(it.seq, it.tokens);
  ++forward_calls_;
  forward_tokens_ += n;

  // Final norm of the rows that need logits, packed, then one output matmul.
  int64_t rows = 0;
  for (size_t i = 0, off = 0; i < items.size(); off += items[i].tokens.size(), ++i) {
    const int64_t m = items[i].tokens.size();
    const int64_t first = items[i].all_logits ? 0 : (items[i].want_logits ? m - 1 : m);
    for (int64_t t = first; t < m; ++t, ++rows) kernels::rms_norm(&x_[(off + t) * d], output_norm_, &h_[rows * d], d, eps);
  }
  if (rows > 0) {
    if (!logits) fail("forward: logits requested but no output buffer given");
    matmul(output_, h_.data(), d, rows, logits, cfg_.n_vocab);
  }
}

}  // namespace ferrum
