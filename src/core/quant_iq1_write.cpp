// Own quantizers of IQ1_S and IQ1_M, after the design of llama.cpp's: every value is
// D * (2s + 1) * (level + offset) with level -1, 0 or +1 and offset +-1/8. With three levels the
// importance-weighted least-squares problem of a sub-block is solved exactly over its splits: the
// values sorted, every split of the sorted order into a -1 / 0 / +1 part and every choice of offset
// signs is scored from prefix sums (closed-form scale). Each group of 8 levels is then moved to the
// best of its nearest IQ1 grid points, and the sub-block scales are rounded to 3 bits.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/fp16.h"
#include "core/iq_grid_search.h"
#include "core/quant_fit.h"
#include "core/quant_iq_write.h"

namespace ferrum::quant_iq {
namespace {

using iq_grid_search::GridSearch;
using quant_fit::nearest_int;

constexpr int kSuper = 256;   // values per super-block
constexpr int kMaxSub = 32;   // values per sub-block: IQ1_S 32, IQ1_M 16
constexpr int kMaxParts = 2;  // parts of a sub-block with their own offset sign: IQ1_S 1, IQ1_M 2
constexpr float kOffset = 0.125f;
// Sub-blocks whose largest magnitude is below these are stored as zero (ggml's thresholds).
constexpr float kTinyIq1S = 1e-12f, kTinyIq1M = 1e-7f;
// ggml stores the super-block scale enlarged by these empirical factors (its author's tuning, for
// model quality rather than the least-squares error); kept to match its quantizer.
constexpr float kBoostIq1S = 1.125f, kBoostIq1M = 1.1125f;

// The value of level l (0, 1, 2 for -1, 0, +1) with the offset of sign `sign` (+1 or -1).
inline float level_value(int l, int sign) {
  return static_cast<float>(l - 1) + static_cast<float>(sign) * kOffset;
}

// Weights of a super-block's values as ggml's quantizer weighs them: the column's importance times
// sqrt(sigma2 + x^2), sigma2 twice the mean square, so that large values count more but small
// ones keep weight. Without importances, x^2.
void value_weights(const float* x, const float* importance, float* w) {
  float sumx2 = 0;
  for (int i = 0; i < kSuper; ++i) sumx2 += x[i] * x[i];
  const float sigma2 = 2 * sumx2 / kSuper;
  for (int i = 0; i < kSuper; ++i)
    w[i] = importance ? importance[i] * std::sqrt(sigma2 + x[i] * x[i]) : x[i] * x[i];
}

// A split of a sub-block's sorted values: positions [0, lo) get level 0, [lo, hi) level 1,
// [hi, n) level 2; bit p of `minus` gives part p the offset -1/8; scale is the least-squares one.
struct Split {
  int lo = -1, hi = -1;
  unsigned minus = 0;
  float scale = 0;
};

// Sums of w*x and of w over the first j sorted values, kept per part (values of the other parts
// add nothing), so that each part's sums over a run of sorted positions are one difference.
struct PrefixSums {
  float wx[kMaxParts][kMaxSub + 1];
  float w[kMaxParts][kMaxSub + 1];
};

PrefixSums prefix_sums(const float* x, const float* w, int n, int parts, const uint8_t* order) {
  PrefixSums s;
  for (int p = 0; p < parts; ++p) s.wx[p][0] = s.w[p][0] = 0;
  const int part_size = n / parts;
  for (int j = 0; j < n; ++j) {
    const int i = order[j];
    for (int p = 0; p < parts; ++p) {
      const bool mine = i / part_size == p;
      s.wx[p][j + 1] = s.wx[p][j] + (mine ? w[i] * x[i] : 0.0f);
      s.w[p][j + 1] = s.w[p][j] + (mine ? w[i] : 0.0f);
    }
  }
  return s;
}

// The best split (largest (sum w q x)^2 / sum w q^2) over every lo <= hi and every choice of the
// parts' offset signs; lo = -1 when no split has a positive weight.
Split best_split(const float* x, const float* w, int n, int parts, const uint8_t* order) {
  const PrefixSums s = prefix_sums(x, w, n, parts, order);
  Split best;
  float best_score = -FLT_MAX;
  for (int lo = 0; lo <= n; ++lo)
    for (int hi = lo; hi <= n; ++hi) {
      float qx[kMaxParts][2], q2[kMaxParts][2];  // per part and offset sign (0: +, 1: -)
      for (int p = 0; p < parts; ++p) {
        const float sx[3] = {s.wx[p][lo], s.wx[p][hi] - s.wx[p][lo], s.wx[p][n] - s.wx[p][hi]};
        const float sw[3] = {s.w[p][lo], s.w[p][hi] - s.w[p][lo], s.w[p][n] - s.w[p][hi]};
        for (int m = 0; m < 2; ++m) {
          qx[p][m] = q2[p][m] = 0;
          for (int l = 0; l < 3; ++l) {
            const float v = level_value(l, m ? -1 : 1);
            qx[p][m] += sx[l] * v;
            q2[p][m] += sw[l] * v * v;
          }
        }
      }
      for (unsigned minus = 0; minus < (1u << parts); ++minus) {
        float sumqx = 0, sumq2 = 0;
        for (int p = 0; p < parts; ++p) {
          sumqx += qx[p][(minus >> p) & 1];
          sumq2 += q2[p][(minus >> p) & 1];
        }
        if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
          best = {lo, hi, minus, sumqx / sumq2};
          best_score = best.scale * sumqx;
        }
      }
    }
  return best;
}

// Weighted squared error of 8 values against a grid point's levels at `scale`.
float group_error(const uint8_t* point, const float* x, const float* w, float scale, int sign) {
  float e = 0;
  for (int j = 0; j < 8; ++j) {
    const float diff = scale * level_value(point[j], sign) - x[j];
    e += w[j] * diff * diff;
  }
  return e;
}

// The grid index for 8 levels: their own point when it is on the grid, else the one of its nearest
// grid points (the whole grid should it have none) with the least weighted error.
int grid_index(const GridSearch& g, const uint8_t* levels, const float* x, const float* w, float scale,
               int sign) {
  const int on_grid = g.index_of(levels);
  if (on_grid >= 0) return on_grid;
  int best = 0;
  float best_error = FLT_MAX;
  auto consider = [&](int i) {
    const float e = group_error(g.point(i), x, w, scale, sign);
    if (e < best_error) {
      best_error = e;
      best = i;
    }
  };
  const auto near = g.neighbours(levels);
  if (near.empty())
    for (int i = 0; i < g.size(); ++i) consider(i);
  else
    for (const uint16_t i : near) consider(i);
  return best;
}

// The grid point of 8 zeros (the nearest to it should the grid lack it): what an empty sub-block
// stores, so that it decodes to +-D/8 at most rather than to a full level.
int zero_point(const GridSearch& g) {
  const uint8_t zeros[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const int i = g.index_of(zeros);
  return i >= 0 ? i : g.neighbours(zeros)[0];
}

// One sub-block's result: a grid index and an offset sign per group of 8, a scale >= 0.
struct SubFit {
  float scale = 0;
  uint16_t index[kMaxSub / 8];
  int8_t sign[kMaxSub / 8];
};

// The weighted sums of q*x and q^2 for the values of sub-block `f` (q: level value times `mult`).
void fit_sums(const GridSearch& g, const SubFit& f, const float* x, const float* w, int n, float mult,
              float& sumqx, float& sumq2) {
  for (int k = 0; k < n / 8; ++k) {
    const uint8_t* p = g.point(f.index[k]);
    for (int j = 0; j < 8; ++j) {
      const float q = level_value(p[j], f.sign[k]) * mult;
      sumqx += w[8 * k + j] * q * x[8 * k + j];
      sumq2 += w[8 * k + j] * q * q;
    }
  }
}

// Levels of each value from a split; flipped (with the offset signs) when its scale is negative,
// since the stored scales are unsigned: -(l - 1 + s/8) = (2 - l) - 1 - s/8.
void split_levels(Split& sp, const uint8_t* order, int n, int parts, uint8_t* levels) {
  for (int j = 0; j < n; ++j) levels[order[j]] = static_cast<uint8_t>(j < sp.lo ? 0 : j < sp.hi ? 1 : 2);
  if (sp.scale >= 0) return;
  for (int i = 0; i < n; ++i) levels[i] = static_cast<uint8_t>(2 - levels[i]);
  sp.scale = -sp.scale;
  sp.minus ^= (1u << parts) - 1;
}

// Fits n values (n / parts sharing each offset sign); values below `tiny` give an empty fit.
SubFit fit_sub_block(const GridSearch& g, const float* x, const float* w, int n, int parts, float tiny) {
  SubFit f;
  std::fill_n(f.index, n / 8, static_cast<uint16_t>(zero_point(g)));
  std::fill_n(f.sign, n / 8, static_cast<int8_t>(1));
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  if (!(amax >= tiny)) return f;
  uint8_t order[kMaxSub];
  std::iota(order, order + n, static_cast<uint8_t>(0));
  std::stable_sort(order, order + n, [x](uint8_t a, uint8_t b) { return x[a] < x[b]; });
  Split sp = best_split(x, w, n, parts, order);
  if (sp.lo < 0) return f;
  uint8_t levels[kMaxSub];
  split_levels(sp, order, n, parts, levels);
  const int groups_per_part = n / parts / 8;
  for (int k = 0; k < n / 8; ++k) {
    f.sign[k] = static_cast<int8_t>((sp.minus >> (k / groups_per_part)) & 1 ? -1 : 1);
    f.index[k] =
        static_cast<uint16_t>(grid_index(g, levels + 8 * k, x + 8 * k, w + 8 * k, sp.scale, f.sign[k]));
  }
  // Off-grid groups moved: refit the scale to the points actually stored.
  float sumqx = 0, sumq2 = 0;
  fit_sums(g, f, x, w, n, 1.0f, sumqx, sumq2);
  f.scale = sumqx > 0 && sumq2 > 0 ? sumqx / sumq2 : sp.scale;
  return f;
}

// The 3-bit field s of a sub-block scale against the super-block scale d (scale ~ d * (2s + 1)).
int scale_field(float scale, float d) {
  return std::clamp(nearest_int(0.5f * (scale / d - 1)), 0, 7);
}

float max_scale(const SubFit* f, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i) m = std::max(m, f[i].scale);
  return m;
}

void quantize_block_iq1_s(const GridSearch& g, const float* x, const float* importance, BlockIQ1_S& b) {
  float w[kSuper];
  value_weights(x, importance, w);
  SubFit fits[8];
  for (int ib = 0; ib < 8; ++ib) fits[ib] = fit_sub_block(g, x + 32 * ib, w + 32 * ib, 32, 1, kTinyIq1S);
  std::memset(&b, 0, sizeof b);
  const float d = max_scale(fits, 8) / 15;  // the largest sub-block scale on the top field, 2*7 + 1
  if (d == 0) return;
  b.d = f32_to_f16(d * kBoostIq1S);
  for (int ib = 0; ib < 8; ++ib) {
    uint16_t h = static_cast<uint16_t>(scale_field(fits[ib].scale, d) << 12);
    if (fits[ib].sign[0] < 0) h |= 0x8000;
    for (int k = 0; k < 4; ++k) {
      b.qs[4 * ib + k] = static_cast<uint8_t>(fits[ib].index[k] & 0xFF);
      h = static_cast<uint16_t>(h | ((fits[ib].index[k] >> 8) << (3 * k)));
    }
    b.qh[ib] = h;
  }
}

// IQ1_M's sub-blocks of 16: grid indices, offset signs and 3-bit scales written against d; returns
// the least-squares super-block scale for the fields as written (d itself when none fits).
float write_iq1_m_fields(const GridSearch& g, const SubFit* fits, const float* x, const float* w, float d,
                         BlockIQ1_M& b, uint16_t* scales) {
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 16; ++j) {
    const int s = scale_field(fits[j].scale, d);
    scales[j / 4] = static_cast<uint16_t>(scales[j / 4] | (s << (3 * (j % 4))));
    const uint16_t* idx = fits[j].index;
    b.qs[2 * j] = static_cast<uint8_t>(idx[0] & 0xFF);
    b.qs[2 * j + 1] = static_cast<uint8_t>(idx[1] & 0xFF);
    b.qh[j] = static_cast<uint8_t>((idx[0] >> 8) | ((idx[1] >> 8) << 4) | (fits[j].sign[0] < 0 ? 0x08 : 0) |
                                   (fits[j].sign[1] < 0 ? 0x80 : 0));
    fit_sums(g, fits[j], x + 16 * j, w + 16 * j, 16, static_cast<float>(2 * s + 1), sumqx, sumq2);
  }
  return sumqx > 0 && sumq2 > 0 ? sumqx / sumq2 : d;
}

