#include "models/bert_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fail.h"
#include "core/quant.h"
#include "kernels/cpu/elementwise.h"
#include "models/precision.h"

namespace ferrum {

namespace {
std::string blk(int l, const char* name) {
  return fmt::format("blk.{}.{}", l, name);
}
}  // namespace

const float* BertModel::f32(const std::string& name, int64_t n) {
  const TensorView& t = weights_.get(name);
  if (t.type != DType::F32)
    fail("{}: tensor '{}' has type {}, expected F32", weights_.source(), name, dtype_name(t.type));
  if (t.n_elements() != n)
    fail("{}: tensor '{}' has {} elements (shape {}), expected {}", weights_.source(), name, t.n_elements(),
         t.shape_string(), n);
  return reinterpret_cast<const float*>(t.data);
}

BertModel::BertModel(ModelConfig cfg, WeightSet weights, const ModelOptions& opts)
    : cfg_(std::move(cfg)),
      weights_(std::move(weights)),
      opts_(opts),
      pool_(opts.n_threads),
      kprec_(kernel_precision(opts.precision)) {
  const int64_t d = cfg_.n_embd, ff = cfg_.n_ff;
  const std::string& src = weights_.source();
  if (cfg_.arch != Arch::Bert) fail("{}: architecture '{}' is not a BERT encoder", src, arch_name(cfg_.arch));
  if (d <= 0 || cfg_.n_head <= 0 || d % cfg_.n_head != 0)
    fail("{}: embedding length {} is not a multiple of the head count {}", src, d, cfg_.n_head);
  if (ff <= 0) fail("{}: feed_forward_length is missing", src);
  if (opts_.layer_begin != 0 || (opts_.layer_end != -1 && opts_.layer_end != cfg_.n_layer))
    fail("{}: an encoder runs whole (layers 0 to {}), not as the stage [{}, {})", src, cfg_.n_layer,
         opts_.layer_begin, opts_.layer_end);
  opts_.layer_end = cfg_.n_layer;
  opts_.lm_head = false;  // hidden states only
  cfg_.head_dim = static_cast<int>(d / cfg_.n_head);
  cfg_.n_head_kv = cfg_.n_head;
  tok_embd_ = weights_.get("token_embd.weight");
  if (tok_embd_.ne[0] != d || tok_embd_.n_dims > 2)
    fail("{}: tensor 'token_embd.weight' has shape {}, expected [{}, n_vocab]", src, tok_embd_.shape_string(),
         d);
  cfg_.n_vocab = static_cast<int>(tok_embd_.ne[1]);
  pos_embd_ = weights_.get("position_embd.weight");
  if (pos_embd_.ne[0] != d || pos_embd_.n_dims > 2)
    fail("{}: tensor 'position_embd.weight' has shape {}, expected [{}, n_positions]", src,
         pos_embd_.shape_string(), d);
  cfg_.n_ctx_train = static_cast<int>(pos_embd_.ne[1]);  // the position table bounds a sentence
  if (const TensorView* tt = weights_.find("token_types.weight")) {
    if (tt->ne[0] != d)
      fail("{}: tensor 'token_types.weight' has shape {}, expected [{}, n_types]", src, tt->shape_string(),
           d);
    type_embd_ = *tt;
  }
  embd_norm_w_ = f32("token_embd_norm.weight", d);
  embd_norm_b_ = f32("token_embd_norm.bias", d);
  layers_.resize(cfg_.n_layer);
  for (int l = 0; l < cfg_.n_layer; ++l) load_layer(l, layers_[l]);
}

// The layer's matrices as kernels::Linear (packed for the tier at Fast precision; --precision
// bf16 multiplies F16/F32 matrices as BF16), biases and norms as F32 vectors.
void BertModel::load_layer(int l, Layer& L) {
  const int64_t d = cfg_.n_embd, ff = cfg_.n_ff;
  const kernels::WeightRounding r = weight_rounding(opts_.precision);
  L.qkv = kernels::Linear(
      {weights_.get(blk(l, "attn_q.weight"), {d, d}), weights_.get(blk(l, "attn_k.weight"), {d, d}),
       weights_.get(blk(l, "attn_v.weight"), {d, d})},
      kprec_, pool_, r);
  L.wo = kernels::Linear({weights_.get(blk(l, "attn_output.weight"), {d, d})}, kprec_, pool_, r);
  L.up = kernels::Linear({weights_.get(blk(l, "ffn_up.weight"), {d, ff})}, kprec_, pool_, r);
  L.down = kernels::Linear({weights_.get(blk(l, "ffn_down.weight"), {ff, d})}, kprec_, pool_, r);
  L.b_qkv.resize(3 * d);
  const char* qkv_bias[] = {"attn_q.bias", "attn_k.bias", "attn_v.bias"};
  for (int i = 0; i < 3; ++i) std::copy_n(f32(blk(l, qkv_bias[i]), d), d, L.b_qkv.data() + i * d);
  L.bo = f32(blk(l, "attn_output.bias"), d);
  L.b_up = f32(blk(l, "ffn_up.bias"), ff);
  L.b_down = f32(blk(l, "ffn_down.bias"), d);
  L.attn_norm_w = f32(blk(l, "attn_output_norm.weight"), d);
  L.attn_norm_b = f32(blk(l, "attn_output_norm.bias"), d);
  L.out_norm_w = f32(blk(l, "layer_output_norm.weight"), d);
  L.out_norm_b = f32(blk(l, "layer_output_norm.bias"), d);
}

void BertModel::check(std::span<const SeqInput> batch) const {
  for (size_t s = 0; s < batch.size(); ++s) {
    const SeqInput& in = batch[s];
    if (!in.embeds.empty()) fail("{}: an encoder takes token ids, not input rows", weights_.source());
    if (in.logits != Want::None)
      fail("{}: an encoder gives hidden states, not logits (it cannot generate text)", weights_.source());
    if (in.tokens.empty()) fail("embed: sentence {} of the batch has no tokens", s);
    if (static_cast<int64_t>(in.tokens.size()) > cfg_.n_ctx_train)
      fail("embed: sentence {} has {} tokens, longer than the model's position table ({} positions)", s,
           in.tokens.size(), cfg_.n_ctx_train);
    for (int32_t t : in.tokens)
      if (t < 0 || t >= cfg_.n_vocab)
        fail("embed: token id {} in sentence {} is out of range (vocabulary has {} tokens)", t, s,
             cfg_.n_vocab);
  }
}

void BertModel::linear(const kernels::Linear& w, const float* bias, const float* x, int64_t ldx, int64_t n,
                       float* y, int64_t ldy) {
  w.forward(x, ldx, n, y, ldy, pool_, kprec_, scratch_);
  const int64_t rows = w.rows();
  pool_.parallel_for(n, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) kernels::add_inplace(y + t * ldy, bias, rows);
  });
}

