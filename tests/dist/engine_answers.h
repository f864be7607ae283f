// The greedy answers of an engine over a model split over ranks (or in one piece, to compare):
// paged cache with prefix reuse and n-gram speculation, so cache operations of every kind (reuse,
// releases, rollbacks) must reach every rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ferrum/model.h"

namespace ferrum::test {

// 16 requests at once (the family's four prompts four times; request i answers tokens + i tokens),
// twice over (the second round hits the prefix cache); the tokens of each, in submission order.
std::vector<std::vector<int32_t>> engine_answers(Model& m, const std::string& path, const std::string& family,
                                                 int tokens);

}  // namespace ferrum::test
