#include "core/iq_grid_search.h"

#include <bit>
#include <utility>

#include "core/iq_grids.h"

namespace ferrum::iq_grid_search {

GridSearch::GridSearch(int dims, int n_levels, std::vector<uint8_t> points, int shells)
    : dims_(dims), bits_(std::bit_width(static_cast<unsigned>(n_levels - 1))), points_(std::move(points)) {
  const uint32_t n_keys = 1u << (bits_ * dims_);
  map_.assign(n_keys, -1);
  for (int i = 0; i < size(); ++i) map_[key(point(i))] = i;
  // Every off-grid point of the lattice: its grid points in order of (distance, index), kept up to
  // the `shells`-th distinct distance. Squared distances are small integers: count them, no sort.
  offsets_.assign(n_keys + 1, 0);
  const int max_d2 = dims_ * (n_levels - 1) * (n_levels - 1);
  std::vector<int> d2(size());
  std::vector<uint8_t> l(dims_);
  for (uint32_t k = 0; k < n_keys; ++k) {
    offsets_[k] = static_cast<uint32_t>(neighbours_.size());
    if (map_[k] >= 0 || !levels_of(k, n_levels, l.data())) continue;
    std::vector<bool> present(max_d2 + 1, false);
    for (int i = 0; i < size(); ++i) {
      int d = 0;
      for (int j = 0; j < dims_; ++j) d += (point(i)[j] - l[j]) * (point(i)[j] - l[j]);
      d2[i] = d;
      present[d] = true;
    }
    for (int d = 0, kept = 0; d <= max_d2 && kept < shells; ++d) {
      if (!present[d]) continue;
      ++kept;
      for (int i = 0; i < size(); ++i)
        if (d2[i] == d) neighbours_.push_back(static_cast<uint16_t>(i));
    }
  }
  offsets_[n_keys] = static_cast<uint32_t>(neighbours_.size());
}

bool GridSearch::levels_of(uint32_t key, int n_levels, uint8_t* l) const {
  for (int j = 0; j < dims_; ++j) {
    l[j] = static_cast<uint8_t>((key >> (bits_ * j)) & ((1u << bits_) - 1));
    if (l[j] >= n_levels) return false;  // a key no levels produce
  }
  return true;
}

uint32_t GridSearch::key(const uint8_t* l) const {
  uint32_t k = 0;
  for (int j = 0; j < dims_; ++j) k |= static_cast<uint32_t>(l[j]) << (bits_ * j);
  return k;
}

std::span<const uint16_t> GridSearch::neighbours(const uint8_t* l) const {
  const uint32_t k = key(l);
  return {neighbours_.data() + offsets_[k], neighbours_.data() + offsets_[k + 1]};
}

namespace {

// Levels of a grid stored as `Dims` bytes per entry, each byte mapped by `level`.
template <typename Entry, typename Level>
GridSearch make(const Entry* grid, int n, int n_levels, int shells, Level level) {
  constexpr int dims = sizeof(Entry);
  std::vector<uint8_t> points(static_cast<size_t>(n) * dims);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < dims; ++j)
      points[static_cast<size_t>(i) * dims + j] = level(static_cast<uint8_t>(grid[i] >> (8 * j)));
  return GridSearch(dims, n_levels, std::move(points), shells);
}

uint8_t iq2_level(uint8_t magnitude) {
  return magnitude == 8 ? 0 : magnitude == 25 ? 1 : 2;
}
uint8_t iq3_xxs_level(uint8_t magnitude) {  // 4, 12, ..., 52, 62
  return static_cast<uint8_t>(magnitude / 8);
}
uint8_t iq3_s_level(uint8_t magnitude) {  // 1, 3, ..., 15
  return static_cast<uint8_t>(magnitude / 2);
}
uint8_t iq1_level(uint8_t value) {
  return static_cast<uint8_t>(static_cast<int8_t>(value) + 1);
}

}  // namespace

const GridSearch& iq2_xxs() {
  static const GridSearch g = make(iq_grids::kIQ2XXS, 256, 3, 2, iq2_level);
  return g;
}
const GridSearch& iq2_xs() {
  static const GridSearch g = make(iq_grids::kIQ2XS, 512, 3, 2, iq2_level);
  return g;
}
const GridSearch& iq2_s() {
  static const GridSearch g = make(iq_grids::kIQ2S, 1024, 3, 1, iq2_level);
  return g;
}
const GridSearch& iq3_xxs() {
  static const GridSearch g = make(iq_grids::kIQ3XXS, 256, 8, 2, iq3_xxs_level);
  return g;
}
const GridSearch& iq3_s() {
  static const GridSearch g = make(iq_grids::kIQ3S, 512, 8, 3, iq3_s_level);
  return g;
}
const GridSearch& iq1_s() {
  static const GridSearch g = make(iq_grids::kIQ1S, 2048, 3, 3, iq1_level);
  return g;
}

}  // namespace ferrum::iq_grid_search
