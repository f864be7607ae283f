// Architecture detection and model construction from any supported source: a GGUF file, a
// Hugging Face directory (config.json + safetensors) or a llama2.c checkpoint.
#pragma once

#include <memory>
#include <string>

#include "ferrum/loader.h"
#include "ferrum/model.h"
#include "formats/gguf.h"
#include "formats/model_config_check.h"
#include "models/weights.h"

namespace ferrum {

// ModelFormat, format_name() and detect_format() are public: ferrum/loader.h.

// Parses an architecture name from GGUF general.architecture or HF model_type/architectures.
// Throws "unknown architecture '<name>'" listing the supported ones.
Arch parse_arch(const std::string& name, const std::string& source);

ModelConfig config_from_gguf(const gguf::File& f);

// (validate_config() and ConfigFields are in formats/model_config_check.h.)

// Checks that the weights agree with a decoder config (embedding, first layer's attention, last
// layer present) before anything is sized from it; throws naming the tensor.
void check_decoder_weights(const ModelConfig& c, const WeightSet& w);
WeightSet weights_from_gguf(std::shared_ptr<const gguf::File> f);

// Config + weights from a Hugging Face directory, under GGUF tensor names; q/k/v and gate/up
// are fused into single matrices at load.
struct HfModel {
  ModelConfig config;
  WeightSet weights;
};
HfModel load_hf_dir(const std::string& dir);

// Builds the model implementation for cfg.arch.
std::unique_ptr<Model> create_model(ModelConfig cfg, WeightSet weights, const ModelOptions& opts);

}  // namespace ferrum
