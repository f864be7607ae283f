// Helpers shared by the kernels tests: fixture blobs, random rows, quantized test matrices.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/quant.h"
#include "core/quant_iq.h"
#include "core/tensor.h"
#include "kernels/cpu/matmul.h"
#include "test_util.h"

namespace ferrum::test {

// Puts back the kernel tier active when it was made (for tests that force one tier after another).
struct IsaGuard {
  std::string saved = kernels::active_isa();
  ~IsaGuard() { kernels::force_isa(saved.c_str()); }
};

// The kernel tiers this CPU has, lowest first.
inline std::vector<const char*> supported_tiers() {
  std::vector<const char*> v;
  for (const char* isa : kernels::isa_tiers())
    if (kernels::isa_supported(isa)) v.push_back(isa);
  return v;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// n values from N(0, sigma^2): the values std::normal_distribution<float> draws from
// std::mt19937(seed) in libstdc++ (Marsaglia's polar method on generate_canonical<float>; checked
// bit for bit on x86-64 and ARM64), written out because libstdc++'s generate_canonical takes a long
// double logarithm per draw, emulated in software on ARM64: most of the kernel tests' time under
// qemu-aarch64.
inline std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  auto uniform = [&rng] {  // [0, 1): one 32-bit draw
    const float u = static_cast<float>(rng()) / 4294967296.0f;
    return u >= 1.0f ? std::nextafter(1.0f, 0.0f) : u;
  };
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i += 2) {
    float x, y, r2;
    do {
      x = static_cast<float>(2.0f * uniform() - 1.0);
      y = static_cast<float>(2.0f * uniform() - 1.0);
      r2 = x * x + y * y;
    } while (r2 > 1.0f || r2 == 0.0f);
    const float mult = std::sqrt(-2 * std::log(r2) / r2);
    v[i] = y * mult * sigma + 0.0f;  // the polar method's pair: y's value first, then x's
    if (i + 1 < n) v[i + 1] = x * mult * sigma + 0.0f;
  }
  return v;
}

// The grid i-quants: test matrices take llama-quantize's blocks of them (their quantizers need an
// importance row; the blocks of real files exercise the decoders better than random ones).
inline bool read_only_type(DType t) {
  for (DType r : {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,
                  DType::IQ1_M})
    if (t == r) return true;
  return false;
}

// rows x cols values of N(0, 0.05^2) from `seed` quantized to t, made once per process: tests that
// run once per tier ask for the same matrices again, and quantizing was most of their time.
inline std::vector<uint8_t> quantized(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  static std::mutex mu;
  static std::map<std::tuple<DType, int64_t, int64_t, uint32_t>, std::vector<uint8_t>> made;
  const std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = made.try_emplace({t, rows, cols, seed});
  if (fresh) {
    const size_t rb = row_size(t, cols);
    const auto src = gaussian(static_cast<size_t>(rows * cols), seed, 0.05f);
    it->second.resize(rb * rows);
    for (int64_t r = 0; r < rows; ++r)
      quantize_row(t, src.data() + r * cols, it->second.data() + r * rb, cols);
  }
  return it->second;
}

// A rows x cols weight matrix of type t quantized from random values, with its TensorView. Types
// ferrum does not write take their blocks from the llama-quantize rows of tests/data/kernels
// (<TYPE>.bin), picked in a seeded order.
struct TestMatrix {
  std::vector<uint8_t> bytes;
  TensorView view;
  TestMatrix(DType t, int64_t rows, int64_t cols, uint32_t seed) {
    const size_t rb = row_size(t, cols);
    bytes.resize(rb * rows);
    if (read_only_type(t)) {
      const auto fixture = read_bytes(data_path(std::string("kernels/") + dtype_name(t) + ".bin"));
      const size_t bs = dtype_info(t).type_size, n_fix = fixture.size() / bs;
      for (size_t k = 0; k < bytes.size() / bs; ++k) {
        const size_t src = (k * 7919 + seed) % n_fix;
        std::copy_n(fixture.begin() + static_cast<std::ptrdiff_t>(src * bs), bs,
                    bytes.begin() + static_cast<std::ptrdiff_t>(k * bs));
      }
    } else {
      bytes = quantized(t, rows, cols, seed);
    }
    view.name = "test";
    view.type = t;
    view.n_dims = 2;
    view.ne = {cols, rows, 1, 1};
    view.data = bytes.data();
    view.nbytes = bytes.size();
  }
  std::vector<float> dequantized() const {
    std::vector<float> out(static_cast<size_t>(view.n_elements()));
    for (int64_t r = 0; r < view.rows(); ++r)
      dequantize_row(view.type, view.row(r), out.data() + r * view.cols(), view.cols());
    return out;
  }
};

// Rows of `cols` values quantized to t (one importance row for every row, or nullptr) and decoded.
inline std::vector<uint8_t> quantize_rows(DType t, const std::vector<float>& x, int64_t cols,
                                          const float* importance) {
  const size_t rb = row_size(t, cols), rows = x.size() / static_cast<size_t>(cols);
  std::vector<uint8_t> q(rb * rows);
  for (size_t r = 0; r < rows; ++r) quantize_row(t, x.data() + r * cols, q.data() + r * rb, cols, importance);
  return q;
}
inline std::vector<float> round_trip_rows(DType t, const std::vector<float>& x, int64_t cols,
                                          const float* importance) {
  const auto q = quantize_rows(t, x, cols, importance);
  const size_t rb = row_size(t, cols);
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(cols); ++r)
    dequantize_row(t, q.data() + r * rb, y.data() + r * cols, cols);
  return y;
}

// The DType of a grid i-quant kind, and its name.
inline DType iq_dtype(quant_iq::Kind k) {
  using quant_iq::Kind;
  switch (k) {
    case Kind::IQ2_XXS:
      return DType::IQ2_XXS;
    case Kind::IQ2_XS:
      return DType::IQ2_XS;
    case Kind::IQ2_S:
      return DType::IQ2_S;
    case Kind::IQ3_XXS:
      return DType::IQ3_XXS;
    case Kind::IQ3_S:
      return DType::IQ3_S;
    case Kind::IQ1_S:
      return DType::IQ1_S;
    case Kind::IQ1_M:
      return DType::IQ1_M;
  }
  return DType::F32;
}
inline const char* name_of(quant_iq::Kind k) {
  return dtype_name(iq_dtype(k));
}

// Positive importances, uniform in [0.1, 2).
inline std::vector<float> random_importance(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.1f, 2.0f);
  std::vector<float> w(static_cast<size_t>(n));
  for (float& v : w) v = u(rng);
  return w;
}

// sqrt(sum w (y - x)^2 / sum w x^2) over rows of `cols` values, column c weighing w[c] (nullptr: 1).
inline double weighted_rel_rms(const std::vector<float>& y, const std::vector<float>& x, int64_t cols,
                               const float* w) {
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double wi = w ? w[static_cast<int64_t>(i) % cols] : 1.0, d = double(y[i]) - x[i];
    e += wi * d * d;
    s += wi * double(x[i]) * x[i];
  }
  return std::sqrt(e / s);
}

}  // namespace ferrum::test
