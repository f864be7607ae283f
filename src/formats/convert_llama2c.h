// llama2.c checkpoint + tokenizer.bin -> GGUF (arch "llama", F32), with the metadata llama.cpp's
// converter writes. Q/K are NOT permuted: llama2.c already rotates adjacent pairs like GGUF.
#pragma once

#include <string>

#include "core/progress.h"

namespace ferrum {

void convert_llama2c_to_gguf(const std::string& checkpoint, const std::string& tokenizer_bin,
                             const std::string& out_gguf, const ProgressFn& progress = {});

}  // namespace ferrum
