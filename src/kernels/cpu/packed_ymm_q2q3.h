// The Q3_K and Q2_K packed products on 256-bit registers: a part of packed_ymm.h, included by it
// (inside its namespace, after the helpers and dot-product policies it uses); not a header of its own.
// NOLINTBEGIN(misc-definitions-in-headers)

// Q3_K, H halves x NT tokens: as the AVX-512 group_q3k on 8 rows per half (per step and value one
// shift and mask of the low bits and of the third bit, one dot-product step per token); without VNNI
// the -4 offset is taken off once per super-block from the level sums, as Q6_K's -32.
template <class D, int NT, int H>
void half_q3k(const uint8_t* g, int h0, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4);
  __m256 acc[H][NT];
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) acc[hh][t] = _mm256_setzero_ps();
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nsb; ++b) {
    const Q3KOffsets o = q3k_offsets(b);
    if (h0 == 0) pf.upto(g + (b + 1) * kQ3KBlockBytes);
    __m256i S[H][NT];
    for (int hh = 0; hh < H; ++hh)
      for (int t = 0; t < NT; ++t) S[hh][t] = _mm256_setzero_si256();
    for (int c = 0; c < 2; ++c)
      for (int half = 0; half < 2; ++half)
        for (int hh = 0; hh < H; ++hh) {
          const int h = h0 + hh;
          for (int i = 0; i < 4; ++i) {  // sub-block 8c + 2i + half: steps j = 4 half .. + 3
            const int sb = 8 * c + 2 * i + half, hb = 4 * c + i;
            __m256i p[NT];
            for (int t = 0; t < NT; ++t)
              p[t] = D::kVnni ? _mm256_set1_epi32(tok.sums[t][16 * b + sb]) : _mm256_setzero_si256();
            for (int j = 4 * half; j < 4 * half + 4; ++j) {
              const __m256i l = load256(g + o.qs + 64 * (8 * c + j) + 32 * h),
                            hm = load256(g + o.hm + 64 * j + 32 * h);
              const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(l, _mm_cvtsi32_si128(2 * i)), m3);
              const __m256i hi = _mm256_and_si256(hb >= 2 ? _mm256_srl_epi16(hm, _mm_cvtsi32_si128(hb - 2))
                                                          : _mm256_sll_epi16(hm, _mm_cvtsi32_si128(2 - hb)),
                                                  m4);
              const __m256i w = _mm256_or_si256(lo, hi);
              for (int t = 0; t < NT; ++t)
                p[t] = D::step(p[t], w, bcast32(tok.qs[t] + 256 * b + 128 * c + 32 * i + 4 * j));
            }
            const __m256i f = D::factor(s8x8(g + o.sc + 16 * sb + 8 * h));
            for (int t = 0; t < NT; ++t) S[hh][t] = _mm256_add_epi32(S[hh][t], D::widen_scaled(p[t], f));
          }
        }
    for (int hh = 0; hh < H; ++hh) {
      const int h = h0 + hh;
      if constexpr (!D::kVnni) {
        sub_level_offsets<2>(g + o.sc, h, tok, n, b, S[hh]);
      }
      const __m256 d = load_f16x8(g + o.d + 16 * h);
      for (int t = 0; t < NT; ++t)
        acc[hh][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[hh][t]),
                                     _mm256_mul_ps(d, _mm256_set1_ps(tok.d[t][b])), acc[hh][t]);
    }
  }
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy + 8 * (h0 + hh), acc[hh][t]);
}

// Q3_K with more tokens than a tile, as q6k_panel: each super-block decoded once (its 128 weight
// vectors of 3-bit values and the 16 sub-blocks' scale factors, 5 KiB) for every tile of 4 tokens.
// The same integer and float steps as half_q3k: the same bits.
struct Q3KPanel {
  alignas(32) uint8_t w[2][2][2][4][4][32];  // [half h][c][step half][i][step j - 4 * step half]
  alignas(32) uint8_t f[2][16][32];          // [half h][sub-block]: D::factor of the 8 rows' scales
};

