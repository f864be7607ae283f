// The models a server offers from a folder (`ferrum serve --models-dir DIR`): every GGUF file and
// Hugging Face directory under DIR, each with the id of its path relative to DIR without the
// extension ("llama/1b-q4_0" for DIR/llama/1b-q4_0.gguf), plus the presets of an optional models.json (in
// DIR, or named): id -> path, default sampling, a system prompt, a chat template file, a context size, LoRA
// adapters, aliases. Ollama's Modelfile idea without a registry.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ferrum::server {

struct ModelPreset {
  std::vector<std::string> aliases;  // more names requests may use
  nlohmann::json defaults;           // sampling fields a request gets when it gives none of its own
  std::string system;                // a chat's system message when it has none
  std::string chat_template_file;    // Jinja file used instead of the model's template
  int64_t ctx_size = 0;              // tokens per sequence (0: the server's --ctx-size)
  std::vector<std::string> lora;     // adapters served with it, "name=PATH[:scale]"
};

struct ModelSource {
  std::string id;
  std::string path;
  uint64_t disk_bytes = 0;  // the file's (or directory's files') size: the memory estimate before loading
  ModelPreset preset;
};

// The sampling fields a preset's "defaults" may set.
const std::vector<std::string>& preset_default_fields();

// Every model under `dir` with the presets of `preset_file` ("" : DIR/models.json when it exists)
// applied; a preset's "path" (relative to DIR, or absolute) adds a model of its own. Throws
// ferrum::Error naming the folder, file or field for a missing folder, a malformed preset file or a
// preset naming a path that does not exist.
std::vector<ModelSource> scan_models_dir(const std::string& dir, const std::string& preset_file = "");

// A preset object (one entry of models.json) checked field by field; `where` names it in errors.
ModelPreset parse_preset(const nlohmann::json& j, const std::string& where);

// A request's model defaults applied to an OpenAI-shaped body: each default field the body does not
// set, and the system prompt when a chat has no system message first.
void apply_preset(const ModelPreset& p, nlohmann::json& body, bool chat);

}  // namespace ferrum::server
