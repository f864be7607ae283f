#include "cli/membw.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/fail.h"
#include "core/thread_pool.h"

namespace ferrum::cli {
namespace {

// XOR-folds a range so the loads cannot be optimized away; four independent accumulators keep
// several loads in flight. On x86-64 the AVX2 version is selected at run time (this file is
// portable).
#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t fold_avx2(const uint8_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 128 <= n; i += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  return static_cast<uint64_t>(_mm256_extract_epi64(a, 0) ^ _mm256_extract_epi64(a, 1) ^
                               _mm256_extract_epi64(a, 2) ^ _mm256_extract_epi64(a, 3));
}

uint64_t fold_sse2(const uint8_t* p, size_t n) {
  __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm_xor_si128(a0, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i)));
    a1 = _mm_xor_si128(a1, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 16)));
    a2 = _mm_xor_si128(a2, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 32)));
    a3 = _mm_xor_si128(a3, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 48)));
  }
  const __m128i a = _mm_xor_si128(_mm_xor_si128(a0, a1), _mm_xor_si128(a2, a3));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(a) ^ _mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a)));
}

uint64_t fold(const uint8_t* p, size_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? fold_avx2(p, n) : fold_sse2(p, n);
}
#elif defined(__aarch64__)
uint64_t fold(const uint8_t* p, size_t n) {
  uint8x16_t a0 = vdupq_n_u8(0), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = veorq_u8(a0, vld1q_u8(p + i));
    a1 = veorq_u8(a1, vld1q_u8(p + i + 16));
    a2 = veorq_u8(a2, vld1q_u8(p + i + 32));
    a3 = veorq_u8(a3, vld1q_u8(p + i + 48));
  }
  const uint64x2_t a = vreinterpretq_u64_u8(veorq_u8(veorq_u8(a0, a1), veorq_u8(a2, a3)));
  return vgetq_lane_u64(a, 0) ^ vgetq_lane_u64(a, 1);
}
#else
uint64_t fold(const uint8_t* p, size_t n) {
  uint64_t a[4] = {};
  for (size_t i = 0; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t v;
      std::memcpy(&v, p + i + 8 * k, 8);
      a[k] ^= v;
    }
  return a[0] ^ a[1] ^ a[2] ^ a[3];
}
#endif

}  // namespace

Bandwidth measure_read_bandwidth(int threads, size_t bytes, int passes) {
  constexpr size_t kAlign = 4096;
  bytes = (bytes + kAlign - 1) / kAlign * kAlign;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(std::aligned_alloc(kAlign, bytes)),
                                                     &std::free);
  if (!buf) fail("memory bandwidth: cannot allocate {} bytes", bytes);
  ThreadPool pool(threads);
  const int nth = pool.size();
  const size_t per = (bytes / nth + kAlign - 1) / kAlign * kAlign;
  // Each thread first touches (and so places) the pages it later reads.
  pool.run([&](int ith, int) {
    const size_t b = std::min(bytes, per * ith), e = std::min(bytes, b + per);
    std::memset(buf.get() + b, ith + 1, e - b);
  });
  std::atomic<uint64_t> sink{0};  // an atomic result keeps the loads from being optimized away
  Bandwidth r;
  r.bytes = bytes;
  r.threads = nth;
  r.passes = passes;
  double sum = 0;
  for (int p = 0; p < passes + 1; ++p) {  // pass 0 warms up
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int ith, int) {
      const size_t b = std::min(bytes, per * ith), e = std::min(bytes, b + per);
      sink ^= fold(buf.get() + b, e - b);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (p == 0) continue;
    const double gbs = bytes / s / 1e9;
    sum += gbs;
    r.gb_per_s = std::max(r.gb_per_s, gbs);
  }
  r.mean_gb_per_s = sum / passes;
  return r;
}

}  // namespace ferrum::cli
