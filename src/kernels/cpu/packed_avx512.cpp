// AVX-512 VNNI kernels for the 8-row packed layouts (packed.h). A zmm holds 16 bytes of each of 4
// rows (one 128-bit lane per row), so one vpdpbusd against a 128-bit broadcast of the activation
// block advances 4 rows at once; the 4 int32 partials of a lane are summed once per call.
// Per token the sequence of operations does not depend on how many tokens the call has (NT), so
// results are bitwise the same for a token alone or in a batch.
#include <immintrin.h>

#include <cstring>

#include "core/quant.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/packed.h"

namespace ferrum::kernels {
namespace {

// Row r of a quad (lane r) gets element r of v: [v0 x4, v1 x4, v2 x4, v3 x4] for quad 0, v4..v7 for 1.
inline __m512 lanes_of(__m256 v, int quad) {
  const __m512i idx = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(_mm512_add_epi32(idx, _mm512_set1_epi32(4 * quad)), _mm512_castps256_ps512(v));
}

inline __m512i bcast128(const void* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}

// Sums the 4 floats of each 128-bit lane of a (rows 0-3) and b (rows 4-7) and stores the 8 sums.
inline void store_lane_sums(__m512 a, __m512 b, float* y) {
  a = _mm512_add_ps(a, _mm512_permute_ps(a, 0x4E));
  a = _mm512_add_ps(a, _mm512_permute_ps(a, 0xB1));
  b = _mm512_add_ps(b, _mm512_permute_ps(b, 0x4E));
  b = _mm512_add_ps(b, _mm512_permute_ps(b, 0xB1));
  const __m512i pick = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 28, 24, 20, 16, 12, 8, 4, 0);
  _mm256_storeu_ps(y, _mm512_castps512_ps256(_mm512_permutex2var_ps(a, pick, b)));
}

// ---------------------------------------------------------------- Q4_0 / Q8_0 x Q8B activations
// Software prefetch distance in bytes ahead of the block being read (one stream per group).
// Measured A/B on the 2-vCPU Zen 4 VM, llama-1b decode: Q4_0 23-30 t/s without, 38-40 at 2048,
// 41-54 at 1024; Q8_0 a smaller gain at 1024; Q4_K (and F16) slower with any distance, so none.
constexpr size_t kPrefetchQ4_0 = 1024, kPrefetchQ8_0 = 1024;

// Q8B activations of one token (n values, nb = n/32 blocks): levels int8[n], scales float[nb],
// bias int32[nb][4] = -offset * (sum of levels 4k..4k+3 + levels 16+4k..16+4k+3): starting the
// dot product from it removes the weights' unsigned offset (8 for Q4_0, 128 for Q8_0) in integers.
struct Q8B {
  const int8_t* qs;
  const float* d;
  const int32_t* bias;
  Q8B(const uint8_t* p, int64_t n)
      : qs(reinterpret_cast<const int8_t*>(p)),
        d(reinterpret_cast<const float*>(p + n)),
        bias(reinterpret_cast<const int32_t*>(p + n + 4 * (n / 32))) {}
};

void prep_q8b(const float* x, uint8_t* out, int64_t n, int32_t offset) {
  // Levels and scales exactly as the row-major path's Q8Act (same offsets: levels, then scales);
  // its per-block sums land where the biases go and are overwritten below.
  avx512_kernels().quantize_q8_1f(x, out, n);
  const int64_t nb = n / 32;
  const auto* qs = reinterpret_cast<const int8_t*>(out);
  auto* bias = reinterpret_cast<int32_t*>(out + n + 4 * nb);
  for (int64_t b = 0; b < nb; ++b) {
    // Byte sums of groups of 4 (vpdpbusd with all-ones), then element k + element k + 4.
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * b));
    const __m256i g = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q);
    const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bias + 4 * b), _mm_mullo_epi32(s4, _mm_set1_epi32(-offset)));
  }
}

