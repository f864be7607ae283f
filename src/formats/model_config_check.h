// Range and consistency checks of a ModelConfig read from a GGUF file or a config.json, shared
// by the config readers (formats/: GGUF metadata and config.json, used by the loader and the
// converters) and create_model (models/registry.cpp).
#pragma once

#include <string>

#include "ferrum/model_config.h"

namespace ferrum {

// How the fields of a config are spelled in its file, for error messages: GGUF keys
// ("<arch>.attention.head_count") or config.json fields ("num_attention_heads").
struct ConfigFields {
  bool hf = false;
  std::string gguf_prefix;  // "<arch>." for GGUF
};
// Throws "<source>: <field> is <value>, expected ..." for a size that is out of range or
// inconsistent with the others (heads, head size, RoPE dimensions, vocabulary, experts, ...).
void validate_config(const ModelConfig& c, const std::string& source, const ConfigFields& fields);

}  // namespace ferrum
