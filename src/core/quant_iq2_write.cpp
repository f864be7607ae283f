// Own quantizers of IQ2_XXS, IQ2_XS and IQ2_S, following the design of llama.cpp's: per sub-block
// (one 4-bit scale each), the signs come from the values and the magnitudes are fitted as
// s * magnitude(l) with levels l in {0, 1, 2}; a search over scales rounds every group of 8 to
// levels and moves a group that falls off the grid to its best nearby grid point; a last
// least-squares scale at the chosen levels. The super-block's d is the largest sub-block scale / 31.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>

#include "core/fp16.h"
#include "core/iq_grid_search.h"
#include "core/quant_fit.h"
#include "core/quant_iq_write.h"

namespace ferrum::quant_iq {
namespace {

using iq_grid_search::GridSearch;
using quant_fit::nearest_int;

constexpr int kBlock = 256;
constexpr int kMaxSub = 32;  // values per sub-block: 32 (IQ2_XXS) or 16 (IQ2_XS, IQ2_S)
constexpr int kMaxGroups = kMaxSub / 8;

// What sets the three kinds apart.
struct Iq2Kind {
  int sub;              // values per sub-block
  bool even_parity;     // only 7 signs per group are stored: the count of negatives must be even
  float sigma2_factor;  // weights: importance * sqrt(sigma2 + x^2), sigma2 = factor * mean(x^2)
  float eps;            // a sub-block whose magnitudes are all below this quantizes to scale 0
  int steps;            // scale trials (5 + 0.1 k) / max for k in [-steps, steps]
  bool max_from_fit;    // max: from a first fit to levels 0..4 (IQ2_XXS), else the largest magnitude
  bool refit_all;       // the last pass re-rounds every group (IQ2_XXS) or only the off-grid ones
  float d_factor;       // stored d = d * d_factor (IQ2_S: ggml's 0.9875, which measures better)
};

constexpr Iq2Kind kXxs{32, true, 1.0f, 1e-15f, 6, true, true, 1.0f};
constexpr Iq2Kind kXs{16, true, 1.0f, 1e-15f, 9, false, false, 1.0f};
constexpr Iq2Kind kS{16, false, 2.0f, 1e-8f, 9, false, false, 0.9875f};

// A sub-block prepared for the fit.
struct SubBlock {
  int n = 0;                  // values
  float x[kMaxSub];           // magnitudes (with even parity one of a group may be negated)
  float w[kMaxSub];           // the fit's weights
  float root[kMaxSub];        // their square roots: the weights of the neighbour choice
  uint8_t signs[kMaxGroups];  // bit j: value j of the group is negative
  int groups() const { return n / 8; }
};

// Levels chosen for a sub-block and their grid points.
struct Fit {
  float scale = 0;
  uint8_t level[kMaxSub] = {};
  int index[kMaxGroups] = {};
  bool on_grid[kMaxGroups] = {};
};

// The value of level l in units of the smallest magnitude: the grids' magnitudes 8, 25, 43 are
// 8 x (1, 3.125, 5.375). ggml's fit takes them as 1, 3, 5 (2l + 1); the true ratios lower the
// error by about 3%.
float magnitude(int level) {
  constexpr float kRatio[3] = {1.0f, 3.125f, 5.375f};
  return kRatio[level];
}

// Without importance (IQ2_S only) the weights favour the larger values, as ggml's fallback does.
void set_weights(const float* x, const float* importance, float sigma2, SubBlock& sb) {
  for (int i = 0; i < sb.n; ++i) {
    sb.w[i] = importance ? importance[i] * std::sqrt(sigma2 + x[i] * x[i]) : 0.25f * sigma2 + x[i] * x[i];
    sb.root[i] = std::sqrt(sb.w[i]);
  }
}

// Magnitudes and sign bits of the values. With even parity a group with an odd count of negatives
// gets the sign of its least important value (smallest w x^2) wrong: that magnitude is negated, so
// the fit sees the error the flipped sign will make.
void fold_signs(const float* x, bool even_parity, SubBlock& sb) {
  for (int g = 0; g < sb.groups(); ++g) {
    uint8_t s = 0;
    for (int j = 0; j < 8; ++j) {
      const int i = 8 * g + j;
      sb.x[i] = std::fabs(x[i]);
      if (x[i] < 0) s = static_cast<uint8_t>(s | 1 << j);
    }
    if (even_parity && std::popcount(s) % 2) {
      int least = 8 * g;
      for (int i = 8 * g + 1; i < 8 * g + 8; ++i)
        if (sb.w[i] * x[i] * x[i] < sb.w[least] * x[least] * x[least]) least = i;
      sb.x[least] = -sb.x[least];
      s = static_cast<uint8_t>(s ^ 1 << (least - 8 * g));
    }
    sb.signs[g] = s;
  }
}

// The candidate grid point nearest to the 8 magnitudes x at `scale` (root-weighted distance).
int best_neighbour(const GridSearch& grid, std::span<const uint16_t> candidates, const float* x,
                   const float* root, float scale) {
  float best = INFINITY;
  int index = candidates[0];
  for (uint16_t c : candidates) {
    const uint8_t* p = grid.point(c);
    float d2 = 0;
    for (int j = 0; j < 8; ++j) {
      const float diff = scale * magnitude(p[j]) - x[j];
      d2 += root[j] * diff * diff;
    }
    if (d2 < best) {
      best = d2;
      index = c;
    }
  }
  return index;
}

// Rounds group g's magnitudes to levels at `scale`; a group off the grid becomes its best neighbour.
void snap_group(const GridSearch& grid, const SubBlock& sb, int g, float scale, Fit& fit) {
  uint8_t* l = fit.level + 8 * g;
  for (int j = 0; j < 8; ++j)
    l[j] = static_cast<uint8_t>(std::clamp(nearest_int(0.5f * (sb.x[8 * g + j] / scale - 1)), 0, 2));
  fit.index[g] = grid.index_of(l);
  fit.on_grid[g] = fit.index[g] >= 0;
  if (fit.on_grid[g]) return;
  fit.index[g] = best_neighbour(grid, grid.neighbours(l), sb.x + 8 * g, sb.root + 8 * g, scale);
  std::memcpy(l, grid.point(fit.index[g]), 8);
}

// Weighted least-squares sums of x ~ s * magnitude(l) at the fit's levels.
void lsq_sums(const SubBlock& sb, const Fit& fit, float& sumqx, float& sumq2) {
  sumqx = sumq2 = 0;
  for (int i = 0; i < sb.n; ++i) {
    const float q = magnitude(fit.level[i]);
    sumqx += sb.w[i] * sb.x[i] * q;
    sumq2 += sb.w[i] * q * q;
  }
}

// Scale trials around 5 / max (the largest magnitude on the top level); keeps the levels that
// explain the most of x (largest sumqx^2 / sumq2) with their least-squares scale. `best.scale`
// stays as given when no trial fits.
void search_scale(const GridSearch& grid, const SubBlock& sb, float max, int steps, Fit& best) {
  float best_gain = 0;
  Fit trial;
  for (int k = -steps; k <= steps; ++k) {
    const float scale = max / (5 + 0.1f * static_cast<float>(k));
    for (int g = 0; g < sb.groups(); ++g) snap_group(grid, sb, g, scale, trial);
    float sumqx, sumq2;
    lsq_sums(sb, trial, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best_gain * sumq2) {
      trial.scale = sumqx / sumq2;
      best_gain = trial.scale * sumqx;
      best = trial;
    }
  }
}

// The groups re-rounded at the chosen scale (all, or those the search had to move off-grid), then
// the least-squares scale of the final levels.
void refit(const GridSearch& grid, const SubBlock& sb, bool all, Fit& fit) {
  Fit next = fit;
  for (int g = 0; g < sb.groups(); ++g)
    if (all || !fit.on_grid[g]) snap_group(grid, sb, g, fit.scale, next);
  float qx, q2, next_qx, next_q2;
  lsq_sums(sb, fit, qx, q2);
  lsq_sums(sb, next, next_qx, next_q2);
  // The new levels are kept only when they explain x at least as well (ggml keeps them always).
  if (next_q2 > 0 && next_qx * next_qx * q2 >= qx * qx * next_q2) fit = next, qx = next_qx, q2 = next_q2;
  if (q2 > 0) fit.scale = qx / q2;
}

// Scale of a first fit x ~ s * q to integer q in [0, nmax] (weighted): a few scales around
// nmax / max, then single levels moved while that improves the fit. IQ2_XXS takes its scale
// search's range from it.
float first_fit_scale(const SubBlock& sb, int nmax, float max) {
  auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * sb.x[i]), 0, nmax); };
  float best_iscale = static_cast<float>(nmax) / max, best_err = INFINITY;
  for (int k = -4; k <= 4; ++k) {
    const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / max;
    float err = 0;
    for (int i = 0; i < sb.n; ++i) {
      const float diff = sb.x[i] - static_cast<float>(level(iscale, i)) / iscale;
      err += sb.w[i] * diff * diff;
    }
    if (err < best_err) best_err = err, best_iscale = iscale;
  }
  int q[kMaxSub];
  float sumqx = 0, sumq2 = 0;
  for (int i = 0; i < sb.n; ++i) {
    q[i] = level(best_iscale, i);
    sumqx += sb.w[i] * sb.x[i] * static_cast<float>(q[i]);
    sumq2 += sb.w[i] * static_cast<float>(q[i] * q[i]);
  }
  for (int pass = 0; pass < 5; ++pass) {
    bool moved = false;
    for (int i = 0; i < sb.n; ++i) {
      const float w = sb.w[i], x = sb.x[i];
      const float qx = sumqx - w * x * static_cast<float>(q[i]),
                  q2 = sumq2 - w * static_cast<float>(q[i] * q[i]);
      if (qx <= 0 || q2 <= 0) continue;
      const int nq = std::clamp(nearest_int(x * q2 / qx), 0, nmax);
      const float nqx = qx + w * x * static_cast<float>(nq), nq2 = q2 + w * static_cast<float>(nq * nq);
      if (nq != q[i] && nqx * nqx * sumq2 > sumqx * sumqx * nq2) {
        q[i] = nq, sumqx = nqx, sumq2 = nq2;
        moved = true;
      }
    }
    if (!moved) break;
  }
  return sumq2 > 0 ? sumqx / sumq2 : 0;
}

