// `ferrum serve` with speculative decoding: eight concurrent completions each get exactly the
// plain greedy output (streamed ones too), /metrics counts the drafts, and a request can turn it off.
#include <gtest/gtest.h>

#include <thread>

#include "engine/draft_model_proposer.h"
#include "greedy_reference.h"
#include "raw_http.h"
#include "server_fixture.h"
#include "test_util.h"

namespace ferrum {
namespace {

using json = nlohmann::json;

std::string fixture(const std::string& type) {
  return test::data_path("models/qwen3/gguf/qwen3-" + type + ".gguf");
}

TEST(SpeculativeServer, EightConcurrentCompletionsEqualPlainGreedy) {
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel draft = load_model(fixture("Q4_0"), o);
  LoadedModel ref = load_model(fixture("Q8_0"), o);
  const std::vector<std::string> prompts = {"Once upon a time", "The cat sat on the mat. The cat",
                                            "1, 2, 3, 4,",      "Hello world",
                                            "A B C A B C A B",  "def f(x):",
                                            "The sun",          "one two three one two"};
  constexpr int kTokens = 32;
  std::vector<std::string> want;
  std::vector<int> want_n;
  for (const auto& p : prompts) {
    const auto ids = ref.tokenizer->encode(p, true, true);
    const test::GreedyRun r = test::greedy_reference(*ref.model, KvOptions{}, *ref.tokenizer, ids, kTokens);
    // As the server sends it: JSON replaces invalid UTF-8 (random weights emit any bytes) with U+FFFD.
    want.push_back(
        json::parse(json(r.text).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>());
    want_n.push_back(static_cast<int>(r.tokens.size()));
  }
  EngineOptions eo;
  eo.max_num_seqs = 8;
  eo.spec.draft_max = 4;
  eo.spec.proposer = std::make_shared<DraftModelProposer>(*draft.model, ref.model->config().n_vocab);
  test::TestServer ts(fixture("Q8_0"), {}, eo);

  // The eight at once over raw sockets (httplib's client shares regex state across threads,
  // which ThreadSanitizer reports inside the uninstrumented library), then streamed ones.
  std::vector<std::string> got(prompts.size());
  std::vector<int> got_n(prompts.size(), -1);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i)
    clients.emplace_back([&, i] {
      const json body = {{"prompt", prompts[i]}, {"max_tokens", kTokens}, {"temperature", 0}};
      const json j = test::post_json_raw(ts.port, "/v1/completions", body.dump());
      if (!j.is_object() || !j.contains("choices")) return;
      got[i] = j["choices"][0]["text"];
      got_n[i] = j["usage"]["completion_tokens"];
    });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < prompts.size(); i += 3) {  // streamed: the text deltas concatenated
    auto c = ts.client();
    json body = {{"prompt", prompts[i]}, {"max_tokens", kTokens}, {"temperature", 0}, {"stream", true}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : std::string("no response"));
    std::string text;
    size_t at = 0;
    while ((at = r->body.find("data: ", at)) != std::string::npos) {
      const size_t end = r->body.find("\n\n", at);
      const std::string data = r->body.substr(at + 6, end - at - 6);
      at = end;
      if (data == "[DONE]") break;
      const json chunk = json::parse(data);
      for (const auto& ch : chunk["choices"]) text += ch["text"].get<std::string>();
    }
    EXPECT_EQ(text, want[i]) << "streamed request " << i;
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << "request " << i << " '" << prompts[i] << "'";
    EXPECT_EQ(got_n[i], want_n[i]) << "request " << i;
  }

  auto c = ts.client();
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  const EngineStats st = ts.engine->stats();
  EXPECT_GT(st.spec_accepted, 0u);
  EXPECT_NE(m->body.find("ferrum_spec_decode_accepted_tokens_total " + std::to_string(st.spec_accepted)),
            std::string::npos);
  EXPECT_NE(m->body.find("ferrum_spec_decode_accepted_per_step_bucket{le=\"0\"}"), std::string::npos);

  // "speculative": false decodes without drafts, same text.
  const uint64_t before = st.spec_proposed;
  json body = {{"prompt", prompts[0]}, {"max_tokens", kTokens}, {"temperature", 0}, {"speculative", false}};
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["choices"][0]["text"], want[0]);
  EXPECT_EQ(ts.engine->stats().spec_proposed, before);
  body["speculative"] = "no";
  r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("speculative"), std::string::npos) << r->body;
}

// The reasoning budget's forced end and the grammar that starts after it take the speculative
// path too (drafts checked against the forced tokens): the answer equals the one without drafts.
TEST(SpeculativeServer, ReasoningBudgetAndSchemaEqualWithoutDrafts) {
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel draft = load_model(fixture("Q4_0"), o);
  EngineOptions eo;
  eo.spec.draft_max = 4;
  eo.spec.proposer = std::make_shared<DraftModelProposer>(*draft.model, draft.model->config().n_vocab);
  server::ServerOptions so;
  so.chat_template =
      "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}{# <think> #}";
  test::TestServer ts(fixture("Q8_0"), so, eo, 512);
  auto c = ts.client();
  for (int budget : {0, 3, 9}) {
    json body = {{"messages", json::array({{{"role", "user"}, {"content", "one two three one two"}}})},
                 {"max_tokens", 60},
                 {"temperature", 0},
                 {"reasoning_budget", budget},
                 {"response_format", {{"type", "json_object"}}}};
    int status = 0;
    const uint64_t before = ts.engine->stats().spec_proposed;
    const json with = test::post_json(c, "/v1/chat/completions", body, &status);
    ASSERT_EQ(status, 200) << with.dump();
    EXPECT_GT(ts.engine->stats().spec_proposed, before);
    body["speculative"] = false;
    const json without = test::post_json(c, "/v1/chat/completions", body, &status);
    ASSERT_EQ(status, 200) << without.dump();
    EXPECT_EQ(with["choices"][0]["message"], without["choices"][0]["message"]) << budget;
    EXPECT_EQ(with["usage"], without["usage"]);
    // The prompt was opened with "<think>\n" (this random model's reasoning is whitespace, trimmed).
    body["reasoning_format"] = "none";
    const json raw = test::post_json(c, "/v1/chat/completions", body, &status);
    EXPECT_LT(raw["usage"]["prompt_tokens"], with["usage"]["prompt_tokens"]);
  }
}

}  // namespace
}  // namespace ferrum
