// Own quantizers of IQ3_XXS and IQ3_S (the design of llama.cpp's): per sub-block of 32 values the
// signs come from the values, a scan of candidate scales rounds each group of 4 magnitudes to levels
// 0..7 (odd multiples 1, 3, ..., 15 of the scale) and moves an off-grid group to its best nearest
// grid point; the scale that explains the most weighted energy wins, then a last rounding at that
// scale. The super-block keeps one F16 factor and a 4-bit scale per sub-block.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/iq_grid_search.h"
#include "core/quant_fit.h"
#include "core/quant_iq_write.h"

namespace ferrum::quant_iq {
namespace {

using iq_grid_search::GridSearch;
using quant_fit::nearest_int;

constexpr int kSuperBlock = 256;
constexpr int kSubBlocks = 8;  // of 32 values, one 4-bit scale each
constexpr int kSub = 32;
constexpr int kGroups = 8;     // grid points (4 values each) per sub-block
constexpr int kSignBytes = 4;  // sign bytes (8 values each) per sub-block
constexpr int kMaxLevel = 7;
constexpr int kTopMultiple = 15;  // the largest magnitude lands near level 7: 2 * 7 + 1 = 15 times the scale

// What differs between the two types' searches.
struct Design {
  const GridSearch& grid;
  int scale_steps;  // candidate inverse scales (15 + 0.2 s) / max, s in [-scale_steps, scale_steps]
  bool even_signs;  // IQ3_XXS stores 7 sign bits per 8 values: the eighth keeps the count even
  bool refit_all;   // the last rounding redoes every group (IQ3_S), not only the off-grid ones
  float min_max;    // a sub-block whose largest magnitude is below this is stored as zeros
  float d_fudge;    // stored factor = largest sub-block scale / 31 * d_fudge (ggml's tuning)
};

// One sub-block as the search sees it.
struct Sub {
  float mag[kSub];          // the values with their stored signs taken out (>= 0 but for a flipped one)
  float weight[kSub];       // importance of each value's squared error
  float root_weight[kSub];  // sqrt(weight): what the choice among nearest grid points weighs (as ggml)
  uint8_t signs[kSignBytes];
};

// Levels of one sub-block with every group of 4 on the grid.
struct Fit {
  uint8_t level[kSub];
  uint16_t index[kGroups];
  float scale = 0;
};

// Per-value weights of one sub-block: the importance row scaled by the value's size against the
// super-block's spread (sigma2), or without importance the squared values themselves.
void weights_of(const float* x, const float* importance, float sigma2, Sub& s) {
  for (int i = 0; i < kSub; ++i) {
    s.weight[i] = importance ? importance[i] * std::sqrt(sigma2 + x[i] * x[i]) : x[i] * x[i];
    s.root_weight[i] = std::sqrt(s.weight[i]);
  }
}

// Signs and magnitudes of 8 values. With even parity and an odd count of negatives, the value whose
// flip costs least (weight * x^2) keeps the wrong sign: its magnitude goes negative (level 0 later).
uint8_t split_signs(const float* x, const float* weight, bool even, float* mag) {
  uint8_t bits = 0;
  for (int i = 0; i < 8; ++i) {
    mag[i] = x[i] >= 0 ? x[i] : -x[i];
    if (x[i] < 0) bits = static_cast<uint8_t>(bits | 1u << i);
  }
  if (!even) return bits;
  if (std::popcount(bits) % 2) {
    int cheapest = 0;
    for (int i = 1; i < 8; ++i)
      if (weight[i] * x[i] * x[i] < weight[cheapest] * x[cheapest] * x[cheapest]) cheapest = i;
    mag[cheapest] = -mag[cheapest];
    bits = static_cast<uint8_t>(bits ^ (1u << cheapest));
  }
  return static_cast<uint8_t>(bits & 127);  // the eighth bit is implied by the parity
}

Sub prepare(const Design& d, const float* x, const float* importance, float sigma2) {
  Sub s;
  weights_of(x, importance, sigma2, s);
  for (int k = 0; k < kSignBytes; ++k)
    s.signs[k] = split_signs(x + 8 * k, s.weight + 8 * k, d.even_signs, s.mag + 8 * k);
  return s;
}

// Weighted squared error of 4 magnitudes against grid point `p` at `scale`.
float group_error(const uint8_t* p, const float* mag, const float* w, float scale) {
  float e = 0;
  for (int i = 0; i < 4; ++i) {
    const float diff = scale * static_cast<float>(2 * p[i] + 1) - mag[i];
    e += w[i] * diff * diff;
  }
  return e;
}

// Rounds 4 magnitudes at inverse scale `inv` to levels; off the grid, the nearest grid point with
// the least error at `scale` replaces them. Returns the grid index; `on_grid` says which case.
int snap_group(const GridSearch& g, const float* mag, const float* root_w, float inv, float scale,
               uint8_t* level, bool& on_grid) {
  for (int i = 0; i < 4; ++i)
    level[i] = static_cast<uint8_t>(std::clamp(nearest_int(0.5f * (inv * mag[i] - 1)), 0, kMaxLevel));
  const int at = g.index_of(level);
  on_grid = at >= 0;
  if (on_grid) return at;
  int best = -1;
  float best_err = 0;
  for (const uint16_t n : g.neighbours(level)) {
    const float e = group_error(g.point(n), mag, root_w, scale);
    if (best < 0 || e < best_err) best = n, best_err = e;
  }
  std::memcpy(level, g.point(best), 4);
  return best;
}

// Least-squares sums of the magnitudes against levels 2l + 1: scale = qx / q2, explained = qx^2 / q2.
struct Sums {
  float qx = 0, q2 = 0;
};
Sums sums_of(const Sub& s, const uint8_t* level) {
  Sums r;
  for (int i = 0; i < kSub; ++i) {
    const float q = static_cast<float>(2 * level[i] + 1);
    r.qx += s.weight[i] * s.mag[i] * q;
    r.q2 += s.weight[i] * q * q;
  }
  return r;
}

// The scan: every candidate scale rounds all groups; the one whose least-squares scale explains the
// most weighted energy wins. `on_grid[k]`: group k of the winner rounded onto the grid directly.
Fit scan_scales(const Design& d, const Sub& s, float max, bool* on_grid) {
  Fit best;
  float best_explained = 0;
  best.scale = max / kTopMultiple;
  // Should no candidate win (all weights zero), IQ3_XXS keeps levels 0, IQ3_S still refits.
  std::fill_n(on_grid, kGroups, !d.refit_all);
  std::fill_n(best.level, kSub, 0);
  for (int step = -d.scale_steps; step <= d.scale_steps; ++step) {
    const float inv = (kTopMultiple + static_cast<float>(step) * 0.2f) / max;
    const float scale = 1 / inv;
    Fit cand;
    bool cand_on_grid[kGroups];
    for (int k = 0; k < kGroups; ++k)
      cand.index[k] = static_cast<uint16_t>(snap_group(d.grid, s.mag + 4 * k, s.root_weight + 4 * k, inv,
                                                       scale, cand.level + 4 * k, cand_on_grid[k]));
    const Sums r = sums_of(s, cand.level);
    if (r.q2 > 0 && r.qx * r.qx > best_explained * r.q2) {
      cand.scale = r.qx / r.q2;
      best_explained = cand.scale * r.qx;
      best = cand;
      std::copy_n(cand_on_grid, kGroups, on_grid);
    }
  }
  return best;
}

// The last rounding at the winning scale (groups the scan had to move off their rounding get
// another chance), then the least-squares scale of the result.
void refit(const Design& d, const Sub& s, const bool* on_grid, Fit& f) {
  if (std::all_of(on_grid, on_grid + kGroups, [](bool b) { return b; }) || f.scale <= 0) return;
  const float inv = 1 / f.scale;
  for (int k = 0; k < kGroups; ++k) {
    if (on_grid[k] && !d.refit_all) continue;
    bool unused;
    f.index[k] = static_cast<uint16_t>(
        snap_group(d.grid, s.mag + 4 * k, s.root_weight + 4 * k, inv, f.scale, f.level + 4 * k, unused));
  }
  const Sums r = sums_of(s, f.level);
  if (r.q2 > 0) f.scale = r.qx / r.q2;
}

// A sub-block stored as zeros: scale 0, every group on the grid's zero point, no signs.
Fit zero_fit(const Design& d, Sub& s) {
  Fit f;
  std::fill_n(f.level, kSub, 0);
  std::fill_n(f.index, kGroups, static_cast<uint16_t>(d.grid.index_of(f.level)));
  std::fill_n(s.signs, kSignBytes, 0);
  return f;
}

Fit fit_sub_block(const Design& d, Sub& s) {
  const float max = *std::max_element(s.mag, s.mag + kSub);
  if (!(max >= d.min_max) || max == 0) return zero_fit(d, s);  // NaN too
  bool on_grid[kGroups];
  Fit f = scan_scales(d, s, max, on_grid);
  refit(d, s, on_grid, f);
  return f;
}

// One super-block: its sub-blocks' fits and signs, the F16 factor and the 4-bit scale fields.
struct SuperFit {
  Fit sub[kSubBlocks];
  uint8_t signs[kSubBlocks][kSignBytes];
  uint8_t scale_field[kSubBlocks] = {};
  uint16_t d = 0;
};

// The factor d puts the largest sub-block scale on field 15 (2 * 15 + 1 = 31); each sub-block gets
// the field whose 2s + 1 is nearest to its scale / d.
void quantize_scales(const Design& d, SuperFit& sf) {
  float max_scale = 0;
  for (const Fit& f : sf.sub) max_scale = std::max(max_scale, f.scale);
  if (max_scale == 0) return;
  const float factor = max_scale / 31;
  sf.d = f32_to_f16(factor * d.d_fudge);
  const float inv = 1 / factor;
  for (int ib = 0; ib < kSubBlocks; ++ib)
    sf.scale_field[ib] =
        static_cast<uint8_t>(std::clamp(nearest_int(0.5f * (inv * sf.sub[ib].scale - 1)), 0, 15));
}

SuperFit fit_super_block(const Design& d, const float* x, const float* importance) {
  float sumx2 = 0;
  for (int i = 0; i < kSuperBlock; ++i) sumx2 += x[i] * x[i];
  const float sigma2 = 2 * sumx2 / kSuperBlock;
  SuperFit sf;
  for (int ib = 0; ib < kSubBlocks; ++ib) {
    Sub s = prepare(d, x + kSub * ib, importance ? importance + kSub * ib : nullptr, sigma2);
    sf.sub[ib] = fit_sub_block(d, s);
    std::copy_n(s.signs, kSignBytes, sf.signs[ib]);
  }
  quantize_scales(d, sf);
  return sf;
}

// d = 0 (all values (near) zero, or a factor below F16's range) decodes to zeros: store all zeros.
bool all_zero(const SuperFit& sf) {
  return sf.d == 0;
}

void pack(const SuperFit& sf, BlockIQ3_XXS& b) {
  std::memset(&b, 0, sizeof(b));
  if (all_zero(sf)) return;
  b.d = sf.d;
  for (int ib = 0; ib < kSubBlocks; ++ib) {
    for (int k = 0; k < kGroups; ++k) b.qs[8 * ib + k] = static_cast<uint8_t>(sf.sub[ib].index[k]);
    uint32_t signs_and_scale = static_cast<uint32_t>(sf.scale_field[ib]) << 28;
    for (int k = 0; k < kSignBytes; ++k) signs_and_scale |= static_cast<uint32_t>(sf.signs[ib][k]) << (7 * k);
    std::memcpy(b.qs + 64 + 4 * ib, &signs_and_scale, 4);
  }
}

void pack(const SuperFit& sf, BlockIQ3_S& b) {
  std::memset(&b, 0, sizeof(b));
  if (all_zero(sf)) return;
  b.d = sf.d;
  for (int ib = 0; ib < kSubBlocks; ++ib) {
    for (int k = 0; k < kGroups; ++k) {
      const uint16_t index = sf.sub[ib].index[k];
      b.qs[8 * ib + k] = static_cast<uint8_t>(index & 255);
      b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | (index >> 8) << k);
    }
    std::copy_n(sf.signs[ib], kSignBytes, b.signs + kSignBytes * ib);
    b.scales[ib / 2] = static_cast<uint8_t>(b.scales[ib / 2] | sf.scale_field[ib] << (4 * (ib % 2)));
  }
}

template <typename Block>
void quantize_blocks(const Design& d, const float* x, Block* y, int64_t nb, const float* w) {
  for (int64_t i = 0; i < nb; ++i)
    pack(fit_super_block(d, x + kSuperBlock * i, w ? w + kSuperBlock * i : nullptr), y[i]);
}

}  // namespace

void quantize_iq3_xxs(const float* x, BlockIQ3_XXS* y, int64_t nb, const float* w) {
  const Design d{iq_grid_search::iq3_xxs(), 15, true, false, 1e-8f, 1.0125f};
  quantize_blocks(d, x, y, nb, w);
}

void quantize_iq3_s(const float* x, BlockIQ3_S* y, int64_t nb, const float* w) {
  const Design d{iq_grid_search::iq3_s(), 9, false, true, 0.0f, 1.033f};
  quantize_blocks(d, x, y, nb, w);
}

}  // namespace ferrum::quant_iq
