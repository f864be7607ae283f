// Phi-3 and Phi-4-mini: fused QKV and gate/up projections (the loaders split them), LongRoPE
// (rope_scaling "longrope": the factors become GGUF tensors), partial rotary (Phi-4-mini), and a
// sliding window when the config gives one.
#include "formats/family.h"
#include "formats/family_fields.h"

namespace ferrum {
namespace {

void read_hf_phi3(const hf::Config& c, ModelConfig& m) {
  m.sliding_window = hf::hf_int_or(c, "sliding_window", 0);
}

}  // namespace

extern const Family kPhi3;

const Family kPhi3{.arch = Arch::Phi3,
                   .name = "phi3",
                   .gguf = "phi3",
                   .hf_type = "phi3",
                   .hf_class = "Phi3For",
                   .hf_n_ctx = 4096,
                   .gguf_qk_permuted = false,
                   .read_hf = read_hf_phi3};

}  // namespace ferrum
