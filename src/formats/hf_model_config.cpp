#include "formats/hf_model_config.h"

#include <cmath>
#include <cstdint>
#include <numbers>

#include "core/fail.h"
#include "formats/arch_table.h"
#include "formats/model_config_check.h"

namespace ferrum::hf {
namespace {

const ArchInfo& family(const Config& c) {
  if (const ArchInfo* f = arch_by_hf_type(c.architecture())) return *f;
  fail("{}: unknown architecture '{}' (supported: {})", c.path(), c.architecture(),
       arch_names(&ArchInfo::hf_type));
}

// Sizes are read as ints; validate_config() checks their ranges and how they fit together.
int as_int(const Config& c, const char* k, int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX) fail("{}: field '{}' is {}, out of range", c.path(), k, v);
  return static_cast<int>(v);
}
int req_int(const Config& c, const char* k) {
  return as_int(c, k, c.get_int(k));
}
int opt_int(const Config& c, const char* k, int64_t def) {
  return as_int(c, k, c.find_int(k).value_or(def));
}

void read_sizes(const Config& c, const ArchInfo& fam, ModelConfig& m) {
  m.n_layer = req_int(c, "num_hidden_layers");
  m.n_embd = req_int(c, "hidden_size");
  m.n_head = req_int(c, "num_attention_heads");
  m.n_head_kv = opt_int(c, "num_key_value_heads", m.n_head);
  if (m.n_head <= 0)
    fail("{}: field 'num_attention_heads' is {}, expected a positive value", c.path(), m.n_head);
  if (!c.has("head_dim") && m.n_embd % m.n_head != 0)
    fail("{}: hidden_size {} is not a multiple of num_attention_heads {} (and head_dim is not given)",
         c.path(), m.n_embd, m.n_head);
  m.head_dim = opt_int(c, "head_dim", m.n_embd / m.n_head);
  // partial_rotary_factor (Phi-4-mini: 0.75): RoPE on the first int(factor * head_dim) dims of a head.
  const double partial = c.find_float("partial_rotary_factor").value_or(1.0);
  if (!(partial > 0 && partial <= 1))
    fail("{}: partial_rotary_factor is {}, expected a number in (0, 1]", c.path(), partial);
  m.n_rot = static_cast<int>(partial * m.head_dim);
  // A MoE model's dense intermediate_size is unused (every layer is sparse).
  m.n_ff = m.arch == Arch::Qwen3Moe ? opt_int(c, "intermediate_size", 0) : req_int(c, "intermediate_size");
  m.n_vocab = req_int(c, "vocab_size");
  m.n_ctx_train = opt_int(c, "max_position_embeddings", fam.hf_n_ctx);
}

// Mistral always has a window; qwen only with use_sliding_window. A missing sliding_window is
// transformers' default 4096, null means no window.
void read_sliding_window(const Config& c, ModelConfig& m) {
  if (m.is_gemma()) return;    // read_gemma
  if (m.arch == Arch::Phi3) {  // a window when the config gives one
    m.sliding_window = opt_int(c, "sliding_window", 0);
    return;
  }
  if (m.arch != Arch::Mistral && !c.find_bool("use_sliding_window").value_or(false)) return;
  m.sliding_window = c.json().contains("sliding_window") ? opt_int(c, "sliding_window", 0) : 4096;
}

// layer_types (sliding_attention / full_attention per layer) into m.swa_layers; false when the
// config has none.
bool read_layer_types(const Config& c, ModelConfig& m) {
  const auto types = c.json().find("layer_types");
  if (types == c.json().end() || !types->is_array()) return false;
  if (types->size() != static_cast<size_t>(m.n_layer))
    fail("{}: layer_types has {} entries for {} layers", c.path(), types->size(), m.n_layer);
  for (const auto& t : *types) {
    const std::string s = t.is_string() ? t.get<std::string>() : "";
    if (s != "sliding_attention" && s != "full_attention")
      fail("{}: layer_types holds {}, expected sliding_attention or full_attention", c.path(), t.dump());
    m.swa_layers.push_back(s == "sliding_attention");
  }
  return true;
}

// gpt-oss (transformers' GptOssConfig): num_local_experts experts of intermediate_size, the k
// largest router logits softmaxed, the clamped SwiGLU (swiglu_limit), q/k/v/o biases
// (attention_bias), a window of sliding_window (128) on the layers layer_types names (default: the
// even ones), attention sinks (tensors).
void read_gpt_oss(const Config& c, ModelConfig& m) {
  m.n_expert = req_int(c, "num_local_experts");
  m.n_expert_used = opt_int(c, "num_experts_per_tok", c.find_int("experts_per_token").value_or(4));
  m.n_ff_expert = m.n_ff;
  m.moe_gating = ModelConfig::MoeGating::SoftmaxTopK;
  m.ffn_act = ModelConfig::Activation::SiLUClamped;
  m.glu_limit = static_cast<float>(c.find_float("swiglu_limit").value_or(7.0));
  m.qkv_bias = c.find_bool("attention_bias").value_or(true);
  m.sliding_window = opt_int(c, "sliding_window", 128);
  if (!read_layer_types(c, m))
    for (int l = 0; l < m.n_layer; ++l) m.swa_layers.push_back(l % 2 == 0);
}

// Gemma 2 and 3 (transformers' Gemma2Config, Gemma3TextConfig): embeddings times sqrt(hidden_size),
// sandwich norms, GeGLU (gelu_pytorch_tanh), scores scaled by query_pre_attn_scalar^-1/2, a sliding
// window on the layers layer_types names (default: Gemma 2 the even ones, Gemma 3 all but every
// sliding_window_pattern-th). Gemma 2 soft-caps scores and logits; Gemma 3 norms q and k per head and
// gives its windowed layers their own RoPE base (rope_local_base_freq, unscaled).
void read_gemma(const Config& c, ModelConfig& m) {
  m.embed_scale = std::sqrt(static_cast<float>(m.n_embd));
  m.post_norms = true;
  const std::string act = c.find_string("hidden_activation").value_or("gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh")
    fail("{}: hidden_activation '{}' is not supported (gelu_pytorch_tanh)", c.path(), act);
  m.ffn_act = ModelConfig::Activation::GeluTanh;
  const double qpa = c.find_float("query_pre_attn_scalar").value_or(m.head_dim);
  if (!(qpa > 0)) fail("{}: query_pre_attn_scalar must be positive, got {}", c.path(), qpa);
  m.attn_scale = static_cast<float>(1.0 / std::sqrt(qpa));
  m.attn_softcap = static_cast<float>(c.find_float("attn_logit_softcapping").value_or(0.0));
  m.final_softcap = static_cast<float>(c.find_float("final_logit_softcapping").value_or(0.0));
  m.sliding_window = opt_int(c, "sliding_window", 4096);
  if (!read_layer_types(c, m)) {
    const int64_t period = m.arch == Arch::Gemma2 ? 2 : c.find_int("sliding_window_pattern").value_or(6);
    if (period < 1) fail("{}: sliding_window_pattern must be at least 1, got {}", c.path(), period);
    for (int l = 0; l < m.n_layer; ++l)
      m.swa_layers.push_back(m.arch == Arch::Gemma2 ? l % 2 == 0 : (l + 1) % period != 0);
  }
  if (m.arch == Arch::Gemma3) {
    m.qk_norm = true;
    m.rope_theta_swa = static_cast<float>(c.find_float("rope_local_base_freq").value_or(10000.0));
  }
}

// SmolLM3: no_rope_layers[l] is 1 where layer l applies RoPE (transformers' SmolLM3Config), else
// every no_rope_layer_interval-th layer goes without.
void read_rope_layers(const Config& c, ModelConfig& m) {
  const auto it = c.json().find("no_rope_layers");
  if (it != c.json().end() && !it->is_null()) {
    if (!it->is_array() || it->size() != static_cast<size_t>(m.n_layer))
      fail("{}: no_rope_layers must be a list of {} numbers (one per layer), got {}", c.path(), m.n_layer,
           it->is_array() ? fmt::format("{} values", it->size()) : std::string(it->type_name()));
    for (const auto& v : *it) {
      if (!v.is_number_integer() || (v.get<int64_t>() != 0 && v.get<int64_t>() != 1))
        fail("{}: no_rope_layers holds {}, expected 0 or 1", c.path(), v.dump());
      m.rope_layers.push_back(static_cast<uint8_t>(v.get<int64_t>()));
    }
    return;
  }
  const int64_t every = c.find_int("no_rope_layer_interval").value_or(4);
  if (every < 1) fail("{}: no_rope_layer_interval must be at least 1, got {}", c.path(), every);
  for (int l = 0; l < m.n_layer; ++l) m.rope_layers.push_back((l + 1) % every != 0);
}

void read_moe(const Config& c, ModelConfig& m) {
  m.n_expert = req_int(c, "num_experts");
  m.n_expert_used = req_int(c, "num_experts_per_tok");
  m.n_ff_expert = req_int(c, "moe_intermediate_size");
  m.norm_topk_prob = c.find_bool("norm_topk_prob").value_or(false);
  // Every layer must be sparse: dense MLP layers inside a MoE model are not supported.
  if (c.find_int("decoder_sparse_step").value_or(1) != 1)
    fail("{}: decoder_sparse_step other than 1 is not supported", c.path());
  const auto it = c.json().find("mlp_only_layers");
  if (it != c.json().end() && !it->is_null() && !(it->is_array() && it->empty()))
    fail("{}: mlp_only_layers (dense layers in a MoE model) is not supported", c.path());
}

// rope_scaling.rope_type, else the legacy rope_scaling.type; "" when neither is given.
std::string rope_type(const Config& c, const nlohmann::json& rs) {
  std::string type;
  for (const char* k : {"type", "rope_type"}) {  // rope_type wins, as in transformers
    const auto it = rs.find(k);
    if (it == rs.end() || it->is_null()) continue;
    if (!it->is_string())
      fail("{}: rope_scaling.{} has type {}, expected string", c.path(), k, it->type_name());
    type = it->get<std::string>();
  }
  return type;
}

// A number transformers requires for this rope type.
double rope_number(const Config& c, const nlohmann::json& rs, const char* k, const std::string& type) {
  const auto it = rs.find(k);
  if (it == rs.end() || it->is_null())
    fail("{}: rope_scaling.{} is missing (required for rope type '{}')", c.path(), k, type);
  if (!it->is_number())
    fail("{}: rope_scaling.{} has type {}, expected number", c.path(), k, it->type_name());
  return it->get<double>();
}

// Llama-3 RoPE scaling as per-pair frequency divisors, computed like llama.cpp's converter
// (conversion/llama.py generate_extra_tensors): the base frequencies are float32 (powf), the rest
// double. This reproduces the fixture's rope_freqs.weight bit for bit.
std::vector<float> llama3_factors(const Config& c, const nlohmann::json& rs, float theta, int n_rot) {
  const double factor = rope_number(c, rs, "factor", "llama3"),
               low = rope_number(c, rs, "low_freq_factor", "llama3"),
               high = rope_number(c, rs, "high_freq_factor", "llama3"),
               old_ctx = rope_number(c, rs, "original_max_position_embeddings", "llama3");
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  std::vector<float> out(static_cast<size_t>(n_rot / 2));
  for (int i = 0; i < n_rot / 2; ++i) {
    const float freq = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(n_rot));
    const double wavelen = 2 * std::numbers::pi / static_cast<double>(freq);
    double v;
    if (wavelen < high_wavelen) {
      v = 1.0;
    } else if (wavelen > low_wavelen) {
      v = factor;
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      v = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out[static_cast<size_t>(i)] = static_cast<float>(v);
  }
  return out;
}

// Phi-3 LongRoPE ("longrope", formerly "su"): per-pair divisors for short and long contexts and the
// attention factor transformers derives from the extension ratio (or rope_scaling.attention_factor).
void read_longrope(const Config& c, const nlohmann::json& rs, ModelConfig& m) {
  auto factors = [&](const char* k) {
    const auto it = rs.find(k);
    if (it == rs.end() || !it->is_array() || it->size() != static_cast<size_t>(m.n_rot / 2))
      fail("{}: rope_scaling.{} must be a list of {} numbers (half the rotated dimensions)", c.path(), k,
           m.n_rot / 2);
    std::vector<float> v;
    for (const auto& x : *it) {
      if (!x.is_number() || !(x.get<double>() > 0) || !std::isfinite(x.get<double>()))
        fail("{}: rope_scaling.{} holds {}, expected positive numbers", c.path(), k, x.dump());
      v.push_back(static_cast<float>(x.get<double>()));
    }
    return v;
  };
  auto& lr = m.longrope;
  lr.long_factors = factors("long_factor");
  lr.short_factors = factors("short_factor");
  const auto orig = rs.find("original_max_position_embeddings");
  lr.orig_ctx = orig != rs.end() && orig->is_number_integer()
                    ? orig->get<int>()
                    : opt_int(c, "original_max_position_embeddings", 0);
  if (lr.orig_ctx <= 0)
    fail("{}: LongRoPE needs original_max_position_embeddings (a positive number)", c.path());
  const auto af = rs.find("attention_factor");
  if (af != rs.end() && af->is_number()) {
    lr.attn_factor = static_cast<float>(af->get<double>());
  } else {
    const double scale = static_cast<double>(m.n_ctx_train) / lr.orig_ctx;
    lr.attn_factor =
        scale <= 1 ? 1.0f : static_cast<float>(std::sqrt(1 + std::log(scale) / std::log(lr.orig_ctx)));
  }
}

// YaRN as transformers reads it: factor, the original context (rope_scaling's, else
// max_position_embeddings), beta_fast/beta_slow (32, 1), truncate (true), and the attention factor:
// attention_factor, else mscale / mscale_all_dim's ratio, else 0.1 ln(factor) + 1 (left 0 here).
void read_yarn(const Config& c, const nlohmann::json& rs, ModelConfig& m) {
  auto& y = m.yarn;
  const double f = rope_number(c, rs, "factor", "yarn");
  if (!(f >= 1) || !std::isfinite(f))
    fail("{}: rope_scaling.factor must be a number >= 1, got {}", c.path(), f);
  y.factor = static_cast<float>(f);
  auto opt = [&](const char* k, double dflt) {
    const auto it = rs.find(k);
    if (it == rs.end() || it->is_null()) return dflt;
    if (!it->is_number() || !std::isfinite(it->get<double>()) || !(it->get<double>() > 0))
      fail("{}: rope_scaling.{} must be a positive number, got {}", c.path(), k, it->dump());
    return it->get<double>();
  };
  y.orig_ctx = static_cast<int>(opt("original_max_position_embeddings", m.n_ctx_train));
  if (y.orig_ctx <= 0) fail("{}: YaRN needs original_max_position_embeddings (a positive number)", c.path());
  y.beta_fast = static_cast<float>(opt("beta_fast", 32));
  y.beta_slow = static_cast<float>(opt("beta_slow", 1));
  if (const auto t = rs.find("truncate"); t != rs.end() && !t->is_null()) {
    if (!t->is_boolean()) fail("{}: rope_scaling.truncate must be true or false", c.path());
    y.truncate = t->get<bool>();
  }
  const double af = opt("attention_factor", 0), ms = opt("mscale", 0), msa = opt("mscale_all_dim", 0);
  auto get_mscale = [&](double m) { return f <= 1 ? 1.0 : 0.1 * m * std::log(f) + 1.0; };
  if (af > 0)
    y.attn_factor = static_cast<float>(af);
  else if (ms > 0 && msa > 0)
    y.attn_factor = static_cast<float>(get_mscale(ms) / get_mscale(msa));
}

void read_rope_scaling(const Config& c, const nlohmann::json& rs, ModelConfig& m) {
  const std::string type = rope_type(c, rs);
  if (type == "longrope" || type == "su") {
    read_longrope(c, rs, m);
  } else if (type == "yarn") {
    read_yarn(c, rs, m);
  } else if (type == "llama3") {
    m.rope_freq_factors = llama3_factors(c, rs, m.rope_theta, m.n_rot);
  } else if (type == "linear") {
    const double f = rope_number(c, rs, "factor", type);
    if (!(f > 0) || !std::isfinite(f))
      fail("{}: rope_scaling.factor must be a positive number, got {}", c.path(), f);
    m.rope_freq_scale = static_cast<float>(1.0 / f);
  } else if (!type.empty() && type != "default") {
    fail("{}: rope_scaling type '{}' is not supported (supported: llama3, linear, longrope, yarn)", c.path(),
         type);
  }
}

}  // namespace

