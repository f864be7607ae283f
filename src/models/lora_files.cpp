// The two LoRA file forms, parsed into A/B pairs (not yet checked against a model):
// - PEFT: adapter_config.json (r, lora_alpha, use_rslora, rank_pattern/alpha_pattern,
//   target_modules) + adapter_model.safetensors with tensors
//   base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight (r x in) and .lora_B (out x r).
// - llama.cpp GGUF LoRA: general.type = adapter, adapter.type = lora, adapter.lora.alpha, tensors
//   blk.N.attn_q.weight.lora_a (ne {in, r}) and .lora_b (ne {r, out}); Q/K rows of llama files
//   are permuted as llama.cpp's converter permutes the base.
// Matrices are copied into owned memory: F32 and F16 as they are, anything else as F32.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

#include "core/fail.h"
#include "core/quant.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "models/lora_adapter.h"

namespace fs = std::filesystem;

namespace ferrum {
namespace {

// An owned copy of a 2-D tensor in F32 or F16 (other types dequantized to F32).
TensorView copy_matrix(LoraFile& f, const TensorView& t, const std::string& name) {
  if (t.n_dims != 2 || t.ne[0] <= 0 || t.ne[1] <= 0)
    fail("{}: tensor '{}' has shape {}, expected a matrix", f.source, name, t.shape_string());
  if (!dtype_info(t.type).supported)
    fail("{}: tensor '{}' has type {}, which ferrum does not run (it runs {})", f.source, name,
         dtype_label(t.type), supported_dtype_names());
  TensorView c = t;
  c.name = name;
  c.type = t.type == DType::F16 ? DType::F16 : DType::F32;
  c.nbytes = row_size(c.type, c.ne[0]) * static_cast<size_t>(c.ne[1]);
  auto buf =
      std::shared_ptr<uint8_t[]>(static_cast<uint8_t*>(std::aligned_alloc(64, (c.nbytes + 63) / 64 * 64)),
                                 [](uint8_t* p) { std::free(p); });
  if (!buf) fail("{}: out of memory for tensor '{}'", f.source, name);
  if (c.type == t.type)
    std::memcpy(buf.get(), t.data, c.nbytes);
  else {
    // Rows go through an aligned copy: safetensors data need not be aligned to its element size.
    std::vector<uint64_t> row((t.row_bytes() + 7) / 8);
    for (int64_t r = 0; r < t.ne[1]; ++r) {
      std::memcpy(row.data(), t.row(r), t.row_bytes());
      dequantize_row(t.type, row.data(), reinterpret_cast<float*>(buf.get()) + r * t.ne[0], t.ne[0]);
    }
  }
  c.data = buf.get();
  f.storage.push_back(std::shared_ptr<const void>(buf, buf.get()));
  return c;
}

const std::map<std::string, LoraTarget>& peft_modules() {
  static const std::map<std::string, LoraTarget> m = {
      {"self_attn.q_proj", LoraTarget::Q}, {"self_attn.k_proj", LoraTarget::K},
      {"self_attn.v_proj", LoraTarget::V}, {"self_attn.qkv_proj", LoraTarget::Qkv},
      {"self_attn.o_proj", LoraTarget::O}, {"mlp.gate_proj", LoraTarget::Gate},
      {"mlp.up_proj", LoraTarget::Up},     {"mlp.gate_up_proj", LoraTarget::GateUp},
      {"mlp.down_proj", LoraTarget::Down}};
  return m;
}

// PEFT's rank_pattern / alpha_pattern: a key applies to a module whose name ends with it (at a
// '.' boundary), as PEFT matches `(.*\.)?key$`.
// A regular expression from adapter_config.json; a malformed one is an error naming the field.
std::regex config_regex(const std::string& re, const std::string& src, const char* field) {
  try {
    return std::regex(re);
  } catch (const std::regex_error& e) {
    fail("{}: '{}' in field '{}' is not a valid regular expression ({})", src, re, field, e.what());
  }
}

const nlohmann::json* pattern_value(const nlohmann::json& cfg, const std::string& src, const char* field,
                                    const std::string& module) {
  const auto it = cfg.find(field);
  if (it == cfg.end() || !it->is_object()) return nullptr;
  for (const auto& [key, v] : it->items())
    if (std::regex_match(module, config_regex("(.*\\.)?(" + key + ")$", src, field))) return &v;
  return nullptr;
}

double number_field(const nlohmann::json& cfg, const std::string& src, const char* key, double def) {
  const auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return def;
  if (!it->is_number()) fail("{}: field '{}' has type {}, expected a number", src, key, it->type_name());
  return it->get<double>();
}

bool bool_field(const nlohmann::json& cfg, const std::string& src, const char* key) {
  const auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return false;
  if (!it->is_boolean()) fail("{}: field '{}' has type {}, expected a boolean", src, key, it->type_name());
  return it->get<bool>();
}

// Whether target_modules (a list of names or one regular expression) covers `module`.
bool targeted(const nlohmann::json& tm, const std::string& module, const std::string& src) {
  if (tm.is_string())
    return std::regex_match(module, config_regex(tm.get<std::string>(), src, "target_modules"));
  const std::string leaf = module.substr(module.rfind('.') + 1);
  for (const auto& v : tm)
    if (v.is_string() && (v.get<std::string>() == leaf || module.ends_with("." + v.get<std::string>())))
      return true;
  return false;
}

}  // namespace

LoraFileRaw read_peft_dir(const std::string& dir) {
  const std::string cfg_path = (fs::path(dir) / "adapter_config.json").string();
  const std::string st_path = (fs::path(dir) / "adapter_model.safetensors").string();
  if (!fs::exists(cfg_path)) fail("{}: a PEFT adapter directory needs adapter_config.json", dir);
  if (!fs::exists(st_path))
    fail(
        "{}: no adapter_model.safetensors (PyTorch .bin adapters are not read: save with safe_serialization)",
        dir);
  const nlohmann::json cfg = hf::read_json_file(cfg_path);
  if (!cfg.is_object()) fail("{}: expected a JSON object", cfg_path);
  if (auto pt = cfg.find("peft_type"); pt != cfg.end() && pt->is_string() && *pt != "LORA")
    fail("{}: peft_type is '{}', only LORA adapters are supported", cfg_path, pt->get<std::string>());
  if (bool_field(cfg, cfg_path, "use_dora"))
    fail("{}: use_dora is set; DoRA adapters are not supported", cfg_path);
  const double r = number_field(cfg, cfg_path, "r", 8), alpha = number_field(cfg, cfg_path, "lora_alpha", 8);
  const bool rslora = bool_field(cfg, cfg_path, "use_rslora");
  // fan_in_fan_out only says how a Conv1D base stores its weight; lora_A/lora_B are nn.Linear
  // either way (PEFT itself turns it off for nn.Linear bases), so it changes nothing here.
  bool_field(cfg, cfg_path, "fan_in_fan_out");
  const auto tm = cfg.find("target_modules");
  if (tm != cfg.end() && !tm->is_null() && !tm->is_array() && !tm->is_string())
    fail("{}: field 'target_modules' has type {}, expected a list or a string", cfg_path, tm->type_name());

  LoraFileRaw raw;
  raw.file.source = dir;
  auto st = std::make_shared<const safetensors::Tensors>(safetensors::Tensors::open_file(st_path));
  for (const auto& [name, dtype] : st->unsupported())
    fail("{}: tensor '{}' has dtype {}, expected F32, F16 or BF16", st_path, name, dtype);
  static const std::regex re(
      R"(^(?:base_model\.model\.)?(model\.layers\.(\d+)\.((?:self_attn|mlp)\.\w+))\.lora_(A|B)(?:\.[\w-]+)?\.weight$)");
  struct Half {
    const TensorView* a = nullptr;
    const TensorView* b = nullptr;
    std::string module;
    int layer = 0;
    LoraTarget target;
  };
  std::map<std::string, Half> halves;  // by module name
  for (const TensorView& t : st->tensors()) {
    if (t.type != DType::F32 && t.type != DType::F16 && t.type != DType::BF16)
      fail("{}: tensor '{}' has dtype {}, expected F32, F16 or BF16", st_path, t.name, dtype_name(t.type));
    std::smatch m;
    if (!std::regex_match(t.name, m, re))
      fail(
          "{}: tensor '{}' is not a LoRA A/B matrix of a decoder layer (only q/k/v/o and gate/up/down are "
          "supported)",
          st_path, t.name);
    const auto target = peft_modules().find(m[3].str());
    if (target == peft_modules().end())
      fail(
          "{}: tensor '{}' targets module '{}', which is not a supported LoRA target (q/k/v/o_proj, "
          "qkv_proj, gate/up/down_proj, gate_up_proj)",
          st_path, t.name, m[3].str());
    const std::string layer_s = m[2].str();
    if (layer_s.size() > 6) fail("{}: tensor '{}' has a layer number out of range", st_path, t.name);
    Half& h = halves[m[1].str()];
    (m[4] == "A" ? h.a : h.b) = &t;
    h.module = m[1].str();
    h.layer = std::stoi(layer_s);
    h.target = target->second;
  }
  for (const auto& [module, h] : halves) {
    if (!h.a || !h.b)
      fail("{}: module '{}' has lora_{} but no lora_{}", st_path, module, h.a ? "A" : "B", h.a ? "B" : "A");
    if (tm != cfg.end() && !tm->is_null() && !targeted(*tm, module, cfg_path))
      fail("{}: tensor '{}' adapts module '{}', which target_modules in adapter_config.json does not list",
           st_path, h.a->name, module);
    LoraPair p;
    p.layer = h.layer;
    p.target = h.target;
    p.name = h.a->name;
    p.a = copy_matrix(raw.file, *h.a, h.a->name);
    p.b = copy_matrix(raw.file, *h.b, h.b->name);
    const nlohmann::json* rp = pattern_value(cfg, cfg_path, "rank_pattern", module);
    const nlohmann::json* ap = pattern_value(cfg, cfg_path, "alpha_pattern", module);
    const double rank = rp && rp->is_number() ? rp->get<double>() : r;
    const double a = ap && ap->is_number() ? ap->get<double>() : alpha;
    if (rank <= 0 || p.a.ne[1] != static_cast<int64_t>(rank))
      fail("{}: tensor '{}' has rank {} (shape {}), but adapter_config.json gives r = {}", st_path, p.name,
           p.a.ne[1], p.a.shape_string(), rank);
    p.scale = static_cast<float>(rslora ? a / std::sqrt(rank) : a / rank);
    raw.file.pairs.push_back(std::move(p));
  }
  return raw;
}

LoraFileRaw read_gguf_lora(const std::string& path) {
  auto g = gguf::File::open(path);
  const std::string type = g->find_string("general.type").value_or("");
  if (type != "adapter")
    fail("{}: not a LoRA adapter (general.type is '{}', expected 'adapter')", path,
         type.empty() ? "(none)" : type);
  const std::string atype = g->find_string("adapter.type").value_or("");
  if (atype != "lora") fail("{}: adapter.type is '{}', expected 'lora'", path, atype);
  const double alpha = g->find_float("adapter.lora.alpha").value_or(0.0);
  LoraFileRaw raw;
  raw.file.source = path;
  raw.arch = g->find_string("general.architecture").value_or("");
  raw.qk_permuted = raw.arch == "llama" || raw.arch == "mistral";  // as llama.cpp converts these
  static const std::map<std::string, LoraTarget> targets = {
      {"attn_q", LoraTarget::Q},     {"attn_k", LoraTarget::K},           {"attn_v", LoraTarget::V},
      {"attn_qkv", LoraTarget::Qkv}, {"attn_output", LoraTarget::O},      {"ffn_gate", LoraTarget::Gate},
      {"ffn_up", LoraTarget::Up},    {"ffn_gate_up", LoraTarget::GateUp}, {"ffn_down", LoraTarget::Down}};
  static const std::regex re(R"(^blk\.(\d{1,6})\.(\w+)\.weight\.lora_(a|b)$)");
  std::map<std::string, std::pair<const TensorView*, const TensorView*>> halves;
  std::map<std::string, std::pair<int, LoraTarget>> where;
  for (const TensorView& t : g->tensors()) {
    std::smatch m;
    if (!std::regex_match(t.name, m, re))
      fail(
          "{}: tensor '{}' is not a LoRA A/B matrix of a decoder layer (blk.N.<target>.weight.lora_a/lora_b)",
          path, t.name);
    const auto target = targets.find(m[2].str());
    if (target == targets.end())
      fail(
          "{}: tensor '{}' targets '{}', which is not a supported LoRA target (attn_q/k/v/qkv/output, "
          "ffn_gate/up/gate_up/down)",
          path, t.name, m[2].str());
    const std::string base = t.name.substr(0, t.name.size() - 7);
    (m[3] == "a" ? halves[base].first : halves[base].second) = &t;
    where[base] = {std::stoi(m[1].str()), target->second};
  }
  for (const auto& [base, ab] : halves) {
    if (!ab.first || !ab.second)
      fail("{}: tensor '{}.lora_{}' has no partner '{}.lora_{}'", path, base, ab.first ? "a" : "b", base,
           ab.first ? "b" : "a");
    LoraPair p;
    p.layer = where[base].first;
    p.target = where[base].second;
    p.name = ab.first->name;
    p.a = copy_matrix(raw.file, *ab.first, ab.first->name);
    p.b = copy_matrix(raw.file, *ab.second, ab.second->name);
    // llama.cpp: scale = alpha / rank, or 1 when the file gives no alpha.
    p.scale = alpha != 0 ? static_cast<float>(alpha / static_cast<double>(p.a.ne[1])) : 1.0f;
    raw.file.pairs.push_back(std::move(p));
  }
  return raw;
}

}  // namespace ferrum
