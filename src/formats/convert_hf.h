// Hugging Face model directory (config.json + safetensors) -> GGUF for the decoder families
// llama, mistral (written as arch "llama"), qwen2, qwen3 and qwen3_moe (arch "qwen3moe": per-expert
// matrices stacked into ffn_{gate,up,down}_exps, router as ffn_gate_inp), and bert (see
// convert_hf_bert.h). Tensor dtypes are kept
// (F32/F16/BF16), except 1-D tensors (norms, biases) and the MoE router, written as F32 like llama.cpp does.
// For llama/mistral the Q/K rows are permuted per head from HF rotate-half order to GGUF's
// adjacent-pair RoPE order. The hyper-parameters come from hf::model_config (the reader the HF
// loader uses too) and are written by write_model_config; Llama-3 rope_scaling becomes a
// rope_freqs.weight tensor, linear rope_scaling rope.scaling.type/factor.
#pragma once

#include <string>

#include "core/progress.h"

namespace ferrum {

struct HfConvertOptions {
  std::string name;       // general.name; default: the directory name
  bool tokenizer = true;  // add tokenizer.ggml.* from tokenizer.json when present
  // GPTQ/AWQ act-order layers: requantize them (not exact) instead of refusing.
  bool allow_requantize = false;
  ProgressFn progress;  // as the GGUF file is written
};

void convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_gguf,
                        const HfConvertOptions& opt = {});

}  // namespace ferrum
