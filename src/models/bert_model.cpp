#include "models/bert_model.h"

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

BertModel::BertModel(ModelConfig cfg, WeightSet weights, const ModelOptions& opts, Pooling default_pooling,
                     bool default_normalize)
    : cfg_(std::move(cfg)),
      weights_(std::move(weights)),
      opts_(opts),
      pooling_(default_pooling),
      normalize_(default_normalize),
      pool_(opts.n_threads),
      kprec_(kernel_precision(opts.precision)) {
  const int64_t d = cfg_.n_embd, ff = cfg_.n_ff;
  const std::string& src = weights_.source();
  if (cfg_.arch != Arch::Bert) fail("{}: architecture '{}' is not a BERT encoder", src, arch_name(cfg_.arch));
  if (d <= 0 || cfg_.n_head <= 0 || d % cfg_.n_head != 0)
    fail("{}: embedding length {} is not a multiple of the head count {}", src, d, cfg_.n_head);
  if (ff <= 0) fail("{}: feed_forward_length is missing", src);
  cfg_.head_dim = static_cast<int>(d / cfg_.n_head);
  tok_embd_ = weights_.get("token_embd.weight");
  if (tok_embd_.ne[0] != d || tok_embd_.n_dims > 2)
    fail("{}: tensor 'token_embd.weight' has shape {}, expected [{}, n_vocab]", src, tok_embd_.shape_string(),
         d);
  cfg_.n_vocab = static_cast<int>(tok_embd_.ne[1]);
  pos_embd_ = weights_.get("position_embd.weight");
  if (pos_embd_.ne[0] != d || pos_embd_.n_dims > 2)
    fail("{}: tensor 'position_embd.weight' has shape {}, expected [{}, n_positions]", src,
         pos_embd_.shape_string(), d);
  n_pos_ = pos_embd_.ne[1];
  if (const TensorView* tt = weights_.find("token_types.weight")) {
    if (tt->ne[0] != d)
      fail("{}: tensor 'token_types.weight' has shape {}, expected [{}, n_types]", src, tt->shape_string(),
           d);
    type_embd_ = *tt;
  }
  embd_norm_w_ = f32("token_embd_norm.weight", d);
  embd_norm_b_ = f32("token_embd_norm.bias", d);
  layers_.resize(cfg_.n_layer);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    Layer& L = layers_[l];
    L.wq = weights_.get(blk(l, "attn_q.weight"), {d, d});
    L.wk = weights_.get(blk(l, "attn_k.weight"), {d, d});
    L.wv = weights_.get(blk(l, "attn_v.weight"), {d, d});
    L.wo = weights_.get(blk(l, "attn_output.weight"), {d, d});
    L.up = weights_.get(blk(l, "ffn_up.weight"), {d, ff});
    L.down = weights_.get(blk(l, "ffn_down.weight"), {ff, d});
    L.bq = f32(blk(l, "attn_q.bias"), d);
    L.bk = f32(blk(l, "attn_k.bias"), d);
    L.bv = f32(blk(l, "attn_v.bias"), d);
    L.bo = f32(blk(l, "attn_output.bias"), d);
    L.b_up = f32(blk(l, "ffn_up.bias"), ff);
    L.b_down = f32(blk(l, "ffn_down.bias"), d);
    L.attn_norm_w = f32(blk(l, "attn_output_norm.weight"), d);
    L.attn_norm_b = f32(blk(l, "attn_output_norm.bias"), d);
    L.out_norm_w = f32(blk(l, "layer_output_norm.weight"), d);
    L.out_norm_b = f32(blk(l, "layer_output_norm.bias"), d);
    if (opts.precision == Precision::BF16) round_to_bf16(L);
  }
}

// --precision bf16: the layer's F16/F32 matrices are multiplied as BF16 copies (the embeddings
// and norms stay as in the file).
void BertModel::round_to_bf16(Layer& L) {
  for (TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.up, &L.down})
    round_matrix(*t, kernels::WeightRounding::Bf16, weights_, pool_, copies_);
}

