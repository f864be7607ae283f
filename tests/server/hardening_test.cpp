// `ferrum serve` against hostile clients: deep JSON, missing keys, oversized and chunked bodies,
// idle and excess connections, hang-ups, and requests outside the API's contract.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "ferrum/embeddings.h"
#include "raw_http.h"
#include "server/embeddings.h"
#include "server_fixture.h"
#include "test_util.h"

namespace ferrum {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using test::RawConn;
using test::status_of;
using test::TestServer;

std::string nested(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

int post_status(httplib::Client& c, const std::string& path, const std::string& body, json* out = nullptr,
                const httplib::Headers& h = {}) {
  auto r = c.Post(path, h, body, "application/json");
  if (!r) return -1;
  if (out) *out = json::parse(r->body, nullptr, false);
  return r->status;
}

bool healthy(httplib::Client& c) {
  auto h = c.Get("/health");
  return h && h->status == 200;
}

TEST(ServerHardening, DeeplyNestedJsonIsRefusedNotFollowed) {
  TestServer ts(test::stories_gguf());
  auto c = ts.client();
  // 20,000 levels inside a message field once overflowed the stack (template value conversion).
  const std::string body = R"({"messages":[{"role":"user","content":"hi","extra":)" + nested(20000) + "}]}";
  json r;
  EXPECT_EQ(post_status(c, "/v1/chat/completions", body, &r), 400);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("deeper than"), std::string::npos) << r.dump();
  EXPECT_EQ(post_status(c, "/v1/completions", R"({"prompt":"a","x":)" + nested(100) + "}"), 400);
  // Nesting within the limit is fine.
  EXPECT_EQ(post_status(c, "/v1/completions", R"({"prompt":"a","max_tokens":1,"x":)" + nested(20) + "}"),
            200);
  EXPECT_TRUE(healthy(c));
}

TEST(ServerHardening, EmbeddingsRouteRefusesDeepJson) {
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel b = load_model(test::data_path("models/bert/gguf/bert-Q8_0.gguf"), o);
  server::Embedder emb(*b.model, *b.tokenizer);
  server::ServerOptions so;
  so.port = 0;
  server::Server srv(nullptr, &emb, so);
  httplib::Client c("127.0.0.1", srv.start());
  EXPECT_EQ(post_status(c, "/v1/embeddings", R"({"input":"hi","user":)" + nested(20000) + "}"), 400);
  EXPECT_EQ(post_status(c, "/embeddings", R"({"input":"hello"})"), 200);
  EXPECT_TRUE(healthy(c));
}

TEST(ServerHardening, ApiKeyGuardsEveryRouteButHealth) {
  server::ServerOptions so;
  so.api_key = "sekret";
  TestServer ts(test::stories_gguf(), so);
  auto c = ts.client();
  const std::string chat = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
  for (const char* path : {"/chat/completions", "/v1/chat/completions", "/completions", "/v1/completions",
                           "/embeddings", "/v1/embeddings"}) {
    json r;
    EXPECT_EQ(post_status(c, path, chat, &r), 401) << path;
    EXPECT_EQ(r["error"]["code"], "invalid_api_key") << path;
  }
  for (const char* path :
       {"/models", "/v1/models", "/v1/models/test-model", "/metrics", "/v1/nothing", "/x"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
  }
  EXPECT_TRUE(healthy(c));
  // The scheme is case-insensitive; the key is not.
  for (const char* auth : {"Bearer sekret", "bearer sekret", "BEARER  sekret ", "Bearer\tsekret"}) {
    auto r = c.Get("/v1/models", {{"Authorization", auth}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << auth;
  }
  for (const char* auth :
       {"Bearer Sekret", "Bearer sekret2", "Bearer sekre", "Basic sekret", "sekret", "Bearer"}) {
    auto r = c.Get("/v1/models", {{"Authorization", auth}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << auth;
  }
  EXPECT_EQ(post_status(c, "/completions", R"({"prompt":"a","max_tokens":1})", nullptr,
                        {{"Authorization", "bearer sekret"}}),
            200);
}

TEST(ServerHardening, PublicMetricsOptIn) {
  server::ServerOptions so;
  so.api_key = "k";
  so.public_metrics = true;
  TestServer ts(test::stories_gguf(), so);
  auto c = ts.client();
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
}

// n connections that were answered once and stay open (keep-alive), so they count as open.
std::vector<std::unique_ptr<RawConn>> keep_alive_connections(int port, int n) {
  std::vector<std::unique_ptr<RawConn>> held;
  for (int i = 0; i < n; ++i) {
    held.push_back(std::make_unique<RawConn>(port));
    held.back()->send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(status_of(held.back()->recv_all(2s, 20)), 200);
  }
  return held;
}

long rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

TEST(ServerHardening, BodyLimitHoldsForEveryTransferEncoding) {
  server::ServerOptions so;
  so.max_body_bytes = 64 * 1024;
  TestServer ts(test::stories_gguf(), so);
  // A huge Content-Length is refused before any body byte is sent.
  {
    RawConn k(ts.port);
    ASSERT_TRUE(k.ok());
    ASSERT_TRUE(
        k.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 100000000000\r\n\r\n"));
    const auto t0 = std::chrono::steady_clock::now();
    const std::string resp = k.recv_all(5s, 4096);
    EXPECT_EQ(status_of(resp), 413) << resp;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  }
  // A chunked body is cut off at the limit: 64 MiB offered, the connection closes early.
  const long rss0 = rss_kb();
  {
    RawConn k(ts.port);
    ASSERT_TRUE(k.ok());
    ASSERT_TRUE(
        k.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n"));
    const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
    size_t sent = 0;
    while (sent < (64u << 20) && k.send(chunk)) sent += 0x10000;
    EXPECT_LT(sent, 16u << 20) << "the server kept reading a chunked body far past its limit";
    k.peer_closed(5s);
  }
  EXPECT_LT(rss_kb() - rss0, 100 * 1024) << "server memory grew by more than 100 MB";
  auto c = ts.client();
  EXPECT_TRUE(healthy(c));
  // A chunked body past the limit that ends gets a 413 in the API's JSON shape.
  {
    RawConn k(ts.port);
    const std::string big(100 * 1024, ' ');
    ASSERT_TRUE(
        k.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n" +
               fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", big.size(), big)));
    const std::string resp = k.recv_all(5s);
    EXPECT_EQ(status_of(resp), 413) << resp;
    const size_t b = resp.find("\r\n\r\n");
    ASSERT_NE(b, std::string::npos) << resp;
    const json j = json::parse(resp.substr(b + 4), nullptr, false);
    EXPECT_NE(j.value("/error/message"_json_pointer, std::string()).find("too large"), std::string::npos)
        << resp;
  }
  // Within the limit, chunked bodies work.
  RawConn k(ts.port);
  const std::string body = R"({"prompt":"Once","max_tokens":2})";
  ASSERT_TRUE(
      k.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
             fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", body.size(), body)));
  EXPECT_EQ(status_of(k.recv_all(10s)), 200);
}

// Oversized headers and URIs get 431 and 414 in the API's JSON shape, not the HTTP library's page.
TEST(ServerHardening, OversizedHeadersAndUrisAnswerJson) {
  TestServer ts(test::stories_gguf());
  auto answer = [&](const std::string& request) {
    RawConn k(ts.port);
    EXPECT_TRUE(k.send(request));
    const std::string resp = k.recv_all(5s);
    const size_t b = resp.find("\r\n\r\n");
    return std::make_pair(status_of(resp),
                          b == std::string::npos ? json() : json::parse(resp.substr(b + 4), nullptr, false));
  };
  auto [st, j] = answer("GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " +
                        std::string(40 << 10, 'a') + "\r\n\r\n");
  EXPECT_EQ(st, 431);
  EXPECT_NE(j.value("/error/message"_json_pointer, std::string()).find("headers too large"),
            std::string::npos)
      << j;
  std::tie(st, j) = answer("GET /v1/models?q=" + std::string(10 << 10, 'a') +
                           " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(st, 414);
  EXPECT_NE(j.value("/error/message"_json_pointer, std::string()).find("URI too long"), std::string::npos)
      << j;
  auto c = ts.client();
  EXPECT_TRUE(healthy(c));
}

TEST(ServerHardening, IdleAndPartialClientsDoNotBlockOthers) {
  server::ServerOptions so;
  so.idle_timeout_s = 2;
  TestServer ts(test::stories_gguf(), so);
  std::vector<std::unique_ptr<RawConn>> idle;
  for (int i = 0; i < 120; ++i) {
    idle.push_back(std::make_unique<RawConn>(ts.port));
    ASSERT_TRUE(idle.back()->ok());
    idle.back()->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-");  // partial headers
  }
  auto c = ts.client();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(healthy(c));
  EXPECT_EQ(post_status(c, "/v1/completions", R"({"prompt":"Once","max_tokens":2})"), 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
  // The silent ones are dropped after the idle timeout.
  int closed = 0;
  for (auto& k : idle) closed += k->peer_closed(4s) ? 1 : 0;
  EXPECT_EQ(closed, 120);
}

TEST(ServerHardening, ConnectionsBeyondTheLimitGetAFast503) {
  server::ServerOptions so;
  so.max_connections = 4;
  TestServer ts(test::stories_gguf(), so);
  auto held = keep_alive_connections(ts.port, 4);
  RawConn extra(ts.port);
  ASSERT_TRUE(extra.ok());
  const auto t0 = std::chrono::steady_clock::now();
  extra.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string resp = extra.recv_all(3s);
  EXPECT_EQ(status_of(resp), 503) << resp;
  EXPECT_NE(resp.find("too many connections"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  held.clear();  // room again
  std::this_thread::sleep_for(300ms);
  auto c = ts.client();
  EXPECT_TRUE(healthy(c));
}

TEST(ServerHardening, PerAddressConnectionLimit) {
  server::ServerOptions so;
  so.max_connections_per_ip = 3;
  TestServer ts(test::stories_gguf(), so);
  auto held = keep_alive_connections(ts.port, 3);
  RawConn extra(ts.port);
  extra.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(status_of(extra.recv_all(2s)), 0);  // closed without an answer
  EXPECT_TRUE(extra.peer_closed(1s));
  held.clear();
  std::this_thread::sleep_for(300ms);
  auto c = ts.client();
  EXPECT_TRUE(healthy(c));
}

TEST(ServerHardening, BurstOfConnectsIsAccepted) {
  TestServer ts(test::stories_gguf());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<RawConn>> burst;
  for (int i = 0; i < 200; ++i) burst.push_back(std::make_unique<RawConn>(ts.port));
  for (auto& k : burst) {
    ASSERT_TRUE(k->ok());
    k->send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  }
  int ok = 0;
  for (auto& k : burst) ok += status_of(k->recv_all(5s)) == 200 ? 1 : 0;
  EXPECT_EQ(ok, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(ServerHardening, NonStreamingClientThatHangsUpIsCancelled) {
  TestServer ts(test::stories_gguf(), {}, {}, /*kv_capacity=*/512);  // stories260K's whole context
  const int port = ts.port;
  {
    RawConn k(port);
    const std::string body = R"({"prompt":"Once upon a time","max_tokens":500,"ignore_eos":true})";
    ASSERT_TRUE(
        k.send(fmt::format("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                           "application/json\r\nContent-Length: {}\r\n\r\n{}",
                           body.size(), body)));
  }  // hang up at once
  bool cancelled = false;
  for (int i = 0; i < 100 && !cancelled; ++i) {
    std::this_thread::sleep_for(20ms);
    cancelled = ts.engine->stats().requests_cancelled == 1;
  }
  EXPECT_TRUE(cancelled);
  EXPECT_LT(ts.engine->stats().generation_tokens, 500u);
}

TEST(ServerHardening, RequestsOutsideTheContractGet400) {
  TestServer ts(test::stories_gguf());
  auto c = ts.client();
  const std::string m = R"("messages":[{"role":"user","content":"hi"}])";
  struct Case {
    std::string path, body, param;
  };
  const std::vector<Case> cases = {
      {"/v1/chat/completions", "{" + m + R"(,"max_tokens":0})", "max_tokens"},
      {"/v1/completions", R"({"prompt":"a","max_completion_tokens":0})", "max_completion_tokens"},
      {"/v1/chat/completions", "{" + m + R"(,"max_tokens":100000})", "messages"},  // above the context
      {"/v1/chat/completions", "{" + m + R"(,"stop":["a","b","c","d","e"]})", "stop"},
      {"/v1/chat/completions", "{" + m + R"(,"stop":""})", "stop"},
      {"/v1/completions", R"({"prompt":"a","stop":["x",""]})", "stop"},
      {"/v1/chat/completions", R"({"messages":[{"role":"wizard","content":"hi"}]})", "messages[0].role"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user"}]})", "messages[0].content"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":null}]})", "messages[0].content"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":[{"type":7}]}]})",
       "messages[0].content[0]"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
       "messages[0].content[0]"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":[7]}]})", "messages[0].content[0]"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":{"a":1}}]})", "messages[0].content"},
  };
  for (const auto& k : cases) {
    json r;
    EXPECT_EQ(post_status(c, k.path, k.body, &r), 400) << k.body << " -> " << r.dump();
    EXPECT_EQ(r["error"]["param"], k.param) << k.body << " -> " << r.dump();
  }
  json r;
  EXPECT_EQ(post_status(c, "/v1/chat/completions", "{" + m + R"(,"max_tokens":100000})", &r), 400);
  EXPECT_EQ(r["error"]["code"], "context_length_exceeded") << r.dump();
  // Four stop strings and an assistant turn with tool calls but no content are fine.
  EXPECT_EQ(post_status(c, "/v1/chat/completions", "{" + m + R"(,"max_tokens":2,"stop":["a","b","c","d"]})"),
            200);
  // GET /v1/models/{id}.
  auto g = c.Get("/v1/models/test-model");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  EXPECT_EQ(json::parse(g->body)["id"], "test-model");
  g = c.Get("/v1/models/other");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 404);
  EXPECT_EQ(json::parse(g->body)["error"]["code"], "model_not_found");
  g = c.Get("/v1/chat/completions");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 405);
}

TEST(ServerHardening, PromptLargerThanTheKvPoolIsA400) {
  TestServer ts(test::stories_gguf(), {}, {}, /*kv_capacity=*/256, /*kv_pool=*/64);  // pool < one sequence
  auto c = ts.client();
  std::string words;
  for (int i = 0; i < 100; ++i) words += " cat";
  json r;
  EXPECT_EQ(post_status(c, "/v1/completions", json{{"prompt", words}, {"max_tokens", 4}}.dump(), &r), 400);
  EXPECT_EQ(r["error"]["code"], "context_length_exceeded") << r.dump();
  EXPECT_EQ(post_status(c, "/v1/completions", R"({"prompt":"Once","max_tokens":4})"), 200);
}

}  // namespace
}  // namespace ferrum
