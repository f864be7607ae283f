// AVX-512 attention tile steps (head sizes that are multiples of 16). Keys are converted from the
// cache type 16 values at a time and transposed 16 x 16 in registers; scores and outputs are
// blocked 4 rows x 64 columns in registers. A row's arithmetic is the same in a block of 4 and
// alone (see attention_tile.h).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/exp_avx512.h"

namespace ferrum::kernels {
namespace {

// 16 values of head h from element d0 of a cached row, as floats.
inline __m512 load16(const uint8_t* row, KvType t, int h, int n_head_kv, int hd, int d0) {
  const size_t off = static_cast<size_t>(h) * hd + d0;
  switch (t) {
    case KvType::F32:
      return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + off);
    case KvType::F16:
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + off * 2)));
    case KvType::BF16: {
      const __m512i w =
          _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + off * 2)));
      return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
    case KvType::INT8: {
      float s;
      std::memcpy(&s, row + static_cast<size_t>(n_head_kv) * hd + static_cast<size_t>(h) * 4, sizeof(float));
      const __m512i w = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + off)));
      return _mm512_mul_ps(_mm512_cvtepi32_ps(w), _mm512_set1_ps(s));
    }
  }
  return _mm512_setzero_ps();
}

// In-register transpose of 16 rows of 16 floats: r[i][j] -> r[j][i].
inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4q + k], 128-bit lane L: rows 4q..4q+3 at column 4L + k.
  for (int q = 0; q < 4; ++q) {
    const __m512d a = _mm512_castps_pd(t[4 * q]), b = _mm512_castps_pd(t[4 * q + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * q + 2]), d = _mm512_castps_pd(t[4 * q + 3]);
    u[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x44),
                 v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xEE);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x44);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xEE);
    r[k] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[4 + k] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
    r[8 + k] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
  }
}

void load_keys(const uint8_t* const* rows, int a, int b, KvType t, int h, int n_head_kv, int hd, float* kt) {
  for (int j0 = 0; j0 < kKeyTile; j0 += 16) {
    if (j0 + 16 <= a || j0 >= b) {
      for (int d = 0; d < hd; ++d) _mm512_storeu_ps(kt + d * kKeyTile + j0, _mm512_setzero_ps());
      continue;
    }
    for (int d0 = 0; d0 < hd; d0 += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) {
        const int j = j0 + i;
        r[i] = j >= a && j < b ? load16(rows[j], t, h, n_head_kv, hd, d0) : _mm512_setzero_ps();
      }
      transpose16(r);
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(kt + (d0 + i) * kKeyTile + j0, r[i]);
    }
  }
}

void load_values(const uint8_t* const* rows, int a, int b, KvType t, int h, int n_head_kv, int hd,
                 float* vt) {
  for (int j = 0; j < b; ++j)
    for (int d0 = 0; d0 < hd; d0 += 16)
      _mm512_storeu_ps(vt + j * hd + d0,
                       j < a ? _mm512_setzero_ps() : load16(rows[j], t, h, n_head_kv, hd, d0));
}

// NR query rows x the tile's 64 keys: 4 zmm accumulators per row.
template <int NR>
void scores_rows(const float* q, const float* kt, int hd, float scale, float* s) {
  __m512 acc[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int d = 0; d < hd; ++d) {
    const float* k = kt + d * kKeyTile;
    const __m512 k0 = _mm512_loadu_ps(k), k1 = _mm512_loadu_ps(k + 16), k2 = _mm512_loadu_ps(k + 32),
                 k3 = _mm512_loadu_ps(k + 48);
    for (int r = 0; r < NR; ++r) {
      const __m512 qd = _mm512_set1_ps(q[r * hd + d]);
      acc[r][0] = _mm512_fmadd_ps(qd, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(qd, k1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(qd, k2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(qd, k3, acc[r][3]);
    }
  }
  const __m512 vs = _mm512_set1_ps(scale);
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(s + r * kKeyTile + 16 * c, _mm512_mul_ps(acc[r][c], vs));
}

void scores(const float* q, int R, const float* kt, int hd, float scale, float* s) {
  int r = 0;
  for (; r + 4 <= R; r += 4) scores_rows<4>(q + r * hd, kt, hd, scale, s + r * kKeyTile);
  for (; r < R; ++r) scores_rows<1>(q + r * hd, kt, hd, scale, s + r * kKeyTile);
}

void softmax_step(float* s, int R, float* m, float* l, float* c) {
  for (int r = 0; r < R; ++r) {
    float* x = s + r * kKeyTile;
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16), x2 = _mm512_loadu_ps(x + 32),
                 x3 = _mm512_loadu_ps(x + 48);
    const float tile_max = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(x0, x1), _mm512_max_ps(x2, x3)));
    const float mx = tile_max > m[r] ? tile_max : m[r];
    const __m512 vm = _mm512_set1_ps(mx);
    const __m512 e0 = exp16(_mm512_sub_ps(x0, vm)), e1 = exp16(_mm512_sub_ps(x1, vm));
    const __m512 e2 = exp16(_mm512_sub_ps(x2, vm)), e3 = exp16(_mm512_sub_ps(x3, vm));
    _mm512_storeu_ps(x, e0);
    _mm512_storeu_ps(x + 16, e1);
    _mm512_storeu_ps(x + 32, e2);
    _mm512_storeu_ps(x + 48, e3);
    const float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(e0, e1), _mm512_add_ps(e2, e3)));
    c[r] = std::exp(m[r] - mx);
    l[r] = l[r] * c[r] + sum;
    m[r] = mx;
  }
}

