// Llama, and Mistral: the same network, with a sliding window and its own HF names and defaults.
// ferrum prints Mistral as "mistral" when it came from a Hugging Face directory and writes it to GGUF
// as llama (as llama.cpp's converter does), whose Q/K rows are permuted for interleaved-pair RoPE.
#include "formats/family.h"
#include "formats/family_fields.h"

namespace ferrum {
namespace {

// Mistral always has a window: transformers' default 4096 when sliding_window is missing, none when
// it is null.
void read_hf_mistral(const hf::Config& c, ModelConfig& m) {
  m.sliding_window = c.json().contains("sliding_window") ? hf::hf_int_or(c, "sliding_window", 0) : 4096;
}

}  // namespace

extern const Family kLlama, kMistral;

const Family kLlama{.arch = Arch::Llama,
                    .name = "llama",
                    .gguf = "llama",
                    .hf_type = "llama",
                    .hf_class = "Llama",
                    .hf_n_ctx = 2048,
                    .gguf_qk_permuted = true};

const Family kMistral{.arch = Arch::Mistral,
                      .name = "mistral",
                      .gguf = "llama",
                      .hf_type = "mistral",
                      .hf_class = "Mistral",
                      .hf_n_ctx = 4096 * 32,
                      .gguf_qk_permuted = true,
                      .read_hf = read_hf_mistral};

}  // namespace ferrum