// The residual step of a post-norm block, token by token over the threads: x = LayerNorm(x + tmp).
void BertModel::add_and_norm(int64_t T, const float* w, const float* b) {
  const int64_t d = cfg_.n_embd;
  pool_.parallel_for(T, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      float* x = &x_[t * d];
      kernels::add_inplace(x, &tmp_[t * d], d);
      kernels::layer_norm(x, w, b, x, d, cfg_.norm_eps);
    }
  });
}

// Bidirectional attention through the shared kernel: each sentence's keys and values are stored
// in the cache layout (F32, kv_format.h) and the sentence is one job that sees only its own keys,
// which is the padding mask of a padded batch.
void BertModel::attention(std::span<const SeqInput> batch) {
  const int64_t d = cfg_.n_embd, ld = 3 * d;
  const int H = cfg_.n_head, hd = cfg_.head_dim;
  const size_t row = kernels::kv_row_bytes(kernels::KvType::F32, H, hd);
  const size_t n = batch.size();
  kv_starts_.resize(n + 1);
  kv_starts_[0] = 0;
  for (size_t s = 0; s < n; ++s) {
    const int64_t len = batch[s].tokens.size();
    kv_starts_[s + 1] = kv_starts_[s] + (len + kernels::kKvGroup - 1) / kernels::kKvGroup * kernels::kKvGroup;
  }
  if (k_.size() < kv_starts_[n] * row) {
    k_.resize(kv_starts_[n] * row);
    v_.resize(kv_starts_[n] * row);
  }
  pool_.parallel_for(static_cast<int64_t>(n), [&](int64_t b, int64_t e, int) {
    for (int64_t s = b; s < e; ++s) {
      const int64_t len = batch[s].tokens.size(), r0 = starts_[s];
      for (int64_t i = 0; i < len; ++i) {
        const size_t group = (kv_starts_[s] + i / kernels::kKvGroup * kernels::kKvGroup) * row;
        const int slot = static_cast<int>(i % kernels::kKvGroup);
        kernels::kv_store_key(kernels::KvType::F32, &qkv_[(r0 + i) * ld + d], &k_[group], slot, H, hd);
        kernels::kv_store_value(kernels::KvType::F32, &qkv_[(r0 + i) * ld + 2 * d], &v_[group], slot, H, hd);
      }
    }
  });
  static const int32_t kOneBlock = 0;
  jobs_.resize(n);
  for (size_t s = 0; s < n; ++s) {
    kernels::AttentionJob& J = jobs_[s];
    J.q = &qkv_[starts_[s] * ld];
    J.ldq = ld;
    J.n_tok = static_cast<int64_t>(batch[s].tokens.size());
    J.pos0 = 0;
    J.kv.k_base = &k_[kv_starts_[s] * row];
    J.kv.v_base = &v_[kv_starts_[s] * row];
    J.kv.table = &kOneBlock;
    J.kv.block_tokens = std::max<int64_t>(J.n_tok, 1);
    J.kv.block_bytes = 0;
    J.kv.row_bytes = row;
    J.kv.type = kernels::KvType::F32;
    J.out = &attn_[starts_[s] * d];
    J.ldo = d;
  }
  kernels::AttentionParams p;
  p.n_head = H;
  p.n_head_kv = H;
  p.head_dim = hd;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  p.causal = false;
  kernels::attention(p, jobs_.data(), static_cast<int>(n), pool_, attn_scratch_);
}