// One 8-row group x NT tokens. kQ8: Q8_0 layout (4 zmm of levels per block), else Q4_0 (2 zmm of
// nibbles per block).
template <bool kQ8, int NT>
void group32(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nb = n / 32;
  constexpr size_t kQs = kQ8 ? 256 : 128;
  __m512 acc0[NT], acc1[NT];
  const int8_t* aq[NT];
  const float* ad[NT];
  const int32_t* ab[NT];
  for (int t = 0; t < NT; ++t) {
    acc0[t] = acc1[t] = _mm512_setzero_ps();
    const Q8B a(act + t * stride, n);
    aq[t] = a.qs, ad[t] = a.d, ab[t] = a.bias;
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const Q32Offsets o = q32_offsets(b, nb, kQs);
    constexpr size_t pf = kQ8 ? kPrefetchQ8_0 : kPrefetchQ4_0;
    for (size_t l = 0; l < kQs + 16; l += 64)
      _mm_prefetch(reinterpret_cast<const char*>(g + o.qs + pf + l), _MM_HINT_T0);
    __m512i lo0, hi0, lo1, hi1;
    if constexpr (kQ8) {
      const uint8_t* q = g + o.qs;
      lo0 = _mm512_load_si512(q);
      hi0 = _mm512_load_si512(q + 64);
      lo1 = _mm512_load_si512(q + 128);
      hi1 = _mm512_load_si512(q + 192);
    } else {
      const __m512i w0 = _mm512_load_si512(g + o.qs), w1 = _mm512_load_si512(g + o.qs + 64);
      lo0 = _mm512_and_si512(w0, m4);
      hi0 = _mm512_and_si512(_mm512_srli_epi16(w0, 4), m4);
      lo1 = _mm512_and_si512(w1, m4);
      hi1 = _mm512_and_si512(_mm512_srli_epi16(w1, 4), m4);
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + o.d)));
    const __m512 dw0 = lanes_of(dw, 0), dw1 = lanes_of(dw, 1);
    for (int t = 0; t < NT; ++t) {
      const __m512i alo = bcast128(aq[t] + 32 * b), ahi = bcast128(aq[t] + 32 * b + 16);
      const __m512i bias = bcast128(ab[t] + 4 * b);
      const __m512i p0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(bias, lo0, alo), hi0, ahi);
      const __m512i p1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(bias, lo1, alo), hi1, ahi);
      const __m512 da = _mm512_set1_ps(ad[t][b]);
      acc0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), _mm512_mul_ps(dw0, da), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1), _mm512_mul_ps(dw1, da), acc1[t]);
    }
  }
  for (int t = 0; t < NT; ++t) store_lane_sums(acc0[t], acc1[t], y + t * ldy);
}

// ---------------------------------------------------------------- Q4_K x Q8KP activations

// Q8KP activations of one token: levels int8[n] (Q8_K levels), scales float[nsb], and the sums of
// the levels of each 32-element sub-block int16[nsb][8] (for the mins).
struct Q8KP {
  const int8_t* qs;
  const float* d;
  const int16_t* bsum;
  Q8KP(const uint8_t* p, int64_t n)
      : qs(reinterpret_cast<const int8_t*>(p)),
        d(reinterpret_cast<const float*>(p + n)),
        bsum(reinterpret_cast<const int16_t*>(p + n + 4 * (n / 256))) {}
};

void prep_q8kp(const float* x, uint8_t* out, int64_t n,
               void (*quantize_q8_k)(const float*, BlockQ8_K*, int64_t)) {
  const int64_t nsb = n / 256;
  auto* qs = reinterpret_cast<int8_t*>(out);
  auto* ds = reinterpret_cast<float*>(out + n);
  auto* bs = reinterpret_cast<int16_t*>(out + n + 4 * nsb);
  BlockQ8_K tmp;
  for (int64_t b = 0; b < nsb; ++b) {
    quantize_q8_k(x + 256 * b, &tmp, 256);
    std::memcpy(qs + 256 * b, tmp.qs, 256);
    ds[b] = tmp.d;
    for (int j = 0; j < 8; ++j) bs[8 * b + j] = static_cast<int16_t>(tmp.bsums[2 * j] + tmp.bsums[2 * j + 1]);
  }
}