void quantize_block_iq1_m(const GridSearch& g, const float* x, const float* importance, BlockIQ1_M& b) {
  float w[kSuper];
  value_weights(x, importance, w);
  SubFit fits[16];
  for (int j = 0; j < 16; ++j) fits[j] = fit_sub_block(g, x + 16 * j, w + 16 * j, 16, 2, kTinyIq1M);
  std::memset(&b, 0, sizeof b);
  const float d = max_scale(fits, 16) / 15;
  if (d == 0) return;
  uint16_t scales[4] = {};
  const float fitted = write_iq1_m_fields(g, fits, x, w, d, b, scales);
  // The F16 super-block scale goes, a nibble each, into the top nibbles of the four scale words.
  const uint16_t h = f32_to_f16(fitted * kBoostIq1M);
  for (int k = 0; k < 4; ++k) scales[k] = static_cast<uint16_t>(scales[k] | (((h >> (4 * k)) & 0xF) << 12));
  std::memcpy(b.scales, scales, sizeof scales);
}

}  // namespace

void quantize_iq1_s(const float* x, BlockIQ1_S* y, int64_t nb, const float* w) {
  const GridSearch& g = iq_grid_search::iq1_s();
  for (int64_t i = 0; i < nb; ++i)
    quantize_block_iq1_s(g, x + kSuper * i, w ? w + kSuper * i : nullptr, y[i]);
}

void quantize_iq1_m(const float* x, BlockIQ1_M* y, int64_t nb, const float* w) {
  const GridSearch& g = iq_grid_search::iq1_s();
  for (int64_t i = 0; i < nb; ++i)
    quantize_block_iq1_m(g, x + kSuper * i, w ? w + kSuper * i : nullptr, y[i]);
}

}  // namespace ferrum::quant_iq
