// The OpenAI-compatible HTTP layer, talked to over loopback with httplib::Client.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "greedy_reference.h"
#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::server_test {
namespace {

using json = nlohmann::json;
using test::TestServer;

json post(httplib::Client& c, const std::string& path, const std::string& body, int* status = nullptr,
          const httplib::Headers& h = {}) {
  auto r = c.Post(path, h, body, "application/json");
  if (!r) {
    ADD_FAILURE() << "no response for " << path;
    return {};
  }
  if (status) *status = r->status;
  return json::parse(r->body, nullptr, false);
}

// Text deltas and the final SSE payloads of a streamed request.
struct Stream {
  std::string text, finish_reason;
  json usage;
  bool done = false;
  int chunks = 0;
};
Stream post_stream(httplib::Client& c, const std::string& path, json body, bool chat) {
  body["stream"] = true;
  Stream s;
  std::string buf;
  auto r = c.Post(path, httplib::Headers{}, body.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return s;
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  buf = r->body;
  size_t pos = 0;
  while ((pos = buf.find("\n\n")) != std::string::npos) {
    const std::string ev = buf.substr(0, pos);
    buf.erase(0, pos + 2);
    EXPECT_TRUE(ev.starts_with("data: ")) << ev;
    const std::string data = ev.substr(6);
    EXPECT_FALSE(s.done) << "data after [DONE]";
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    json j = json::parse(data);
    ++s.chunks;
    if (j.contains("usage") && !j["usage"].is_null()) s.usage = j["usage"];
    for (const auto& ch : j["choices"]) {
      if (chat) {
        if (ch["delta"].contains("content")) s.text += ch["delta"]["content"].get<std::string>();
      } else {
        s.text += ch["text"].get<std::string>();
      }
      if (!ch["finish_reason"].is_null()) s.finish_reason = ch["finish_reason"];
    }
  }
  EXPECT_TRUE(buf.empty());
  return s;
}

// Greedy reference text with the plain single-sequence loop.
std::string reference_text(LoadedModel& lm, const std::string& prompt_text, int max_tokens, int* n_tokens) {
  const auto prompt = lm.tokenizer->encode(prompt_text, true, true);
  const test::GreedyRun r = test::greedy_reference(*lm.model, KvOptions{}, *lm.tokenizer, prompt, max_tokens);
  *n_tokens = static_cast<int>(r.tokens.size());
  return r.text;
}

TEST(Server, CompletionsGreedyEqualsRunAndStreamEqualsNonStream) {
  TestServer ts(test::stories_gguf());
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel ref = load_model(test::stories_gguf(), o);
  int n = 0;
  const std::string want = reference_text(ref, "Once upon a time", 40, &n);
  auto c = ts.client();
  const json body = {
      {"model", "test-model"}, {"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}};
  int status = 0;
  json r = post(c, "/v1/completions", body.dump(), &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["text"], want);
  EXPECT_EQ(r["usage"]["completion_tokens"], n);
  EXPECT_EQ(r["usage"]["total_tokens"], r["usage"]["prompt_tokens"].get<int>() + n);
  EXPECT_EQ(r["choices"][0]["finish_reason"], n == 40 ? "length" : "stop");

  json sb = body;
  sb["stream_options"] = {{"include_usage", true}};
  Stream s = post_stream(c, "/v1/completions", sb, false);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, want);
  EXPECT_EQ(s.usage["completion_tokens"], n);
  EXPECT_EQ(s.finish_reason, r["choices"][0]["finish_reason"].get<std::string>());

  // Token-array prompt: same answer.
  json tb = body;
  tb["prompt"] = ref.tokenizer->encode("Once upon a time", true, true);
  r = post(c, "/v1/completions", tb.dump(), &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["text"], want);
}

TEST(Server, ChatStreamedEqualsNonStreamed) {
  TestServer ts(test::data_path("models/qwen3/gguf/qwen3-Q8_0.gguf"));
  auto c = ts.client();
  const json body = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello there"}}}},
      {"max_tokens", 24},
      {"temperature", 0},
      {"logprobs", true},
      {"top_logprobs", 2}};
  int status = 0;
  json r = post(c, "/v1/chat/completions", body.dump(), &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(r["choices"][0]["message"]["content"].is_string());
  EXPECT_EQ(r["choices"][0]["logprobs"]["content"].size(), r["usage"]["completion_tokens"].get<size_t>());
  EXPECT_EQ(r["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
  EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), 5);
  Stream s = post_stream(c, "/v1/chat/completions", body, true);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, r["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(s.finish_reason, r["choices"][0]["finish_reason"].get<std::string>());
  EXPECT_TRUE(s.usage.is_null());  // not asked for
}

TEST(Server, MalformedRequestsGet4xxAndServerKeepsServing) {
  server::ServerOptions so;
  so.max_body_bytes = 64 * 1024;
  TestServer ts(test::stories_gguf(), so);
  auto c = ts.client();
  struct Case {
    std::string path, body;
    int status;
    std::string param;
  };
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  const std::vector<Case> cases = {
      {"/v1/chat/completions", "{not json", 400, ""},
      {"/v1/chat/completions", "", 400, ""},
      {"/v1/chat/completions", "[1,2]", 400, ""},
      {"/v1/chat/completions", "{\"max_tokens\":3}", 400, "messages"},
      {"/v1/chat/completions", "{" + msgs + ",\"max_tokens\":\"ten\"}", 400, "max_tokens"},
      {"/v1/chat/completions", "{" + msgs + ",\"max_tokens\":-1}", 400, "max_tokens"},
      {"/v1/chat/completions", "{" + msgs + ",\"temperature\":\"hot\"}", 400, "temperature"},
      {"/v1/chat/completions", "{" + msgs + ",\"temperature\":7}", 400, "temperature"},
      {"/v1/chat/completions", "{" + msgs + ",\"n\":2}", 400, "n"},
      {"/v1/chat/completions", "{" + msgs + ",\"stop\":5}", 400, "stop"},
      {"/v1/chat/completions", "{" + msgs + ",\"stream\":\"yes\"}", 400, "stream"},
      {"/v1/chat/completions", "{" + msgs + ",\"logit_bias\":{\"abc\":1}}", 400, "logit_bias"},
      {"/v1/chat/completions", "{" + msgs + ",\"model\":\"gpt-9\"}", 404, "model"},
      {"/v1/chat/completions", R"({"messages":"hi"})", 400, "messages"},
      {"/v1/chat/completions", R"({"messages":[{"content":"no role"}]})", 400, "messages[0].role"},
      {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff\xfe utf8\"}]}", 400,
       ""},
      {"/v1/completions", R"({"prompt":[1,2,99999999]})", 400, "prompt"},
      {"/v1/completions", R"({"prompt":{"a":1}})", 400, "prompt"},
      {"/v1/completions",
       "{\"prompt\":\"" + std::string(4000, 'a') + " b c d e f g h i j k l m n o p q r s t u v w x y z " +
           "\"}",
       400, ""},
      {"/v1/embeddings", R"({"input":"hello"})", 400, "model"},
  };
  for (const auto& k : cases) {
    int status = 0;
    json r = post(c, k.path, k.body, &status);
    EXPECT_EQ(status, k.status) << k.path << " " << k.body.substr(0, 80) << " -> " << r.dump();
    ASSERT_TRUE(r.is_object() && r.contains("error")) << r.dump();
    EXPECT_FALSE(r["error"]["message"].get<std::string>().empty());
    EXPECT_TRUE(r["error"].contains("type") && r["error"].contains("code") && r["error"].contains("param"));
    if (!k.param.empty()) EXPECT_EQ(r["error"]["param"], k.param) << r.dump();
  }
  // Huge prompt (many tokens) -> context_length_exceeded.
  std::string words;
  for (int i = 0; i < 400; ++i) words += " cat";
  int status = 0;
  json r = post(c, "/v1/completions", json{{"prompt", words}}.dump(), &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["error"]["code"], "context_length_exceeded") << r.dump();
  // Body too large.
  auto big = c.Post("/v1/completions", std::string(200 * 1024, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_TRUE(json::parse(big->body, nullptr, false).contains("error")) << big->body;
  // Unknown route.
  auto nf = c.Get("/v1/nothing");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  // Still serving.
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  r = post(c, "/v1/chat/completions", "{" + msgs + ",\"max_tokens\":4,\"ignore_eos\":true}", &status);
  EXPECT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
}

TEST(Server, ApiKeyModelsMetrics) {
  server::ServerOptions so;
  so.api_key = "sekret";
  TestServer ts(test::stories_gguf(), so);
  auto c = ts.client();
  auto r = c.Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
  httplib::Headers auth = {{"Authorization", "Bearer sekret"}};
  r = c.Get("/v1/models", auth);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  json m = json::parse(r->body);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "test-model");
  int status = 0;
  json cr = post(c, "/v1/completions", R"({"prompt":"Once","max_tokens":5,"ignore_eos":true,"seed":7})",
                 &status, auth);
  EXPECT_EQ(status, 200) << cr.dump();
  r = c.Get("/metrics");  // needs the key too (unless --public-metrics)
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Get("/metrics", auth);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  for (const char* k : {"ferrum_requests_total{outcome=\"finished\"} 1", "ferrum_generation_tokens_total 5",
                        "ferrum_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1",
                        "ferrum_inter_token_latency_seconds_count 4", "ferrum_requests_running 0",
                        "ferrum_kv_cache_usage_ratio", "ferrum_prefix_cache_hits_total"})
    EXPECT_NE(r->body.find(k), std::string::npos) << k << "\n" << r->body;
}

TEST(Server, DisconnectingStreamCancelsItsSequence) {
  TestServer ts(test::stories_gguf());
  auto c = ts.client();
  const json body = {
      {"prompt", "Once upon a time"}, {"max_tokens", 240}, {"ignore_eos", true}, {"stream", true}};
  int received = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++received < 3; };  // hang up
  auto r = c.send(req);
  EXPECT_FALSE(r);
  EXPECT_EQ(received, 3);
  bool cancelled = false;
  for (int i = 0; i < 200 && !cancelled; ++i) {  // bounded wait (20 s)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancelled = ts.engine->stats().requests_cancelled == 1;
  }
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(ts.engine->kv_usage().sequences, 0);
  EXPECT_LT(ts.engine->stats().generation_tokens, 240u);
}

}  // namespace
}  // namespace ferrum::server_test
