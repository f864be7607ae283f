// PrefillPlanner::completions() against brute force: every way to cut the pending prompts into steps.
#include "engine/prefill_plan.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace ferrum {
namespace {

// The summed time to first token of the pending prompts when the steps end at `ends` (prompt
// counts, increasing, the last == pending.size()), each step costing overhead + its tokens +
// one token per prompt finished before it.
int64_t summed_ttft(const std::vector<int64_t>& pending, const std::vector<size_t>& ends, int64_t n_decodes,
                    int64_t overhead) {
  int64_t clock = 0, total = 0;
  size_t begin = 0;
  for (size_t end : ends) {
    int64_t tokens = 0;
    for (size_t i = begin; i < end; ++i) tokens += pending[i];
    clock += overhead + n_decodes + static_cast<int64_t>(begin) + tokens;
    total += clock * static_cast<int64_t>(end - begin);
    begin = end;
  }
  return total;
}

// The first step's end of the best plan over every cut (bit i set: a step ends after prompt i).
size_t brute_force_first(const std::vector<int64_t>& pending, int64_t budget, int64_t n_decodes,
                         int64_t overhead, int64_t* best_cost) {
  const size_t m = pending.size();
  int64_t best = std::numeric_limits<int64_t>::max();
  size_t first = 0;
  for (uint32_t mask = 0; mask < (1u << (m - 1)); ++mask) {
    std::vector<size_t> ends;
    for (size_t i = 0; i + 1 < m; ++i)
      if (mask & (1u << i)) ends.push_back(i + 1);
    ends.push_back(m);
    bool fits = true;
    size_t begin = 0;
    for (size_t end : ends) {
      int64_t tokens = 0;
      for (size_t i = begin; i < end; ++i) tokens += pending[i];
      fits = fits && tokens <= budget;
      begin = end;
    }
    if (!fits) continue;
    const int64_t c = summed_ttft(pending, ends, n_decodes, overhead);
    if (c < best || (c == best && ends[0] > first)) best = c, first = ends[0];
  }
  *best_cost = best;
  return first;
}

TEST(PrefillPlan, FirstStepOfTheBestPlanMatchesBruteForce) {
  const std::vector<std::vector<int64_t>> cases = {
      {20, 20, 20, 20, 20, 20, 20, 20, 20, 20},
      {5, 90, 7, 7, 60, 3, 3, 3, 40, 12},
      {100, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {30, 30},
  };
  PrefillPlanner planner;  // one planner for every case: its reused tables must not leak between plans
  for (const auto& pending : cases)
    for (int64_t budget : {100, 128, 512})
      for (int64_t decodes : {0, 3})
        for (int64_t overhead : {1, 8, 32, 200}) {
          int64_t best = 0;
          const size_t want = brute_force_first(pending, budget, decodes, overhead, &best);
          if (best == std::numeric_limits<int64_t>::max()) continue;  // some prompt alone exceeds the budget
          const size_t got = planner.completions(pending, budget, decodes, overhead);
          // The chosen first step must start a plan as good as the best one.
          std::vector<int64_t> rest(pending.begin() + got, pending.end());
          int64_t rest_best = 0;
          const int64_t first_tokens = [&] {
            int64_t t = 0;
            for (size_t i = 0; i < got; ++i) t += pending[i];
            return t;
          }();
          ASSERT_GE(got, 1u);
          ASSERT_LE(first_tokens, budget);
          int64_t cost = (overhead + decodes + first_tokens) * static_cast<int64_t>(pending.size());
          if (!rest.empty()) {
            brute_force_first(rest, budget, decodes + static_cast<int64_t>(got), overhead, &rest_best);
            cost += rest_best;
          }
          EXPECT_EQ(cost, best) << "budget " << budget << " decodes " << decodes << " overhead " << overhead
                                << " first step " << got << " vs " << want;
        }
}

TEST(PrefillPlan, BurstOfEqualPromptsIsSplitFreeOverheadFillsTheBudget) {
  const std::vector<int64_t> burst(16, 20);
  const size_t k = PrefillPlanner().completions(burst, 512, 0, 16);
  EXPECT_GE(k, 2u);
  EXPECT_LT(k, 16u);  // filling the budget would finish all 16 in one step
  EXPECT_EQ(PrefillPlanner().completions(burst, 512, 0, 100000), 16u);  // a step costs more than any wait
  EXPECT_EQ(PrefillPlanner().completions(burst, 100, 0, 100000), 5u);   // as many as fit
}

TEST(PrefillPlan, APromptLongerThanTheBudgetIsChunked) {
  EXPECT_EQ(PrefillPlanner().completions(std::vector<int64_t>{600, 10}, 256, 0, 32), 0u);
  EXPECT_EQ(PrefillPlanner().completions(std::vector<int64_t>{600}, 600, 0, 32), 1u);
  EXPECT_EQ(PrefillPlanner().completions(std::vector<int64_t>{}, 256, 0, 32), 0u);
}

}  // namespace
}  // namespace ferrum
