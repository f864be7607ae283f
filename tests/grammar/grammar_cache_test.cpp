#include "grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include "loading/loader.h"
#include "test_util.h"

namespace ferrum::grammar {
namespace {

TEST(GrammarCache, CompilesEachDistinctGrammarOnceAndEvictsTheLeastRecent) {
  auto tok = load_tokenizer(test::data_path("models/qwen2/gguf/qwen2-Q4_0.gguf"));
  GrammarCache cache(*tok, /*capacity=*/2);
  const GrammarSpec a{GrammarSpec::Kind::Gbnf, "root ::= \"a\""};
  const GrammarSpec b{GrammarSpec::Kind::JsonSchema, R"({"type":"integer"})"};
  const GrammarSpec obj{GrammarSpec::Kind::JsonObject, ""};
  auto ga = cache.get(a);
  EXPECT_EQ(cache.get(a), ga);  // the same compiled object
  auto gb = cache.get(b);
  EXPECT_EQ(cache.compiled_count(), 2u);
  EXPECT_EQ(ga->vocab, gb->vocab);  // one vocabulary for all grammars
  cache.get(a);                     // a is now the most recent: b is evicted next
  cache.get(obj);
  EXPECT_EQ(cache.get(a), ga);
  EXPECT_EQ(cache.compiled_count(), 3u);
  EXPECT_NE(cache.get(b), gb);  // recompiled
  EXPECT_EQ(cache.compiled_count(), 4u);
  // A GBNF text and a schema with the same text are different grammars.
  EXPECT_NE(cache.get({GrammarSpec::Kind::JsonSchema, "true"}),
            cache.get({GrammarSpec::Kind::Gbnf, "root ::= \"true\""}));
  EXPECT_NE(test::error_of([&] {
              cache.get({GrammarSpec::Kind::JsonSchema, "{not json"});
            }).find("not valid JSON"),
            std::string::npos);
}

}  // namespace
}  // namespace ferrum::grammar
