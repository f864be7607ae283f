#include "kernels/cpu/lowrank.h"

#include <algorithm>
#include <cstring>

#include "core/fail.h"
#include "core/fp16.h"
#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {
namespace {

constexpr int64_t kBlock = 64;  // outputs per inner block (accumulators stay in registers)

}  // namespace

// Portable version: the same chain per output, written so the compiler vectorizes over o.
void lowrank_up_add_portable(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0,
                             int64_t o1, const int64_t* rows, float* y, int64_t ldy) {
  const int64_t out = bt.ne[0], r = bt.ne[1];
  float acc[kBlock], b[kBlock];
  for (int64_t t = 0; t < n; ++t) {
    float* yr = y + rows[t] * ldy;
    for (int64_t ob = o0; ob < o1; ob += kBlock) {
      const int64_t m = std::min(kBlock, o1 - ob);
      std::fill(acc, acc + m, 0.0f);
      for (int64_t j = 0; j < r; ++j) {
        const float uj = u[t * ldu + j];
        if (bt.type == DType::F16) {
          const auto* src = reinterpret_cast<const uint16_t*>(bt.data) + j * out + ob;
          for (int64_t i = 0; i < m; ++i) b[i] = f16_to_f32(src[i]);
        } else {
          std::memcpy(b, reinterpret_cast<const float*>(bt.data) + j * out + ob, m * sizeof(float));
        }
        for (int64_t i = 0; i < m; ++i) acc[i] += uj * b[i];
      }
      for (int64_t i = 0; i < m; ++i) yr[ob + i] += acc[i];
    }
  }
}

void lowrank_up_add(const float* u, int64_t ldu, int64_t n, const TensorView& bt, const int64_t* rows,
                    float* y, int64_t ldy, ThreadPool& pool) {
  if (bt.type != DType::F32 && bt.type != DType::F16)
    fail("lowrank_up_add: tensor '{}' has type {}, expected F32 or F16", bt.name, dtype_name(bt.type));
  if (n <= 0) return;
  const int64_t out = bt.ne[0], r = bt.ne[1];
  const LowrankFn fn = active_kernels().lowrank;
  // Threads split the outputs (chunks of 256): each output's chain is computed by one thread.
  const int64_t chunk = 256, n_chunks = (out + chunk - 1) / chunk;
  if (n_chunks == 1 || out * r * n < (1 << 15)) {
    fn(u, ldu, n, bt, 0, out, rows, y, ldy);
    return;
  }
  pool.parallel_for(n_chunks, [&](int64_t c0, int64_t c1, int) {
    fn(u, ldu, n, bt, c0 * chunk, std::min(out, c1 * chunk), rows, y, ldy);
  });
}

}  // namespace ferrum::kernels
