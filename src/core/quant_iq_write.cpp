#include "core/quant_iq_write.h"

#include "core/fail.h"

namespace ferrum::quant_iq {

bool needs_importance(Kind k) {
  return k == Kind::IQ2_XXS || k == Kind::IQ2_XS || k == Kind::IQ1_S || k == Kind::IQ1_M;
}

void quantize_row(Kind k, const float* x, void* dst, int64_t n, const float* importance) {
  if (n % 256 != 0)
    fail("quantize_row: a row of {} values is not a whole number of 256-value super-blocks", n);
  if (!importance && needs_importance(k))
    fail(
        "quantize_row: this i-quant type needs an importance matrix (llama-imatrix's output, --imatrix "
        "FILE)");
  const int64_t nb = n / 256;
  switch (k) {
    case Kind::IQ2_XXS:
      return quantize_iq2_xxs(x, static_cast<BlockIQ2_XXS*>(dst), nb, importance);
    case Kind::IQ2_XS:
      return quantize_iq2_xs(x, static_cast<BlockIQ2_XS*>(dst), nb, importance);
    case Kind::IQ2_S:
      return quantize_iq2_s(x, static_cast<BlockIQ2_S*>(dst), nb, importance);
    case Kind::IQ3_XXS:
      return quantize_iq3_xxs(x, static_cast<BlockIQ3_XXS*>(dst), nb, importance);
    case Kind::IQ3_S:
      return quantize_iq3_s(x, static_cast<BlockIQ3_S*>(dst), nb, importance);
    case Kind::IQ1_S:
      return quantize_iq1_s(x, static_cast<BlockIQ1_S*>(dst), nb, importance);
    case Kind::IQ1_M:
      return quantize_iq1_m(x, static_cast<BlockIQ1_M*>(dst), nb, importance);
  }
}

}  // namespace ferrum::quant_iq
