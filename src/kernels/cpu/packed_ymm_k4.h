// The Q4_K and Q5_K packed products on 256-bit registers: a part of packed_ymm.h, included by it
// (inside its namespace, after the helpers and dot-product policies it uses); not a header of its own.
// NOLINTBEGIN(misc-definitions-in-headers)

// The mins term of super-block b for the 8 rows of half h, per token: the 8 sub-blocks' 6-bit mins
// times the token's level sums (4 vpmaddwd of min pairs against level-sum pairs).
template <int NT>
inline void k4_mins(const uint8_t* g, const Q4KOffsets& o, int h, const PackedTokens<256, int16_t, NT>& tok,
                    int64_t b, __m256i* M) {
  for (int t = 0; t < NT; ++t) M[t] = _mm256_setzero_si256();
  for (int pr = 0; pr < 4; ++pr) {
    const __m256i mn =
        _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(g + o.mn + 32 * pr + 16 * h)));
    for (int t = 0; t < NT; ++t)
      M[t] = _mm256_add_epi32(M[t], _mm256_madd_epi16(mn, bcast32(tok.sums[t] + 8 * b + 2 * pr)));
  }
}

// H halves x NT tokens (Q4_K, or Q5_K with kQ5). Per chunk (a sub-block pair: low and high
// nibbles) 16 dot-product steps; each sub-block's sum is scaled by its 6-bit scale in integers
// (without VNNI inside the widening vpmaddwd; with VNNI one vpmulld); the mins term is 4 vpmaddwd
// per super-block, and the super-block ends in two fused multiply-adds per token. (One sub-block
// at a time, reloading the nibbles, holds fewer registers but measured 20% slower.)
template <class D, bool kQ5, int NT, int H>
void half_k4(const uint8_t* g, int h0, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  constexpr size_t kBlock = kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes,
                   kChunk = kQ5 ? kQ5KChunkBytes : kQ4KChunkBytes;
  constexpr size_t kNib = kQ5 ? kQ5KMaskBytes : 0;
  constexpr int kWiden = D::steps_per_widen(kQ5 ? 31 : 15);
  const PackedTokens<256, int16_t, NT> tok(act, stride, n);
  __m256 acc[H][NT];
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) acc[hh][t] = _mm256_setzero_ps();
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nsb; ++b) {
    const Q4KOffsets o = q4k_offsets(b, kBlock);
    __m256i S[H][NT];
    for (int hh = 0; hh < H; ++hh)
      for (int t = 0; t < NT; ++t) S[hh][t] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = g + o.qs + c * kChunk;
      if (h0 == 0) pf.upto(q + kChunk);
      for (int hh = 0; hh < H; ++hh) {
        const int h = h0 + hh;
        const __m256i fl = D::factor(u8x8(g + o.sc + 32 * c + 8 * h)),
                      fh = D::factor(u8x8(g + o.sc + 32 * c + 16 + 8 * h));
        __m256i pl[NT], ph[NT];
        for (int t = 0; t < NT; ++t) pl[t] = ph[t] = _mm256_setzero_si256();
        for (int j = 0; j < 8; ++j) {
          __m256i lo, hi;
          nibbles<kQ5>(q + kNib + 64 * j + 32 * h, q + 16 * j + 4 * h, lo, hi);
          for (int t = 0; t < NT; ++t) {
            const int8_t* a = tok.qs[t] + 256 * b + 64 * c + 4 * j;
            pl[t] = D::step(pl[t], lo, bcast32(a));
            ph[t] = D::step(ph[t], hi, bcast32(a + 32));
          }
          if ((j + 1) % kWiden == 0 || j == 7)
            for (int t = 0; t < NT; ++t) {
              S[hh][t] = _mm256_add_epi32(
                  S[hh][t], _mm256_add_epi32(D::widen_scaled(pl[t], fl), D::widen_scaled(ph[t], fh)));
              pl[t] = ph[t] = _mm256_setzero_si256();
            }
        }
      }
    }
    for (int hh = 0; hh < H; ++hh) {
      const int h = h0 + hh;
      __m256i M[NT];
      k4_mins(g, o, h, tok, b, M);
      const __m256 d = load_f16x8(g + o.d + 16 * h), dm = load_f16x8(g + o.dmin + 16 * h);
      for (int t = 0; t < NT; ++t) {
        const __m256 da = _mm256_set1_ps(tok.d[t][b]);
        acc[hh][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[hh][t]), _mm256_mul_ps(d, da), acc[hh][t]);
        acc[hh][t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M[t]), _mm256_mul_ps(dm, da), acc[hh][t]);
      }
    }
  }
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy + 8 * (h0 + hh), acc[hh][t]);
}

// Q5_K with more tokens than a tile, as q6k_panel: each super-block of the group is decoded once
// (the low and high nibble vectors of every step with their fifth bits, and the sub-blocks' scale
// factors: 4.5 KiB) and every tile of 4 tokens reads it from L1. The same integer and float steps as
// half_k4: the same bits. (Q4_K through the same panel measured no faster: its decoding is 3
// operations per 8 steps, and the panel's second weight load per step costs as much; k4_fn.)
struct K4Panel {
  alignas(32) uint8_t w[2][4][8][2][32];  // [half][chunk][step j][low, high]
  alignas(32) uint8_t f[2][4][2][32];     // [half][chunk][low, high]: D::factor of the 8 rows' scales
};