template <class D>
void q3k_decode(const uint8_t* g, const Q3KOffsets& o, Q3KPanel& pn) {
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4);
  for (int h = 0; h < 2; ++h) {
    for (int c = 0; c < 2; ++c)
      for (int j = 0; j < 8; ++j) {
        const __m256i l = load256(g + o.qs + 64 * (8 * c + j) + 32 * h),
                      hm = load256(g + o.hm + 64 * j + 32 * h);
        for (int i = 0; i < 4; ++i) {
          const int hb = 4 * c + i;
          const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(l, _mm_cvtsi32_si128(2 * i)), m3);
          const __m256i hi = _mm256_and_si256(hb >= 2 ? _mm256_srl_epi16(hm, _mm_cvtsi32_si128(hb - 2))
                                                      : _mm256_sll_epi16(hm, _mm_cvtsi32_si128(2 - hb)),
                                              m4);
          _mm256_store_si256(reinterpret_cast<__m256i*>(pn.w[h][c][j / 4][i][j % 4]),
                             _mm256_or_si256(lo, hi));
        }
      }
    for (int sb = 0; sb < 16; ++sb)
      _mm256_store_si256(reinterpret_cast<__m256i*>(pn.f[h][sb]),
                         D::factor(s8x8(g + o.sc + 16 * sb + 8 * h)));
  }
}

// Super-block b of half h x NT tokens from the panel, added to (b > 0) or stored in (b = 0) y.
template <class D, int NT>
void q3k_panel_half(const Q3KPanel& pn, const uint8_t* g, const Q3KOffsets& o, int h, int64_t b, int64_t n,
                    const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  __m256i S[NT];
  for (int t = 0; t < NT; ++t) S[t] = _mm256_setzero_si256();
  for (int c = 0; c < 2; ++c)
    for (int half = 0; half < 2; ++half)
      for (int i = 0; i < 4; ++i) {
        const int sb = 8 * c + 2 * i + half;
        __m256i p[NT];
        for (int t = 0; t < NT; ++t)
          p[t] = D::kVnni ? _mm256_set1_epi32(tok.sums[t][16 * b + sb]) : _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) {
          const __m256i w = load256(pn.w[h][c][half][i][j]);
          for (int t = 0; t < NT; ++t)
            p[t] = D::step(p[t], w, bcast32(tok.qs[t] + 256 * b + 128 * c + 32 * i + 4 * (4 * half + j)));
        }
        const __m256i f = load256(pn.f[h][sb]);
        for (int t = 0; t < NT; ++t) S[t] = _mm256_add_epi32(S[t], D::widen_scaled(p[t], f));
      }
  if constexpr (!D::kVnni) sub_level_offsets<2>(g + o.sc, h, tok, n, b, S);
  const __m256 d = load_f16x8(g + o.d + 16 * h);
  for (int t = 0; t < NT; ++t) {
    float* yt = y + t * ldy + 8 * h;
    const __m256 sum = panel_sums(yt, b);
    _mm256_storeu_ps(
        yt, _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[t]), _mm256_mul_ps(d, _mm256_set1_ps(tok.d[t][b])), sum));
  }
}

template <class D, int kTile>
void q3k_panel(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, int nt, float* y,
               int64_t ldy) {
  Q3KPanel pn;
  panel_super_blocks<kTile>(
      g, n, kQ3KBlockBytes, nt, y, ldy, q3k_offsets, [&](const Q3KOffsets& o) { q3k_decode<D>(g, o, pn); },
      [&](auto k, int h, int t0, int64_t b, const Q3KOffsets& o, float* ys) {
        q3k_panel_half<D, decltype(k)::value>(pn, g, o, h, b, n, act + t0 * stride, stride, ys, kPackRows);
      });
}

