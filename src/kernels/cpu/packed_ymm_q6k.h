// The Q6_K packed products on 256-bit registers: a part of packed_ymm.h, included by it (inside its
// namespace, after the helpers and dot-product policies it uses); not a header of its own.
// NOLINTBEGIN(misc-definitions-in-headers)

// H halves x NT tokens. Per 4 inputs j of a 128-element half, L j, L j+8 and H j give 4
// vectors of 6-bit values (sub-blocks j/4, 4+j/4, 2+j/4, 6+j/4 of the half); one sub-block at a
// time, so one partial per token is live. With VNNI a sub-block starts from its bias and is scaled
// by vpmulld (as AVX-512); without, its 16-bit sums are scaled in the widening vpmaddwd every 2
// steps and the offset of 32 is applied once per super-block: 8 vpmaddwd of the scale pairs against
// the activations' level sums.
template <class D, int NT, int H>
void half_q6k(const uint8_t* g, int h0, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  constexpr int kWiden = D::steps_per_widen(63);
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  __m256 acc[H][NT];
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) acc[hh][t] = _mm256_setzero_ps();
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nsb; ++b) {
    const Q6KOffsets o = q6k_offsets(b);
    __m256i S[H][NT];
    for (int hh = 0; hh < H; ++hh)
      for (int t = 0; t < NT; ++t) S[hh][t] = _mm256_setzero_si256();
    for (int k = 0; k < 2; ++k) {  // the super-block's 128-element halves
      if (h0 == 0) pf.upto(g + o.qs + 1536 * (k + 1));
      static_for<4>([&](auto v_c) {  // which of the 4 values of a step: sub-blocks (0, 4, 2, 6) + j/4
        constexpr int v = decltype(v_c)::value;
        for (int jq = 0; jq < 2; ++jq)  // the sub-block's steps j = 4 jq .. 4 jq + 3
          for (int hh = 0; hh < H; ++hh) {
            const int h = h0 + hh;
            const uint8_t* q = g + o.qs + 32 * h;
            const int sb = 8 * k + q6k_value_sub_block(v) + jq;
            const int a_off = 128 * k + 16 * q6k_value_sub_block(v);
            const __m256i f = D::factor(s8x8(g + o.sc + 16 * sb + 8 * h));
            __m256i p[NT];
            for (int t = 0; t < NT; ++t)
              p[t] = D::kVnni ? _mm256_set1_epi32(tok.sums[t][16 * b + sb]) : _mm256_setzero_si256();
            for (int j = 4 * jq; j < 4 * jq + 4; ++j) {
              const __m256i l = load256(q + q6k_l(k, v < 2 ? j : j + 8)), hb = load256(q + q6k_h(k, j));
              __m256i lv = l, hv = hb;
              if constexpr (v % 2 == 1) lv = _mm256_srli_epi16(l, 4);
              if constexpr (v == 0) hv = _mm256_slli_epi16(hb, 4);
              if constexpr (v == 2) hv = _mm256_slli_epi16(hb, 2);
              if constexpr (v == 3) hv = _mm256_srli_epi16(hb, 2);
              const __m256i w = _mm256_or_si256(_mm256_and_si256(lv, m4), _mm256_and_si256(hv, m30));
              for (int t = 0; t < NT; ++t)
                p[t] = D::step(p[t], w, bcast32(tok.qs[t] + 256 * b + a_off + 4 * j));
              if ((j + 1) % kWiden == 0 || j == 4 * jq + 3)
                for (int t = 0; t < NT; ++t) {
                  S[hh][t] = _mm256_add_epi32(S[hh][t], D::widen_scaled(p[t], f));
                  p[t] = _mm256_setzero_si256();
                }
            }
          }
      });
    }
    for (int hh = 0; hh < H; ++hh) {
      const int h = h0 + hh;
      if constexpr (!D::kVnni) {
        sub_level_offsets<5>(g + o.sc, h, tok, n, b, S[hh]);
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

// Q6_K with more tokens than a tile (16-sequence decode, prompts): each super-block of the group is
// decoded once into the vectors half_q6k's steps multiply (6-bit values, 8 rows x 4 inputs each) and
// its sub-blocks' scale factors, 5 KiB that stay in L1 while every tile of 4 tokens reads them; the
// tiles' row sums add up in y from one super-block to the next. half_q6k decodes them again for every
// tile (about a third of its vector operations with 4 tokens). The same integer steps and the same
// float steps in the same order: the same bits as half_q6k.
struct Q6KPanel {
  alignas(32) uint8_t w[2][2][4][8][32];  // [half][128-element part k][value v][step j]
  alignas(32) uint8_t f[2][16][32];       // [half][sub-block]: D::factor of its 8 rows' scales
};

template <class D>
void q6k_decode(const uint8_t* g, const Q6KOffsets& o, Q6KPanel& pn) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  auto put = [&](uint8_t* dst, __m256i lv, __m256i hv) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(dst),
                       _mm256_or_si256(_mm256_and_si256(lv, m4), _mm256_and_si256(hv, m30)));
  };
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = g + o.qs + 32 * h;
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < 8; ++j) {
        const __m256i l0 = load256(q + q6k_l(k, j)), l1 = load256(q + q6k_l(k, j + 8)),
                      hb = load256(q + q6k_h(k, j));
        put(pn.w[h][k][0][j], l0, _mm256_slli_epi16(hb, 4));
        put(pn.w[h][k][1][j], _mm256_srli_epi16(l0, 4), hb);
        put(pn.w[h][k][2][j], l1, _mm256_slli_epi16(hb, 2));
        put(pn.w[h][k][3][j], _mm256_srli_epi16(l1, 4), _mm256_srli_epi16(hb, 2));
      }
    for (int sb = 0; sb < 16; ++sb)
      _mm256_store_si256(reinterpret_cast<__m256i*>(pn.f[h][sb]),
                         D::factor(s8x8(g + o.sc + 16 * sb + 8 * h)));
  }
}