ModelConfig model_config(const Config& c, const std::string& name) {
  const ArchInfo& fam = family(c);
  ModelConfig m;
  m.arch = fam.arch;
  m.name = name;
  read_sizes(c, fam, m);
  const double theta = m.arch == Arch::Gemma3 ? 1e6 : m.arch == Arch::GptOss ? 150000.0 : 10000.0;
  m.rope_theta = static_cast<float>(c.find_float("rope_theta").value_or(theta));
  m.rope_interleaved = false;  // HF keeps Q/K rows in rotate-half order
  if (m.arch == Arch::Bert) {
    m.norm_eps = static_cast<float>(c.find_float("layer_norm_eps").value_or(1e-12));
  } else {
    m.norm_eps =
        static_cast<float>(c.find_float("rms_norm_eps").value_or(m.arch == Arch::GptOss ? 1e-5 : 1e-6));
  }
  m.qk_norm = m.arch == Arch::Qwen3 || m.arch == Arch::Qwen3Moe;
  m.qkv_bias = m.arch == Arch::Qwen2;
  m.tied_embeddings = c.find_bool("tie_word_embeddings").value_or(m.arch == Arch::Bert || m.is_gemma());
  read_sliding_window(c, m);
  if (m.arch == Arch::Qwen3Moe) read_moe(c, m);
  if (m.arch == Arch::GptOss) read_gpt_oss(c, m);
  if (m.arch == Arch::SmolLM3) read_rope_layers(c, m);
  if (m.is_gemma()) read_gemma(c, m);
  const ConfigFields fields{true, ""};
  validate_config(m, c.path(), fields);  // sizes first: the RoPE factors depend on n_rot
  if (const nlohmann::json* rs = c.find_object("rope_scaling")) {
    read_rope_scaling(c, *rs, m);
    validate_config(m, c.path(), fields);
  }
  return m;
}

}  // namespace ferrum::hf