// Fits one prepared sub-block: its scale (0 for a sub-block of zeros), levels and grid points.
Fit fit_sub_block(const GridSearch& grid, const Iq2Kind& kind, SubBlock& sb) {
  Fit fit;
  const float max = *std::max_element(sb.x, sb.x + sb.n);
  if (max < kind.eps) return fit;
  float range = max;
  fit.scale = max / 5;
  if (kind.max_from_fit) {
    // A first fit to integer levels 0..4 gives s; the search puts the top level at 3 s (ggml's range).
    fit.scale = first_fit_scale(sb, 4, max);
    range = 3 * fit.scale;
    if (range <= 0) return Fit{};
  }
  // Levels at the first scale, kept should no trial of the search fit.
  for (int g = 0; g < sb.groups(); ++g) snap_group(grid, sb, g, fit.scale, fit);
  search_scale(grid, sb, range, kind.steps, fit);
  refit(grid, sb, kind.refit_all, fit);
  if (fit.scale < 0) {  // cannot happen with magnitudes; kept valid anyway: negate scale and signs
    fit.scale = -fit.scale;
    for (int g = 0; g < sb.groups(); ++g) sb.signs[g] = static_cast<uint8_t>(~sb.signs[g]);
  }
  return fit;
}

// Fits the sub-blocks of one super-block; returns d (0 for a super-block of zeros) and the 4-bit
// scale fields s (sub-block scale ~ d (2s + 1)).
float fit_super_block(const GridSearch& grid, const Iq2Kind& kind, const float* x, const float* importance,
                      SubBlock* subs, Fit* fits, uint8_t* scale_fields) {
  float sumx2 = 0;
  for (int i = 0; i < kBlock; ++i) sumx2 += x[i] * x[i];
  const float sigma2 = kind.sigma2_factor * sumx2 / kBlock;
  const int n_sub = kBlock / kind.sub;
  float max_scale = 0;
  for (int ib = 0; ib < n_sub; ++ib) {
    SubBlock& sb = subs[ib];
    sb.n = kind.sub;
    set_weights(x + ib * kind.sub, importance ? importance + ib * kind.sub : nullptr, sigma2, sb);
    fold_signs(x + ib * kind.sub, kind.even_parity, sb);
    fits[ib] = fit_sub_block(grid, kind, sb);
    max_scale = std::max(max_scale, fits[ib].scale);
  }
  if (max_scale == 0) return 0;
  const float d = max_scale / 31;
  for (int ib = 0; ib < n_sub; ++ib)
    scale_fields[ib] = static_cast<uint8_t>(std::clamp(nearest_int(0.5f * (fits[ib].scale / d - 1)), 0, 15));
  return d;
}

