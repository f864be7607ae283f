#include "ferrum/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/fail.h"

namespace ferrum {
namespace {

// Block sizes / byte sizes from the ggml block layouts (ggml-common.h).
constexpr std::array<DTypeInfo, 20> kTypes = {{
    {DType::F32, "F32", 1, 4, false, true},
    {DType::F16, "F16", 1, 2, false, true},
    {DType::Q4_0, "Q4_0", 32, 18, true, true},
    {DType::Q4_1, "Q4_1", 32, 20, true, false},
    {DType::Q5_0, "Q5_0", 32, 22, true, true},
    {DType::Q5_1, "Q5_1", 32, 24, true, true},
    {DType::Q8_0, "Q8_0", 32, 34, true, true},
    {DType::Q8_1, "Q8_1", 32, 36, true, false},
    {DType::Q2_K, "Q2_K", 256, 84, true, false},
    {DType::Q3_K, "Q3_K", 256, 110, true, false},
    {DType::Q4_K, "Q4_K", 256, 144, true, true},
    {DType::Q5_K, "Q5_K", 256, 176, true, true},
    {DType::Q6_K, "Q6_K", 256, 210, true, true},
    {DType::Q8_K, "Q8_K", 256, 292, true, false},
    {DType::I8, "I8", 1, 1, false, false},
    {DType::I16, "I16", 1, 2, false, false},
    {DType::I32, "I32", 1, 4, false, false},
    {DType::I64, "I64", 1, 8, false, false},
    {DType::F64, "F64", 1, 8, false, false},
    {DType::BF16, "BF16", 1, 2, false, true},
}};

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return t;
  return std::nullopt;
}

const DTypeInfo& dtype_info(DType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  fail("unknown tensor type id {}", static_cast<uint32_t>(t));
}

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string up(name);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const auto& t : kTypes)
    if (up == t.name) return t.type;
  return std::nullopt;
}

size_t row_size(DType t, int64_t n) {
  const auto& i = dtype_info(t);
  if (n % i.block_size != 0) fail("row of {} elements is not a multiple of the {} block size {}", n, i.name, i.block_size);
  return static_cast<size_t>(n / i.block_size) * i.type_size;
}

}  // namespace ferrum
