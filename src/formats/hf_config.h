// Hugging Face config.json (+ generation_config.json when present) with architecture detection
// and typed accessors whose errors name the file, the field and the expected type.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum::hf {

// Parses a JSON file; syntax errors are reported as ferrum::Error with line and column.
nlohmann::json read_json_file(const std::string& path);

// The name a tensor of a vision-language checkpoint's text model has in a text-only checkpoint
// ("language_model.model.layers.0..." and "model.language_model.layers.0..." -> "model.layers.0...",
// "language_model.lm_head.weight" -> "lm_head.weight"); "" for the vision tower and projector; any
// other name unchanged.
std::string text_model_tensor(const std::string& name);

class Config {
 public:
  // `path` is a model directory (containing config.json) or a config.json file. A
  // generation_config.json next to it is read too.
  static Config load(const std::string& path);
  // From an already parsed object; `name` is used in error messages. A vision-language checkpoint
  // (Gemma3ForConditionalGeneration, Mistral3ForConditionalGeneration, Llava...) is read as its text
  // model: text_config, with the wrapper's token ids, dtype and quantization where text_config has
  // none (the vision tower is not run).
  static Config from_json(nlohmann::json j, std::string name = "config.json");

  const std::string& path() const { return path_; }
  // Normalized family name: llama, mistral, qwen2, qwen3, qwen3_moe, bert; for anything else the
  // lower-cased model_type (or architectures[0]).
  const std::string& architecture() const { return arch_; }

  // get_* throw "<path>: field 'k' is missing" / "... has type string, expected integer";
  // find_* return nullopt for a missing or null field and throw on a wrong type.
  int64_t get_int(std::string_view key) const;  // integers, or floats with an integral value
  std::optional<int64_t> find_int(std::string_view key) const;
  double get_float(std::string_view key) const;  // any number
  std::optional<double> find_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;
  // An object-valued field (e.g. rope_scaling); nullptr when missing or null, throws otherwise.
  const nlohmann::json* find_object(std::string_view key) const;
  bool has(std::string_view key) const;  // present and not null

  const nlohmann::json& json() const { return j_; }
  // Whether this is the text model of a vision-language checkpoint (text_config).
  bool text_of_multimodal() const { return multimodal_; }

  // generation_config.json, if it was present (else nullptr).
  const nlohmann::json* generation_config() const { return gen_ ? &*gen_ : nullptr; }
  // eos_token_id from generation_config.json, else config.json; int or list; empty if neither.
  std::vector<int64_t> eos_token_ids() const;
  std::optional<int64_t> bos_token_id() const;

 private:
  const nlohmann::json* field(std::string_view key) const;  // nullptr if missing or null
  const nlohmann::json& required(std::string_view key) const;
  [[noreturn]] void type_error(std::string_view key, const nlohmann::json& v,
                               std::string_view expected) const;

  std::string path_;
  std::string gen_path_;
  bool multimodal_ = false;
  nlohmann::json j_;
  std::optional<nlohmann::json> gen_;
  std::string arch_;
};

}  // namespace ferrum::hf
