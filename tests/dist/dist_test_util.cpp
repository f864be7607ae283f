#include "dist_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "../models/model_test_util.h"
#include "engine/engine.h"
#include "engine/ngram_proposer.h"
#include "ferrum/sampler.h"
#include "loading/loader.h"

namespace ferrum::test {

std::string rank_fixture(const std::string& family) {
  return is_family(family) ? data_dir("families/" + family + "/hf")
                           : model_file(family, "gguf/" + family + "-Q8_0.gguf");
}

std::vector<float> two_sequences(Model& m, const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                 int steps, KvLayout layout, const std::vector<int32_t>& feed,
                                 std::vector<int32_t>* fed) {
  KvOptions ko;
  ko.layout = layout;
  ko.capacity = 256;
  auto kv = KvCache::for_model(m, ko);
  const int V = m.config().n_vocab;
  std::vector<float> out, logits(2 * V);
  m.prefill(*kv, 0, std::span(a).first(7), nullptr);
  m.prefill(*kv, 0, std::span(a).subspan(7), logits.data());
  m.prefill(*kv, 1, b, logits.data() + V);
  out.insert(out.end(), logits.begin(), logits.end());
  for (int s = 0; s < steps; ++s) {
    const bool given = !feed.empty();
    const int32_t t0 = given ? feed.at(2 * s) : argmax(logits.data(), V);
    const int32_t t1 = given ? feed.at(2 * s + 1) : argmax(logits.data() + V, V);
    if (fed) fed->insert(fed->end(), {t0, t1});
    std::vector<DecodeItem> items = {{0, t0, kv->seq_len(0)}, {1, t1, kv->seq_len(1)}};
    m.decode_batch(*kv, items, logits.data());
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

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