// Super-block b of half h x NT tokens from the panel, added to (b > 0) or stored in (b = 0) y.
template <class D, int NT>
void q6k_panel_half(const Q6KPanel& pn, const uint8_t* g, const Q6KOffsets& o, int h, int64_t b, int64_t n,
                    const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  constexpr int kWiden = D::steps_per_widen(63);
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  __m256i S[NT];
  for (int t = 0; t < NT; ++t) S[t] = _mm256_setzero_si256();
  for (int k = 0; k < 2; ++k)
    static_for<4>([&](auto v_c) {
      constexpr int v = decltype(v_c)::value;
      for (int jq = 0; jq < 2; ++jq) {
        const int sb = 8 * k + q6k_value_sub_block(v) + jq;
        const int a_off = 128 * k + 16 * q6k_value_sub_block(v);
        const __m256i f = load256(pn.f[h][sb]);
        __m256i p[NT];
        for (int t = 0; t < NT; ++t)
          p[t] = D::kVnni ? _mm256_set1_epi32(tok.sums[t][16 * b + sb]) : _mm256_setzero_si256();
        for (int j = 4 * jq; j < 4 * jq + 4; ++j) {
          const __m256i w = load256(pn.w[h][k][v][j]);
          for (int t = 0; t < NT; ++t) p[t] = D::step(p[t], w, bcast32(tok.qs[t] + 256 * b + a_off + 4 * j));
          if ((j + 1) % kWiden == 0 || j == 4 * jq + 3)
            for (int t = 0; t < NT; ++t) {
              S[t] = _mm256_add_epi32(S[t], D::widen_scaled(p[t], f));
              p[t] = _mm256_setzero_si256();
            }
        }
      }
    });
  if constexpr (!D::kVnni) sub_level_offsets<5>(g + o.sc, h, tok, n, b, S);
  const __m256 d = load_f16x8(g + o.d + 16 * h);
  for (int t = 0; t < NT; ++t) {
    float* yt = y + t * ldy + 8 * h;
    const __m256 sum = panel_sums(yt, b);
    _mm256_storeu_ps(
        yt, _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[t]), _mm256_mul_ps(d, _mm256_set1_ps(tok.d[t][b])), sum));
  }
}

// A group x nt tokens (any number), super-block by super-block, in tiles of kTile tokens.
template <class D, int kTile>
void q6k_panel(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, int nt, float* y,
               int64_t ldy) {
  Q6KPanel pn;
  panel_super_blocks<kTile>(
      g, n, kQ6KBlockBytes, nt, y, ldy, q6k_offsets, [&](const Q6KOffsets& o) { q6k_decode<D>(g, o, pn); },
      [&](auto k, int h, int t0, int64_t b, const Q6KOffsets& o, float* ys) {
        q6k_panel_half<D, decltype(k)::value>(pn, g, o, h, b, n, act + t0 * stride, stride, ys, kPackRows);
      });
}

// NOLINTEND(misc-definitions-in-headers)
