// LoRA adapters applied at run time: y = W x + scale * B (A x) next to the base product, per
// sequence. An adapter is loaded once for a model (validated against its shapes) and then named
// by any number of forward batches through SeqInput::lora; sequences of one batch may use
// different adapters or none (a sequence without one computes exactly what the base model does).
//
// Formats: a PEFT directory (adapter_config.json + adapter_model.safetensors, F32/F16/BF16) or a
// llama.cpp GGUF LoRA file (general.type = adapter). Targets: q/k/v/o and gate/up/down, also
// fused qkv / gate_up. The adapter's matrices stay F32 or F16 whatever the base weight type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace ferrum {

class Model;
class LoraAdapter;  // opaque: the adapter's matrices, ready for one model's forward pass

// One adapter file and the factor its product is multiplied by (on top of alpha / r).
struct LoraSpec {
  std::string path;
  float scale = 1.0f;
};

// Parses "PATH[:scale]" (the CLI's --lora); a suffix after the last ':' that is not a number is
// part of the path. Throws for a scale that is not finite.
LoraSpec parse_lora_spec(const std::string& s);

// Loads one or more adapters as one (their products summed) for `model`. Throws ferrum::Error
// naming the file and tensor for an adapter that does not fit the model (shape, target, layer,
// architecture); nothing is kept of a failed load.
std::shared_ptr<const LoraAdapter> load_lora(const Model& model, std::span<const LoraSpec> specs);

// The same matrices as `a` with every product's scale multiplied by `factor` (shares the memory).
std::shared_ptr<const LoraAdapter> rescale_lora(const std::shared_ptr<const LoraAdapter>& a, float factor);

// A number unique to this adapter object (never 0, never reused in the process): the namespace
// under which KvCache::reuse_prefix shares cached prompt blocks.
uint64_t lora_id(const LoraAdapter& a);

// Bytes of adapter matrices held in memory, and a display name (the file names joined by '+').
size_t lora_bytes(const LoraAdapter& a);
std::string lora_name(const LoraAdapter& a);

}  // namespace ferrum
