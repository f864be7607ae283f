// Q2_K, Q3_K, IQ4_XS and grid i-quant row kernels for the AVX2 (and AVX-VNNI) tiers.
#include "kernels/cpu/kernels_lowbit_ymm.h"

namespace ferrum::kernels {

LowbitRows lowbit_rows_avx2() {
  return ymm_lowbit_rows();
}

}  // namespace ferrum::kernels
