// Model construction: which implementation runs a ModelConfig. Reading configs and weights from
// files is the loader's (src/loading/), naming the families and what each needs the family table's
// (formats/family.h).
#pragma once

#include <memory>
#include <string>

#include "ferrum/model.h"
#include "models/weights.h"

namespace ferrum {

// Checks that the weights agree with a decoder config (embedding, first layer's attention, last
// layer present) before anything is sized from it; throws naming the tensor.
// first: the first layer the model runs (a stage's; a tensor-parallel share cuts only its own layers).
void check_decoder_weights(const ModelConfig& c, const WeightSet& w, int first = 0);

// Builds the model implementation for cfg.arch.
std::unique_ptr<Model> create_model(ModelConfig cfg, WeightSet weights, const ModelOptions& opts);

// The CPU kernel tier models run with on this machine ("avx2", "avx2vnni", "avx512", "avx512bf16",
// "scalar"): the best the CPU has, or FERRUM_ISA.
std::string kernel_tier();

}  // namespace ferrum
