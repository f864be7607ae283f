// Q2_K, Q3_K, IQ4_XS and grid i-quant row kernels for the AVX-512 tier (the 256-bit kernels with its flags).
#include "kernels/cpu/kernels_lowbit_ymm.h"

namespace ferrum::kernels {

LowbitRows lowbit_rows_avx512() {
  return ymm_lowbit_rows();
}

}  // namespace ferrum::kernels
