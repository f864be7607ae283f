// Nearest grid points of the i-quant grids, for the quantizers: a grid is a set of points with
// `dims` (4 or 8) integer coordinates ("levels", each in [0, n_levels)); a group of values scaled
// to levels either is a grid point or is replaced by the best of its nearest grid points.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ferrum::iq_grid_search {

class GridSearch {
 public:
  // points[i * dims + j]: level j of grid point i. `shells`: an off-grid point keeps every grid point
  // at its `shells` smallest distinct Euclidean distances (over the levels), nearest first (ties by
  // grid index).
  GridSearch(int dims, int n_levels, std::vector<uint8_t> points, int shells);

  int dims() const { return dims_; }
  int size() const { return static_cast<int>(points_.size()) / dims_; }
  const uint8_t* point(int i) const { return points_.data() + static_cast<size_t>(i) * dims_; }
  // Grid index of the point with levels l[0..dims), or -1 when it is off the grid.
  int index_of(const uint8_t* l) const { return map_[key(l)]; }
  // The nearest grid points (indices) of an off-grid point (empty for a grid point).
  std::span<const uint16_t> neighbours(const uint8_t* l) const;

 private:
  uint32_t key(const uint8_t* l) const;
  bool levels_of(uint32_t key, int n_levels, uint8_t* l) const;  // false: not a lattice point
  int dims_, bits_;
  std::vector<uint8_t> points_;
  std::vector<int32_t> map_;       // key -> grid index or -1
  std::vector<uint32_t> offsets_;  // key -> neighbours_ range [offsets_[k], offsets_[k + 1])
  std::vector<uint16_t> neighbours_;
};

// The grids of each type as levels (built once, on first use, from iq_grids.h): IQ2 magnitudes
// 8/25/43 are levels 0/1/2 (ggml's quantizers work with 2l + 1 = 1/3/5), IQ3_XXS magnitudes
// 4, 12, ..., 52, 62 and IQ3_S magnitudes 1, 3, ..., 15 are levels 0..7, IQ1 values -1/0/1 are
// levels 0/1/2. Shells as ggml's quantizers use: IQ2_XXS, IQ2_XS 2;
// IQ2_S 1; IQ3_XXS 2; IQ3_S 3; IQ1 3.
const GridSearch& iq2_xxs();
const GridSearch& iq2_xs();
const GridSearch& iq2_s();
const GridSearch& iq3_xxs();
const GridSearch& iq3_s();
const GridSearch& iq1_s();

}  // namespace ferrum::iq_grid_search