template <int NT>
void group_q4k(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  __m512 acc0[NT], acc1[NT];
  const int8_t* aq[NT];
  const float* ad[NT];
  const int16_t* ab[NT];
  for (int t = 0; t < NT; ++t) {
    acc0[t] = acc1[t] = _mm512_setzero_ps();
    const Q8KP a(act + t * stride, n);
    aq[t] = a.qs, ad[t] = a.d, ab[t] = a.bsum;
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  // Lane r takes byte r of a broadcast dword, zero-extended into the low int16 of each int32 (the
  // high int16 is 0): vpdpwssd against it multiplies each int32 partial (which fits in int16, see
  // below) by the scale.
  const __m512i spread = _mm512_set_epi64(0x8080800380808003LL, 0x8080800380808003LL, 0x8080800280808002LL,
                                          0x8080800280808002LL, 0x8080800180808001LL, 0x8080800180808001LL,
                                          0x8080800080808000LL, 0x8080800080808000LL);
  auto scale_vec = [&](const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_shuffle_epi8(_mm512_set1_epi32(static_cast<int>(v)), spread);
  };
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t b = 0; b < nsb; ++b) {
    const Q4KOffsets o = q4k_offsets(b, nsb);
    __m512i S0[NT], S1[NT];
    for (int t = 0; t < NT; ++t) S0[t] = S1[t] = zero;
    const uint8_t* scb = g + o.sc;
    for (int c = 0; c < 4; ++c) {
      // Sub-blocks 2c (low nibbles) and 2c+1 (high nibbles) of row quads 0 and 1.
      const __m512i sl0 = scale_vec(scb + 16 * c), sl1 = scale_vec(scb + 16 * c + 4);
      const __m512i sh0 = scale_vec(scb + 16 * c + 8), sh1 = scale_vec(scb + 16 * c + 12);
      const uint8_t* q = g + o.qs + c * 256;  // [h][quad][4 rows][16]
      const __m512i w00 = _mm512_load_si512(q), w01 = _mm512_load_si512(q + 64);
      const __m512i w10 = _mm512_load_si512(q + 128), w11 = _mm512_load_si512(q + 192);
      const __m512i lo00 = _mm512_and_si512(w00, m4), hi00 = _mm512_and_si512(_mm512_srli_epi16(w00, 4), m4);
      const __m512i lo01 = _mm512_and_si512(w01, m4), hi01 = _mm512_and_si512(_mm512_srli_epi16(w01, 4), m4);
      const __m512i lo10 = _mm512_and_si512(w10, m4), hi10 = _mm512_and_si512(_mm512_srli_epi16(w10, 4), m4);
      const __m512i lo11 = _mm512_and_si512(w11, m4), hi11 = _mm512_and_si512(_mm512_srli_epi16(w11, 4), m4);
      for (int t = 0; t < NT; ++t) {
        const int8_t* a = aq[t] + 256 * b + 64 * c;
        const __m512i alo0 = bcast128(a), alo1 = bcast128(a + 16), ahi0 = bcast128(a + 32), ahi1 = bcast128(a + 48);
        // u4 x s8 over 8 elements per int32: |.| <= 8*15*128 < 2^15, so the int32 is an exact int16
        // for the scale multiply.
        S0[t] = _mm512_dpwssd_epi32(S0[t], _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo00, alo0), lo10, alo1), sl0);
        S0[t] = _mm512_dpwssd_epi32(S0[t], _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, hi00, ahi0), hi10, ahi1), sh0);
        S1[t] = _mm512_dpwssd_epi32(S1[t], _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo01, alo0), lo11, alo1), sl1);
        S1[t] = _mm512_dpwssd_epi32(S1[t], _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, hi01, ahi0), hi11, ahi1), sh1);
      }
    }
    const __m256 d8 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + o.d)));
    const __m256 m8 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + o.dmin)));
    const __m512 dv0 = lanes_of(d8, 0), dv1 = lanes_of(d8, 1), mv0 = lanes_of(m8, 0), mv1 = lanes_of(m8, 1);
    const __m512i mins0 =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + o.mn)));
    const __m512i mins1 =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + o.mn + 32)));
    for (int t = 0; t < NT; ++t) {
      const __m512 da = _mm512_set1_ps(ad[t][b]);
      const __m512i bsum = bcast128(ab[t] + 8 * b);
      const __m512i M0 = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mins0, bsum);
      const __m512i M1 = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mins1, bsum);
      acc0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S0[t]), _mm512_mul_ps(dv0, da), acc0[t]);
      acc0[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M0), _mm512_mul_ps(mv0, da), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S1[t]), _mm512_mul_ps(dv1, da), acc1[t]);
      acc1[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M1), _mm512_mul_ps(mv1, da), acc1[t]);
    }
  }
  for (int t = 0; t < NT; ++t) store_lane_sums(acc0[t], acc1[t], y + t * ldy);
}

