#include "formats/hf_model_config.h"

#include <cmath>
#include <cstdint>
#include <numbers>

#include "core/fail.h"
#include "formats/family.h"
#include "formats/family_fields.h"
#include "formats/model_config_check.h"

namespace ferrum::hf {
namespace {

const Family& family(const Config& c) {
  if (const Family* f = family_by_hf_type(c.architecture())) return *f;
  fail("{}: unknown architecture '{}' (supported: {})", c.path(), c.architecture(),
       arch_names(&Family::hf_type));
}

void read_sizes(const Config& c, const Family& fam, ModelConfig& m) {
  m.n_layer = hf_int(c, "num_hidden_layers");
  m.n_embd = hf_int(c, "hidden_size");
  m.n_head = hf_int(c, "num_attention_heads");
  m.n_head_kv = hf_int_or(c, "num_key_value_heads", m.n_head);
  if (m.n_head <= 0)
    fail("{}: field 'num_attention_heads' is {}, expected a positive value", c.path(), m.n_head);
  if (!c.has("head_dim") && m.n_embd % m.n_head != 0)
    fail("{}: hidden_size {} is not a multiple of num_attention_heads {} (and head_dim is not given)",
         c.path(), m.n_embd, m.n_head);
  m.head_dim = hf_int_or(c, "head_dim", m.n_embd / m.n_head);
  // partial_rotary_factor (Phi-4-mini: 0.75): RoPE on the first int(factor * head_dim) dims of a head.
  const double partial = c.find_float("partial_rotary_factor").value_or(1.0);
  if (!(partial > 0 && partial <= 1))
    fail("{}: partial_rotary_factor is {}, expected a number in (0, 1]", c.path(), partial);
  m.n_rot = static_cast<int>(partial * m.head_dim);
  // A MoE model's dense intermediate_size is unused (every layer is sparse).
  m.n_ff = fam.moe ? hf_int_or(c, "intermediate_size", 0) : hf_int(c, "intermediate_size");
  m.n_vocab = hf_int(c, "vocab_size");
  m.n_ctx_train = hf_int_or(c, "max_position_embeddings", fam.hf_n_ctx);
}

// A window with use_sliding_window (qwen; families with a window of their own set it themselves). A
// missing sliding_window is transformers' default 4096, null means no window.
void read_sliding_window(const Config& c, ModelConfig& m) {
  if (!c.find_bool("use_sliding_window").value_or(false)) return;
  m.sliding_window = c.json().contains("sliding_window") ? hf_int_or(c, "sliding_window", 0) : 4096;
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
                    : hf_int_or(c, "original_max_position_embeddings", 0);
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
  const Family& fam = family(c);
  ModelConfig m;
  m.arch = fam.arch;
  m.name = name;
  read_sizes(c, fam, m);
  m.rope_theta = static_cast<float>(c.find_float("rope_theta").value_or(fam.hf_rope_theta));
  m.rope_interleaved = false;  // HF keeps Q/K rows in rotate-half order
  m.norm_eps = static_cast<float>(
      c.find_float(fam.encoder ? "layer_norm_eps" : "rms_norm_eps").value_or(fam.hf_norm_eps));
  m.tied_embeddings = c.find_bool("tie_word_embeddings").value_or(fam.hf_tied_embeddings);
  read_sliding_window(c, m);
  if (fam.read_hf) fam.read_hf(c, m);
  const ConfigFields fields{true, ""};
  validate_config(m, c.path(), fields);  // sizes first: the RoPE factors depend on n_rot
  if (const nlohmann::json* rs = c.find_object("rope_scaling")) {
    read_rope_scaling(c, *rs, m);
    validate_config(m, c.path(), fields);
  }
  return m;
}

}  // namespace ferrum::hf