template <class D, bool kQ5>
void k4_decode(const uint8_t* g, const Q4KOffsets& o, K4Panel& pn) {
  constexpr size_t kChunk = kQ5 ? kQ5KChunkBytes : kQ4KChunkBytes, kNib = kQ5 ? kQ5KMaskBytes : 0;
  for (int h = 0; h < 2; ++h)
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = g + o.qs + c * kChunk;
      for (int j = 0; j < 8; ++j) {
        __m256i lo, hi;
        nibbles<kQ5>(q + kNib + 64 * j + 32 * h, q + 16 * j + 4 * h, lo, hi);
        _mm256_store_si256(reinterpret_cast<__m256i*>(pn.w[h][c][j][0]), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(pn.w[h][c][j][1]), hi);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(pn.f[h][c][0]),
                         D::factor(u8x8(g + o.sc + 32 * c + 8 * h)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(pn.f[h][c][1]),
                         D::factor(u8x8(g + o.sc + 32 * c + 16 + 8 * h)));
    }
}

// Super-block b of half h x NT tokens from the panel, added to (b > 0) or stored in (b = 0) y.
template <class D, bool kQ5, int NT>
void k4_panel_half(const K4Panel& pn, const uint8_t* g, const Q4KOffsets& o, int h, int64_t b, int64_t n,
                   const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  constexpr int kWiden = D::steps_per_widen(kQ5 ? 31 : 15);
  const PackedTokens<256, int16_t, NT> tok(act, stride, n);
  __m256i S[NT];
  for (int t = 0; t < NT; ++t) S[t] = _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c) {
    const __m256i fl = load256(pn.f[h][c][0]), fh = load256(pn.f[h][c][1]);
    __m256i pl[NT], ph[NT];
    for (int t = 0; t < NT; ++t) pl[t] = ph[t] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i lo = load256(pn.w[h][c][j][0]), hi = load256(pn.w[h][c][j][1]);
      for (int t = 0; t < NT; ++t) {
        const int8_t* a = tok.qs[t] + 256 * b + 64 * c + 4 * j;
        pl[t] = D::step(pl[t], lo, bcast32(a));
        ph[t] = D::step(ph[t], hi, bcast32(a + 32));
      }
      if ((j + 1) % kWiden == 0 || j == 7)
        for (int t = 0; t < NT; ++t) {
          S[t] = _mm256_add_epi32(S[t],
                                  _mm256_add_epi32(D::widen_scaled(pl[t], fl), D::widen_scaled(ph[t], fh)));
          pl[t] = ph[t] = _mm256_setzero_si256();
        }
    }
  }
  __m256i M[NT];
  k4_mins(g, o, h, tok, b, M);
  const __m256 d = load_f16x8(g + o.d + 16 * h), dm = load_f16x8(g + o.dmin + 16 * h);
  for (int t = 0; t < NT; ++t) {
    float* yt = y + t * ldy + 8 * h;
    const __m256 da = _mm256_set1_ps(tok.d[t][b]);
    __m256 sum = panel_sums(yt, b);
    sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[t]), _mm256_mul_ps(d, da), sum);
    _mm256_storeu_ps(yt, _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M[t]), _mm256_mul_ps(dm, da), sum));
  }
}

template <class D, bool kQ5, int kTile>
void k4_panel(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  constexpr size_t kBlock = kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes;
  K4Panel pn;
  panel_super_blocks<kTile>(
      g, n, kBlock, nt, y, ldy, [](int64_t b) { return q4k_offsets(b, kBlock); },
      [&](const Q4KOffsets& o) { k4_decode<D, kQ5>(g, o, pn); },
      [&](auto k, int h, int t0, int64_t b, const Q4KOffsets& o, float* ys) {
        k4_panel_half<D, kQ5, decltype(k)::value>(pn, g, o, h, b, n, act + t0 * stride, stride, ys,
                                                  kPackRows);
      });
}

