// How many pending prompts the next step should finish. With N prompts pending at once, filling
// the whole token budget makes every prompt in the step wait for the step's end; smaller steps
// give the first prompts their first token sooner but each step costs a fixed overhead (the
// weights are read once per step whatever its size). PrefillPlanner::completions() picks, by dynamic
// programming over the pending prompts in admission order, the step boundaries that minimise the
// sum of their times to first token when a step costs `overhead` + its tokens (decodes included:
// a finished prompt decodes one token per later step).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ferrum {

class PrefillPlanner {
 public:
  // pending[i]: prompt tokens still to prefill of the i-th prefilling sequence (admission order,
  // all > 0); budget: tokens left in the step after the decodes (> 0); n_decodes: decoding
  // sequences in the step. Returns k >= 1: the step prefills the first k prompts whole, or 0 when
  // the first alone does not fit (it gets a chunk of the whole budget).
  size_t completions(std::span<const int64_t> pending, int64_t budget, int64_t n_decodes, int64_t overhead);

 private:
  std::vector<int64_t> sum_, cost_;  // the plan's tables, reused from step to step
  std::vector<size_t> next_;
};

}  // namespace ferrum
