// Hugging Face directory loader: config.json -> ModelConfig (hf::model_config, shared with the
// converter), safetensors -> weights under GGUF names. q/k/v and gate/up are fused into one matrix
// each at load (one matmul instead of several); 1-D tensors (norms, biases) are converted to F32.
// GPTQ/AWQ layers are decoded into exact GGUF block types (formats/hf_quant.h).
// Q/K rows stay in the HF rotate-half layout, so these models use rotate-half RoPE (the GGUF llama
// path uses interleaved pairs instead).
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "core/fail.h"
#include "core/fp16.h"
#include "core/quant.h"
#include "formats/family.h"
#include "formats/hf_config.h"
#include "formats/hf_gpt_oss.h"
#include "formats/hf_model_config.h"
#include "formats/hf_quant.h"
#include "formats/hf_tensor_sink.h"
#include "formats/safetensors.h"
#include "loading/loader.h"

namespace ferrum {
namespace {

class HfBuilder {
 public:
  HfBuilder(std::shared_ptr<const safetensors::Tensors> st, WeightSet& w, hfquant::QuantConfig quant)
      : st_(std::move(st)), w_(w), quant_(std::move(quant)) {}

  const TensorView* find(const std::string& hf_name) const {
    if (const TensorView* t = stored(hf_name)) return t;
    if (hf_name.rfind("model.", 0) == 0) {
      if (const TensorView* t = stored(hf_name.substr(6))) return t;
      // A vision-language checkpoint's text model (hf::text_model_tensor), in either layout.
      if (const TensorView* t = stored("language_model." + hf_name)) return t;
      return stored("model.language_model." + hf_name.substr(6));
    }
    return stored("language_model." + hf_name);  // lm_head
  }
  const TensorView& get(const std::string& hf_name) const {
    const TensorView* t = find(hf_name);
    if (!t) fail("{}: tensor '{}' is missing", st_->source(), hf_name);
    return *t;
  }
  // Adds a matrix under a GGUF name, pointing into the mapping.
  void alias(const std::string& hf_name, const std::string& name) {
    TensorView t = get(hf_name);
    t.name = name;
    w_.add(t);
  }
  // Adds a 1-D tensor converted to F32, plus `add` (Gemma's norms hold w for a scale of 1 + w).
  void vector_f32(const std::string& hf_name, const std::string& name, float add = 0) {
    const TensorView& t = get(hf_name);
    float* dst = reinterpret_cast<float*>(w_.allocate(t.n_elements() * sizeof(float)));
    dequantize_row(t.type, t.data, dst, t.n_elements());
    if (add != 0)
      for (int64_t i = 0; i < t.n_elements(); ++i) dst[i] += add;
    TensorView v;
    v.name = name;
    v.type = DType::F32;
    v.n_dims = 1;
    v.ne = {t.n_elements(), 1, 1, 1};
    v.data = reinterpret_cast<const uint8_t*>(dst);
    v.nbytes = t.n_elements() * sizeof(float);
    w_.add(v);
  }
  // A matrix converted to F32 (same shape).
  void matrix_f32(const std::string& hf_name, const std::string& name) {
    const TensorView& t = get(hf_name);
    if (t.n_dims != 2)
      fail("{}: tensor '{}' should be a matrix, has shape {}", st_->source(), hf_name, t.shape_string());
    float* dst = reinterpret_cast<float*>(w_.allocate(t.n_elements() * sizeof(float)));
    dequantize_row(t.type, t.data, dst, t.n_elements());
    if (t.input_order) {  // back to the natural column order
      std::vector<float> row(t.cols());
      for (int64_t r = 0; r < t.rows(); ++r) {
        float* d = dst + r * t.cols();
        std::copy(d, d + t.cols(), row.begin());
        for (int64_t j = 0; j < t.cols(); ++j) d[t.input_order[j]] = row[j];
      }
    }
    TensorView v;
    v.name = name;
    v.type = DType::F32;
    v.n_dims = 2;
    v.ne = {t.ne[0], t.ne[1], 1, 1};
    v.data = reinterpret_cast<const uint8_t*>(dst);
    v.nbytes = t.n_elements() * sizeof(float);
    w_.add(v);
  }
  // Adds a tensor made by a converter (its data allocated from the weight set).
  void add(const hfconv::OutTensor& o) {
    TensorView v;
    v.name = o.name;
    v.type = o.type;
    v.n_dims = static_cast<int>(o.ne.size());
    for (size_t i = 0; i < o.ne.size(); ++i) v.ne[i] = o.ne[i];
    v.data = static_cast<const uint8_t*>(o.data);
    v.nbytes = o.nbytes;
    w_.add(v);
  }
  uint8_t* allocate(size_t n) { return w_.allocate(n); }
  const safetensors::Tensors& files() const { return *st_; }
  // Stacks equally shaped matrices into one 3-D tensor (ne = [cols, rows, count]), e.g. the
  // experts of a MoE layer.
  void stack(const std::vector<std::string>& hf_names, const std::string& name) {
    fuse(hf_names, name);
    const TensorView& f = *w_.find(name);
    const TensorView& first = get(hf_names[0]);
    for (const auto& n : hf_names)
      if (get(n).ne[1] != first.ne[1])
        fail("{}: tensor '{}' has shape {}, expected the shape of '{}' ({})", st_->source(), n,
             get(n).shape_string(), hf_names[0], first.shape_string());
    if (f.input_order)
      fail(
          "{}: the experts '{}' are quantized with act-order (desc_act); ferrum runs act-order dense layers "
          "only",
          quant_.where, hf_names[0]);
    TensorView v = f;
    v.n_dims = 3;
    v.ne = {first.ne[0], first.ne[1], static_cast<int64_t>(hf_names.size()), 1};
    w_.add(v);
  }
  // Concatenates the rows of several matrices (same type and width) into one tensor.
  void fuse(const std::vector<std::string>& hf_names, const std::string& name) {
    std::vector<const TensorView*> parts;
    int64_t rows = 0;
    size_t bytes = 0;
    for (const auto& n : hf_names) {
      const TensorView& t = get(n);
      if (t.n_dims != 2)
        fail("{}: tensor '{}' should be a matrix, has shape {}", st_->source(), n, t.shape_string());
      if (!parts.empty() && (t.type != parts[0]->type || t.ne[0] != parts[0]->ne[0]))
        fail("{}: tensor '{}' ({} {}) cannot be fused with '{}' ({} {})", st_->source(), n,
             dtype_name(t.type), t.shape_string(), hf_names[0], dtype_name(parts[0]->type),
             parts[0]->shape_string());
      if (!parts.empty() && !same_order(t, *parts[0]))
        fail(
            "{}: '{}' and '{}' are quantized with different act-order column orders (g_idx); ferrum "
            "multiplies them as one matrix and needs one order",
            quant_.where, n, hf_names[0]);
      parts.push_back(&t);
      rows += t.ne[1];
      bytes += t.nbytes;
    }
    uint8_t* dst = w_.allocate(bytes);
    size_t off = 0;
    for (const TensorView* t : parts) {
      std::memcpy(dst + off, t->data, t->nbytes);
      off += t->nbytes;
    }
    TensorView v;
    v.name = name;
    v.type = parts[0]->type;
    v.n_dims = 2;
    v.ne = {parts[0]->ne[0], rows, 1, 1};
    v.input_order = parts[0]->input_order;
    v.data = dst;
    v.nbytes = bytes;
    w_.add(v);
  }

