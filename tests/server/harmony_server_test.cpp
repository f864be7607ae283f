// gpt-oss's harmony format over HTTP (chat/harmony.h): the analysis channel comes back as
// reasoning_content, the final channel as content, a commentary message to functions.NAME as an
// OpenAI tool call, streamed and not; reasoning_effort reaches the template; an earlier turn's
// reasoning_content is rendered where the template keeps it. stories260K serves gpt-oss's own
// template; its answers are forced whole by a raw GBNF grammar (the markers are text in its
// vocabulary, as they are special tokens in gpt-oss's, which the request decodes).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "chat/chat_prompt.h"
#include "server/openai_request.h"
#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::test::harmony_server_test {
namespace {

using json = nlohmann::json;

std::string harmony_template() {
  std::ifstream f(data_path("chat/templates/openai-gpt-oss-120b.jinja"), std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

server::ServerOptions with_harmony() {
  server::ServerOptions so;
  so.chat_template = harmony_template();
  return so;
}

const json kMessages = json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});
const json kTools =
    json::array({{{"type", "function"},
                  {"function",
                   {{"name", "w"},
                    {"description", "Weather"},
                    {"parameters", {{"type", "object"}, {"properties", {{"c", {{"type", "string"}}}}}}}}}}});
const std::string kAnswerGrammar =
    R"(root ::= "<|channel|>analysis<|message|>Once the cat<|end|><|start|>assistant<|channel|>final<|message|>Lily was happy.")";
const std::string kCallGrammar =
    R"(root ::= "<|channel|>analysis<|message|>Hm<|end|><|start|>assistant<|channel|>commentary to=functions.w <|constrain|>json<|message|>{\"c\": \"P\"}")";

// (stories260K's context is 512 tokens; the template's system message takes 240 of them, the tools
// 160 more: the call's answer has no max_tokens, and the system message a short model identity.)
json request(const std::string& grammar, bool tools) {
  json b = {{"messages", kMessages}, {"grammar", grammar}};  // until the grammar ends, or the context
  if (!tools) b["max_tokens"] = 200;
  if (tools) b["tools"] = kTools, b["chat_template_kwargs"] = {{"model_identity", "M"}};  // a shorter prompt
  return b;
}

struct Streamed {
  std::string reasoning, content, finish_reason;
  json calls = json::array();
};

Streamed stream(httplib::Client& c, json body) {
  body["stream"] = true;
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  Streamed s;
  EXPECT_TRUE(r && r->status == 200);
  if (!r) return s;
  size_t pos = 0;
  while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    const std::string data = r->body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") break;
    EXPECT_EQ(data.find("<|"), std::string::npos) << data;  // no marker reaches the client
    const json j = json::parse(data);
    if (j["choices"].empty()) continue;
    const json& ch = j["choices"][0];
    const json& d = ch["delta"];
    if (d.contains("reasoning_content")) s.reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content") && d["content"].is_string()) s.content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      for (const json& call : d["tool_calls"]) s.calls.push_back(call);
    if (ch["finish_reason"].is_string()) s.finish_reason = ch["finish_reason"];
  }
  return s;
}

TEST(HarmonyServer, AnalysisIsReasoningFinalIsContent) {
  TestServer ts(stories_gguf(), with_harmony(), {}, 512);
  auto c = ts.client();
  int status = 0;
  const json r = post_json(c, "/v1/chat/completions", request(kAnswerGrammar, false), &status);
  ASSERT_EQ(status, 200) << r.dump();
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "Once the cat") << r.dump();
  EXPECT_EQ(m["content"], "Lily was happy.") << r.dump();
  const Streamed s = stream(c, request(kAnswerGrammar, false));
  EXPECT_EQ(s.reasoning, "Once the cat");
  EXPECT_EQ(s.content, "Lily was happy.");
  EXPECT_EQ(s.finish_reason, "stop");
}

