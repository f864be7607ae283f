// Hugging Face directory loader: config.json -> ModelConfig, safetensors -> weights under GGUF
// names. q/k/v and gate/up are fused into one matrix each at load (one matmul instead of several);
// 1-D tensors (norms, biases) are converted to F32. Q/K rows stay in the HF rotate-half layout,
// so these models use rotate-half RoPE (the GGUF llama path uses interleaved pairs instead).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numbers>

#include "core/fail.h"
#include "core/fp16.h"
#include "core/quant.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "models/bert_model.h"
#include "models/registry.h"

namespace fs = std::filesystem;

namespace ferrum {
namespace {

// Llama-3 RoPE frequency factors, as Meta's reference and llama.cpp's converter compute them.
std::vector<float> llama3_freq_factors(const nlohmann::json& rs, int n_rot, float theta, const std::string& src) {
  auto num = [&](const char* k, double def) {
    if (!rs.contains(k)) return def;
    if (!rs[k].is_number()) fail("{}: rope_scaling.{} must be a number", src, k);
    return rs[k].get<double>();
  };
  const double factor = num("factor", 8.0), low = num("low_freq_factor", 1.0), high = num("high_freq_factor", 4.0);
  const double old_ctx = num("original_max_position_embeddings", 8192);
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (int i = 0; i < n_rot; i += 2) {
    const double freq = 1.0 / std::pow(static_cast<double>(theta), static_cast<double>(i) / n_rot);
    const double wavelen = 2 * std::numbers::pi / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1.0;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      f = 1.0 / ((1 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

ModelConfig config_from_hf(const hf::Config& c, const std::string& dir) {
  ModelConfig m;
  m.arch = parse_arch(c.architecture(), dir + "/config.json");
  m.name = fs::path(dir).filename().string();
  const std::string src = dir + "/config.json";
  // Sizes are read as ints; validate_config() checks their ranges and how they fit together.
  auto as_int = [&](const char* k, int64_t v) {
    if (v < INT32_MIN || v > INT32_MAX) fail("{}: field '{}' is {}, out of range", src, k, v);
    return static_cast<int>(v);
  };
  auto req_int = [&](const char* k) { return as_int(k, c.get_int(k)); };
  auto opt_int = [&](const char* k, int64_t def) { return as_int(k, c.find_int(k).value_or(def)); };
  m.n_layer = req_int("num_hidden_layers");
  m.n_embd = req_int("hidden_size");
  m.n_head = req_int("num_attention_heads");
  m.n_head_kv = opt_int("num_key_value_heads", m.n_head);
  if (m.n_head <= 0) fail("{}: field 'num_attention_heads' is {}, expected a positive value", src, m.n_head);
  if (!c.has("head_dim") && m.n_embd % m.n_head != 0)
    fail("{}: hidden_size {} is not a multiple of num_attention_heads {} (and head_dim is not given)", src,
         m.n_embd, m.n_head);
  m.head_dim = opt_int("head_dim", m.n_embd / m.n_head);
  m.n_rot = m.head_dim;
  m.n_ff = opt_int("intermediate_size", 0);
  m.n_vocab = req_int("vocab_size");
  m.n_ctx_train = opt_int("max_position_embeddings", 2048);
  m.rope_theta = static_cast<float>(c.find_float("rope_theta").value_or(10000.0));
  m.rope_interleaved = false;
  if (m.arch == Arch::Bert) {
    m.norm_eps = static_cast<float>(c.find_float("layer_norm_eps").value_or(1e-12));
  } else {
    m.norm_eps = static_cast<float>(c.find_float("rms_norm_eps").value_or(1e-6));
  }
  m.qk_norm = m.arch == Arch::Qwen3 || m.arch == Arch::Qwen3Moe;
  if (m.arch == Arch::Mistral || c.find_bool("use_sliding_window").value_or(false)) {
    m.sliding_window = opt_int("sliding_window", 0);
  }
  if (m.arch == Arch::Qwen3Moe) {
    m.n_expert = req_int("num_experts");
    m.n_expert_used = req_int("num_experts_per_tok");
    m.n_ff_expert = req_int("moe_intermediate_size");
    m.norm_topk_prob = c.find_bool("norm_topk_prob").value_or(false);
  }
  validate_config(m, src, ConfigFields{true, ""});
  if (auto rs = c.find_object("rope_scaling")) {
    auto str = [&](const char* k) {
      const auto it = rs->find(k);
      if (it == rs->end() || it->is_null()) return std::string();
      if (!it->is_string()) fail("{}: rope_scaling.{} has type {}, expected string", src, k, it->type_name());
      return it->get<std::string>();
    };
    std::string type = str("rope_type");
    if (type.empty()) type = str("type");
    if (type == "llama3") {
      m.rope_freq_factors = llama3_freq_factors(*rs, m.n_rot, m.rope_theta, src);
    } else if (type == "linear") {
      const auto it = rs->find("factor");
      const bool given = it != rs->end() && !it->is_null();
      if (given && !it->is_number())
        fail("{}: rope_scaling.factor has type {}, expected number", src, it->type_name());
      const double f = given ? it->get<double>() : 1.0;
      if (!(f > 0) || !std::isfinite(f))
        fail("{}: rope_scaling.factor must be a positive number, got {}", src, f);
      m.rope_freq_scale = static_cast<float>(1.0 / f);
    } else if (!type.empty() && type != "default") {
      fail("{}: rope_scaling type '{}' is not supported (supported: llama3, linear)", src, type);
    }
    validate_config(m, src, ConfigFields{true, ""});  // the RoPE factors
  }
  return m;
}

void check_moe_config(const hf::Config& c, const ModelConfig& m, const std::string& dir) {
  if (m.n_expert <= 0 || m.n_ff_expert <= 0)
    fail("{}/config.json: num_experts ({}) and moe_intermediate_size ({}) must be positive", dir, m.n_expert,
         m.n_ff_expert);
  if (m.n_expert_used <= 0 || m.n_expert_used > m.n_expert)
    fail("{}/config.json: num_experts_per_tok ({}) must be between 1 and num_experts ({})", dir, m.n_expert_used,
         m.n_expert);
  // Every layer must be sparse: dense MLP layers inside a MoE model are not supported.
  if (c.find_int("decoder_sparse_step").value_or(1) != 1)
    fail("{}/config.json: decoder_sparse_step other than 1 is not supported", dir);
  if (const nlohmann::json* v = c.json().contains("mlp_only_layers") ? &c.json()["mlp_only_layers"] : nullptr;
      v && !v->is_null() && !(v->is_array() && v->empty()))
    fail("{}/config.json: mlp_only_layers (dense layers in a MoE model) is not supported", dir);
}

class HfBuilder {
 public:
  HfBuilder(std::shared_ptr<const safetensors::Tensors> st, WeightSet& w) : st_(std::move(st)), w_(w) {}

  const TensorView* find(const std::string& hf_name) const {
    if (const TensorView* t = st_->find(hf_name)) return t;
    if (hf_name.rfind("model.", 0) == 0) return st_->find(hf_name.substr(6));
    return nullptr;
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
  // Adds a 1-D tensor converted to F32.
  void vector_f32(const std::string& hf_name, const std::string& name) {
    const TensorView& t = get(hf_name);
    float* dst = reinterpret_cast<float*>(w_.allocate(t.n_elements() * sizeof(float)));
    dequantize_row(t.type, t.data, dst, t.n_elements());
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
    if (t.n_dims != 2) fail("{}: tensor '{}' should be a matrix, has shape {}", st_->source(), hf_name, t.shape_string());
    float* dst = reinterpret_cast<float*>(w_.allocate(t.n_elements() * sizeof(float)));
    dequantize_row(t.type, t.data, dst, t.n_elements());
    TensorView v;
    v.name = name;
    v.type = DType::F32;
    v.n_dims = 2;
    v.ne = {t.ne[0], t.ne[1], 1, 1};
    v.data = reinterpret_cast<const uint8_t*>(dst);
    v.nbytes = t.n_elements() * sizeof(float);
    w_.add(v);
  }
  // Stacks equally shaped matrices into one 3-D tensor (ne = [cols, rows, count]), e.g. the
  // experts of a MoE layer.
  void stack(const std::vector<std::string>& hf_names, const std::string& name) {
    fuse(hf_names, name);
    const TensorView& f = *w_.find(name);
    const TensorView& first = get(hf_names[0]);
    for (const auto& n : hf_names)
      if (get(n).ne[1] != first.ne[1])
        fail("{}: tensor '{}' has shape {}, expected the shape of '{}' ({})", st_->source(), n, get(n).shape_string(),
             hf_names[0], first.shape_string());
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
      if (t.n_dims != 2) fail("{}: tensor '{}' should be a matrix, has shape {}", st_->source(), n, t.shape_string());
      if (!parts.empty() && (t.type != parts[0]->type || t.ne[0] != parts[0]->ne[0]))
        fail("{}: tensor '{}' ({} {}) cannot be fused with '{}' ({} {})", st_->source(), n, dtype_name(t.type),
             t.shape_string(), hf_names[0], dtype_name(parts[0]->type), parts[0]->shape_string());
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
    v.data = dst;
    v.nbytes = bytes;
    w_.add(v);
  }

 private:
  std::shared_ptr<const safetensors::Tensors> st_;
  WeightSet& w_;
};

}  // namespace

HfModel load_hf_dir(const std::string& dir) {
  const hf::Config cfg = hf::Config::load(dir);
  if (parse_arch(cfg.architecture(), dir + "/config.json") == Arch::Bert) {
    // Config and weights only (ferrum info); running it goes through load_bert().
    auto g = bert_hf_as_gguf(dir);
    HfModel bert{config_from_gguf(*g), weights_from_gguf(g)};
    bert.config.name = fs::path(dir).filename().string();
    return bert;
  }
  HfModel out{config_from_hf(cfg, dir), WeightSet(dir)};
  ModelConfig& m = out.config;
  auto st = std::make_shared<const safetensors::Tensors>(safetensors::Tensors::open_dir(dir));
  out.weights.keep_alive(st);
  HfBuilder b(st, out.weights);
  if (m.arch == Arch::Qwen3Moe) check_moe_config(cfg, m, dir);

  b.alias("model.embed_tokens.weight", "token_embd.weight");
  b.vector_f32("model.norm.weight", "output_norm.weight");
  if (b.find("lm_head.weight")) {
    b.alias("lm_head.weight", "output.weight");
  } else {
    m.tied_embeddings = true;
  }
  const std::string p = "model.layers.";
  for (int l = 0; l < m.n_layer; ++l) {
    const std::string L = p + std::to_string(l) + ".", B = "blk." + std::to_string(l) + ".";
    b.vector_f32(L + "input_layernorm.weight", B + "attn_norm.weight");
    b.vector_f32(L + "post_attention_layernorm.weight", B + "ffn_norm.weight");
    b.fuse({L + "self_attn.q_proj.weight", L + "self_attn.k_proj.weight", L + "self_attn.v_proj.weight"},
           B + "attn_qkv.weight");
    if (b.find(L + "self_attn.q_proj.bias")) {
      m.qkv_bias = true;
      b.vector_f32(L + "self_attn.q_proj.bias", B + "attn_q.bias");
      b.vector_f32(L + "self_attn.k_proj.bias", B + "attn_k.bias");
      b.vector_f32(L + "self_attn.v_proj.bias", B + "attn_v.bias");
    }
    b.alias(L + "self_attn.o_proj.weight", B + "attn_output.weight");
    if (m.qk_norm) {
      b.vector_f32(L + "self_attn.q_norm.weight", B + "attn_q_norm.weight");
      b.vector_f32(L + "self_attn.k_norm.weight", B + "attn_k_norm.weight");
    }
    if (m.arch == Arch::Qwen3Moe) {
      // Per-expert matrices stacked into GGUF's [n_embd, n_ff_exp, n_expert] layout; router in F32.
      auto experts = [&](const char* proj) {
        std::vector<std::string> names;
        for (int e = 0; e < m.n_expert; ++e) names.push_back(fmt::format("{}mlp.experts.{}.{}.weight", L, e, proj));
        return names;
      };
      b.stack(experts("gate_proj"), B + "ffn_gate_exps.weight");
      b.stack(experts("up_proj"), B + "ffn_up_exps.weight");
      b.stack(experts("down_proj"), B + "ffn_down_exps.weight");
      b.matrix_f32(L + "mlp.gate.weight", B + "ffn_gate_inp.weight");
    } else {
      b.fuse({L + "mlp.gate_proj.weight", L + "mlp.up_proj.weight"}, B + "ffn_gate_up.weight");
      b.alias(L + "mlp.down_proj.weight", B + "ffn_down.weight");
    }
  }
  return out;
}

}  // namespace ferrum
