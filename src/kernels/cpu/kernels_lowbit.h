// Row kernels of the low-bit super-block types (Q2_K, Q3_K, IQ4_XS and the grid i-quants; Q8_K
// activations), one file per tier: kernels_lowbit_scalar.cpp (every architecture),
// kernels_lowbit_avx2.cpp and kernels_lowbit_avx512.cpp (x86; both from kernels_lowbit_ymm.h). The
// IsaKernels tables take them.
#pragma once

#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {

LowbitRows lowbit_rows_scalar();
#if defined(__x86_64__)
LowbitRows lowbit_rows_avx2();
LowbitRows lowbit_rows_avx512();
#endif

}  // namespace ferrum::kernels
