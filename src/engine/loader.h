// The loader's internal half: the public one (load_model, load_tokenizer, LoadedModel,
// ModelFormat) is ferrum/loader.h.
#pragma once

#include <memory>
#include <string>

#include "ferrum/loader.h"
#include "ferrum/model.h"
#include "ferrum/tokenizer.h"
#include "models/registry.h"

namespace ferrum {

// The config and weights only (no tokenizer, no model construction), for `ferrum info`.
struct ModelFiles {
  ModelConfig config;
  WeightSet weights;
  ModelFormat format;
  std::shared_ptr<const gguf::File> gguf;  // set for GGUF sources
};
ModelFiles open_model_files(const std::string& path, const std::string& tokenizer_path = "");

// The CPU kernel tier models run with on this machine ("avx2", "avx2vnni", "avx512", "scalar"):
// the best the CPU has, or FERRUM_ISA.
std::string kernel_tier();

// Path of llama2.c's tokenizer for a checkpoint: explicit, else tokenizer.bin / tok<N>.bin beside it.
std::string llama2c_tokenizer_path(const std::string& checkpoint, const std::string& explicit_path);

}  // namespace ferrum
