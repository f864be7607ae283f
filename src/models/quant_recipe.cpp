#include "models/quant_recipe.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "core/fail.h"
#include "core/quant.h"
#include "formats/gguf.h"

namespace ferrum {
namespace {

// llama_ftype ids from llama.h.
constexpr std::array<QuantPreset, 31> kPresets = {{
    {"F32", 0, DType::F32},          {"F16", 1, DType::F16},        {"BF16", 32, DType::BF16},
    {"Q4_0", 2, DType::Q4_0},        {"Q4_1", 3, DType::Q4_1},      {"Q5_0", 8, DType::Q5_0},
    {"Q5_1", 9, DType::Q5_1},        {"Q8_0", 7, DType::Q8_0},      {"Q2_K", 10, DType::Q2_K},
    {"Q2_K_S", 21, DType::Q2_K},     {"Q3_K_S", 11, DType::Q3_K},   {"Q3_K_M", 12, DType::Q3_K},
    {"Q3_K_L", 13, DType::Q3_K},     {"Q4_K_S", 14, DType::Q4_K},   {"Q4_K_M", 15, DType::Q4_K},
    {"Q5_K_S", 16, DType::Q5_K},     {"Q5_K_M", 17, DType::Q5_K},   {"Q6_K", 18, DType::Q6_K},
    {"IQ4_NL", 25, DType::IQ4_NL},   {"IQ4_XS", 30, DType::IQ4_XS}, {"MXFP4_MOE", 38, DType::MXFP4},
    {"IQ1_S", 24, DType::IQ1_S},     {"IQ1_M", 31, DType::IQ1_M},   {"IQ2_XXS", 19, DType::IQ2_XXS},
    {"IQ2_XS", 20, DType::IQ2_XS},   {"IQ2_S", 28, DType::IQ2_XS},  {"IQ2_M", 29, DType::IQ2_S},
    {"IQ3_XXS", 23, DType::IQ3_XXS}, {"IQ3_XS", 22, DType::IQ3_S},  {"IQ3_S", 26, DType::IQ3_S},
    {"IQ3_M", 27, DType::IQ3_S},
}};

bool is(const QuantPreset& p, const char* name) {
  return std::string(p.name) == name;
}

// llama.cpp's choice of the layers that get more bits in the mixes.
bool use_more_bits(int i, int n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

int layer_of(const std::string& name) {
  return name.rfind("blk.", 0) == 0 ? std::atoi(name.c_str() + 4) : -1;
}

bool has(const std::string& name, const char* part) {
  return name.find(part) != std::string::npos;
}

// A type for a row length that is not a multiple of its block size (tensor_type_fallback).
DType fallback(DType t, int64_t cols) {
  if (cols % dtype_info(t).block_size == 0) return t;
  DType f;
  switch (t) {
    case DType::IQ1_S:
    case DType::IQ1_M:
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S:
    case DType::IQ4_XS:
      f = DType::IQ4_NL;
      break;
    case DType::Q2_K:
    case DType::Q3_K:
      f = DType::Q4_0;
      break;
    case DType::Q4_K:
      f = DType::Q5_0;
      break;
    case DType::Q5_K:
      f = DType::Q5_1;
      break;
    case DType::Q6_K:
      f = DType::Q8_0;
      break;
    default:
      f = DType::F16;
  }
  return cols % dtype_info(f).block_size == 0 ? f : DType::F16;
}

}  // namespace

const QuantPreset& find_quant_preset(const std::string& name) {
  std::string up = name;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (up == "Q3_K" || up == "Q4_K" || up == "Q5_K") up += "_M";  // llama-quantize's aliases
  for (const auto& p : kPresets)
    if (up == p.name) return p;
  std::string names;
  for (const auto& p : kPresets) names += (names.empty() ? "" : ", ") + std::string(p.name);
  for (const char* p : {"TQ1_0", "TQ2_0"})  // ternary presets: files made with them do not run either
    if (up == p) fail("quantization preset '{}' is not supported by ferrum (ferrum writes {})", name, names);
  fail("unknown quantization preset '{}' (ferrum writes {})", name, names);
}

RecipeModel recipe_model(const gguf::File& in) {
  const std::string arch = in.find_string("general.architecture").value_or("llama");
  auto u = [&](const std::string& key, uint64_t dflt) {
    return static_cast<int>(in.find_uint(arch + "." + key).value_or(dflt));
  };
  RecipeModel m;
  m.n_layer = u("block_count", 1);
  m.n_head = u("attention.head_count", 1);
  m.n_head_kv = u("attention.head_count_kv", static_cast<uint64_t>(m.n_head));
  m.n_expert = u("expert_count", 0);
  m.has_output = false;
  for (const TensorView& t : in.tensors()) {
    m.has_output = m.has_output || t.name == "output.weight";
    m.n_attn_v += t.name.find("attn_v.weight") != std::string::npos ||
                  t.name.find("attn_qkv.weight") != std::string::npos;
  }
  return m;
}

bool quantizable(const TensorView& t) {
  const std::string& n = t.name;
  if (t.n_dims < 2) return false;  // norms, biases
  if (n.size() < 7 || n.compare(n.size() - 7, 7, ".weight") != 0) return false;
  if (has(n, "_norm") || n == "rope_freqs.weight" || has(n, "rope_factors")) return false;
  if (has(n, "ffn_gate_inp")) return false;  // MoE router stays F32
  return !has(n, "position_embd") && !has(n, "token_types");
}

namespace {
constexpr DType kWritten[] = {DType::F32,   DType::F16,     DType::BF16,   DType::Q8_0,   DType::Q4_0,
                              DType::Q4_1,  DType::Q5_0,    DType::Q5_1,   DType::Q2_K,   DType::Q3_K,
                              DType::Q4_K,  DType::Q5_K,    DType::Q6_K,   DType::IQ4_NL, DType::IQ4_XS,
                              DType::MXFP4, DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S,  DType::IQ3_XXS,
                              DType::IQ3_S, DType::IQ1_S,   DType::IQ1_M};
}  // namespace

std::optional<DType> writable_type(const std::string& name) {
  const auto t = dtype_from_name(name);
  for (DType w : kWritten)
    if (t == w) return w;
  return std::nullopt;
}

std::string writable_type_names() {
  std::string names;
  for (DType w : kWritten) names += (names.empty() ? "" : ", ") + std::string(dtype_name(w));
  return names;
}

DType quant_type_from_name(const std::string& name, const std::string& flag) {
  if (const auto t = writable_type(name)) return *t;
  fail("{}: '{}' is not a type ferrum writes ({})", flag, name, writable_type_names());
}

std::pair<std::string, DType> parse_tensor_type(const std::string& value) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
    fail("--tensor-type: '{}' is not PATTERN=TYPE (e.g. attn_v=q8_0)", value);
  std::string pattern = value.substr(0, eq);
  std::transform(pattern.begin(), pattern.end(), pattern.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return {pattern, quant_type_from_name(value.substr(eq + 1), "--tensor-type " + value)};
}

QuantRecipe::QuantRecipe(const QuantPreset& preset, const RecipeModel& model, bool has_imatrix,
                         QuantOverrides overrides)
    : p_(preset), m_(model), has_imatrix_(has_imatrix), o_(std::move(overrides)) {
  for (const auto& [pattern, type] : o_.tensor_types) {
    try {
      patterns_.emplace_back(pattern);
    } catch (const std::regex_error& e) {
      fail("--tensor-type: '{}' is not a regular expression ({})", pattern, e.what());
    }
  }
}

// The flags' types, in llama-quantize's order of precedence.
std::optional<DType> QuantRecipe::overridden(const TensorView& t) const {
  if (o_.embedding_type && t.name == "token_embd.weight") return o_.embedding_type;
  if (o_.output_type && t.name == "output.weight") return o_.output_type;
  if (!dtype_info(p_.base).quantized) return std::nullopt;  // patterns and --pure: quantized presets only
  for (size_t i = 0; i < patterns_.size(); ++i)
    if (std::regex_search(t.name, patterns_[i])) return fallback(o_.tensor_types[i].second, t.ne[0]);
  if (o_.pure) return fallback(p_.base, t.ne[0]);
  return std::nullopt;
}

DType QuantRecipe::type_of(const TensorView& t) {
  if (!quantizable(t) || (o_.leave_output && t.name == "output.weight")) return t.type;
  if (const auto o = overridden(t)) return *o;
  if (!dtype_info(p_.base).quantized) return p_.base;  // F32 / F16 / BF16: no rules
  const std::string& n = t.name;
  if (n == "output.weight" || (!m_.has_output && n == "token_embd.weight"))
    return fallback(output_type(t), t.ne[0]);
  // MXFP4_MOE: the experts' stacks (3-D) in MXFP4, every other matrix Q8_0.
  if (is(p_, "MXFP4_MOE"))
    return fallback(t.n_dims >= 3 && t.ne[2] > 1 ? DType::MXFP4 : DType::Q8_0, t.ne[0]);
  if (n == "token_embd.weight") return fallback(embedding_type(), t.ne[0]);
  if (low_iq_mix()) return fallback(low_iq_rule(n), t.ne[0]);
  return fallback(rule(n, p_.base), t.ne[0]);
}

bool QuantRecipe::low_iq_mix() const {
  for (const char* p : {"IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"})
    if (is(p_, p)) return true;
  return false;
}

// The matrix that produces the logits: Q6_K unless the preset is Q8_0 or MXFP4_MOE (Q8_0 also if
// rows split into no K blocks); Q5_K for the IQ1/IQ2/IQ3_XXS mixes.
DType QuantRecipe::output_type(const TensorView& t) const {
  if (o_.output_type) return *o_.output_type;  // tied embeddings: --output-tensor-type
  if (is(p_, "MXFP4_MOE") || t.ne[0] % dtype_info(p_.base).block_size != 0) return DType::Q8_0;
  if (low_iq_mix() || is(p_, "IQ3_XXS")) return DType::Q5_K;
  return p_.base == DType::Q8_0 ? DType::Q8_0 : DType::Q6_K;
}

DType QuantRecipe::embedding_type() const {
  for (const char* p : {"IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"})
    if (is(p_, p)) return DType::Q2_K;
  for (const char* p : {"IQ2_S", "IQ2_M", "IQ3_XXS"})
    if (is(p_, p)) return DType::IQ3_S;
  return p_.base;
}

// The IQ1/IQ2 mixes: more bits for attn_v, the first eighth of the ffn_down matrices and
// attn_output; IQ2_S/IQ2_M in IQ3_S where the others use Q2_K.
DType QuantRecipe::low_iq_rule(const std::string& n) {
  const bool iq2s = is(p_, "IQ2_S") || is(p_, "IQ2_M");
  const int n_gqa = m_.n_head_kv > 0 ? m_.n_head / m_.n_head_kv : 1;
  if (has(n, "attn_v.weight") || has(n, "attn_qkv.weight")) {
    ++i_attn_v_;
    if (n_gqa >= 4 || m_.n_expert >= 4) return DType::Q4_K;
    return iq2s ? DType::IQ3_S : DType::Q2_K;
  }
  if (m_.n_expert == 8 && has(n, "attn_k.weight")) return DType::Q4_K;
  if (has(n, "ffn_down")) {
    const bool first = i_ffn_down_++ < m_.n_layer / 8;
    return first ? (iq2s ? DType::IQ3_S : DType::Q2_K) : p_.base;
  }
  if (has(n, "attn_output.weight")) {
    if (m_.n_expert == 8) return DType::Q5_K;
    if (is(p_, "IQ1_S") || is(p_, "IQ1_M")) return DType::IQ2_XXS;
    if (iq2s) return DType::IQ3_S;
  }
  return p_.base;
}

// llama_tensor_get_type_impl for ferrum's presets and architectures (no Falcon, no 70B special).
DType QuantRecipe::rule(const std::string& n, DType base) {
  if (has(n, "attn_v.weight") || has(n, "attn_qkv.weight")) return attn_v_type(base);
  if (has(n, "attn_k.weight") || has(n, "attn_q.weight")) {
    if (m_.n_expert == 8 && has(n, "attn_k.weight")) return DType::Q8_0;
    if (is(p_, "IQ3_XS")) return DType::IQ3_XXS;
    if (is(p_, "IQ3_XXS")) return DType::IQ2_S;
    return base;
  }
  if (has(n, "ffn_down")) return ffn_down_type(n, base);
  if (has(n, "attn_output.weight")) return attn_output_type(base);
  if (has(n, "ffn_gate") || has(n, "ffn_up")) {
    const int l = layer_of(n), L = m_.n_layer;
    if (is(p_, "IQ3_XS") && l >= L / 8 && l < 7 * L / 8) return DType::IQ3_XXS;
  }
  return base;
}

DType QuantRecipe::attn_v_type(DType base) {
  const int n_gqa = m_.n_head_kv > 0 ? m_.n_head / m_.n_head_kv : 1;
  DType t = base;
  const int i = i_attn_v_++;
  if (is(p_, "Q2_K"))
    t = n_gqa >= 4 ? DType::Q4_K : DType::Q3_K;
  else if (is(p_, "Q2_K_S") && n_gqa >= 4)
    t = DType::Q4_K;
  else if (is(p_, "IQ3_XXS"))
    t = n_gqa >= 4 ? DType::Q4_K : has_imatrix_ ? DType::IQ3_XXS : DType::IQ3_S;
  else if ((is(p_, "IQ3_XS") || is(p_, "IQ3_S")) && n_gqa >= 4)
    t = DType::Q4_K;
  else if (is(p_, "IQ3_M"))
    t = DType::Q4_K;
  else if (is(p_, "Q3_K_M"))
    t = i < 2 ? DType::Q5_K : DType::Q4_K;
  else if (is(p_, "Q3_K_L"))
    t = DType::Q5_K;
  else if ((is(p_, "IQ4_NL") || is(p_, "IQ4_XS")) && n_gqa >= 4)
    t = DType::Q5_K;
  else if ((is(p_, "Q4_K_M") || is(p_, "Q5_K_M")) && use_more_bits(i, m_.n_attn_v))
    t = DType::Q6_K;
  else if (is(p_, "Q4_K_S") && i < 4)
    t = DType::Q5_K;
  return m_.n_expert == 8 ? DType::Q8_0 : t;
}

DType QuantRecipe::ffn_down_type(const std::string& n, DType base) {
  const int l = layer_of(n), L = m_.n_layer;
  ++i_ffn_down_;
  if (is(p_, "Q2_K")) return DType::Q3_K;
  if (is(p_, "Q2_K_S")) return l < L / 8 ? DType::Q4_K : base;
  if (is(p_, "IQ3_XXS") && !has_imatrix_) return l < L / 8 ? DType::Q4_K : DType::Q3_K;
  if (is(p_, "Q3_K_M")) return l < L / 16 ? DType::Q5_K : DType::Q4_K;
  if (is(p_, "IQ3_M")) return l < L / 8 || (m_.n_expert == 8 && use_more_bits(l, L)) ? DType::Q4_K : base;
  if (is(p_, "Q3_K_L")) return DType::Q5_K;
  if (is(p_, "Q4_K_M")) return use_more_bits(l, L) ? DType::Q6_K : base;
  if ((is(p_, "IQ4_NL") || is(p_, "IQ4_XS")) && l < L / 8 && !has_imatrix_) return DType::Q5_K;
  if (is(p_, "Q5_K_M") && use_more_bits(l, L)) return DType::Q6_K;
  if (is(p_, "Q4_K_S") && l < L / 8) return DType::Q5_K;
  // With an importance matrix the first eighth of Q4_0/Q5_0 ffn_down gets a min (llama.cpp: they
  // can go wrong there even with one).
  if ((is(p_, "Q4_0") || is(p_, "Q5_0")) && has_imatrix_ && l < L / 8)
    return is(p_, "Q4_0") ? DType::Q4_1 : DType::Q5_1;
  return base;
}

DType QuantRecipe::attn_output_type(DType base) const {
  if (m_.n_expert == 8) {
    for (const char* p : {"Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M",
                          "IQ3_S", "IQ3_M", "IQ4_XS"})
      if (is(p_, p)) return DType::Q5_K;
    return base;
  }
  if (is(p_, "Q2_K")) return DType::Q3_K;
  if (is(p_, "IQ3_XXS")) return DType::IQ3_S;
  if (is(p_, "Q3_K_M") || is(p_, "IQ3_M")) return DType::Q4_K;
  if (is(p_, "Q3_K_L")) return DType::Q5_K;
  return base;
}

bool QuantRecipe::needs_importance(const TensorView& t, DType to) const {
  if (t.name == "token_embd.weight" || t.name == "output.weight") return false;
  if (to == DType::IQ3_XXS || to == DType::IQ2_S) return true;  // llama-quantize asks for one
  if (to == DType::Q2_K) return is(p_, "Q2_K_S");
  return quantize_needs_importance(to);
}

}  // namespace ferrum
