// The presets of `ferrum quantize` and their per-tensor type rules: llama-quantize's (llama.cpp
// src/llama-quant.cpp, llama_tensor_get_type and tensor_type_fallback, commit 3f545becc) for the
// presets ferrum writes, so a file quantized by either tool has the same types tensor for tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ferrum/dtype.h"

namespace ferrum {
namespace gguf {
class File;
}

struct QuantPreset {
  const char* name;    // Q4_K_M, IQ4_XS, F16, ...
  uint32_t file_type;  // llama_ftype, written as general.file_type
  DType base;          // the type of the tensors no rule singles out
};

// The preset of that name (case-insensitive; llama-quantize's aliases Q3_K, Q4_K, Q5_K for the _M
// mixes); throws naming the presets ferrum writes.
const QuantPreset& find_quant_preset(const std::string& name);

// What the rules read of the model.
struct RecipeModel {
  int n_layer = 1;
  int n_head = 1, n_head_kv = 1;  // n_gqa = n_head / n_head_kv
  int n_expert = 0;
  bool has_output = true;  // false: token_embd.weight also produces the logits
  int n_attn_v = 0;        // attn_v / attn_qkv matrices in the file
};

// The model facts the rules read, from a GGUF file's metadata and tensor names.
RecipeModel recipe_model(const gguf::File& f);

// Whether llama-quantize quantizes this tensor at all (matrices only; not norms, routers, position
// or token-type embeddings, rope factors).
bool quantizable(const TensorView& t);

// Types of a file's tensors under a preset; ask in file order (the attn_v rules count them).
// llama-quantize's flags that change the types: --pure (every quantizable tensor in the preset's
// type), --leave-output-tensor, --output-tensor-type, --token-embedding-type, --tensor-type
// PATTERN=TYPE (an ECMAScript regex searched in the tensor name; the first match wins).
struct QuantOverrides {
  bool pure = false;
  bool leave_output = false;
  std::optional<DType> output_type, embedding_type;
  std::vector<std::pair<std::string, DType>> tensor_types;
};

// A type named as llama-quantize's flags take it (q8_0, Q4_K, iq2_xxs, f16, ...; any case) if
// ferrum writes it; the names of those types.
std::optional<DType> writable_type(const std::string& name);
std::string writable_type_names();
// writable_type, or throws naming `flag` and the types ferrum writes.
DType quant_type_from_name(const std::string& name, const std::string& flag);
// One --tensor-type value, PATTERN=TYPE (the pattern lowercased, as llama-quantize does).
std::pair<std::string, DType> parse_tensor_type(const std::string& value);

// `has_imatrix`: quantizing with an importance matrix (a few rules differ, as in llama-quantize).
class QuantRecipe {
 public:
  QuantRecipe(const QuantPreset& preset, const RecipeModel& model, bool has_imatrix = false,
              QuantOverrides overrides = {});
  DType type_of(const TensorView& t);
  // Whether llama-quantize refuses to write tensor t in type `to` without an importance matrix
  // (the lowest-bit types; Q2_K in Q2_K_S), the logits' and embedding matrices excepted.
  bool needs_importance(const TensorView& t, DType to) const;

 private:
  bool low_iq_mix() const;  // IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M
  DType output_type(const TensorView& t) const;
  DType embedding_type() const;
  DType low_iq_rule(const std::string& name);
  DType rule(const std::string& name, DType base);
  DType attn_v_type(DType base);
  DType ffn_down_type(const std::string& name, DType base);
  DType attn_output_type(DType base) const;
  std::optional<DType> overridden(const TensorView& t) const;
  const QuantPreset& p_;
  RecipeModel m_;
  bool has_imatrix_;
  QuantOverrides o_;
  std::vector<std::regex> patterns_;
  int i_attn_v_ = 0, i_ffn_down_ = 0;
};

}  // namespace ferrum