// Q2_K, H halves x NT tokens: as the AVX-512 group_q2k on 8 rows per half.
template <class D, int NT, int H>
void half_q2k(const uint8_t* g, int h0, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi32(15), m15w = _mm256_set1_epi16(15);
  __m256 acc[H][NT];
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) acc[hh][t] = _mm256_setzero_ps();
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nsb; ++b) {
    const Q2KOffsets o = q2k_offsets(b);
    if (h0 == 0) pf.upto(g + (b + 1) * kQ2KBlockBytes);
    for (int hh = 0; hh < H; ++hh) {
      const int h = h0 + hh;
      __m256i S[NT], M[NT];
      for (int t = 0; t < NT; ++t) S[t] = M[t] = _mm256_setzero_si256();
      for (int c = 0; c < 2; ++c)
        for (int half = 0; half < 2; ++half)
          for (int i = 0; i < 4; ++i) {  // sub-block 8c + 2i + half: steps j = 4 half .. + 3
            __m256i p[NT];
            for (int t = 0; t < NT; ++t) p[t] = _mm256_setzero_si256();
            for (int j = 4 * half; j < 4 * half + 4; ++j) {
              const __m256i w = _mm256_and_si256(
                  _mm256_srl_epi16(load256(g + o.qs + 64 * (8 * c + j) + 32 * h), _mm_cvtsi32_si128(2 * i)),
                  m3);
              for (int t = 0; t < NT; ++t)
                p[t] = D::step(p[t], w, bcast32(tok.qs[t] + 256 * b + 128 * c + 32 * i + 4 * j));
            }
            // Pair 4c + i: sub-block 8c + 2i in the low 16 bits of each row's lane, 8c + 2i + 1 above.
            const __m256i v = _mm256_cvtepu8_epi16(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + o.sm + 32 * (4 * c + i) + 16 * h)));
            const __m256i f = D::factor(_mm256_and_si256(half ? _mm256_srli_epi32(v, 16) : v, m15));
            for (int t = 0; t < NT; ++t) S[t] = _mm256_add_epi32(S[t], D::widen_scaled(p[t], f));
          }
      for (int pr = 0; pr < 8; ++pr) {
        const __m256i mn = _mm256_and_si256(
            _mm256_srli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i*>(g + o.sm + 32 * pr + 16 * h))),
                              4),
            m15w);
        for (int t = 0; t < NT; ++t)
          M[t] = _mm256_add_epi32(M[t],
                                  _mm256_madd_epi16(mn, bcast32(q6k_level_sums(tok.sums[t], n, b) + 2 * pr)));
      }
      const __m256 d = load_f16x8(g + o.d + 16 * h), dm = load_f16x8(g + o.dmin + 16 * h);
      for (int t = 0; t < NT; ++t) {
        const __m256 da = _mm256_set1_ps(tok.d[t][b]);
        acc[hh][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[t]), _mm256_mul_ps(d, da), acc[hh][t]);
        acc[hh][t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M[t]), _mm256_mul_ps(dm, da), acc[hh][t]);
      }
    }
  }
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy + 8 * (h0 + hh), acc[hh][t]);
}

// Q2_K with more tokens than a tile, as q6k_panel: each super-block decoded once (its 128 weight
// vectors of 2-bit values, the 16 sub-blocks' scale factors and the mins as vpmaddwd operands, 5.5
// KiB) for every tile of 4 tokens. The same integer and float steps as half_q2k: the same bits.
struct Q2KPanel {
  alignas(32) uint8_t w[2][2][2][4][4][32];  // [half h][c][step half][i][step j - 4 * step half]
  alignas(32) uint8_t f[2][2][2][4][32];     // [half h][c][step half][i]: D::factor of the scales
  alignas(32) uint8_t mn[2][8][32];          // [half h][sub-block pair]: the mins, 16-bit
};

