// LoRA adapters behind `ferrum serve`: adapters offered as models (`--lora name=PATH`), picked per
// request with "model", listed in /v1/models with the base as parent; two adapters driven at once
// give what each gives alone; runtime load/unload only when allowed; per-adapter metrics.
#include <gtest/gtest.h>

#include <thread>

#include "raw_http.h"
#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::test::lora_server_test {
namespace {

using json = nlohmann::json;

std::string adapter(const std::string& rel) {
  return data_path("lora/" + rel);
}

server::ServerOptions lora_options(bool allow_runtime = false) {
  server::ServerOptions so;
  so.lora_modules = {"a=" + adapter("llama-a"), "b=" + adapter("llama-b") + ":2"};
  so.allow_runtime_lora = allow_runtime;
  return so;
}

httplib::Result post(httplib::Client& c, const std::string& path, const json& body) {
  return c.Post(path, httplib::Headers{}, body.dump(), "application/json");
}

// Greedy completion text of `prompt` with model `model`.
std::string complete(const TestServer& ts, const std::string& model) {
  auto c = ts.client();
  auto r = post(c, "/v1/completions",
                {{"model", model}, {"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}});
  EXPECT_TRUE(r) << "no response";
  if (!r) return "";
  EXPECT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["model"], model);
  return j["choices"][0]["text"].get<std::string>();
}

TEST(LoraServer, AdaptersAreModelsAndRunConcurrently) {
  TestServer ts(data_path("models/llama/gguf/llama-Q8_0.gguf"), lora_options());
  auto c = ts.client();
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  const json list = json::parse(models->body)["data"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["id"], "test-model");
  EXPECT_TRUE(list[0]["parent"].is_null());
  EXPECT_EQ(list[1]["id"], "a");
  EXPECT_EQ(list[1]["parent"], "test-model");
  EXPECT_EQ(list[2]["id"], "b");
  EXPECT_GT(list[2]["meta"]["lora_bytes"].get<int64_t>(), 0);
  auto one = c.Get("/v1/models/b");
  ASSERT_TRUE(one);
  EXPECT_EQ(json::parse(one->body)["parent"], "test-model");

  const std::string base = complete(ts, "test-model"), a = complete(ts, "a"), b = complete(ts, "b");
  EXPECT_NE(a, base);
  EXPECT_NE(b, base);
  EXPECT_NE(a, b);
  // Both adapters (and the base) at once, several times over: each answer as it was alone.
  std::vector<std::string> got(6);
  std::vector<std::thread> th;
  const std::vector<std::string> names = {"a", "b", "test-model", "b", "a", "test-model"};
  for (size_t i = 0; i < names.size(); ++i)
    th.emplace_back([&, i] {  // raw sockets: see post_json_raw
      const json j = test::post_json_raw(
          ts.port, "/v1/completions",
          json{{"model", names[i]}, {"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}}
              .dump());
      if (j.is_object() && j.contains("choices")) got[i] = j["choices"][0]["text"];
    });
  for (auto& t : th) t.join();
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(got[i], names[i] == "a" ? a : names[i] == "b" ? b : base) << names[i];

  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("ferrum_lora_requests_total{adapter=\"a\"} 3"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("ferrum_lora_requests_total{adapter=\"b\"} 3"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("ferrum_lora_generation_tokens_total{adapter=\"b\"} "), std::string::npos);
  EXPECT_EQ(m->body.find("ferrum_lora_generation_tokens_total{adapter=\"b\"} 0\n"), std::string::npos);
  EXPECT_NE(m->body.find("ferrum_lora_adapter_bytes{adapter=\"a\"}"), std::string::npos);

  // Per-request scale: 0 is the base model's text, 1 the adapter's as loaded.
  auto scaled = [&](double f) {
    auto r = post(c, "/v1/completions",
                  {{"model", "a"},
                   {"prompt", "Once upon a time"},
                   {"max_tokens", 12},
                   {"temperature", 0},
                   {"lora_scale", f}});
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    return r ? json::parse(r->body)["choices"][0]["text"].get<std::string>() : "";
  };
  EXPECT_EQ(scaled(0.0), base);
  EXPECT_EQ(scaled(1.0), a);
  EXPECT_NE(scaled(0.5), a);
  for (const json& bad : {json{{"model", "a"}, {"prompt", "x"}, {"lora_scale", "big"}},
                          json{{"model", "test-model"}, {"prompt", "x"}, {"lora_scale", 0.5}}}) {
    auto r = post(c, "/v1/completions", bad);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
  }

  auto unknown = post(c, "/v1/completions", {{"model", "c"}, {"prompt", "x"}, {"max_tokens", 1}});
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

TEST(LoraServer, RuntimeLoadAndUnloadOnlyWhenAllowed) {
  {
    TestServer ts(data_path("models/llama/gguf/llama-Q8_0.gguf"), lora_options(false));
    auto c = ts.client();
    auto r = post(c, "/v1/load_lora_adapter", {{"lora_name", "c"}, {"lora_path", adapter("llama-c")}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 403);
    auto u = post(c, "/v1/unload_lora_adapter", {{"lora_name", "a"}});
    ASSERT_TRUE(u);
    EXPECT_EQ(u->status, 403);
  }
  TestServer ts(data_path("models/llama/gguf/llama-Q8_0.gguf"), lora_options(true));
  auto c = ts.client();
  auto r = post(c, "/v1/load_lora_adapter", {{"lora_name", "c"}, {"lora_path", adapter("llama-c")}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  const std::string with_c = complete(ts, "c");
  EXPECT_NE(with_c, complete(ts, "test-model"));
  // A name in use, the base's name, or an adapter for another architecture: 400, nothing loaded.
  for (const json& bad :
       {json{{"lora_name", "c"}, {"lora_path", adapter("llama-c")}},
        json{{"lora_name", "test-model"}, {"lora_path", adapter("llama-c")}},
        json{{"lora_name", "q"}, {"lora_path", adapter("qwen2-a.gguf")}}, json{{"lora_name", "q"}}}) {
    auto e = post(c, "/v1/load_lora_adapter", bad);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->status, 400) << bad.dump() << " " << e->body;
  }
  EXPECT_EQ(json::parse(c.Get("/v1/models")->body)["data"].size(), 4u);
  auto u = post(c, "/v1/unload_lora_adapter", {{"lora_name", "c"}});
  ASSERT_TRUE(u);
  EXPECT_EQ(u->status, 200);
  auto gone = post(c, "/v1/completions", {{"model", "c"}, {"prompt", "x"}, {"max_tokens", 1}});
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  auto again = post(c, "/v1/unload_lora_adapter", {{"lora_name", "c"}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 404);
}

TEST(LoraServer, ABadAdapterAtStartIsAnError) {
  server::ServerOptions so;
  so.lora_modules = {"x=" + adapter("qwen2-a.gguf")};
  EXPECT_NE(error_of([&] {
              TestServer ts(data_path("models/llama/gguf/llama-Q8_0.gguf"), so);
            }).find("qwen2-a.gguf"),
            std::string::npos);
  so.lora_modules = {"no-equals-sign"};
  EXPECT_NE(
      error_of([&] { TestServer ts(data_path("models/llama/gguf/llama-Q8_0.gguf"), so); }).find("name=PATH"),
      std::string::npos);
}

}  // namespace
}  // namespace ferrum::test::lora_server_test
