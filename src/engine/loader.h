// Opens a model from any supported source (GGUF file, Hugging Face directory, llama2.c
// checkpoint + tokenizer.bin) and returns the model together with its tokenizer.
#pragma once

#include <memory>
#include <string>

#include "ferrum/model.h"
#include "models/registry.h"
#include "tokenizer/tokenizer.h"

namespace ferrum {

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  ModelFormat format = ModelFormat::Gguf;
  std::string path;
};

// tokenizer_path: only for llama2.c checkpoints (default: tokenizer.bin next to the checkpoint).
LoadedModel load_model(const std::string& path, const ModelOptions& opts, const std::string& tokenizer_path = "");

// The config and weights only (no tokenizer, no model construction), for `ferrum info`.
struct ModelFiles {
  ModelConfig config;
  WeightSet weights;
  ModelFormat format;
  std::shared_ptr<const gguf::File> gguf;  // set for GGUF sources
};
ModelFiles open_model_files(const std::string& path, const std::string& tokenizer_path = "");

// Path of llama2.c's tokenizer for a checkpoint: explicit, else tokenizer.bin / tok<N>.bin beside it.
std::string llama2c_tokenizer_path(const std::string& checkpoint, const std::string& explicit_path);

}  // namespace ferrum

namespace ferrum {
// The tokenizer alone (no weights): from a GGUF's metadata, a Hugging Face directory, or a
// llama2.c tokenizer.bin (the checkpoint's, or given explicitly).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path, const std::string& tokenizer_path = "");
}  // namespace ferrum
