#include "engine_answers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "../models/model_test_util.h"
#include "engine/engine.h"
#include "engine/ngram_proposer.h"
#include "loading/loader.h"

namespace ferrum::test {

std::vector<std::vector<int32_t>> engine_answers(Model& m, const std::string& path, const std::string& family,
                                                 int tokens) {
  using namespace std::chrono_literals;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i)
    for (const char* pid : {"p4", "p3", "p1", "p2"}) prompts.push_back(prompt_ids(family, pid));
  EngineOptions eo;
  eo.kv.layout = KvLayout::Paged;
  eo.kv.prefix_cache = true;
  eo.kv.capacity = 256;
  eo.max_num_seqs = 16;
  eo.max_batched_tokens = 48;
  eo.spec.proposer = std::make_shared<NgramProposer>();
  eo.spec.draft_max = 4;
  LoadedModel lm = load_model(path);
  Engine eng(m, *lm.tokenizer, eo);
  std::vector<std::vector<int32_t>> out;
  for (int round = 0; round < 2; ++round) {
    std::vector<std::shared_ptr<RequestHandle>> hs;
    for (size_t i = 0; i < prompts.size(); ++i) {
      RequestParams rp;
      rp.prompt = prompts[i];
      rp.max_tokens = tokens + static_cast<int>(i);
      rp.ignore_eos = true;
      rp.sampling.temperature = 0;
      hs.push_back(eng.submit(rp));
    }
    for (auto& h : hs) {
      std::vector<int32_t> toks;
      for (int i = 0; i < 3000; ++i) {
        auto e = h->next(100ms);
        if (!e) continue;
        toks.insert(toks.end(), e->tokens.begin(), e->tokens.end());
        EXPECT_NE(e->finish_reason, "error") << e->error;
        if (e->finished) break;
      }
      out.push_back(toks);
    }
  }
  EXPECT_GT(eng.kv_usage().prefix_hits, 0);
  return out;
}

}  // namespace ferrum::test
