// Opening a model: from a GGUF file, a Hugging Face directory (config.json + safetensors +
// tokenizer.json) or a llama2.c checkpoint (+ its tokenizer.bin), the model and its tokenizer.
#pragma once

#include <memory>
#include <string>

#include "ferrum/model.h"
#include "ferrum/tokenizer.h"

namespace ferrum {

enum class ModelFormat { Gguf, HuggingFace, Llama2c };
const char* format_name(ModelFormat f);  // "gguf", "huggingface", "llama2.c"

// Directory with config.json -> HuggingFace; file starting with "GGUF" -> Gguf; otherwise a
// llama2.c checkpoint. Throws for a missing path.
ModelFormat detect_format(const std::string& path);

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  ModelFormat format = ModelFormat::Gguf;
  std::string path;
};

// Loads the weights (GGUF files are memory-mapped) and the tokenizer. Throws ferrum::Error
// naming the file, tensor or field for a missing, truncated or inconsistent model.
// tokenizer_path: only for llama2.c checkpoints (default: tokenizer.bin next to the checkpoint).
LoadedModel load_model(const std::string& path, const ModelOptions& opts = {},
                       const std::string& tokenizer_path = "");

// The tokenizer alone (no weights): from a GGUF's metadata, a Hugging Face directory, or a
// llama2.c tokenizer.bin (the checkpoint's, or given explicitly).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path, const std::string& tokenizer_path = "");

}  // namespace ferrum
