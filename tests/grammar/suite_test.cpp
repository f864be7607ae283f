// The grammar suite: 20 outputs sampled at temperature 1 from the bundled stories260K model for
// every schema in tests/data/grammar/schemas and grammar in tests/data/grammar/gbnf, 20 sequences
// batched in one engine (each with its own grammar state). Here: every output completes its
// grammar ("stop") and a fresh matcher accepts its text; the outputs are written to
// $FERRUM_GRAMMAR_SAMPLES (the test is skipped without it) as JSON lines for tests/grammar/validate_json.py,
// which checks them with independent validators (python3-jsonschema, json, re, a parser for arithmetic).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/engine.h"
#include "grammar/grammar_cache.h"
#include "loading/loader.h"
#include "test_util.h"

namespace ferrum::grammar::suite_test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr int kSamples = 20;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<fs::path> files_in(const std::string& rel, const std::string& ext) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(test::data_path(rel)))
    if (e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

struct Sample {
  std::string text, finish;
};

std::vector<Sample> sample(Engine& engine, const Tokenizer& tok, std::shared_ptr<const CompiledGrammar> g) {
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (int i = 0; i < kSamples; ++i) {
    RequestParams p;
    p.prompt = {tok.bos_id()};
    p.max_tokens = 400;
    p.sampling.temperature = 1.0f;
    p.sampling.top_k = 0;
    p.sampling.top_p = 1.0f;
    p.sampling.min_p = 0.0f;
    p.sampling.seed = 1000 + i;
    p.grammar = g;
    hs.push_back(engine.submit(std::move(p)));
  }
  std::vector<Sample> out(kSamples);
  for (int i = 0; i < kSamples; ++i)
    for (int t = 0; t < 6000 && out[i].finish.empty(); ++t)
      if (auto e = hs[i]->next(100ms)) {
        out[i].text += e->text;
        if (e->finished) out[i].finish = e->finish_reason;
      }
  return out;
}

TEST(GrammarSuite, SampledOutputsCompleteTheirGrammar) {
  const char* samples_path = std::getenv("FERRUM_GRAMMAR_SAMPLES");
  if (!samples_path)
    GTEST_SKIP() << "run by the CTest test grammar.SampledOutputsValidate (tests/grammar/run_suite.sh)";
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel lm = load_model(std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf", o);
  EngineOptions eo;
  eo.kv.layout = KvLayout::Paged;
  eo.kv.capacity = 512;
  eo.max_num_seqs = kSamples;
  Engine engine(*lm.model, *lm.tokenizer, eo);
  GrammarCache cache(*lm.tokenizer);

  std::ofstream out(samples_path);
  ASSERT_TRUE(out) << samples_path;
  std::vector<std::pair<fs::path, GrammarSpec>> specs;
  for (const auto& p : files_in("grammar/schemas", ".json"))
    specs.push_back({p, {GrammarSpec::Kind::JsonSchema, read(p)}});
  for (const auto& p : files_in("grammar/gbnf", ".gbnf"))
    specs.push_back({p, {GrammarSpec::Kind::Gbnf, read(p)}});
  ASSERT_GE(specs.size(), 34u);
  for (const auto& [path, spec] : specs) {
    SCOPED_TRACE(path.string());
    auto g = cache.get(spec);
    const auto samples = sample(engine, *lm.tokenizer, g);
    for (int i = 0; i < kSamples; ++i) {
      EXPECT_EQ(samples[i].finish, "stop") << samples[i].text;
      Matcher m(g->grammar);
      EXPECT_TRUE(m.accept(samples[i].text) && m.can_end()) << samples[i].text;
      out << nlohmann::json{{"file", path.parent_path().filename().string() + "/" + path.filename().string()},
                            {"seed", i},
                            {"finish", samples[i].finish},
                            {"text", samples[i].text}}
                 .dump()
          << "\n";
    }
  }
  EXPECT_EQ(cache.compiled_count(), specs.size());
}

}  // namespace
}  // namespace ferrum::grammar::suite_test
