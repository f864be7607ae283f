// Importance matrices (`ferrum quantize --imatrix`): the input is a GGUF or .dat imatrix file.
// `read_imatrix`, then every entry looked up at its own size and at a wrong one, and the first
// entry of 256+ columns used as the weights of each grid i-quant's quantizer on a fixed row (its
// blocks decoded back): any exception but ferrum::Error, a crash or a sanitizer report is a finding.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/quant.h"
#include "ferrum/error.h"
#include "formats/imatrix.h"
#include "fuzz_util.h"

using namespace ferrum;

namespace {

void quantize_with(const float* w) {
  std::vector<float> x(256), y(256);
  for (int i = 0; i < 256; ++i)
    x[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 7));
  std::vector<uint8_t> block(row_size(DType::IQ3_S, 256));
  for (DType t : {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,
                  DType::IQ1_M}) {
    block.assign(row_size(t, 256), 0);
    quantize_row(t, x.data(), block.data(), 256, w);
    dequantize_row(t, block.data(), y.data(), 256);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      fuzz::write_file("imatrix.bin", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const ImportanceMatrix m = read_imatrix(path);
    bool quantized = false;
    for (const auto& [name, values] : m.entries) {
      const int64_t n = static_cast<int64_t>(values.size());
      if (m.find(name, n) != values.data()) __builtin_trap();
      try {
        (void)m.find(name, n + 1);
        __builtin_trap();  // a wrong size must be refused
      } catch (const Error&) {
      }
      if (!quantized && n >= 256) {
        quantize_with(values.data());
        quantized = true;
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
