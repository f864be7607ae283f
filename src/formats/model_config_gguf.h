// ModelConfig <-> GGUF hyper-parameter metadata: the keys llama.cpp's converter writes, and
// the reader that turns them back into the same ModelConfig. Both name the family through the
// family table (formats/family.h); each family's own keys are
// in its file (formats/families/).
#pragma once

#include "ferrum/model_config.h"
#include "formats/family.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"

namespace ferrum {

// The "<arch>.*" keys of a GGUF file (arch = its general.architecture), checked by
// validate_config(); throws naming the file and the key.
ModelConfig config_from_gguf(const gguf::File& f);

// The "<arch>.*" keys of `m` (context, sizes, heads, RoPE, norm epsilon, sliding window,
// experts). Llama-3 rope_freq_factors are a tensor (rope_freqs.weight), not metadata.
// Throws naming the file when `m` has something a GGUF cannot say (a SmolLM3 RoPE pattern other
// than the one llama.cpp assumes).
void write_model_config(gguf::Writer& w, const ModelConfig& m);

}  // namespace ferrum
