// One model as the server answers with it: its engine (a decoder) and embedder, and what belongs
// to it there: the chat prompt builder, the compiled-grammar cache, its LoRA adapters, its names and
// its preset's defaults. A model loaded on demand (model_pool.h) owns its engine, embedder and
// weights through `owner`; the command line's model is only referenced.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/chat_prompt.h"
#include "engine/engine.h"
#include "grammar/grammar_cache.h"
#include "server/embeddings.h"
#include "server/lora_registry.h"
#include "server/models_dir.h"

namespace ferrum::server {

struct ServedModel {
  // Declared first, so released last: what engine and embedder live in (null: owned elsewhere).
  std::shared_ptr<void> owner;
  std::string id;                    // the name answers carry
  std::vector<std::string> aliases;  // more names requests may give
  std::string path;                  // the file or directory
  Engine* engine = nullptr;          // a decoder's (null: an encoder, embeddings only)
  Embedder* embedder = nullptr;      // /v1/embeddings (null: none)
  ModelPreset preset;                // request defaults and system prompt (models.json)
  std::unique_ptr<chat::ChatPrompt> chat;
  std::unique_ptr<grammar::GrammarCache> grammars;  // compiled response_format / grammar, LRU
  std::unique_ptr<LoraRegistry> lora;               // decoders only
  int64_t created = 0;                              // Unix time it was loaded

  // chat_template: Jinja text in place of the model's ("" : the model's). Throws for an adapter in
  // preset.lora that does not load.
  ServedModel(std::string id, Engine* engine, Embedder* embedder, const std::string& chat_template,
              ModelPreset preset = {});
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  const ModelConfig& config() const;
  // The names it answers to: id, "ferrum" when it is the default model, aliases, its adapters.
  std::vector<std::string> names(bool with_default_name) const;
  bool answers_to(const std::string& name) const;  // id or alias
  // Weights and KV cache in memory.
  uint64_t memory_bytes() const;
  int64_t context() const;  // tokens per sequence
};

}  // namespace ferrum::server