 private:
  // A tensor of the files, or, for "<layer>.weight" of a GPTQ/AWQ layer, its matrix decoded (once).
  const TensorView* stored(const std::string& n) const {
    if (const TensorView* t = st_->find(n)) return t;
    static constexpr std::string_view kWeight = ".weight";
    if (quant_.method == hfquant::Method::None || !n.ends_with(kWeight)) return nullptr;
    const std::string layer = n.substr(0, n.size() - kWeight.size());
    if (!hfquant::is_quantized(*st_, layer)) return nullptr;
    auto it = decoded_.find(n);
    if (it == decoded_.end())
      it = decoded_
               .emplace(n, hfquant::decode_linear(quant_, *st_, layer, n,
                                                  [this](size_t b) { return w_.allocate(b); }))
               .first;
    return &it->second;
  }
  static bool same_order(const TensorView& a, const TensorView& b) {
    if (a.input_order == b.input_order) return true;
    return a.input_order && b.input_order && a.cols() == b.cols() &&
           std::equal(a.input_order, a.input_order + a.cols(), b.input_order);
  }

  std::shared_ptr<const safetensors::Tensors> st_;
  WeightSet& w_;
  hfquant::QuantConfig quant_;
  mutable std::map<std::string, TensorView> decoded_;
};

}  // namespace

HfModel load_hf_dir(const std::string& dir) {
  const hf::Config cfg = hf::Config::load(dir);
  ModelConfig config = hf::model_config(cfg, hfconv::dir_name(dir));
  if (config.is_encoder()) {
    // Config and weights only (ferrum info); running it goes through load_encoder().
    auto g = bert_hf_as_gguf(dir);
    return HfModel{config_from_gguf(*g), weights_from_gguf(g)};
  }
  HfModel out{std::move(config), WeightSet(dir)};
  ModelConfig& m = out.config;
  auto st = std::make_shared<const safetensors::Tensors>(safetensors::Tensors::open_dir(dir));
  out.weights.keep_alive(st);
  const hfquant::QuantConfig quant = hfquant::read_quant_config(cfg);
  m.quantization = quant.describe();
  HfBuilder b(st, out.weights, quant);

  b.alias("model.embed_tokens.weight", "token_embd.weight");
  const Family& family = family_of(m.arch);
  const float norm_add = family.hf_norm_plus_one ? 1.0f : 0.0f;
  b.vector_f32("model.norm.weight", "output_norm.weight", norm_add);
  // tie_word_embeddings: the output matrix is the embedding (a saved lm_head is a copy of it).
  // Without lm_head.weight the embedding is used too, as a converted file without output.weight.
  if (!m.tied_embeddings && b.find("lm_head.weight")) {
    b.alias("lm_head.weight", "output.weight");
  } else {
    m.tied_embeddings = true;
  }
  const std::string p = "model.layers.";
  for (int l = 0; l < m.n_layer; ++l) {
    const std::string L = p + std::to_string(l) + ".", B = "blk." + std::to_string(l) + ".";
    b.vector_f32(L + "input_layernorm.weight", B + "attn_norm.weight", norm_add);
    if (m.post_norms) {  // sandwich norms: post_attention_layernorm is on the attention output
      b.vector_f32(L + "post_attention_layernorm.weight", B + "post_attention_norm.weight", norm_add);
      b.vector_f32(L + "pre_feedforward_layernorm.weight", B + "ffn_norm.weight", norm_add);
      b.vector_f32(L + "post_feedforward_layernorm.weight", B + "post_ffw_norm.weight", norm_add);
    } else {
      b.vector_f32(L + "post_attention_layernorm.weight", B + family.gguf_ffn_norm);
    }
    if (b.find(L + "self_attn.qkv_proj.weight"))  // already fused (Phi-3)
      b.alias(L + "self_attn.qkv_proj.weight", B + "attn_qkv.weight");
    else
      b.fuse({L + "self_attn.q_proj.weight", L + "self_attn.k_proj.weight", L + "self_attn.v_proj.weight"},
             B + "attn_qkv.weight");
    if (m.qkv_bias || b.find(L + "self_attn.q_proj.bias")) {  // qwen2 always, others when present
      m.qkv_bias = true;
      b.vector_f32(L + "self_attn.q_proj.bias", B + "attn_q.bias");
      b.vector_f32(L + "self_attn.k_proj.bias", B + "attn_k.bias");
      b.vector_f32(L + "self_attn.v_proj.bias", B + "attn_v.bias");
    }
    b.alias(L + "self_attn.o_proj.weight", B + "attn_output.weight");
    if (b.find(L + "self_attn.o_proj.bias"))
      b.vector_f32(L + "self_attn.o_proj.bias", B + "attn_output.bias");
    if (b.find(L + "self_attn.sinks")) b.vector_f32(L + "self_attn.sinks", B + "attn_sinks.weight");
    if (m.qk_norm) {
      b.vector_f32(L + "self_attn.q_norm.weight", B + "attn_q_norm.weight", norm_add);
      b.vector_f32(L + "self_attn.k_norm.weight", B + "attn_k_norm.weight", norm_add);
    }
    if (family.hf_fused_experts) {  // router with a bias; experts fused, MXFP4 (formats/hf_gpt_oss.h)
      b.matrix_f32(L + "mlp.router.weight", B + "ffn_gate_inp.weight");
      b.vector_f32(L + "mlp.router.bias", B + "ffn_gate_inp.bias");
      for (const hfconv::OutTensor& t :
           hfconv::gpt_oss_experts(b.files(), m, l, [&](size_t n) { return b.allocate(n); }))
        b.add(t);
    } else if (family.moe) {
      // Per-expert matrices stacked into GGUF's [n_embd, n_ff_exp, n_expert] layout; router in F32.
      auto experts = [&](const char* proj) {
        std::vector<std::string> names;
        for (int e = 0; e < m.n_expert; ++e)
          names.push_back(fmt::format("{}mlp.experts.{}.{}.weight", L, e, proj));
        return names;
      };
      b.stack(experts("gate_proj"), B + "ffn_gate_exps.weight");
      b.stack(experts("up_proj"), B + "ffn_up_exps.weight");
      b.stack(experts("down_proj"), B + "ffn_down_exps.weight");
      b.matrix_f32(L + "mlp.gate.weight", B + "ffn_gate_inp.weight");
    } else {
      if (b.find(L + "mlp.gate_up_proj.weight"))  // already fused (Phi-3): gate rows, then up rows
        b.alias(L + "mlp.gate_up_proj.weight", B + "ffn_gate_up.weight");
      else
        b.fuse({L + "mlp.gate_proj.weight", L + "mlp.up_proj.weight"}, B + "ffn_gate_up.weight");
      b.alias(L + "mlp.down_proj.weight", B + "ffn_down.weight");
    }
  }
  return out;
}

}  // namespace ferrum
