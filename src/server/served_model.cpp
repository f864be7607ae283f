#include "server/served_model.h"

#include <algorithm>
#include <ctime>

#include "core/fail.h"

namespace ferrum::server {

ServedModel::ServedModel(std::string id_, Engine* engine_, Embedder* embedder_,
                         const std::string& chat_template, ModelPreset preset_)
    : id(std::move(id_)), engine(engine_), embedder(embedder_), preset(std::move(preset_)) {
  if (!engine && !embedder) fail("server: no model to serve");
  aliases = preset.aliases;
  if (engine) {
    chat = std::make_unique<chat::ChatPrompt>(engine->tokenizer(), chat_template);
    grammars = std::make_unique<grammar::GrammarCache>(engine->tokenizer());
    lora = std::make_unique<LoraRegistry>(engine->model());
  }
  for (const std::string& m : preset.lora) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("--lora {}: expected name=PATH[:scale] (the name requests give as \"model\")", m);
    if (!lora) fail("--lora {}: LoRA adapters need a decoder model", m);
    lora->add(m.substr(0, eq), m.substr(eq + 1), names(true));
  }
  created = static_cast<int64_t>(std::time(nullptr));
}

ServedModel::~ServedModel() {
  // The engine stops before what refers to its tokenizer and model goes (a loaded-on-demand model's
  // engine is in `owner`, released after the members).
  if (owner && engine) engine->shutdown(/*drain=*/false);
}

const ModelConfig& ServedModel::config() const {
  return engine ? engine->model().config() : embedder->config();
}

std::vector<std::string> ServedModel::names(bool with_default_name) const {
  std::vector<std::string> out = {id};
  if (with_default_name && id != "ferrum") out.push_back("ferrum");
  for (const std::string& a : aliases)
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  if (lora)
    for (const auto& e : lora->list()) out.push_back(e->name);
  return out;
}

bool ServedModel::answers_to(const std::string& name) const {
  return name == id || std::find(aliases.begin(), aliases.end(), name) != aliases.end();
}

uint64_t ServedModel::memory_bytes() const {
  if (!engine) return 0;
  return engine->model().weight_bytes() + engine->kv_usage().pool_bytes;
}

int64_t ServedModel::context() const {
  return engine ? engine->kv_capacity() : config().n_ctx_train;
}

}  // namespace ferrum::server
