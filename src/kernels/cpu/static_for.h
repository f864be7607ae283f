// f(std::integral_constant<int, i>) for i = 0 .. N-1: loop indices that select instructions (lanes,
// shuffle constants, shift counts) must be compile-time constants, which a loop the compiler does
// not unroll would not give. Each use passes its own lambda, so no two tiers' instantiations mix.
#pragma once

#include <type_traits>

namespace ferrum::kernels {

template <int N, int I = 0, class F>
inline void static_for(F&& f) {
  if constexpr (I < N) {
    f(std::integral_constant<int, I>{});
    static_for<N, I + 1>(f);
  }
}

}  // namespace ferrum::kernels