// NR rows x up to 64 output columns from column i (masks for the head's last columns).
template <int NR>
void accumulate_rows(const float* p, const float* vt, int n, int hd, int i, const float* c, float* acc) {
  __mmask16 mk[4];
  for (int k = 0; k < 4; ++k) {
    const int left = hd - i - 16 * k;
    mk[k] = left >= 16 ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
  }
  __m512 a[NR][4];
  for (int r = 0; r < NR; ++r) {
    const __m512 cr = _mm512_set1_ps(c[r]);
    for (int k = 0; k < 4; ++k)
      a[r][k] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[k], acc + r * hd + i + 16 * k), cr);
  }
  for (int j = 0; j < n; ++j) {
    const float* v = vt + j * hd + i;
    const __m512 v0 = _mm512_maskz_loadu_ps(mk[0], v), v1 = _mm512_maskz_loadu_ps(mk[1], v + 16);
    const __m512 v2 = _mm512_maskz_loadu_ps(mk[2], v + 32), v3 = _mm512_maskz_loadu_ps(mk[3], v + 48);
    for (int r = 0; r < NR; ++r) {
      const __m512 w = _mm512_set1_ps(p[r * kKeyTile + j]);
      a[r][0] = _mm512_fmadd_ps(w, v0, a[r][0]);
      a[r][1] = _mm512_fmadd_ps(w, v1, a[r][1]);
      a[r][2] = _mm512_fmadd_ps(w, v2, a[r][2]);
      a[r][3] = _mm512_fmadd_ps(w, v3, a[r][3]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < 4; ++k) _mm512_mask_storeu_ps(acc + r * hd + i + 16 * k, mk[k], a[r][k]);
}

void accumulate(const float* p, int R, const float* vt, int n, int hd, const float* c, float* acc) {
  for (int i = 0; i < hd; i += 64) {
    int r = 0;
    for (; r + 4 <= R; r += 4) accumulate_rows<4>(p + r * kKeyTile, vt, n, hd, i, c + r, acc + r * hd);
    for (; r < R; ++r) accumulate_rows<1>(p + r * kKeyTile, vt, n, hd, i, c + r, acc + r * hd);
  }
}

// Up to 4 rows x 64 output columns from column i, value rows converted from the cache in registers.
template <int NR>
void accumulate_cached(const float* p, const uint8_t* const* rows, int a, int n, KvType t, int h,
                       int n_head_kv, int hd, int i, const float* c, float* acc) {
  const int nv = std::min(4, (hd - i) / 16);  // hd is a multiple of 16 here
  __m512 acc_r[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < nv; ++k)
      acc_r[r][k] = _mm512_mul_ps(_mm512_loadu_ps(acc + r * hd + i + 16 * k), _mm512_set1_ps(c[r]));
  for (int j = a; j < n; ++j) {
    __m512 v[4];
    for (int k = 0; k < nv; ++k) v[k] = load16(rows[j], t, h, n_head_kv, hd, i + 16 * k);
    for (int r = 0; r < NR; ++r) {
      const __m512 w = _mm512_set1_ps(p[r * kKeyTile + j]);
      for (int k = 0; k < nv; ++k) acc_r[r][k] = _mm512_fmadd_ps(w, v[k], acc_r[r][k]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < nv; ++k) _mm512_storeu_ps(acc + r * hd + i + 16 * k, acc_r[r][k]);
}

void accumulate_rows(const float* p, int R, const uint8_t* const* rows, int a, int n, KvType t, int h,
                     int n_head_kv, int hd, const float* c, float* acc) {
  for (int i = 0; i < hd; i += 64) {
    int r = 0;
    for (; r + 4 <= R; r += 4)
      accumulate_cached<4>(p + r * kKeyTile, rows, a, n, t, h, n_head_kv, hd, i, c + r, acc + r * hd);
    for (; r < R; ++r)
      accumulate_cached<1>(p + r * kKeyTile, rows, a, n, t, h, n_head_kv, hd, i, c + r, acc + r * hd);
  }
}

const AttentionTileOps kAvx512 = {load_keys, load_values, scores, softmax_step, accumulate, accumulate_rows};

}  // namespace

const AttentionTileOps& avx512_tile_ops() {
  return kAvx512;
}

}  // namespace ferrum::kernels
