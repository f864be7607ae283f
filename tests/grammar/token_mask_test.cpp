// The token mask against the matcher it summarizes: on real vocabularies (stories260K's
// SentencePiece with byte fallback, the qwen2 fixture's byte-level BPE), for random strings of
// each grammar tokenized as the model would, every next token of the string is allowed at every
// prefix (the mask never removes the only valid continuation), and the mask is exactly the set of
// tokens the matcher accepts; end-of-generation only where the grammar may end; rollback.
#include "grammar/token_mask.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "engine/request_output.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "loading/loader.h"
#include "test_util.h"

namespace ferrum::grammar::token_mask_test {
namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::shared_ptr<const CompiledGrammar> compiled(const std::string& gbnf, const Tokenizer& tok) {
  return bind(std::make_shared<const Grammar>(compile_gbnf(gbnf)), TokenVocab::from_tokenizer(tok));
}

// A random string of the grammar: random allowed bytes, ending (when it may) with probability
// 1/8 per byte, at most `max_len` bytes (then cut back to the last point where it could end);
// nullopt when no complete string was reached.
std::optional<std::string> random_string(const std::shared_ptr<const Grammar>& g, std::mt19937_64& rng,
                                         size_t max_len) {
  Matcher m(g);
  std::string s;
  std::optional<std::string> best;
  Matcher::State next;
  while (s.size() < max_len) {
    if (m.can_end()) {
      best = s;
      if (rng() % 8 == 0 || m.done()) return s;
    }
    std::vector<uint8_t> ok;
    for (int b = 0; b < 256; ++b) {
      m.step(m.state(), static_cast<uint8_t>(b), next);
      if (!next.empty()) ok.push_back(static_cast<uint8_t>(b));
    }
    if (ok.empty()) break;
    const char c = static_cast<char>(ok[rng() % ok.size()]);
    m.accept(std::string_view(&c, 1));
    s.push_back(c);
  }
  if (m.can_end()) return s;
  return best;
}

struct Case {
  std::string name, gbnf;
};
std::vector<Case> grammars() {
  std::vector<Case> out;
  for (const char* f : {"json", "arithmetic", "list", "kv_lines"})
    out.push_back({f, read(test::data_path(std::string("grammar/gbnf/") + f + ".gbnf"))});
  out.push_back({"schema", json_schema_gbnf(nlohmann::json::parse(read(
                               test::data_path("grammar/schemas/32_object_with_array_and_enum.json"))))});
  out.push_back({"unicode", "root ::= [\\u00e0-\\u00ff\\u4e00-\\u4e0f ]{1,6} \"!\""});
  return out;
}

void check_vocabulary(const Tokenizer& tok) {
  std::mt19937_64 rng(7);
  const int n_vocab = tok.n_vocab();
  std::vector<uint64_t> bits, walked;
  for (const Case& c : grammars()) {
    SCOPED_TRACE(c.name);
    int checked = 0;
    auto g = compiled(c.gbnf, tok);
    for (int trial = 0; trial < 12; ++trial) {
      const auto str = random_string(g->grammar, rng, 400);
      if (!str) continue;
      ++checked;
      const std::string& s = *str;
      SCOPED_TRACE(s);
      const std::vector<int32_t> ids = tok.encode(s, /*add_special=*/false, /*parse_special=*/false);
      ASSERT_EQ(tok.decode(ids), s);
      TokenMask mask(g, /*at_text_start=*/true);
      for (size_t i = 0; i <= ids.size(); ++i) {
        mask.fill(bits, n_vocab);
        mask.compute_walk(walked, n_vocab);  // the cached stack tops give the full walk's mask
        ASSERT_EQ(bits, walked) << "at " << i;
        // Exactly the tokens the matcher accepts (checked on every token of the vocabulary).
        for (int32_t id = 0; id < n_vocab; ++id) {
          const bool ok = mask.accept_token(id);
          if (ok && !g->vocab->is_eog(id)) mask.rollback(1);
          ASSERT_EQ(bit_set(bits, id), ok) << "token " << id << " " << tok.token_text(id) << " at " << i;
        }
        for (int32_t eog : tok.eog_ids()) EXPECT_EQ(bit_set(bits, eog), mask.can_end());
        if (i == ids.size()) break;
        ASSERT_TRUE(bit_set(bits, ids[i])) << "the string's next token " << ids[i] << " is masked at " << i;
        ASSERT_TRUE(mask.accept_token(ids[i]));
      }
      EXPECT_TRUE(mask.can_end());
    }
    EXPECT_GE(checked, 8);
  }
}

TEST(TokenMask, SentencePieceVocabularyNeverMasksTheValidContinuation) {
  ModelOptions o;
  LoadedModel lm = load_model(std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf", o);
  check_vocabulary(*lm.tokenizer);
}

TEST(TokenMask, ByteLevelBpeVocabularyNeverMasksTheValidContinuation) {
  auto tok = load_tokenizer(test::data_path("models/qwen2/gguf/qwen2-Q4_0.gguf"));
  check_vocabulary(*tok);
}

TEST(TokenMask, RollbackRestoresTheMaskAndTheCacheMatchesAFreshWalk) {
  auto tok = load_tokenizer(test::data_path("models/qwen2/gguf/qwen2-Q4_0.gguf"));
  auto g = compiled(read(test::data_path("grammar/gbnf/json.gbnf")), *tok);
  TokenMask mask(g, true);
  const auto ids = tok->encode(R"({"a": [1, 2.5, "x"], "b": null})", false, false);
  std::vector<std::vector<uint64_t>> masks;
  std::vector<uint64_t> bits, walked;
  for (int32_t id : ids) {
    mask.fill(bits, tok->n_vocab());
    mask.compute_walk(walked, tok->n_vocab());
    EXPECT_EQ(bits, walked);
    masks.push_back(bits);
    ASSERT_TRUE(mask.accept_token(id));
  }
  EXPECT_TRUE(mask.done());
  for (size_t back = 1; back <= ids.size(); ++back) {
    mask.rollback(1);
    mask.fill(bits, tok->n_vocab());
    EXPECT_EQ(bits, masks[ids.size() - back]) << back;
  }
  EXPECT_EQ(mask.n_accepted(), 0u);
}

TEST(TokenMask, RequestOutputKeepsEosUntilTheGrammarMayEndAndReportsLength) {
  ModelOptions o;
  LoadedModel lm = load_model(std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf", o);
  const Tokenizer& tok = *lm.tokenizer;
  const int n = tok.n_vocab();
  std::vector<float> logits(n, 0.0f);
  logits[tok.eos_id()] = 50.0f;  // the model wants to stop at once
  for (const int max_tokens : {2, 100}) {
    RequestParams p;
    p.prompt = {tok.bos_id()};
    p.max_tokens = max_tokens;
    p.sampling.temperature = 0;
    p.grammar = compiled("root ::= \"ab\" \"c\"? \"d\"*", tok);
    RequestOutput out(tok, p, n);
    std::vector<int32_t> tokens = p.prompt;
    std::string text, reason;
    for (int step = 0; step < 10 && reason.empty(); ++step) {
      RequestEvent ev = out.on_logits(logits.data(), tokens, 512);
      text += ev.text;
      if (ev.finished) reason = ev.finish_reason;
    }
    if (max_tokens == 2) {
      // Cut short: a prefix of "ab", never EOS before "ab" is complete.
      EXPECT_EQ(std::string("ab").substr(0, text.size()), text);
      EXPECT_TRUE(reason == "length" || (reason == "stop" && text == "ab")) << reason << " " << text;
      EXPECT_NE(tokens.back(), tok.eos_id());
    } else {
      EXPECT_EQ(reason, "stop");
      EXPECT_EQ(text, "ab");  // EOS as soon as the grammar may end
      EXPECT_EQ(tokens.back(), tok.eos_id());
    }
  }
  // A grammar that needs more than max_tokens ends with "length", never "stop".
  RequestParams p;
  p.prompt = {tok.bos_id()};
  p.max_tokens = 3;
  p.sampling.temperature = 0;
  p.grammar = compiled("root ::= \"{\" [a-z]{20} \"}\"", tok);
  RequestOutput out(tok, p, n);
  std::vector<int32_t> tokens = p.prompt;
  RequestEvent ev;
  for (int step = 0; step < 3; ++step) ev = out.on_logits(logits.data(), tokens, 512);
  EXPECT_TRUE(ev.finished);
  EXPECT_EQ(ev.finish_reason, "length");
}

}  // namespace
}  // namespace ferrum::grammar::token_mask_test

namespace ferrum::grammar::token_mask_test {
namespace {

// Every sampler setting applies after the mask: with random logits, penalties, top-k/p, min-p
// and a huge bias on a token the grammar never allows, the output still follows the grammar.
TEST(TokenMask, EverySamplerSettingStaysInsideTheGrammar) {
  ModelOptions o;
  LoadedModel lm = load_model(std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf", o);
  const Tokenizer& tok = *lm.tokenizer;
  const int n = tok.n_vocab();
  const auto g =
      bind(std::make_shared<const Grammar>(compile_gbnf(read(test::data_path("grammar/gbnf/json.gbnf")))),
           TokenVocab::from_tokenizer(tok));
  const int32_t letter_q =
      tok.encode("q", false, false).back();  // never allowed first: JSON starts otherwise
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int config = 0; config < 6; ++config) {
    RequestParams p;
    p.prompt = {tok.bos_id()};
    p.max_tokens = 300;
    p.sampling.temperature = config == 0 ? 0.0f : 0.4f + 0.3f * config;  // up to 1.9 (the range ends at 2)
    p.sampling.top_k = config % 2 ? 5 : 0;
    p.sampling.top_p = config % 3 ? 0.9f : 1.0f;
    p.sampling.min_p = config >= 3 ? 0.1f : 0.0f;
    p.sampling.repeat_penalty = config >= 2 ? 1.3f : 1.0f;
    p.sampling.presence_penalty = config >= 4 ? 0.5f : 0.0f;
    p.sampling.frequency_penalty = config >= 4 ? 0.5f : 0.0f;
    p.sampling.logit_bias[letter_q] = 100.0f;
    p.sampling.seed = config;
    p.grammar = g;
    RequestOutput out(tok, p, n);
    std::vector<int32_t> tokens = p.prompt;
    std::string text, reason;
    std::vector<float> logits(n);
    for (int step = 0; step < 300 && reason.empty(); ++step) {
      for (float& l : logits) l = normal(rng);
      RequestEvent ev = out.on_logits(logits.data(), tokens, 4096);
      text += ev.text;
      if (ev.finished) reason = ev.finish_reason;
    }
    SCOPED_TRACE(text);
    Matcher m(g->grammar);
    ASSERT_TRUE(m.accept(text)) << "config " << config;
    EXPECT_TRUE(reason == "length" || (reason == "stop" && m.can_end())) << reason;
  }
}

}  // namespace
}  // namespace ferrum::grammar::token_mask_test
