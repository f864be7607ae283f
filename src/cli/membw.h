// Memory read bandwidth of this machine (a STREAM-like read kernel over a buffer much larger than
// the caches, split across threads), for stating decode speed as a fraction of the roofline.
#pragma once

#include <cstddef>

namespace ferrum::cli {

struct Bandwidth {
  double gb_per_s = 0;  // best pass, 1e9 bytes per second
  double mean_gb_per_s = 0;
  size_t bytes = 0;  // buffer size
  int threads = 0;
  int passes = 0;
};

// Reads a `bytes` buffer `passes` times with `threads` threads (0 = all cores).
Bandwidth measure_read_bandwidth(int threads, size_t bytes = size_t{1} << 30, int passes = 6);

}  // namespace ferrum::cli
