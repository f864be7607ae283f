// GPTQ and AWQ checkpoints (Hugging Face directories with a `quantization_config`): their linear
// layers read from the packed int32 tensors and re-encoded, without rounding anything, in a block
// type the kernels multiply:
//   GPTQ/AWQ 4-bit whose zero points are all 8 (symmetric)  -> Q4_0  (d = scale, q unchanged)
//   GPTQ/AWQ 4-bit with other zero points (asymmetric)       -> Q4_Z  (d = scale, q, z = zero) in
//                                                               memory; Q5_0 (d = scale, q - zero
//                                                               + 16) for a GGUF file
//   GPTQ 8-bit whose zero points are all 128 (symmetric)      -> Q8_0  (d = scale, q - 128)
// Each weight is scale * (q - zero) with an F16 scale and an integer q - zero, which these types
// hold exactly. With act-order (desc_act) the groups are scattered over the input columns
// (g_idx); the columns are then stored sorted by group and `input_order` says which input each
// stored column multiplies (the forward gathers its input in that order).
//
// Layouts (learned from AutoGPTQ's QuantLinear.pack, GPTQModel's v1 -> v2 conversion and AutoAWQ's
// WQLinear_GEMM; see tests/data/gptq/README.md):
//   GPTQ  qweight int32 [in*bits/32, out]: field j (bits*j) of row r = input r*(32/bits)+j
//         qzeros  int32 [groups, out*bits/32]: field j of column c = output c*(32/bits)+j; the
//                 "gptq" (v1) format stores zero-1, "gptq_v2" the zero itself
//         scales  [groups, out], g_idx int32 [in] (group of each input column)
//   AWQ   qweight int32 [in, out/8]: nibble k of column j = output 8j + (0,2,4,6,1,3,5,7)[k]
//         qzeros  int32 [groups, out/8] (same order), scales [groups, out]; groups contiguous
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/tensor.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"

namespace ferrum::hfquant {

enum class Method { None, Gptq, Awq };

struct QuantConfig {
  Method method = Method::None;
  int bits = 0;
  int64_t group_size = -1;  // -1: one group per row
  bool desc_act = false;
  bool zeros_minus_one = false;  // GPTQ v1 ("gptq") stores each zero point minus one
  std::string where;             // "<dir>/config.json: quantization_config", for errors

  // "GPTQ 4-bit, group 128, act-order" (empty for Method::None).
  std::string describe() const;
};

// The `quantization_config` of config.json (Method::None when there is none). An unsupported method,
// bit width, group size, format or version throws naming the field and the supported values.
QuantConfig read_quant_config(const hf::Config& cfg);

// Whether the linear layer `prefix` ("model.layers.0.self_attn.q_proj") is stored quantized
// (prefix.qweight exists).
bool is_quantized(const safetensors::Tensors& st, const std::string& prefix);

// Decodes the quantized linear layer `prefix` into memory from `alloc` (bytes -> 64-byte aligned
// buffer that outlives the view). The view is named `name`, ne = {in, out}; its input_order is set
// (also in `alloc`'s memory) when the columns had to be reordered (act-order). Throws naming the
// tensor for a bad shape, an out-of-range g_idx, groups that do not fill whole 32-column blocks, a
// scale F16 cannot hold, or an 8-bit asymmetric layer.
// `storage`: Gguf keeps to GGUF's block types (asymmetric 4-bit layers as Q5_0, for `convert`).
enum class Storage { Memory, Gguf };
TensorView decode_linear(const QuantConfig& q, const safetensors::Tensors& st, const std::string& prefix,
                         const std::string& name, const std::function<uint8_t*(size_t)>& alloc,
                         Storage storage = Storage::Memory);

// Whether the tensor `name` is one of the parts of a quantized layer (qweight, qzeros, scales,
// g_idx), which the converters skip: decode_linear reads them.
bool is_quant_part(const std::string& name);

}  // namespace ferrum::hfquant
