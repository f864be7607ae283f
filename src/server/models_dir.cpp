#include "server/models_dir.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/fail.h"

namespace ferrum::server {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int kMaxDepth = 6;  // folders below DIR searched for models

bool is_hf_dir(const fs::path& d) {
  std::error_code ec;
  if (!fs::is_regular_file(d / "config.json", ec)) return false;
  for (const auto& e : fs::directory_iterator(d, ec))
    if (e.path().extension() == ".safetensors") return true;
  return false;
}

uint64_t bytes_of(const fs::path& p) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return fs::file_size(p, ec);
  uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(p, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

// The id of a model at `p` under `dir`: its relative path, without ".gguf", with '/' separators.
std::string id_of(const fs::path& p, const fs::path& dir) {
  fs::path rel = p.lexically_relative(dir);
  if (rel.extension() == ".gguf") rel.replace_extension();
  return rel.generic_string();
}

void scan(const fs::path& d, const fs::path& root, int depth, std::vector<ModelSource>& out) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(d, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    if (p.filename().string().starts_with(".")) continue;
    if (fs::is_directory(p, ec)) {
      if (is_hf_dir(p))
        out.push_back({id_of(p, root), p.string(), bytes_of(p), {}});
      else if (depth < kMaxDepth)
        scan(p, root, depth + 1, out);
    } else if (p.extension() == ".gguf" && fs::is_regular_file(p, ec)) {
      out.push_back({id_of(p, root), p.string(), bytes_of(p), {}});
    }
  }
}

std::vector<std::string> string_list(const json& j, const std::string& where, const char* field) {
  if (!j.is_array()) fail("{}: '{}' must be a list of strings", where, field);
  std::vector<std::string> out;
  for (const json& s : j) {
    if (!s.is_string() || s.get<std::string>().empty())
      fail("{}: '{}' must be a list of non-empty strings", where, field);
    out.push_back(s);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& preset_default_fields() {
  static const std::vector<std::string> f = {
      "temperature",        "top_p", "top_k", "min_p", "max_tokens", "presence_penalty", "frequency_penalty",
      "repetition_penalty", "seed",  "stop"};
  return f;
}

ModelPreset parse_preset(const json& j, const std::string& where) {
  if (!j.is_object()) fail("{}: a model preset must be a JSON object", where);
  ModelPreset p;
  for (const auto& [k, v] : j.items()) {
    if (k == "path") {
      if (!v.is_string() || v.get<std::string>().empty())
        fail("{}: 'path' must be a non-empty string", where);
    } else if (k == "aliases") {
      p.aliases = string_list(v, where, "aliases");
    } else if (k == "lora") {
      p.lora = string_list(v, where, "lora");
    } else if (k == "system") {
      if (!v.is_string()) fail("{}: 'system' must be a string", where);
      p.system = v;
    } else if (k == "chat_template_file") {
      if (!v.is_string() || v.get<std::string>().empty())
        fail("{}: 'chat_template_file' must be a non-empty string", where);
      p.chat_template_file = v;
    } else if (k == "ctx_size") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (int64_t{1} << 24))
        fail("{}: 'ctx_size' must be a whole number of tokens from 1 to 16777216", where);
      p.ctx_size = v;
    } else if (k == "defaults") {
      if (!v.is_object()) fail("{}: 'defaults' must be an object of sampling fields", where);
      const auto& ok = preset_default_fields();
      for (const auto& [f, _] : v.items())
        if (std::find(ok.begin(), ok.end(), f) == ok.end())
          fail("{}: 'defaults' has an unknown field '{}' (known: {})", where, f, fmt::join(ok, ", "));
      p.defaults = v;
    } else {
      fail(
          "{}: unknown field '{}' (known: path, aliases, defaults, system, chat_template_file, ctx_size, "
          "lora)",
          where, k);
    }
  }
  return p;
}

std::vector<ModelSource> scan_models_dir(const std::string& dir, const std::string& preset_file) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("--models-dir {}: not a folder", dir);
  const fs::path root = fs::path(dir).lexically_normal();
  std::vector<ModelSource> out;
  scan(root, root, 0, out);
  std::string file = preset_file;
  if (file.empty() && fs::is_regular_file(root / "models.json", ec)) file = (root / "models.json").string();
  if (file.empty()) return out;
  std::ifstream in(file);
  if (!in) fail("{}: cannot read the preset file", file);
  std::stringstream ss;
  ss << in.rdbuf();
  const json presets = json::parse(ss.str(), nullptr, false);
  if (presets.is_discarded()) fail("{}: not valid JSON", file);
  if (!presets.is_object()) fail("{}: expected an object of model id -> preset", file);
  for (const auto& [id, j] : presets.items()) {
    const std::string where = fmt::format("{}: model '{}'", file, id);
    if (id.empty()) fail("{}: a model id cannot be empty", file);
    ModelPreset p = parse_preset(j, where);
    auto it = std::find_if(out.begin(), out.end(), [&](const ModelSource& s) { return s.id == id; });
    if (j.contains("path")) {
      fs::path path = j["path"].get<std::string>();
      if (path.is_relative()) path = root / path;
      if (!fs::exists(path, ec)) fail("{}: 'path' {} does not exist", where, path.string());
      if (it == out.end()) {
        out.push_back({id, path.string(), bytes_of(path), {}});
        it = out.end() - 1;
      } else {
        it->path = path.string();
        it->disk_bytes = bytes_of(path);
      }
    } else if (it == out.end()) {
      fail("{}: no model with this id under {} (give its 'path')", where, dir);
    }
    it->preset = std::move(p);
  }
  return out;
}

void apply_preset(const ModelPreset& p, json& body, bool chat) {
  if (!body.is_object()) return;
  if (p.defaults.is_object())
    for (const auto& [k, v] : p.defaults.items())
      if (!body.contains(k) || body[k].is_null()) body[k] = v;
  if (!chat || p.system.empty() || !body.contains("messages") || !body["messages"].is_array()) return;
  json& ms = body["messages"];
  const bool has_system = !ms.empty() && ms[0].is_object() &&
                          (ms[0].value("role", "") == "system" || ms[0].value("role", "") == "developer");
  if (!has_system) ms.insert(ms.begin(), json{{"role", "system"}, {"content", p.system}});
}

}  // namespace ferrum::server
