// gpt-oss's expert tensors in a Hugging Face directory, as llama.cpp's converter writes them to
// GGUF (and as ferrum's loader holds them): per layer, the experts' fused gate_up projection (gate
// and up rows interleaved) split into ffn_gate_exps and ffn_up_exps, down into ffn_down_exps, each
// {n_in, n_out, n_expert}, and their biases {n_out, n_expert} in F32. MXFP4 experts
// (*_proj_blocks, *_proj_scales: 32 E2M1 values two to a byte, element 2j in byte j's low nibble,
// and one E8M0 byte per block) stay MXFP4, rewritten into ggml's block layout (exponent first,
// element j in byte j's low nibble and j + 16 in its high one); unquantized experts ([n_expert,
// n_in, n_out] in the checkpoint) are transposed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ferrum/model_config.h"
#include "formats/hf_tensor_sink.h"
#include "formats/safetensors.h"

namespace ferrum::hfconv {

// Whether `hf_name` is one of the tensors gpt_oss_experts() reads (model.layers.<L>.mlp.experts.*).
bool is_gpt_oss_expert_part(const std::string& hf_name);

// The six GGUF tensors of layer `layer`'s experts; their data is allocated with `alloc`.
// Throws naming the tensor when one is missing or misshapen.
std::vector<OutTensor> gpt_oss_experts(const safetensors::Tensors& st, const ModelConfig& m, int layer,
                                       const std::function<uint8_t*(size_t)>& alloc);

}  // namespace ferrum::hfconv
