// Merging LoRA adapters into a GGUF base (`ferrum export-lora`): W' = W + sum scale * B A for every
// adapted matrix, written as a new GGUF with the base's metadata and the other tensors unchanged.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "core/progress.h"
#include "ferrum/dtype.h"
#include "ferrum/lora.h"

namespace ferrum {

// out_type: the merged matrices' type (nullopt: each keeps its base type, requantized).
// Returns the number of base tensors changed. `progress`: as the file is written.
int export_lora(const std::string& base_gguf, std::span<const LoraSpec> specs, const std::string& out,
                std::optional<DType> out_type, const ProgressFn& progress = {});

}  // namespace ferrum