void BertModel::embed_rows(std::span<const SeqInput> batch) {
  const int64_t d = cfg_.n_embd;
  row_.resize(2 * d);
  float* pos = row_.data();
  float* type0 = row_.data() + d;
  if (type_embd_.data)
    dequantize_row(type_embd_.type, type_embd_.row(0), type0, d);  // token type 0 for every token
  else
    std::fill(type0, type0 + d, 0.0f);
  for (size_t s = 0; s < batch.size(); ++s) {
    const auto ids = batch[s].tokens;
    for (size_t p = 0; p < ids.size(); ++p) {
      float* x = &x_[(starts_[s] + p) * d];
      dequantize_row(tok_embd_.type, tok_embd_.row(ids[p]), x, d);
      dequantize_row(pos_embd_.type, pos_embd_.row(p), pos, d);
      kernels::add_inplace(x, pos, d);
      kernels::add_inplace(x, type0, d);
      kernels::layer_norm(x, embd_norm_w_, embd_norm_b_, x, d, cfg_.norm_eps);
    }
  }
}

void BertModel::encode(std::span<const SeqInput> batch) {
  const int64_t d = cfg_.n_embd, ff = cfg_.n_ff;
  starts_.clear();
  int64_t T = 0;
  for (const SeqInput& in : batch) {
    starts_.push_back(T);
    T += in.tokens.size();
  }
  if (static_cast<int64_t>(x_.size()) < T * d) {
    x_.resize(T * d);
    qkv_.resize(T * 3 * d);
    attn_.resize(T * d);
    tmp_.resize(T * d);
    ff_.resize(T * ff);
  }
  embed_rows(batch);
  for (const Layer& L : layers_) {
    linear(L.qkv, L.b_qkv.data(), x_.data(), d, T, qkv_.data(), 3 * d);
    attention(batch);
    linear(L.wo, L.bo, attn_.data(), d, T, tmp_.data(), d);
    add_and_norm(T, L.attn_norm_w, L.attn_norm_b);
    linear(L.up, L.b_up, x_.data(), d, T, ff_.data(), ff);
    pool_.parallel_for(T, [&](int64_t b, int64_t e, int) { kernels::gelu_erf(&ff_[b * ff], (e - b) * ff); });
    linear(L.down, L.b_down, ff_.data(), ff, T, tmp_.data(), d);
    add_and_norm(T, L.out_norm_w, L.out_norm_b);
  }
}

void BertModel::forward(KvCache&, std::span<const SeqInput> batch, ForwardOut out) {
  check(batch);
  if (batch.empty()) return;
  for (const SeqInput& in : batch)
    if (in.hidden != Want::None && !out.hidden)
      fail("forward: hidden states are wanted but ForwardOut::hidden is null");
  encode(batch);
  const int64_t d = cfg_.n_embd;
  float* h = out.hidden;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SeqInput& in = batch[s];
    const int64_t n = in.tokens.size();
    if (in.hidden == Want::None) continue;
    const int64_t first = in.hidden == Want::All ? 0 : n - 1, rows = n - first;
    std::memcpy(h, &x_[(starts_[s] + first) * d], rows * d * sizeof(float));
    h += rows * d;
  }
  stats_.forward_calls++;
  stats_.forward_tokens += starts_.back() + static_cast<int64_t>(batch.back().tokens.size());
}

void BertModel::embed_tokens(std::span<const int32_t>, float*) const {
  fail("{}: an encoder's embedding rows depend on positions: pass token ids to forward()", weights_.source());
}

}  // namespace ferrum
