// What the tests of models split over ranks (pipeline stages, tensor-parallel ranks) run on the
// split model and on the model in one piece, to compare.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ferrum/kv_cache.h"
#include "ferrum/model.h"

namespace ferrum::test {

// The family's fixture: its Hugging Face directory (the newer families) or its Q8_0 GGUF.
std::string rank_fixture(const std::string& family);

// Two sequences: a's prompt prefilled in two chunks, b's in one, then `steps` decode steps of both
// together; every pass's two rows of logits. Each step decodes the next two tokens of `feed`, or
// (feed empty) each sequence's greedy token, appended to *fed when given.
std::vector<float> two_sequences(Model& m, const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                 int steps, KvLayout layout, const std::vector<int32_t>& feed = {},
                                 std::vector<int32_t>* fed = nullptr);

// The greedy answers of an engine over the model: paged cache with prefix reuse and n-gram
// speculation, so cache operations of every kind (reuse, releases, rollbacks) must reach every rank.
// 16 requests at once (the family's four prompts four times; request i answers tokens + i tokens),
// twice over (the second round hits the prefix cache); the tokens of each, in submission order.
std::vector<std::vector<int32_t>> engine_answers(Model& m, const std::string& path, const std::string& family,
                                                 int tokens);

}  // namespace ferrum::test
