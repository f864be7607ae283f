// What the family files (formats/families/) read their fields with: a GGUF file's "<arch>." keys,
// config.json integers, and the per-layer patterns llama.cpp assumes where a GGUF has no key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ferrum/model_config.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"

namespace ferrum {

// The "<arch>." keys of one file. Sizes are read as ints: anything above INT32_MAX is an error
// here, the rest is checked against the other fields by validate_config().
struct GgufKeys {
  const gguf::File& f;
  std::string arch;  // the file's general.architecture, its key prefix

  std::string key(const char* k) const { return arch + "." + k; }
  int opt_int(const char* k, int64_t def) const;
  int req_int(const char* k) const;  // throws naming the key when it is missing or not an integer
  float opt_float(const char* k, double def) const {
    return static_cast<float>(f.find_float(key(k)).value_or(def));
  }
};

namespace hf {
// config.json integers as ints (validate_config() checks their ranges and how they fit together);
// throws naming the file and the field when one is missing (hf_int) or beyond an int.
int hf_int(const Config& c, const char* k);
int hf_int_or(const Config& c, const char* k, int64_t def);
// layer_types (sliding_attention / full_attention per layer) into m.swa_layers; false when the
// config has none.
bool read_layer_types(const Config& c, ModelConfig& m);
}  // namespace hf

// The sliding-window layers as llama.cpp lays them out: every layer but every period-th (Gemma 2 and
// gpt-oss: period 2, the even layers; Gemma 3: 6); period 0: every layer.
std::vector<uint8_t> swa_layers_every(int n_layer, int period);

// SmolLM3 as llama.cpp runs it (no metadata key): RoPE in every layer but every 4th.
std::vector<uint8_t> smollm3_rope_layers(int n_layer);

}  // namespace ferrum
