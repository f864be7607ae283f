#include "formats/hf_tokenizer_meta.h"

#include <filesystem>
#include <map>
#include <type_traits>

#include "core/fail.h"

namespace ferrum::hf {
namespace fs = std::filesystem;

bool is_byte_token(const std::string& s) {
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
  };
  return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && hex(s[3]) && hex(s[4]) && s[5] == '>';
}

namespace {

// tokenizer_config.json values like "bos_token" are a string or {"content": "..."}.
std::optional<std::string> token_text(const nlohmann::json& tc, const std::string& key) {
  const auto it = tc.find(key);
  if (it == tc.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

// The GGUF pre-tokenizer name for a byte-level BPE vocabulary, by architecture.
std::string pre_tokenizer_for(const std::string& arch) {
  if (arch == "qwen2" || arch == "qwen3" || arch == "qwen3_moe") return "qwen2";
  if (arch == "llama" || arch == "mistral") return "llama-bpe";
  if (arch == "gpt_oss") return "gpt-4o";  // o200k
  return "default";
}

// obj[key] when present and not null, checked to be of the expected JSON type; else `def`.
template <typename T>
T field_or(const nlohmann::json& obj, const char* key, T def, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return def;
  const bool ok = std::is_same_v<T, bool>          ? it->is_boolean()
                  : std::is_same_v<T, std::string> ? it->is_string()
                                                   : it->is_array();
  if (!ok) fail("{}: field '{}' has JSON type {}", where, key, it->type_name());
  return it->get<T>();
}

}  // namespace

bool add_tokenizer_metadata(gguf::Writer& w, const std::string& dir, const Config& cfg, int64_t n_vocab) {
  const fs::path tj_path = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(tj_path)) return false;
  const std::string tjp = tj_path.string();
  const nlohmann::json tj = read_json_file(tjp);
  nlohmann::json tc = nlohmann::json::object();
  if (fs::exists(fs::path(dir) / "tokenizer_config.json")) {
    tc = read_json_file((fs::path(dir) / "tokenizer_config.json").string());
    if (!tc.is_object()) fail("{}/tokenizer_config.json: expected a JSON object", dir);
  }
  if (!tj.is_object() || !tj.contains("model") || !tj["model"].is_object())
    fail("{}: expected an object with a 'model' object", tjp);
  const nlohmann::json& model = tj["model"];
  const std::string type = field_or<std::string>(model, "type", "", tjp + " model");
  const bool unigram = type == "Unigram";
  if (type != "BPE" && !unigram)
    fail("{}: tokenizer model type '{}' is not supported (BPE or Unigram)", tjp, type);
  const bool spm = unigram || field_or(model, "byte_fallback", false, tjp + " model");
  const nlohmann::json added_tokens = field_or(tj, "added_tokens", nlohmann::json::array(), tjp);

  // id -> text, score; then the added tokens.
  std::vector<std::string> tokens(static_cast<size_t>(n_vocab));
  std::vector<float> scores(static_cast<size_t>(n_vocab), 0.0f);
  std::vector<int32_t> types(static_cast<size_t>(n_vocab), kUnused);
  std::vector<bool> seen(static_cast<size_t>(n_vocab), false);
  std::map<std::string, int64_t> id_of;
  auto put = [&](int64_t id, const std::string& text, float score, int32_t tt) {
    if (id < 0 || id >= n_vocab)
      fail("{}: token '{}' has id {}, outside the model's vocabulary of {}", tjp, text, id, n_vocab);
    tokens[id] = text;
    scores[id] = score;
    types[id] = tt;
    seen[id] = true;
    id_of[text] = id;
  };
  if (unigram) {
    if (!model.contains("vocab") || !model["vocab"].is_array())
      fail("{}: Unigram model without a 'vocab' list", tjp);
    int64_t id = 0;
    for (const auto& e : model["vocab"]) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
        fail("{}: Unigram vocab entry {} is not [piece, score]", tjp, id);
      const std::string s = e[0].get<std::string>();
      put(id, s, e[1].get<float>(), is_byte_token(s) ? kByte : kNormal);
      ++id;
    }
    if (model.contains("unk_id") && model["unk_id"].is_number_integer()) {
      const int64_t u = model["unk_id"].get<int64_t>();
      if (u >= 0 && u < n_vocab) types[u] = kUnknown;
    }
  } else {
    if (!model.contains("vocab") || !model["vocab"].is_object())
      fail("{}: BPE model without a 'vocab' object", tjp);
    std::vector<std::pair<int64_t, std::string>> byid;
    for (const auto& [text, id] : model["vocab"].items()) {
      if (!id.is_number_integer()) fail("{}: vocab entry '{}' has a non-integer id", tjp, text);
      byid.emplace_back(id.get<int64_t>(), text);
    }
    std::sort(byid.begin(), byid.end());
    // SentencePiece BPE orders pieces by score, so a piece's score is minus its rank among the
    // normal pieces (this reproduces the scores of the llama.cpp fixtures exactly).
    int64_t rank = 0;
    const std::string unk =
        model.value("unk_token", nlohmann::json()).is_string() ? model["unk_token"].get<std::string>() : "";
    for (const auto& [id, text] : byid) {
      int32_t tt = kNormal;
      if (spm && is_byte_token(text)) tt = kByte;
      if (spm && !unk.empty() && text == unk) tt = kUnknown;
      put(id, text, 0.0f, tt);
    }
    if (spm) {
      // Added/special tokens are typed below; rank only the normal ones (ids in order).
      std::vector<bool> added(static_cast<size_t>(n_vocab), false);
      for (const auto& a : added_tokens)
        if (a.contains("id") && a["id"].is_number_integer() && a["id"].get<int64_t>() >= 0 &&
            a["id"].get<int64_t>() < n_vocab)
          added[a["id"].get<int64_t>()] = true;
      for (const auto& [id, text] : byid)
        if (types[id] == kNormal && !added[id]) scores[id] = -static_cast<float>(rank++);
    }
  }
  for (const auto& a : added_tokens) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
        !a["content"].is_string())
      fail("{}: malformed entry in 'added_tokens': {}", tjp, a.dump());
    const int64_t id = a["id"].get<int64_t>();
    const std::string text = a["content"].get<std::string>();
    int32_t tt = field_or(a, "special", false, tjp + " added_tokens entry") ? kControl : kUserDefined;
    // The unknown token is listed as special but keeps its UNKNOWN type.
    if (spm && id >= 0 && id < n_vocab && seen[id] && types[id] == kUnknown) tt = kUnknown;
    put(id, text, 0.0f, tt);
  }
  for (int64_t i = 0; i < n_vocab; ++i)
    if (!seen[i]) tokens[i] = fmt::format("[PAD{}]", i);

  w.set_string("tokenizer.ggml.model", spm ? "llama" : "gpt2");
  if (!spm) w.set_string("tokenizer.ggml.pre", pre_tokenizer_for(cfg.architecture()));
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  if (spm) w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  if (!spm) {
    std::vector<std::string> merges;
    for (const auto& m : field_or(model, "merges", nlohmann::json::array(), tjp + " model")) {
      if (m.is_string())
        merges.push_back(m.get<std::string>());
      else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      else
        fail("{}: malformed merge {}", tjp, m.dump());
    }
    w.set_string_array("tokenizer.ggml.merges", merges);
  }

  // Special tokens: tokenizer_config.json by text first, then config.json ids (llama.cpp's order).
  const std::pair<const char*, const char*> specials[] = {
      {"bos", "bos"},     {"eos", "eos"}, {"unk", "unknown"}, {"sep", "seperator"},
      {"pad", "padding"}, {"cls", "cls"}, {"mask", "mask"}};
  for (const auto& [hf, gg] : specials) {
    std::optional<int64_t> id;
    if (const auto text = token_text(tc, std::string(hf) + "_token")) {
      const auto it = id_of.find(*text);
      if (it != id_of.end()) id = it->second;
    }
    if (!id) {
      const auto v = cfg.json().find(std::string(hf) + "_token_id");
      if (v != cfg.json().end() && v->is_number_integer()) id = v->get<int64_t>();
    }
    if (id && *id >= 0 && *id < n_vocab)
      w.set_u32(fmt::format("tokenizer.ggml.{}_token_id", gg), static_cast<uint32_t>(*id));
  }
  for (const char* k : {"add_bos_token", "add_eos_token"})
    if (tc.contains(k) && tc[k].is_boolean())
      w.set_bool(std::string("tokenizer.ggml.") + k, tc[k].get<bool>());
  if (tc.contains("chat_template")) {
    const auto& ct = tc["chat_template"];
    if (ct.is_string()) {
      w.set_string("tokenizer.chat_template", ct.get<std::string>());
    } else if (ct.is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (const auto& t : ct)
        if (t.is_object() && t.contains("name") && t["name"] == "default" && t.contains("template") &&
            t["template"].is_string())
          w.set_string("tokenizer.chat_template", t["template"].get<std::string>());
    }
  }
  return true;
}

}  // namespace ferrum::hf