// Super-block i's importance row, or nullptr.
const float* importance_of(const float* w, int64_t i) {
  return w ? w + i * kBlock : nullptr;
}

// Two 4-bit scale fields per byte (IQ2_XS, IQ2_S: 16 sub-blocks of 16).
void pack_nibbles(const uint8_t* fields, uint8_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(fields[2 * i] | fields[2 * i + 1] << 4);
}

}  // namespace

void quantize_iq2_xxs(const float* x, BlockIQ2_XXS* y, int64_t nb, const float* w) {
  const GridSearch& grid = iq_grid_search::iq2_xxs();
  for (int64_t i = 0; i < nb; ++i, x += kBlock) {
    SubBlock subs[8];
    Fit fits[8];
    uint8_t fields[8];
    const float d = fit_super_block(grid, kXxs, x, importance_of(w, i), subs, fits, fields);
    std::memset(&y[i], 0, sizeof(y[i]));
    y[i].d = f32_to_f16(d * kXxs.d_factor);
    if (d == 0) continue;
    // Per sub-block: 4 grid indices (bytes), then 4 x 7 signs and the scale field in the top 4 bits.
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t indices = 0, signs = static_cast<uint32_t>(fields[ib]) << 28;
      for (int g = 0; g < 4; ++g) {
        indices |= static_cast<uint32_t>(fits[ib].index[g]) << (8 * g);
        signs |= static_cast<uint32_t>(subs[ib].signs[g] & 127) << (7 * g);
      }
      std::memcpy(y[i].qs + 4 * ib, &indices, 4);
      std::memcpy(y[i].qs + 4 * ib + 2, &signs, 4);
    }
  }
}

