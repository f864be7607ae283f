// A long command's progress on stderr (quantize, convert, export-lora): on a terminal one line
// redrawn in place (stage, bar, bytes and tensors done, rate, time left); otherwise a plain line
// at every 10% of each stage, so logs stay short; nothing at all when quiet.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "core/progress.h"

namespace ferrum::cli {

class ProgressDisplay {
 public:
  // `terminal`: redraw in place (default: whether `out` is a terminal).
  explicit ProgressDisplay(bool quiet, FILE* out = stderr, int terminal = -1);
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  void update(const ProgressUpdate& u);
  ProgressFn fn() {
    return [this](const ProgressUpdate& u) { update(u); };
  }
  // A line of its own (e.g. "wrote FILE"), unless quiet.
  void message(const std::string& line);

 private:
  std::string status(const ProgressUpdate& u, double seconds) const;
  void end_line();
  bool quiet_, terminal_;
  FILE* out_;
  std::string stage_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int next_tenth_ = 1;
  bool drawn_ = false;
};

}  // namespace ferrum::cli
