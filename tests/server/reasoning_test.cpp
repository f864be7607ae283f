// Reasoning over HTTP: a thinking template's <think> block comes back as reasoning_content (and
// delta.reasoning_content when streamed), apart from content; response_format and forced tool
// calls constrain the answer after the reasoning; the reasoning budget ends it; reasoning_format
// "none" (per request or --reasoning-format) leaves it in the content. stories260K serves the
// Qwen3 template (which leaves the choice to think to the model) and a DeepSeek-R1-style one (whose
// prompt opens the reasoning).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

using json = nlohmann::json;

const json kMessages = json::array({{{"role", "user"}, {"content", "Tell me about a cat."}}});
// The output forced whole by a raw GBNF grammar (it applies to the reasoning too).
const std::string kThinkGrammar = R"(root ::= "<think>\nOnce the cat\n</think>\n\n" "Lily was happy.")";
const char* kOpenTemplate =
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|><think>\n{% endif %}";

std::string qwen3_template() {
  std::ifstream f(data_path("chat/templates/Qwen-Qwen3-0.6B.jinja"), std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

server::ServerOptions with_template(const std::string& tpl, bool reasoning = true) {
  server::ServerOptions so;
  so.chat_template = tpl;
  so.reasoning = reasoning;
  return so;
}

json chat(httplib::Client& c, json body, int expect = 200) {
  body["messages"] = kMessages;
  int status = 0;
  json r = post_json(c, "/v1/chat/completions", body, &status);
  EXPECT_EQ(status, expect) << r.dump();
  return r;
}

// A streamed answer's reasoning and content deltas, concatenated; every chunk checked to carry
// at most one of them.
std::pair<std::string, std::string> stream_parts(httplib::Client& c, json body) {
  body["messages"] = kMessages;
  body["stream"] = true;
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200);
  if (!r) return {};
  std::string reasoning, content;
  size_t pos = 0;
  while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    const std::string data = r->body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") break;
    const json j = json::parse(data);
    if (j["choices"].empty()) continue;
    const json& d = j["choices"][0]["delta"];
    EXPECT_FALSE(d.contains("reasoning_content") && d.contains("content") && d["content"] != "") << data;
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
  }
  return {reasoning, content};
}