// ---------------------------------------------------------------- F16 x F32 activations

// (No software prefetch: measured slower at 1024 and 4096 bytes ahead.)
// 4 rows x NT tokens per half: 8 F16->F32 conversions and 2*NT activation loads feed 8*NT FMAs.
template <int NT>
void group_f16(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nc = n / 32;
  const float* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const float*>(act + t * stride);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* w = g + half * nc * 256;
    __m512 acc[4][NT];
    for (int r = 0; r < 4; ++r)
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* wc = w + c * 256;
      __m512 wl[4], wh[4];
      for (int r = 0; r < 4; ++r) {
        wl[r] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(wc + 64 * r)));
        wh[r] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(wc + 64 * r + 32)));
      }
      for (int t = 0; t < NT; ++t) {
        const __m512 al = _mm512_loadu_ps(a[t] + 32 * c), ah = _mm512_loadu_ps(a[t] + 32 * c + 16);
        for (int r = 0; r < 4; ++r) {
          acc[r][t] = _mm512_fmadd_ps(wl[r], al, acc[r][t]);
          acc[r][t] = _mm512_fmadd_ps(wh[r], ah, acc[r][t]);
        }
      }
    }
    for (int t = 0; t < NT; ++t)
      for (int r = 0; r < 4; ++r) y[t * ldy + 4 * half + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

template <template <int> class K>
void by_nt(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  switch (nt) {
    case 1:
      return K<1>::run(g, n, act, stride, y, ldy);
    case 2:
      return K<2>::run(g, n, act, stride, y, ldy);
    case 3:
      return K<3>::run(g, n, act, stride, y, ldy);
    default:
      return K<4>::run(g, n, act, stride, y, ldy);
  }
}
template <int NT>
struct KQ4_0 {
  static void run(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, float* y, int64_t l) {
    group32<false, NT>(g, n, a, s, y, l);
  }
};
template <int NT>
struct KQ8_0 {
  static void run(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, float* y, int64_t l) {
    group32<true, NT>(g, n, a, s, y, l);
  }
};
template <int NT>
struct KQ4_K {
  static void run(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, float* y, int64_t l) {
    group_q4k<NT>(g, n, a, s, y, l);
  }
};

template <int NT>
struct KF16 {
  static void run(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, float* y, int64_t l) {
    group_f16<NT>(g, n, a, s, y, l);
  }
};

void prep(DType t, const float* x, uint8_t* out, int64_t n) {
  if (t == DType::Q4_K)
    prep_q8kp(x, out, n, avx512_kernels().quantize_q8_k);
  else
    prep_q8b(x, out, n, t == DType::Q8_0 ? 128 : 8);
}

size_t act_bytes(DType t, int64_t n) {
  return t == DType::Q4_K ? static_cast<size_t>(n + 4 * (n / 256) + 16 * (n / 256))
                          : static_cast<size_t>(n + 4 * (n / 32) + 16 * (n / 32));
}

const PackedKernels kPacked = {by_nt<KQ4_0>, by_nt<KQ8_0>, by_nt<KQ4_K>, by_nt<KF16>, prep, act_bytes};

}  // namespace

const PackedKernels& avx512_packed_kernels() {
  return kPacked;
}

}  // namespace ferrum::kernels
