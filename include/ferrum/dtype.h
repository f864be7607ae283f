// Element/block types of weight tensors. Values equal the GGUF/ggml type ids so a GGUF type
// field converts with a range check only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferrum {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
  // ferrum's own in-memory types (no GGUF file holds them; ids far from ggml's):
  Q4_Z = 0x10000,  // 4-bit levels with an integer zero point per block (GPTQ/AWQ asymmetric layers)
};

struct DTypeInfo {
  DType type;
  const char* name;
  uint32_t block_size;  // elements per block (1 for plain types)
  uint32_t type_size;   // bytes per block
  bool quantized;
  bool supported;  // ferrum can store and multiply it
  bool gguf = true;  // a GGUF file may hold it (false: ferrum's in-memory types)
};

// Info for a known ggml type id, or nullopt for an id ferrum does not know (or one of its in-memory
// types, which no file holds).
std::optional<DTypeInfo> dtype_info(uint32_t ggml_type_id);
const DTypeInfo& dtype_info(DType t);
// Whether t is one of ferrum's in-memory types (known, but no GGUF file holds it).
bool is_in_memory_type(DType t);
inline const char* dtype_name(DType t) { return dtype_info(t).name; }
// Parses "Q4_K", "q8_0", "F16", "bf16", ... ; nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// "IQ2_XXS (ggml type 16)": a type named with its id, for messages.
std::string dtype_label(DType t);
// The GGUF types ferrum stores and multiplies, comma-separated ("F32, F16, Q4_0, ...").
std::string supported_dtype_names();

// Bytes used by a row of n elements; n must be a multiple of the block size.
size_t row_size(DType t, int64_t n);

}  // namespace ferrum