void BertModel::check(const std::vector<std::vector<int32_t>>& batch) const {
  for (size_t s = 0; s < batch.size(); ++s) {
    const auto& ids = batch[s];
    if (ids.empty()) fail("embed: sentence {} of the batch has no tokens", s);
    if (static_cast<int64_t>(ids.size()) > n_pos_)
      fail("embed: sentence {} has {} tokens, longer than the model's position table ({} positions)", s,
           ids.size(), n_pos_);
    for (int32_t t : ids)
      if (t < 0 || t >= cfg_.n_vocab)
        fail("embed: token id {} in sentence {} is out of range (vocabulary has {} tokens)", t, s,
             cfg_.n_vocab);
  }
}

void BertModel::linear(const TensorView& w, const float* bias, const float* x, int64_t ldx, int64_t n,
                       float* y, int64_t ldy) {
  kernels::matmul(w, x, ldx, n, y, ldy, pool_, kprec_, scratch_);
  const int64_t rows = w.rows();
  for (int64_t t = 0; t < n; ++t) kernels::add_inplace(y + t * ldy, bias, rows);
}

void BertModel::attention(const std::vector<std::vector<int32_t>>& batch, size_t first, size_t last) {
  const int64_t d = cfg_.n_embd, hd = cfg_.head_dim, H = cfg_.n_head, ld = 3 * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t n_items = static_cast<int64_t>(last - first) * H;
  int64_t max_len = 0;
  for (size_t s = first; s < last; ++s) max_len = std::max<int64_t>(max_len, batch[s].size());
  if (static_cast<int64_t>(scores_.size()) < pool_.size() * max_len) scores_.resize(pool_.size() * max_len);
  pool_.parallel_for(n_items, [&](int64_t b, int64_t e, int ith) {
    float* sc = &scores_[ith * max_len];
    for (int64_t item = b; item < e; ++item) {
      const size_t s = first + item / H;
      const int64_t h = item % H, len = batch[s].size(), r0 = starts_[s - first];
      // Keys are only this sentence's rows: the padding mask of a padded batch.
      for (int64_t i = 0; i < len; ++i) {
        const float* q = &qkv_[(r0 + i) * ld + h * hd];
        for (int64_t j = 0; j < len; ++j) {
          const float* k = &qkv_[(r0 + j) * ld + d + h * hd];
          float dot = 0;
          for (int64_t c = 0; c < hd; ++c) dot += q[c] * k[c];
          sc[j] = dot * scale;
        }
        kernels::softmax(sc, len);
        float* o = &attn_[(r0 + i) * d + h * hd];
        std::memset(o, 0, hd * sizeof(float));
        for (int64_t j = 0; j < len; ++j) {
          const float* v = &qkv_[(r0 + j) * ld + 2 * d + h * hd];
          const float p = sc[j];
          for (int64_t c = 0; c < hd; ++c) o[c] += p * v[c];
        }
      }
    }
  });
}

