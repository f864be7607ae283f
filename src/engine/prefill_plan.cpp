#include "engine/prefill_plan.h"

#include <algorithm>

namespace ferrum {
namespace {

// Looked ahead at most this many prompts; the ones after wait through every planned step and only
// weigh in as waiters (keeps a plan at O(kHorizon x budget)).
constexpr size_t kHorizon = 256;

}  // namespace

size_t PrefillPlanner::completions(std::span<const int64_t> pending, int64_t budget, int64_t n_decodes,
                                   int64_t overhead) {
  if (pending.empty() || pending[0] > budget) return 0;
  const size_t m = std::min(pending.size(), kHorizon);
  const int64_t beyond = static_cast<int64_t>(pending.size() - m);
  std::vector<int64_t>& sum = sum_;
  sum.assign(m + 1, 0);
  for (size_t i = 0; i < m; ++i) sum[i + 1] = sum[i] + pending[i];
  // cost[i]: the least summed waiting time of prompts i.. (and those beyond the horizon) from the
  // step that starts with prompt i, in tokens; next[i]: where that step ends.
  std::vector<int64_t>& cost = cost_;
  std::vector<size_t>& next = next_;
  cost.assign(m + 1, 0);
  next.assign(m + 1, m);
  for (size_t i = m; i-- > 0;) {
    const int64_t waiters = static_cast<int64_t>(m - i) + beyond;
    const int64_t decodes = n_decodes + static_cast<int64_t>(i);
    if (pending[i] > budget) {  // chunked alone over ceil(pending / budget) steps
      const int64_t steps = (pending[i] + budget - 1) / budget;
      cost[i] = waiters * (steps * (overhead + decodes) + pending[i]) + cost[i + 1];
      next[i] = i + 1;
      continue;
    }
    cost[i] = -1;
    for (size_t j = i + 1; j <= m && sum[j] - sum[i] <= budget; ++j) {
      const int64_t c = waiters * (overhead + decodes + sum[j] - sum[i]) + cost[j];
      if (cost[i] < 0 || c <= cost[i]) {  // ties: the bigger step (fewer steps in all)
        cost[i] = c;
        next[i] = j;
      }
    }
  }
  return next[0];
}

}  // namespace ferrum