template <class D>
void q2k_decode(const uint8_t* g, const Q2KOffsets& o, Q2KPanel& pn) {
  const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi32(15), m15w = _mm256_set1_epi16(15);
  for (int h = 0; h < 2; ++h) {
    for (int c = 0; c < 2; ++c)
      for (int j = 0; j < 8; ++j) {
        const __m256i l = load256(g + o.qs + 64 * (8 * c + j) + 32 * h);
        for (int i = 0; i < 4; ++i)
          _mm256_store_si256(reinterpret_cast<__m256i*>(pn.w[h][c][j / 4][i][j % 4]),
                             _mm256_and_si256(_mm256_srl_epi16(l, _mm_cvtsi32_si128(2 * i)), m3));
      }
    for (int pr = 0; pr < 8; ++pr) {  // pair pr = 4c + i: sub-blocks 8c + 2i and 8c + 2i + 1
      const __m256i v = _mm256_cvtepu8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + o.sm + 32 * pr + 16 * h)));
      for (int half = 0; half < 2; ++half)
        _mm256_store_si256(reinterpret_cast<__m256i*>(pn.f[h][pr / 4][half][pr % 4]),
                           D::factor(_mm256_and_si256(half ? _mm256_srli_epi32(v, 16) : v, m15)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(pn.mn[h][pr]),
                         _mm256_and_si256(_mm256_srli_epi16(v, 4), m15w));
    }
  }
}

// Super-block b of half h x NT tokens from the panel, added to (b > 0) or stored in (b = 0) y.
template <class D, int NT>
void q2k_panel_half(const Q2KPanel& pn, const uint8_t* g, const Q2KOffsets& o, int h, int64_t b, int64_t n,
                    const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  __m256i S[NT], M[NT];
  for (int t = 0; t < NT; ++t) S[t] = M[t] = _mm256_setzero_si256();
  for (int c = 0; c < 2; ++c)
    for (int half = 0; half < 2; ++half)
      for (int i = 0; i < 4; ++i) {
        __m256i p[NT];
        for (int t = 0; t < NT; ++t) p[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) {
          const __m256i w = load256(pn.w[h][c][half][i][j]);
          for (int t = 0; t < NT; ++t)
            p[t] = D::step(p[t], w, bcast32(tok.qs[t] + 256 * b + 128 * c + 32 * i + 4 * (4 * half + j)));
        }
        const __m256i f = load256(pn.f[h][c][half][i]);
        for (int t = 0; t < NT; ++t) S[t] = _mm256_add_epi32(S[t], D::widen_scaled(p[t], f));
      }
  for (int pr = 0; pr < 8; ++pr) {
    const __m256i mn = load256(pn.mn[h][pr]);
    for (int t = 0; t < NT; ++t)
      M[t] =
          _mm256_add_epi32(M[t], _mm256_madd_epi16(mn, bcast32(q6k_level_sums(tok.sums[t], n, b) + 2 * pr)));
  }
  const __m256 d = load_f16x8(g + o.d + 16 * h), dm = load_f16x8(g + o.dmin + 16 * h);
  for (int t = 0; t < NT; ++t) {
    float* yt = y + t * ldy + 8 * h;
    const __m256 da = _mm256_set1_ps(tok.d[t][b]);
    __m256 sum = panel_sums(yt, b);
    sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[t]), _mm256_mul_ps(d, da), sum);
    _mm256_storeu_ps(yt, _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M[t]), _mm256_mul_ps(dm, da), sum));
  }
}

template <class D, int kTile>
void q2k_panel(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, int nt, float* y,
               int64_t ldy) {
  Q2KPanel pn;
  panel_super_blocks<kTile>(
      g, n, kQ2KBlockBytes, nt, y, ldy, q2k_offsets, [&](const Q2KOffsets& o) { q2k_decode<D>(g, o, pn); },
      [&](auto k, int h, int t0, int64_t b, const Q2KOffsets& o, float* ys) {
        q2k_panel_half<D, decltype(k)::value>(pn, g, o, h, b, n, act + t0 * stride, stride, ys, kPackRows);
      });
}

// NOLINTEND(misc-definitions-in-headers)