void BertModel::forward(const std::vector<std::vector<int32_t>>& batch, size_t first, size_t last) {
  const int64_t d = cfg_.n_embd, ff = cfg_.n_ff;
  const float eps = cfg_.norm_eps;
  starts_.clear();
  int64_t T = 0;
  for (size_t s = first; s < last; ++s) {
    starts_.push_back(T);
    T += batch[s].size();
  }
  if (static_cast<int64_t>(x_.size()) < T * d) {
    x_.resize(T * d);
    qkv_.resize(T * 3 * d);
    attn_.resize(T * d);
    tmp_.resize(T * d);
    ff_.resize(T * ff);
  }
  row_.resize(2 * d);
  float* pos = row_.data();
  float* type0 = row_.data() + d;
  if (type_embd_.data)
    dequantize_row(type_embd_.type, type_embd_.row(0), type0, d);  // token type 0 for every token
  else
    std::fill(type0, type0 + d, 0.0f);
  for (size_t s = first; s < last; ++s) {
    const auto& ids = batch[s];
    for (size_t p = 0; p < ids.size(); ++p) {
      float* x = &x_[(starts_[s - first] + p) * d];
      dequantize_row(tok_embd_.type, tok_embd_.row(ids[p]), x, d);
      dequantize_row(pos_embd_.type, pos_embd_.row(p), pos, d);
      kernels::add_inplace(x, pos, d);
      kernels::add_inplace(x, type0, d);
      kernels::layer_norm(x, embd_norm_w_, embd_norm_b_, x, d, eps);
    }
  }
  for (const Layer& L : layers_) {
    linear(L.wq, L.bq, x_.data(), d, T, qkv_.data(), 3 * d);
    linear(L.wk, L.bk, x_.data(), d, T, qkv_.data() + d, 3 * d);
    linear(L.wv, L.bv, x_.data(), d, T, qkv_.data() + 2 * d, 3 * d);
    attention(batch, first, last);
    linear(L.wo, L.bo, attn_.data(), d, T, tmp_.data(), d);
    kernels::add_inplace(x_.data(), tmp_.data(), T * d);
    for (int64_t t = 0; t < T; ++t)
      kernels::layer_norm(&x_[t * d], L.attn_norm_w, L.attn_norm_b, &x_[t * d], d, eps);
    linear(L.up, L.b_up, x_.data(), d, T, ff_.data(), ff);
    kernels::gelu_erf(ff_.data(), T * ff);
    linear(L.down, L.b_down, ff_.data(), ff, T, tmp_.data(), d);
    kernels::add_inplace(x_.data(), tmp_.data(), T * d);
    for (int64_t t = 0; t < T; ++t)
      kernels::layer_norm(&x_[t * d], L.out_norm_w, L.out_norm_b, &x_[t * d], d, eps);
  }
}

namespace {
// Sentences [first, last) such that the chunk holds at most `cap` tokens (at least one sentence).
size_t chunk_end(const std::vector<std::vector<int32_t>>& batch, size_t first, int64_t cap) {
  int64_t tokens = 0;
  size_t last = first;
  while (last < batch.size() && (last == first || tokens + static_cast<int64_t>(batch[last].size()) <= cap))
    tokens += batch[last++].size();
  return last;
}
}  // namespace

std::vector<std::vector<float>> BertModel::embed(const std::vector<std::vector<int32_t>>& batch,
                                                 Pooling pooling, bool normalize) {
  check(batch);
  const int64_t d = cfg_.n_embd, cap = std::max<int64_t>(opts_.max_batch, 512);
  std::vector<std::vector<float>> out(batch.size(), std::vector<float>(d));
  for (size_t first = 0; first < batch.size();) {
    const size_t last = chunk_end(batch, first, cap);
    forward(batch, first, last);
    for (size_t s = first; s < last; ++s) {
      const int64_t len = batch[s].size(), r0 = starts_[s - first];
      pool_rows(&x_[r0 * d], len, d, pooling, out[s].data());
      if (normalize) l2_normalize(out[s]);
    }
    first = last;
  }
  return out;
}

std::vector<float> BertModel::token_states(const std::vector<std::vector<int32_t>>& batch) {
  check(batch);
  const int64_t d = cfg_.n_embd, cap = std::max<int64_t>(opts_.max_batch, 512);
  std::vector<float> out;
  for (size_t first = 0; first < batch.size();) {
    const size_t last = chunk_end(batch, first, cap);
    forward(batch, first, last);
    int64_t T = 0;
    for (size_t s = first; s < last; ++s) T += batch[s].size();
    out.insert(out.end(), x_.begin(), x_.begin() + T * d);
    first = last;
  }
  return out;
}

}  // namespace ferrum