// Q4_K / Q5_K with 13 to 16 tokens in vector lanes (PackedKernels::Kernel::lanes): each
// super-block of the group is decoded once into the panel, then a step broadcasts a row's 4 weights
// against 2 vectors of 8 tokens' 4 activations (packed_act.h, interleave_lane_tokens). The tile
// kernels split the nibbles again for every 4 tokens; here the inner loop is the dot-product steps
// and their adds only: with 16 tokens 1.19x the tiles' multiply-adds per cycle (Q4_K, a 16384x2048
// matrix; 8 tokens in one vector 0.86x, 12 in two 0.90x: empty lanes cost as full ones), Q5_K 1.16x
// its panel tiles. 4 rows x 2 token vectors per pass; the loop over steps stays rolled (unrolled,
// the compiler loaded every step's activations first and spilled them). Every token's integer sums
// and float steps are half_k4's, in its order: the same bits.
constexpr int kLaneRows = 4;  // rows per pass (2: 4% slower)
constexpr int kLaneVectors = kLaneTokens / 8;  // token vectors of 8
template <class D, bool kQ5>
void k4_lanes_rows(const K4Panel& pn, const uint8_t* lb, int h, int r0,
                   __m256i (&S)[kLaneRows][kLaneVectors]) {
  constexpr int kWiden = D::steps_per_widen(kQ5 ? 31 : 15);
  for (int r = 0; r < kLaneRows; ++r)
    for (int v = 0; v < kLaneVectors; ++v) S[r][v] = _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c)
    for (int lh = 0; lh < 2; ++lh) {  // the chunk's low-nibble sub-block, then its high one
      for (int j0 = 0; j0 < 8; j0 += kWiden) {
        __m256i p[kLaneRows][kLaneVectors];
        for (int r = 0; r < kLaneRows; ++r)
          for (int v = 0; v < kLaneVectors; ++v) p[r][v] = _mm256_setzero_si256();
#pragma clang loop unroll(disable)
        for (int j = j0; j < std::min(8, j0 + kWiden); ++j) {
          const uint8_t* a = lb + kLaneLevels + (16 * c + 8 * lh + j) * 4 * kLaneTokens;
          __m256i av[kLaneVectors];
          for (int v = 0; v < kLaneVectors; ++v) av[v] = load256(a + 32 * v);
          for (int r = 0; r < kLaneRows; ++r) {
            const __m256i w = bcast32(pn.w[h][c][j][lh] + 4 * (r0 + r));
            for (int v = 0; v < kLaneVectors; ++v) p[r][v] = D::step(p[r][v], w, av[v]);
          }
        }
        for (int r = 0; r < kLaneRows; ++r) {
          const __m256i f = bcast32(pn.f[h][c][lh] + 4 * (r0 + r));
          for (int v = 0; v < kLaneVectors; ++v)
            S[r][v] = _mm256_add_epi32(S[r][v], D::widen_scaled(p[r][v], f));
        }
      }
    }
}

template <class D, bool kQ5>
void k4_lanes_fn(const uint8_t* g, int64_t n, const uint8_t* lanes, int nt, float* y, int64_t ldy) {
  constexpr size_t kBlock = kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes;
  K4Panel pn;
  alignas(32) float acc[16][kLaneVectors][8] = {};  // [row][token vector][token]
  alignas(32) int32_t mins[2][4][8];       // [half][sub-block pair][row]: the pair's 6-bit mins as int16
  alignas(32) float d[2][2][8];            // [half][d, dmin][row]
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < n / 256; ++b) {
    const Q4KOffsets o = q4k_offsets(b, kBlock);
    pf.upto(g + (b + 1) * kBlock);
    k4_decode<D, kQ5>(g, o, pn);
    for (int h = 0; h < 2; ++h) {
      for (int pr = 0; pr < 4; ++pr)
        _mm256_store_si256(reinterpret_cast<__m256i*>(mins[h][pr]),
                           _mm256_cvtepu8_epi16(_mm_load_si128(
                               reinterpret_cast<const __m128i*>(g + o.mn + 32 * pr + 16 * h))));
      _mm256_store_ps(d[h][0], load_f16x8(g + o.d + 16 * h));
      _mm256_store_ps(d[h][1], load_f16x8(g + o.dmin + 16 * h));
    }
    const uint8_t* lb = lanes + b * kLaneBlockBytes;
    for (int h = 0; h < 2; ++h)
      for (int r0 = 0; r0 < 8; r0 += kLaneRows) {
        __m256i S[kLaneRows][kLaneVectors];
        k4_lanes_rows<D, kQ5>(pn, lb, h, r0, S);
        for (int r = 0; r < kLaneRows; ++r)
          for (int v = 0; v < kLaneVectors; ++v) {
            __m256i M = _mm256_setzero_si256();
            for (int pr = 0; pr < 4; ++pr)
              M = _mm256_add_epi32(
                  M, _mm256_madd_epi16(_mm256_set1_epi32(mins[h][pr][r0 + r]),
                                       load256(lb + kLaneSums + (pr * kLaneTokens + 8 * v) * 4)));
            const __m256 da = _mm256_load_ps(reinterpret_cast<const float*>(lb + kLaneScales) + 8 * v);
            float* a = acc[8 * h + r0 + r][v];
            __m256 sum = _mm256_load_ps(a);
            sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[r][v]),
                                  _mm256_mul_ps(_mm256_set1_ps(d[h][0][r0 + r]), da), sum);
            sum = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M), _mm256_mul_ps(_mm256_set1_ps(d[h][1][r0 + r]), da),
                                   sum);
            _mm256_store_ps(a, sum);
          }
      }
  }
  for (int t = 0; t < nt; ++t)
    for (int r = 0; r < 16; ++r) y[t * ldy + r] = acc[r][t / 8][t % 8];
}

// NOLINTEND(misc-definitions-in-headers)