TEST(Reasoning, ThinkBlockComesBackApartStreamedAndNot) {
  TestServer ts(stories_gguf(), with_template(qwen3_template()));
  auto c = ts.client();
  const json body = {{"max_tokens", 80}, {"grammar", kThinkGrammar}};
  json r = chat(c, body);
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "Once the cat") << r.dump();
  EXPECT_EQ(m["content"], "Lily was happy.") << r.dump();
  const auto [reasoning, content] = stream_parts(c, body);
  EXPECT_EQ(reasoning, "Once the cat");
  EXPECT_EQ(content, "Lily was happy.");

  json raw = body;
  raw["reasoning_format"] = "none";  // per request: left in the content
  r = chat(c, raw);
  EXPECT_FALSE(r["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_EQ(r["choices"][0]["message"]["content"], "<think>\nOnce the cat\n</think>\n\nLily was happy.");
  EXPECT_EQ(stream_parts(c, raw).second, "<think>\nOnce the cat\n</think>\n\nLily was happy.");

  raw["reasoning_format"] = "sometimes";
  r = chat(c, raw, 400);
  EXPECT_EQ(r["error"]["param"], "reasoning_format") << r.dump();
}

TEST(Reasoning, ServerWideNoneLeavesItInTheContent) {
  TestServer ts(stories_gguf(), with_template(qwen3_template(), /*reasoning=*/false));
  auto c = ts.client();
  json r = chat(c, {{"max_tokens", 80}, {"grammar", kThinkGrammar}});
  EXPECT_EQ(r["choices"][0]["message"]["content"], "<think>\nOnce the cat\n</think>\n\nLily was happy.");
  r = chat(c, {{"max_tokens", 80}, {"grammar", kThinkGrammar}, {"reasoning_format", "auto"}});
  EXPECT_EQ(r["choices"][0]["message"]["reasoning_content"], "Once the cat");
}

// The schema constrains the answer after the reasoning: the budget's forced end lets stories260K
// (which never writes </think> itself) reach it.
TEST(Reasoning, SchemaAppliesAfterTheReasoningWhichTheBudgetEnds) {
  TestServer ts(stories_gguf(), with_template(qwen3_template()), {}, 512);
  auto c = ts.client();
  const json schema = {{"type", "object"},
                       {"properties", {{"n", {{"type", "integer"}, {"minimum", 1}, {"maximum", 9}}}}},
                       {"required", {"n"}}};
  const json format = {{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", schema}}}};
  const json plain = chat(c, {{"max_tokens", 1}});
  for (int budget : {0, 6}) {
    const json body = {
        {"max_tokens", 120}, {"seed", 3}, {"response_format", format}, {"reasoning_budget", budget}};
    json r = chat(c, body);
    const json& m = r["choices"][0]["message"];
    ASSERT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
    const json out = json::parse(m["content"].get<std::string>());
    EXPECT_TRUE(out["n"].is_number_integer()) << r.dump();
    EXPECT_EQ(m.contains("reasoning_content"), budget > 0) << r.dump();
    if (budget > 0) EXPECT_FALSE(m["reasoning_content"].get<std::string>().empty());
    // The prompt was opened with "<think>\n" for the model.
    EXPECT_GT(r["usage"]["prompt_tokens"], plain["usage"]["prompt_tokens"]);
    const auto [reasoning, content] = stream_parts(c, body);
    EXPECT_EQ(content, m["content"].get<std::string>());
    EXPECT_EQ(reasoning, m.value("reasoning_content", std::string()));
  }
  // enable_thinking false: the template closes the block, so the schema applies from the start.
  json r = chat(c, {{"max_tokens", 120},
                    {"seed", 3},
                    {"response_format", format},
                    {"reasoning_budget", 6},
                    {"chat_template_kwargs", {{"enable_thinking", false}}}});
  EXPECT_FALSE(r["choices"][0]["message"].contains("reasoning_content")) << r.dump();
  EXPECT_TRUE(json::parse(r["choices"][0]["message"]["content"].get<std::string>())["n"].is_number_integer());
}

TEST(Reasoning, ForcedToolCallAfterTheReasoning) {
  TestServer ts(stories_gguf(), with_template(qwen3_template()), {}, 2048);
  auto c = ts.client();
  const json tools = json::array({{{"type", "function"},
                                   {"function",
                                    {{"name", "get_weather"},
                                     {"parameters",
                                      {{"type", "object"},
                                       {"properties", {{"city", {{"type", "string"}, {"maxLength", 8}}}}},
                                       {"required", {"city"}}}}}}}});
  json r = chat(c, {{"max_tokens", 400},
                    {"seed", 3},
                    {"tools", tools},
                    {"tool_choice", "required"},
                    {"parallel_tool_calls", false},
                    {"reasoning_budget", 4}});
  const json& m = r["choices"][0]["message"];
  EXPECT_FALSE(m["reasoning_content"].get<std::string>().empty()) << r.dump();
  ASSERT_EQ(m["tool_calls"].size(), 1u) << r.dump();
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
}

// A template that opens the reasoning in the prompt: everything up to </think> is reasoning.
TEST(Reasoning, PromptOpenedReasoningIsAllReasoningUntilItsEnd) {
  TestServer ts(stories_gguf(), with_template(kOpenTemplate));
  auto c = ts.client();
  json r = chat(c, {{"max_tokens", 12}, {"seed", 5}});
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(m["content"], "") << r.dump();
  EXPECT_FALSE(m["reasoning_content"].get<std::string>().empty()) << r.dump();
  r = chat(c, {{"max_tokens", 40}, {"seed", 5}, {"reasoning_budget", 3}});
  EXPECT_FALSE(r["choices"][0]["message"]["content"].get<std::string>().empty()) << r.dump();
  EXPECT_EQ(r["choices"][0]["message"]["content"].get<std::string>().find("</think>"), std::string::npos);
}

// Ollama's `think` and `thinking`, streamed (NDJSON) and not.
TEST(Reasoning, OllamaThinkingField) {
  TestServer ts(stories_gguf(), with_template(kOpenTemplate));
  auto c = ts.client();
  const json body = {{"model", "test-model"},
                     {"messages", kMessages},
                     {"think", true},
                     {"stream", false},
                     {"options", {{"num_predict", 10}, {"temperature", 0}}}};
  int status = 0;
  const json r = post_json(c, "/api/chat", body, &status);
  ASSERT_EQ(status, 200) << r.dump();
  const std::string thinking = r["message"].value("thinking", "");
  EXPECT_FALSE(thinking.empty()) << r.dump();
  EXPECT_EQ(r["message"]["content"], "");
  json streamed = body;
  streamed["stream"] = true;
  auto s = c.Post("/api/chat", streamed.dump(), "application/json");
  ASSERT_TRUE(s && s->status == 200);
  std::string st, sc;
  std::istringstream in(s->body);
  for (std::string l; std::getline(in, l);) {
    const json j = json::parse(l);
    st += j["message"].value("thinking", "");
    sc += j["message"].value("content", "");
  }
  EXPECT_EQ(st, thinking);
  EXPECT_EQ(sc, "");
  json bad = body;
  bad["think"] = "maybe";
  post_json(c, "/api/chat", bad, &status);
  EXPECT_EQ(status, 400);
}

// Anthropic's `thinking` (its budget ends the reasoning) answered with a thinking block first.
TEST(Reasoning, AnthropicThinkingBlocks) {
  TestServer ts(stories_gguf(), with_template(qwen3_template()), {}, 512);
  auto c = ts.client();
  const json body = {{"max_tokens", 60},
                     {"messages", kMessages},
                     {"temperature", 0},
                     {"thinking", {{"type", "enabled"}, {"budget_tokens", 6}}}};
  int status = 0;
  const json r = post_json(c, "/v1/messages", body, &status);
  ASSERT_EQ(status, 200) << r.dump();
  ASSERT_GE(r["content"].size(), 1u) << r.dump();
  ASSERT_EQ(r["content"][0]["type"], "thinking") << r.dump();  // greedy: the same every run
  json streamed = body;
  streamed["stream"] = true;
  auto s = c.Post("/v1/messages", streamed.dump(), "application/json");
  ASSERT_TRUE(s && s->status == 200);
  std::string thinking, text;
  size_t pos = 0;
  while ((pos = s->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = s->body.find("\n\n", pos);
    const json j = json::parse(s->body.substr(pos + 6, end - pos - 6));
    pos = end;
    if (j["type"] == "content_block_delta" && j["delta"]["type"] == "thinking_delta")
      thinking += j["delta"]["thinking"];
    if (j["type"] == "content_block_delta" && j["delta"]["type"] == "text_delta") text += j["delta"]["text"];
  }
  EXPECT_FALSE(thinking.empty());
  EXPECT_EQ(thinking, r["content"][0]["thinking"].get<std::string>());
  EXPECT_EQ(text, r["content"].back()["text"].get<std::string>());
  EXPECT_EQ(text.find("think>"), std::string::npos) << text;
  json bad = body;
  bad["thinking"] = {{"type", "sometimes"}};
  post_json(c, "/v1/messages", bad, &status);
  EXPECT_EQ(status, 400);
}

}  // namespace
}  // namespace ferrum::test
