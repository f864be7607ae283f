#include "ferrum/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/fail.h"

namespace ferrum {
namespace {

// Block sizes / byte sizes from the ggml block layouts (ggml-common.h, llama.cpp 3f545becc). Types
// ferrum does not run are listed so that a file using one is refused by name.
constexpr std::array<DTypeInfo, 36> kTypes = {{
    {DType::F32, "F32", 1, 4, false, true},
    {DType::F16, "F16", 1, 2, false, true},
    {DType::Q4_0, "Q4_0", 32, 18, true, true},
    {DType::Q4_1, "Q4_1", 32, 20, true, true},
    {DType::Q5_0, "Q5_0", 32, 22, true, true},
    {DType::Q5_1, "Q5_1", 32, 24, true, true},
    {DType::Q8_0, "Q8_0", 32, 34, true, true},
    {DType::Q8_1, "Q8_1", 32, 36, true, false},
    {DType::Q2_K, "Q2_K", 256, 84, true, true},
    {DType::Q3_K, "Q3_K", 256, 110, true, true},
    {DType::Q4_K, "Q4_K", 256, 144, true, true},
    {DType::Q5_K, "Q5_K", 256, 176, true, true},
    {DType::Q6_K, "Q6_K", 256, 210, true, true},
    {DType::Q8_K, "Q8_K", 256, 292, true, false},
    {DType::IQ2_XXS, "IQ2_XXS", 256, 66, true, true},
    {DType::IQ2_XS, "IQ2_XS", 256, 74, true, true},
    {DType::IQ3_XXS, "IQ3_XXS", 256, 98, true, true},
    {DType::IQ1_S, "IQ1_S", 256, 50, true, true},
    {DType::IQ4_NL, "IQ4_NL", 32, 18, true, true},
    {DType::IQ3_S, "IQ3_S", 256, 110, true, true},
    {DType::IQ2_S, "IQ2_S", 256, 82, true, true},
    {DType::IQ4_XS, "IQ4_XS", 256, 136, true, true},
    {DType::I8, "I8", 1, 1, false, false},
    {DType::I16, "I16", 1, 2, false, false},
    {DType::I32, "I32", 1, 4, false, false},
    {DType::I64, "I64", 1, 8, false, false},
    {DType::F64, "F64", 1, 8, false, false},
    {DType::IQ1_M, "IQ1_M", 256, 56, true, true},
    {DType::BF16, "BF16", 1, 2, false, true},
    {DType::TQ1_0, "TQ1_0", 256, 54, true, false},
    {DType::TQ2_0, "TQ2_0", 256, 66, true, false},
    {DType::MXFP4, "MXFP4", 32, 17, true, true},
    {DType::NVFP4, "NVFP4", 64, 36, true, false},
    {DType::Q1_0, "Q1_0", 128, 18, true, false},
    {DType::Q2_0, "Q2_0", 64, 18, true, false},
    // In memory only: d (F16), the zero point z (0..16) and Q4_0's nibbles q; value = d * (q - z).
    {DType::Q4_Z, "Q4_Z", 32, 19, true, true, false},
}};

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id && t.gguf) return t;
  return std::nullopt;
}

const DTypeInfo& dtype_info(DType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  fail("unknown tensor type id {}", static_cast<uint32_t>(t));
}

bool is_in_memory_type(DType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return !i.gguf;
  return false;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string up(name);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const auto& t : kTypes)
    if (up == t.name) return t.type;
  return std::nullopt;
}

std::string dtype_label(DType t) {
  if (!dtype_info(t).gguf) return std::string(dtype_name(t)) + " (ferrum's in-memory type)";
  return std::string(dtype_name(t)) + " (ggml type " + std::to_string(static_cast<uint32_t>(t)) + ")";
}

std::string supported_dtype_names() {
  std::string s;
  for (const auto& t : kTypes)
    if (t.supported && t.gguf) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

size_t row_size(DType t, int64_t n) {
  const auto& i = dtype_info(t);
  if (n % i.block_size != 0) fail("row of {} elements is not a multiple of the {} block size {}", n, i.name, i.block_size);
  return static_cast<size_t>(n / i.block_size) * i.type_size;
}

}  // namespace ferrum
