// Ollama's API over loopback: /api/chat and /api/generate answer what /v1/chat/completions and
// /v1/completions answer for the same input (greedy), streamed as NDJSON (Ollama's default) with the
// same text and a last line done: true with the counts; options.* and format map onto the OpenAI
// fields; a tool-call history in Ollama's shape (arguments as objects) is accepted; tags / ps /
// version / show / embed; bodies without a JSON Content-Type (as curl -d sends); errors as
// {"error": message}.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "server_fixture.h"

namespace ferrum::test {
namespace {

using json = nlohmann::json;

const json kOptions = {{"temperature", 0}, {"num_predict", 20}};

json post_any(httplib::Client& c, const std::string& path, const json& body, int* status,
              const std::string& type = "text/plain") {
  auto r = c.Post(path, body.dump(), type);
  if (!r) {
    ADD_FAILURE() << "no response for " << path;
    return {};
  }
  *status = r->status;
  return json::parse(r->body, nullptr, false);
}

TEST(OllamaApi, ChatAndGenerateAnswerAsTheOpenAiRoutes) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  int status = 0;
  const json messages = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
  const json openai = post_json(c, "/v1/chat/completions",
                                {{"max_tokens", 20}, {"temperature", 0}, {"messages", messages}}, &status);
  ASSERT_EQ(status, 200);
  const std::string want = openai["choices"][0]["message"]["content"];
  // "model" with Ollama's default tag; no JSON Content-Type (curl -d sends form-urlencoded).
  const json chat = post_any(
      c, "/api/chat",
      {{"model", "test-model:latest"}, {"messages", messages}, {"stream", false}, {"options", kOptions}},
      &status, "application/x-www-form-urlencoded");
  ASSERT_EQ(status, 200) << chat.dump();
  EXPECT_EQ(chat["model"], "test-model");
  EXPECT_EQ(chat["message"]["role"], "assistant");
  EXPECT_EQ(chat["message"]["content"], want);
  EXPECT_EQ(chat["done"], true);
  EXPECT_EQ(chat["done_reason"], "length");
  EXPECT_EQ(chat["eval_count"], 20);
  EXPECT_EQ(chat["prompt_eval_count"], openai["usage"]["prompt_tokens"]);
  EXPECT_GT(chat["total_duration"].get<int64_t>(), 0);
  EXPECT_TRUE(chat["created_at"].get<std::string>().ends_with("Z"));
  // generate: the prompt as one user message (templated), or raw as a completion.
  const json gen =
      post_any(c, "/api/generate", {{"prompt", "Once upon a time"}, {"stream", false}, {"options", kOptions}},
               &status);
  ASSERT_EQ(status, 200) << gen.dump();
  EXPECT_EQ(gen["response"], want);
  const json comp =
      post_json(c, "/v1/completions",
                {{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 0}}, &status);
  const json raw = post_any(
      c, "/api/generate",
      {{"prompt", "Once upon a time"}, {"raw", true}, {"stream", false}, {"options", kOptions}}, &status);
  ASSERT_EQ(status, 200) << raw.dump();
  EXPECT_EQ(raw["response"], comp["choices"][0]["text"]);
  // options.stop ends the answer before the stop string.
  const std::string stop = want.substr(want.size() / 2, 3);
  json stopped_opts = kOptions;
  stopped_opts["stop"] = {stop};
  const json stopped = post_any(
      c, "/api/chat", {{"messages", messages}, {"stream", false}, {"options", stopped_opts}}, &status);
  EXPECT_EQ(stopped["message"]["content"], want.substr(0, want.find(stop)));
  EXPECT_EQ(stopped["done_reason"], "stop");
}

TEST(OllamaApi, StreamsNdjsonByDefault) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  int status = 0;
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"options", kOptions}};
  json once = body;
  once["stream"] = false;
  const json whole = post_any(c, "/api/chat", once, &status);
  ASSERT_EQ(status, 200);
  auto r = c.Post("/api/chat", body.dump(), "application/json");  // no "stream": Ollama streams
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/x-ndjson");
  std::istringstream lines(r->body);
  std::string line, text;
  json last;
  int n = 0;
  while (std::getline(lines, line)) {
    ASSERT_FALSE(line.empty());
    last = json::parse(line);
    text += last["message"]["content"].get<std::string>();
    EXPECT_EQ(last["done"], n + 1 == static_cast<int>(std::count(r->body.begin(), r->body.end(), '\n')));
    ++n;
  }
  EXPECT_GE(n, 2);
  EXPECT_EQ(text, whole["message"]["content"].get<std::string>());
  EXPECT_EQ(last["done_reason"], "length");
  EXPECT_EQ(last["eval_count"], 20);
}

TEST(OllamaApi, ToolHistoryFormatListingsAndErrors) {
  TestServer ts(stories_gguf(), {}, {}, 1024);
  auto c = ts.client();
  int status = 0;
  // A previous tool call (arguments as an object) and its result.
  const json history = json::array(
      {{{"role", "user"}, {"content", "Weather in Paris?"}},
       {{"role", "assistant"},
        {"content", ""},
        {"tool_calls", {{{"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}}}},
       {{"role", "tool"}, {"content", "sunny"}}});
  json fn = {{"name", "get_weather"},
             {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}};
  const json tools = json::array({{{"type", "function"}, {"function", fn}}});
  const json t =
      post_any(c, "/api/chat",
               {{"messages", history}, {"tools", tools}, {"stream", false}, {"options", kOptions}}, &status);
  EXPECT_EQ(status, 200) << t.dump();
  // format "json": the answer is held to JSON.
  const json f =
      post_any(c, "/api/generate",
               {{"prompt", "x"}, {"format", "json"}, {"stream", false}, {"options", kOptions}}, &status);
  ASSERT_EQ(status, 200) << f.dump();
  EXPECT_TRUE(f["response"].get<std::string>().starts_with("{")) << f.dump();
  // Listings.
  auto tags = c.Get("/api/tags");
  ASSERT_TRUE(tags);
  EXPECT_EQ(json::parse(tags->body)["models"][0]["name"], "test-model:latest");
  auto version = c.Get("/api/version");
  ASSERT_TRUE(version);
  EXPECT_TRUE(json::parse(version->body)["version"].is_string());
  const json show = post_any(c, "/api/show", {{"model", "test-model"}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_GT(show["model_info"]["context_length"].get<int>(), 0);
  // Errors: {"error": message}.
  auto expect_error = [&](const std::string& path, const json& body, int want, const std::string& words) {
    const json e = post_any(c, path, body, &status);
    EXPECT_EQ(status, want) << path << " " << body.dump();
    ASSERT_TRUE(e.contains("error") && e["error"].is_string()) << e.dump();
    EXPECT_NE(e["error"].get<std::string>().find(words), std::string::npos) << e.dump();
  };
  expect_error("/api/chat", {{"model", "llama3.2"}, {"messages", json::array()}}, 404, "llama3.2");
  expect_error("/api/chat", {{"stream", false}, {"messages", "Hi"}}, 400, "messages");
  // No messages at all: Ollama's call that only loads the model.
  const json load = post_any(c, "/api/chat", {{"stream", false}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(load["done_reason"], "load") << load.dump();
  expect_error("/api/generate", {{"prompt", "x"}, {"images", {"aGk="}}}, 400, "images");
  expect_error("/api/generate", {{"prompt", "x"}, {"format", 3}}, 400, "format");
  expect_error("/api/pull", {{"model", "llama3.2"}}, 400, "no model registry");
  expect_error("/api/nothing", json::object(), 404, "no route");
}

}  // namespace
}  // namespace ferrum::test
