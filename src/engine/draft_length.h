// How many tokens to ask a proposer for, per sequence and step. Adaptive: one fewer after a step
// that accepted none, one more after a step that accepted all. With a proposer that costs a
// forward pass per proposal (a draft model), failing at one token pauses proposals for 1, 2, 4
// ... up to 16 steps before trying one token again, so a draft that rarely agrees costs little;
// any accepted token ends the pause doubling.
#pragma once

#include <algorithm>

namespace ferrum {

class DraftLength {
 public:
  DraftLength() = default;
  DraftLength(int max, bool adaptive, bool costly)
      : max_(max), len_(max), adaptive_(adaptive), costly_(costly) {}

  // Tokens to propose in this step; 0 while paused.
  int next() {
    if (pause_ > 0) {
      --pause_;
      return 0;
    }
    return len_;
  }
  // After the step: `proposed` tokens were proposed (0: the proposer had none), `accepted` kept.
  void on_result(int proposed, int accepted) {
    if (!adaptive_) return;
    if (proposed > 0 && accepted == proposed) {
      len_ = std::min(len_ + 1, max_);
      backoff_ = 1;
    } else if (accepted > 0) {
      backoff_ = 1;
    } else if (proposed > 0 && len_ > 1) {
      --len_;
    } else if (costly_) {  // nothing accepted at one token, or nothing proposed at all
      pause_ = backoff_;
      backoff_ = std::min(2 * backoff_, kMaxPause);
    }
  }
  int length() const { return len_; }

 private:
  static constexpr int kMaxPause = 16;
  int max_ = 0, len_ = 0;
  bool adaptive_ = false, costly_ = false;
  int pause_ = 0, backoff_ = 1;
};

}  // namespace ferrum