// The other APIs read the same rewritten answer: the Responses API's reasoning and message items.
TEST(HarmonyServer, ResponsesApiItems) {
  TestServer ts(stories_gguf(), with_harmony(), {}, 512);
  auto c = ts.client();
  int status = 0;
  const json r = post_json(
      c, "/v1/responses",
      {{"input", "Weather in Paris?"}, {"max_output_tokens", 200}, {"grammar", kAnswerGrammar}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  ASSERT_EQ(r["output"].size(), 2u) << r.dump();
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Once the cat");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "Lily was happy.");
}

TEST(HarmonyServer, CommentaryToAFunctionIsAToolCall) {
  TestServer ts(stories_gguf(), with_harmony(), {}, 512);
  auto c = ts.client();
  int status = 0;
  const json r = post_json(c, "/v1/chat/completions", request(kCallGrammar, true), &status);
  ASSERT_EQ(status, 200) << r.dump();
  const json& ch = r["choices"][0];
  EXPECT_EQ(ch["finish_reason"], "tool_calls") << r.dump();
  EXPECT_EQ(ch["message"]["reasoning_content"], "Hm");
  ASSERT_EQ(ch["message"]["tool_calls"].size(), 1u) << r.dump();
  EXPECT_EQ(ch["message"]["tool_calls"][0]["function"]["name"], "w");
  EXPECT_EQ(json::parse(ch["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"c", "P"}}));
  const Streamed s = stream(c, request(kCallGrammar, true));
  EXPECT_EQ(s.reasoning, "Hm");
  EXPECT_EQ(s.content, "");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0]["function"]["name"], "w");
  EXPECT_EQ(s.finish_reason, "tool_calls");
}

TEST(HarmonyServer, BadEffortIsRefusedByName) {
  TestServer ts(stories_gguf(), with_harmony(), {}, 512);
  auto c = ts.client();
  int status = 0;
  json b = request(kAnswerGrammar, false);
  b["reasoning_effort"] = "extreme";
  json r = post_json(c, "/v1/chat/completions", b, &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["error"]["param"], "reasoning_effort") << r.dump();
}

// tool_choice "required" or a named function: the prompt ends in the commentary header to
// functions. (with the name when there is one to choose), the grammar writes the rest, and the
// answer is that call, its arguments valid for the function's schema, whatever the model wanted.
json forced_tools() {
  auto tool = [](const char* name, json values) {
    return json{{"type", "function"},
                {"function",
                 {{"name", name},
                  {"description", "D"},  // the template writes it (a tool without one is an error there)
                  {"parameters",
                   {{"type", "object"},
                    {"properties", {{"c", {{"enum", values}}}}},
                    {"required", {"c"}},
                    {"additionalProperties", false}}}}}};
  };
  return json::array({tool("w", {"P", "Q"}), tool("t", {1, 2})});
}

void expect_forced_call(httplib::Client& c, json tools, json choice, const std::set<std::string>& names) {
  json b = {{"messages", kMessages},
            {"tools", tools},
            {"tool_choice", choice},
            {"chat_template_kwargs", {{"model_identity", "M"}}},
            {"max_tokens", 64},
            {"temperature", 1.0},
            {"seed", 5}};
  for (bool streamed : {false, true}) {
    std::string name, args, finish;
    if (streamed) {
      const Streamed s = stream(c, b);
      ASSERT_EQ(s.calls.size(), 1u) << choice.dump();
      name = s.calls[0]["function"]["name"];
      args = s.calls[0]["function"]["arguments"];
      finish = s.finish_reason;
      EXPECT_EQ(s.reasoning, "");
      EXPECT_EQ(s.content, "");
    } else {
      int status = 0;
      const json r = post_json(c, "/v1/chat/completions", b, &status);
      ASSERT_EQ(status, 200) << r.dump();
      const json& m = r["choices"][0]["message"];
      ASSERT_EQ(m["tool_calls"].size(), 1u) << r.dump();
      name = m["tool_calls"][0]["function"]["name"];
      args = m["tool_calls"][0]["function"]["arguments"];
      finish = r["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(finish, "tool_calls") << choice.dump();
    EXPECT_TRUE(names.count(name)) << name;
    const json a = json::parse(args);
    ASSERT_TRUE(a.contains("c")) << args;
    if (name == "w")
      EXPECT_TRUE(a["c"] == "P" || a["c"] == "Q") << args;
    else
      EXPECT_TRUE(a["c"] == 1 || a["c"] == 2) << args;
  }
}

TEST(HarmonyServer, ForcedCallsFollowTheSchema) {
  TestServer ts(stories_gguf(), with_harmony(), {}, 512);
  auto c = ts.client();
  const json tools = forced_tools();
  expect_forced_call(c, tools, {{"type", "function"}, {"function", {{"name", "t"}}}}, {"t"});
  expect_forced_call(c, tools, "required", {"w", "t"});              // the grammar picks the name
  expect_forced_call(c, json::array({tools[0]}), "required", {"w"});  // one tool: named in the prompt
}

// What the template gets: the effort in its system message; an earlier turn's reasoning_content
// as the analysis of the turn that called a tool (the template keeps it until a final answer).
TEST(HarmonyServer, EffortAndEarlierReasoningReachThePrompt) {
  LoadedModel lm = load_model(stories_gguf());
  const chat::ChatPrompt prompt(*lm.tokenizer, harmony_template());
  json b = {{"messages", kMessages}, {"reasoning_effort", "high"}};
  auto text = [&](const json& body) {
    const server::ParsedRequest pr = server::parse_chat_request(body, *lm.tokenizer, prompt, {});
    return lm.tokenizer->decode(pr.params.prompt);
  };
  EXPECT_NE(text(b).find("Reasoning: high"), std::string::npos) << text(b);
  b.erase("reasoning_effort");
  EXPECT_NE(text(b).find("Reasoning: medium"), std::string::npos);  // the template's default
  b["messages"] = json::array(
      {kMessages[0],
       {{"role", "assistant"},
        {"reasoning_content", "Need weather"},
        {"tool_calls", json::array({{{"id", "c1"},
                                     {"type", "function"},
                                     {"function", {{"name", "w"}, {"arguments", "{\"c\": \"P\"}"}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "sunny"}}});
  b["tools"] = kTools;
  const std::string t = text(b);
  EXPECT_NE(t.find("<|channel|>analysis<|message|>Need weather<|end|>"), std::string::npos) << t;
  EXPECT_NE(t.find("to=functions.w<|channel|>commentary json<|message|>{\"c\": \"P\"}<|call|>"),
            std::string::npos)
      << t;
}

}  // namespace
}  // namespace ferrum::test::harmony_server_test