void quantize_iq2_xs(const float* x, BlockIQ2_XS* y, int64_t nb, const float* w) {
  const GridSearch& grid = iq_grid_search::iq2_xs();
  for (int64_t i = 0; i < nb; ++i, x += kBlock) {
    SubBlock subs[16];
    Fit fits[16];
    uint8_t fields[16];
    const float d = fit_super_block(grid, kXs, x, importance_of(w, i), subs, fits, fields);
    std::memset(&y[i], 0, sizeof(y[i]));
    y[i].d = f32_to_f16(d * kXs.d_factor);
    if (d == 0) continue;
    // Per group of 8: its 9-bit grid index and 7 signs.
    for (int ib = 0; ib < 16; ++ib)
      for (int g = 0; g < 2; ++g)
        y[i].qs[2 * ib + g] = static_cast<uint16_t>(fits[ib].index[g] | (subs[ib].signs[g] & 127) << 9);
    pack_nibbles(fields, y[i].scales);
  }
}

void quantize_iq2_s(const float* x, BlockIQ2_S* y, int64_t nb, const float* w) {
  const GridSearch& grid = iq_grid_search::iq2_s();
  for (int64_t i = 0; i < nb; ++i, x += kBlock) {
    SubBlock subs[16];
    Fit fits[16];
    uint8_t fields[16];
    const float d = fit_super_block(grid, kS, x, importance_of(w, i), subs, fits, fields);
    std::memset(&y[i], 0, sizeof(y[i]));
    y[i].d = f32_to_f16(d * kS.d_factor);
    if (d == 0) continue;
    // Per group of 8: the low byte of its 10-bit index, its top 2 bits (4 groups per qh byte), and
    // all 8 signs.
    for (int ib = 0; ib < 16; ++ib)
      for (int g = 0; g < 2; ++g) {
        const int k = 2 * ib + g, index = fits[ib].index[g];
        y[i].qs[k] = static_cast<uint8_t>(index & 255);
        y[i].qh[k / 4] = static_cast<uint8_t>(y[i].qh[k / 4] | (index >> 8) << (2 * (k % 4)));
        y[i].qs[32 + k] = subs[ib].signs[g];
      }
    pack_nibbles(fields, y[i].scales);
  }
}

}  // namespace ferrum::quant_iq
