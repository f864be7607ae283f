// SmolLM3: Llama's network without RoPE in some layers (no_rope_layers; llama.cpp assumes every
// 4th and has no key for it), Q/K permuted in GGUF files as llama's.
#include "core/fail.h"
#include "formats/family.h"
#include "formats/family_fields.h"

namespace ferrum {
namespace {

// no_rope_layers[l] is 1 where layer l applies RoPE (transformers' SmolLM3Config), else every
// no_rope_layer_interval-th layer goes without.
void read_hf_smollm3(const hf::Config& c, ModelConfig& m) {
  const auto it = c.json().find("no_rope_layers");
  if (it != c.json().end() && !it->is_null()) {
    if (!it->is_array() || it->size() != static_cast<size_t>(m.n_layer))
      fail("{}: no_rope_layers must be a list of {} numbers (one per layer), got {}", c.path(), m.n_layer,
           it->is_array() ? fmt::format("{} values", it->size()) : std::string(it->type_name()));
    for (const auto& v : *it) {
      if (!v.is_number_integer() || (v.get<int64_t>() != 0 && v.get<int64_t>() != 1))
        fail("{}: no_rope_layers holds {}, expected 0 or 1", c.path(), v.dump());
      m.rope_layers.push_back(static_cast<uint8_t>(v.get<int64_t>()));
    }
    return;
  }
  const int64_t every = c.find_int("no_rope_layer_interval").value_or(4);
  if (every < 1) fail("{}: no_rope_layer_interval must be at least 1, got {}", c.path(), every);
  for (int l = 0; l < m.n_layer; ++l) m.rope_layers.push_back((l + 1) % every != 0);
}

void read_gguf_smollm3(const GgufKeys&, ModelConfig& m) {
  m.rope_layers = smollm3_rope_layers(m.n_layer);
}

void write_gguf_smollm3(gguf::Writer&, const ModelConfig& m, const std::string&) {
  if (m.rope_layers != smollm3_rope_layers(m.n_layer))
    fail(
        "{}: the layers without RoPE (no_rope_layers) are not every 4th layer, the pattern llama.cpp assumes "
        "for "
        "smollm3 files; such a model cannot be written as GGUF",
        m.name);
}

}  // namespace

extern const Family kSmolLM3;

const Family kSmolLM3{.arch = Arch::SmolLM3,
                      .name = "smollm3",
                      .gguf = "smollm3",
                      .hf_type = "smollm3",
                      .hf_class = "SmolLM3",
                      .hf_n_ctx = 32768,
                      .gguf_qk_permuted = true,
                      .read_hf = read_hf_smollm3,
                      .read_gguf = read_gguf_smollm3,
                      .write_gguf = write_gguf_smollm3};

}  // namespace ferrum
