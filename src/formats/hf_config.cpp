#include "formats/hf_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/ascii.h"
#include "core/fail.h"
#include "formats/family.h"

namespace ferrum::hf {
namespace fs = std::filesystem;
namespace {

std::string detect_arch(const nlohmann::json& j, const std::string& path) {
  const auto mt = j.find("model_type");
  if (mt != j.end() && mt->is_string()) {
    const std::string m = ascii_lower(mt->get<std::string>());
    for (const Family* f : families())  // the HF model_type, or ferrum's name for it
      if (m == f->hf_type || m == f->name) return f->hf_type;
  }
  const auto ar = j.find("architectures");
  if (ar != j.end() && ar->is_array() && !ar->empty() && (*ar)[0].is_string()) {
    const std::string a = (*ar)[0].get<std::string>();
    for (const Family* f : families())
      if (a.rfind(f->hf_class, 0) == 0) return f->hf_type;
    if (mt == j.end() || !mt->is_string()) return ascii_lower(a);
  }
  if (mt != j.end() && mt->is_string()) return ascii_lower(mt->get<std::string>());
  fail("{}: cannot tell the architecture: no string 'model_type' and no 'architectures' list", path);
}

// A vision-language wrapper's text model config: text_config, completed from the wrapper.
nlohmann::json text_part(const nlohmann::json& j) {
  nlohmann::json t = j["text_config"];
  for (const char* k : {"bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "quantization_config"})
    if (!t.contains(k) && j.contains(k)) t[k] = j[k];
  return t;
}

}  // namespace

std::string text_model_tensor(const std::string& name) {
  for (const char* vision : {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                             "model.multi_modal_projector.", "vision_model.", "model.vision_model."})
    if (name.starts_with(vision)) return "";
  if (name.starts_with("language_model.model.")) return name.substr(15);      // "model...."
  if (name.starts_with("model.language_model.")) return "model." + name.substr(21);
  if (name.starts_with("language_model.")) return name.substr(15);            // lm_head
  return name;
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // Translate the byte position into line:column.
    const size_t pos = std::min<size_t>(e.byte ? e.byte - 1 : 0, text.size());
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + pos, '\n'));
    const size_t nl = text.rfind('\n', pos ? pos - 1 : 0);
    const size_t col = (nl == std::string::npos || pos == 0) ? pos + 1 : pos - nl;
    fail("{}: invalid JSON at line {}, column {}: {}", path, line, col, e.what());
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
}

Config Config::from_json(nlohmann::json j, std::string name) {
  if (!j.is_object()) fail("{}: expected a JSON object, got {}", name, j.type_name());
  Config c;
  c.path_ = std::move(name);
  const auto tc = j.find("text_config");
  if (tc != j.end() && tc->is_object()) {
    c.multimodal_ = true;
    c.j_ = text_part(j);
  } else {
    c.j_ = std::move(j);
  }
  c.arch_ = detect_arch(c.j_, c.path_);
  return c;
}

Config Config::load(const std::string& path) {
  fs::path p(path);
  if (fs::is_directory(p)) p /= "config.json";
  if (!fs::exists(p)) fail("{}: no config.json", path);
  Config c = from_json(read_json_file(p.string()), p.string());
  const fs::path gen = p.parent_path() / "generation_config.json";
  if (fs::exists(gen)) {
    c.gen_path_ = gen.string();
    c.gen_ = read_json_file(c.gen_path_);
    if (!c.gen_->is_object()) fail("{}: expected a JSON object, got {}", c.gen_path_, c.gen_->type_name());
  }
  return c;
}

const nlohmann::json* Config::field(std::string_view key) const {
  const auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool Config::has(std::string_view key) const {
  return field(key) != nullptr;
}

const nlohmann::json& Config::required(std::string_view key) const {
  const nlohmann::json* v = field(key);
  if (!v) fail("{}: field '{}' is {}", path_, key, j_.contains(key) ? "null" : "missing");
  return *v;
}

void Config::type_error(std::string_view key, const nlohmann::json& v, std::string_view expected) const {
  std::string got = v.type_name();
  if (v.is_number_float()) got = "float";
  if (v.is_number_integer()) got = "integer";
  fail("{}: field '{}' has type {}, expected {}", path_, key, got, expected);
}

std::optional<int64_t> Config::find_int(std::string_view key) const {
  const nlohmann::json* v = field(key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail("{}: field '{}' is {}, too large for a 64-bit integer", path_, key, v->get<uint64_t>());
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) return static_cast<int64_t>(d);
    fail("{}: field '{}' is {}, expected an integer", path_, key, d);
  }
  type_error(key, *v, "integer");
}
int64_t Config::get_int(std::string_view key) const {
  required(key);
  return *find_int(key);
}

std::optional<double> Config::find_float(std::string_view key) const {
  const nlohmann::json* v = field(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) type_error(key, *v, "number");
  return v->get<double>();
}
double Config::get_float(std::string_view key) const {
  required(key);
  return *find_float(key);
}

std::optional<bool> Config::find_bool(std::string_view key) const {
  const nlohmann::json* v = field(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) type_error(key, *v, "boolean");
  return v->get<bool>();
}
bool Config::get_bool(std::string_view key) const {
  required(key);
  return *find_bool(key);
}

std::optional<std::string> Config::find_string(std::string_view key) const {
  const nlohmann::json* v = field(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) type_error(key, *v, "string");
  return v->get<std::string>();
}
std::string Config::get_string(std::string_view key) const {
  required(key);
  return *find_string(key);
}

const nlohmann::json* Config::find_object(std::string_view key) const {
  const nlohmann::json* v = field(key);
  if (v && !v->is_object()) type_error(key, *v, "object");
  return v;
}

static std::vector<int64_t> token_ids(const nlohmann::json& v, const std::string& where) {
  std::vector<int64_t> out;
  if (v.is_null()) return out;
  if (v.is_number_integer()) return {v.get<int64_t>()};
  if (v.is_array()) {
    for (const auto& x : v) {
      if (!x.is_number_integer())
        fail("{}: field 'eos_token_id' must hold integers, found {}", where, x.dump());
      out.push_back(x.get<int64_t>());
    }
    return out;
  }
  fail("{}: field 'eos_token_id' has type {}, expected integer or list of integers", where, v.type_name());
}

std::vector<int64_t> Config::eos_token_ids() const {
  if (gen_ && gen_->contains("eos_token_id") && !(*gen_)["eos_token_id"].is_null())
    return token_ids((*gen_)["eos_token_id"], gen_path_);
  if (j_.contains("eos_token_id")) return token_ids(j_["eos_token_id"], path_);
  return {};
}

std::optional<int64_t> Config::bos_token_id() const {
  if (gen_ && gen_->contains("bos_token_id") && (*gen_)["bos_token_id"].is_number_integer())
    return (*gen_)["bos_token_id"].get<int64_t>();
  return find_int("bos_token_id");
}

}  // namespace ferrum::hf
