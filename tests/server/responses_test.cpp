// The Responses API (POST /v1/responses): the same answer as the chat completion it stands for,
// streamed events that add up to the non-streamed response, previous_response_id over stored
// responses (and store: false, the TTL, GET and DELETE), function calls and their outputs,
// text.format, reasoning items, and 400s naming the field.
#include <gtest/gtest.h>

#include <fstream>

#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::test::responses_test {
namespace {

using json = nlohmann::json;

json post(httplib::Client& c, const std::string& path, const json& body, int expect = 200) {
  int status = 0;
  json r = post_json(c, path, body, &status);
  EXPECT_EQ(status, expect) << body.dump() << "\n" << r.dump();
  return r;
}

// The text of a response's message items.
std::string output_text(const json& r) {
  std::string t;
  for (const json& item : r["output"])
    if (item["type"] == "message")
      for (const json& part : item["content"]) t += part["text"].get<std::string>();
  return t;
}

struct Events {
  std::vector<json> list;
  std::string text, reasoning, arguments;
  const json& last() const { return list.back(); }
};

Events stream(httplib::Client& c, json body) {
  body["stream"] = true;
  auto r = c.Post("/v1/responses", body.dump(), "application/json");
  Events ev;
  EXPECT_TRUE(r && r->status == 200);
  if (!r) return ev;
  size_t pos = 0;
  while ((pos = r->body.find("event: ", pos)) != std::string::npos) {
    const size_t nl = r->body.find('\n', pos);
    const std::string type = r->body.substr(pos + 7, nl - pos - 7);
    const size_t data = r->body.find("data: ", nl);
    const size_t end = r->body.find("\n\n", data);
    json j = json::parse(r->body.substr(data + 6, end - data - 6));
    EXPECT_EQ(j["type"], type);
    EXPECT_EQ(j["sequence_number"], ev.list.size());
    if (type == "response.output_text.delta") ev.text += j["delta"].get<std::string>();
    if (type == "response.reasoning_text.delta") ev.reasoning += j["delta"].get<std::string>();
    if (type == "response.function_call_arguments.delta") ev.arguments += j["delta"].get<std::string>();
    ev.list.push_back(std::move(j));
    pos = end;
  }
  return ev;
}

TEST(Responses, SameAnswerAsTheChatCompletionStreamedAndNot) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  const json chat = post(
      c, "/v1/chat/completions",
      {{"messages",
        {{{"role", "system"}, {"content", "Be kind."}}, {{"role", "user"}, {"content", "Tell me a story."}}}},
       {"max_tokens", 20},
       {"temperature", 0}});
  const json body = {{"input", "Tell me a story."},
                     {"instructions", "Be kind."},
                     {"max_output_tokens", 20},
                     {"temperature", 0}};
  const json r = post(c, "/v1/responses", body);
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(r["model"], "test-model");
  EXPECT_EQ(output_text(r), chat["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(r["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(r["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
  const bool cut = chat["choices"][0]["finish_reason"] == "length";
  EXPECT_EQ(r["status"], cut ? "incomplete" : "completed");
  if (cut) EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(r["instructions"], "Be kind.");
  EXPECT_EQ(r["max_output_tokens"], 20);

  const Events ev = stream(c, body);
  ASSERT_GE(ev.list.size(), 6u);
  EXPECT_EQ(ev.list[0]["type"], "response.created");
  EXPECT_EQ(ev.list[0]["response"]["status"], "in_progress");
  EXPECT_EQ(ev.list[1]["type"], "response.in_progress");
  EXPECT_EQ(ev.last()["type"], cut ? "response.incomplete" : "response.completed");
  EXPECT_EQ(ev.text, output_text(r));
  EXPECT_EQ(output_text(ev.last()["response"]), output_text(r));
  EXPECT_EQ(ev.last()["response"]["usage"], r["usage"]);
}

TEST(Responses, PreviousResponseIdContinuesTheStoredConversation) {
  TestServer ts(stories_gguf(), {}, {}, 512);
  auto c = ts.client();
  const json first =
      post(c, "/v1/responses", {{"input", "Once upon a time"}, {"max_output_tokens", 8}, {"temperature", 0}});
  const json second = post(c, "/v1/responses",
                           {{"input", "What next?"},
                            {"previous_response_id", first["id"]},
                            {"max_output_tokens", 8},
                            {"temperature", 0}});
  EXPECT_EQ(second["previous_response_id"], first["id"]);
  const json chat = post(c, "/v1/chat/completions",
                         {{"messages",
                           {{{"role", "user"}, {"content", "Once upon a time"}},
                            {{"role", "assistant"}, {"content", output_text(first)}},
                            {{"role", "user"}, {"content", "What next?"}}}},
                          {"max_tokens", 8},
                          {"temperature", 0}});
  EXPECT_EQ(output_text(second), chat["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(second["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);

  // Stored: GET answers it, DELETE removes it.
  auto g = c.Get("/v1/responses/" + first["id"].get<std::string>());
  ASSERT_TRUE(g && g->status == 200);
  EXPECT_EQ(json::parse(g->body), first);
  auto d = c.Delete("/v1/responses/" + first["id"].get<std::string>());
  ASSERT_TRUE(d && d->status == 200);
  EXPECT_EQ(c.Get("/v1/responses/" + first["id"].get<std::string>())->status, 404);
  json r = post(c, "/v1/responses", {{"input", "x"}, {"previous_response_id", first["id"]}}, 404);
  EXPECT_EQ(r["error"]["param"], "previous_response_id");

  // store: false is never kept.
  const json unstored =
      post(c, "/v1/responses", {{"input", "Hi"}, {"max_output_tokens", 2}, {"store", false}});
  EXPECT_EQ(unstored["store"], false);
  EXPECT_EQ(c.Get("/v1/responses/" + unstored["id"].get<std::string>())->status, 404);
}

TEST(Responses, NothingKeptWithAZeroTtl) {
  server::ServerOptions so;
  so.responses_ttl_s = 0;
  TestServer ts(stories_gguf(), so);
  auto c = ts.client();
  const json r = post(c, "/v1/responses", {{"input", "Hi"}, {"max_output_tokens", 2}});
  EXPECT_EQ(c.Get("/v1/responses/" + r["id"].get<std::string>())->status, 404);
}

TEST(Responses, FunctionCallsAndTheirOutputs) {
  TestServer ts(stories_gguf(), {}, {}, 2048);
  auto c = ts.client();
  const json tools = json::array({{{"type", "function"},
                                   {"name", "get_weather"},
                                   {"description", "Weather in a city"},
                                   {"parameters",
                                    {{"type", "object"},
                                     {"properties", {{"city", {{"type", "string"}, {"maxLength", 10}}}}},
                                     {"required", {"city"}}}}}});
  const json body = {{"input", "Weather in Paris?"}, {"tools", tools}, {"tool_choice", "required"},
                     {"parallel_tool_calls", false}, {"seed", 2},      {"max_output_tokens", 200}};
  const json r = post(c, "/v1/responses", body);
  ASSERT_EQ(r["output"].size(), 1u) << r.dump();
  const json& call = r["output"][0];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_TRUE(json::parse(call["arguments"].get<std::string>())["city"].is_string());

  const Events ev = stream(c, body);
  const json& done = ev.last()["response"];
  ASSERT_EQ(done["output"].size(), 1u) << done.dump();
  EXPECT_EQ(done["output"][0]["type"], "function_call");
  EXPECT_EQ(ev.arguments, done["output"][0]["arguments"].get<std::string>());

  // The round trip: the call and its output as input items, after the stored response.
  const json next =
      post(c, "/v1/responses",
           {{"previous_response_id", r["id"]},
            {"input",
             {{{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "Sunny, 21 C"}}}},
            {"tools", tools},
            {"max_output_tokens", 10}});
  EXPECT_EQ(next["output"].back()["type"], "message") << next.dump();
  // The same without the store: the call as an input item.
  post(c, "/v1/responses",
       {{"input",
         {{{"role", "user"}, {"content", "Weather in Paris?"}},
          {{"type", "function_call"},
           {"call_id", "call_1"},
           {"name", "get_weather"},
           {"arguments", "{\"city\":\"Paris\"}"}},
          {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "Sunny"}}}},
        {"tools", tools},
        {"max_output_tokens", 5}});
}

TEST(Responses, TextFormatJsonSchema) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  const json schema = {{"type", "object"},
                       {"properties", {{"n", {{"type", "integer"}, {"minimum", 1}, {"maximum", 9}}}}},
                       {"required", {"n"}}};
  const json r = post(
      c, "/v1/responses",
      {{"input", "A number"},
       {"max_output_tokens", 80},
       {"seed", 1},  // sampled: a fixed seed, so the answer is the same every run
       {"text",
        {{"format", {{"type", "json_schema"}, {"name", "num"}, {"schema", schema}, {"strict", true}}}}}});
  ASSERT_EQ(r["status"], "completed") << r.dump();
  EXPECT_TRUE(json::parse(output_text(r))["n"].is_number_integer()) << r.dump();
  EXPECT_EQ(r["text"]["format"]["type"], "json_schema");
}

TEST(Responses, ReasoningItems) {
  server::ServerOptions so;
  std::ifstream f(data_path("chat/templates/Qwen-Qwen3-0.6B.jinja"), std::ios::binary);
  so.chat_template.assign(std::istreambuf_iterator<char>(f), {});
  TestServer ts(stories_gguf(), so);
  auto c = ts.client();
  const json body = {{"input", "Hi"},
                     {"max_output_tokens", 80},
                     {"grammar", "root ::= \"<think>\\nOnce the cat\\n</think>\\n\\n\" \"Lily was happy.\""}};
  const json r = post(c, "/v1/responses", body);
  ASSERT_EQ(r["output"].size(), 2u) << r.dump();
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Once the cat");
  EXPECT_EQ(output_text(r), "Lily was happy.");
  const Events ev = stream(c, body);
  EXPECT_EQ(ev.reasoning, "Once the cat");
  EXPECT_EQ(ev.text, "Lily was happy.");
  EXPECT_EQ(ev.last()["response"]["output"][0]["type"], "reasoning");
}

TEST(Responses, BadRequestsName400Fields) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  EXPECT_EQ(post(c, "/v1/responses", json::object(), 400)["error"]["param"], "input");
  EXPECT_EQ(post(c, "/v1/responses", {{"input", 3}}, 400)["error"]["param"], "input");
  EXPECT_EQ(post(c, "/v1/responses", {{"input", "x"}, {"tools", {{{"type", "web_search"}}}}},
                 400)["error"]["param"],
            "tools[0].type");
  EXPECT_EQ(
      post(c, "/v1/responses",
           {{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "x"}}}}}}}},
           400)["error"]["param"],
      "input[0].content[0]");
  EXPECT_EQ(post(c, "/v1/responses", {{"input", {{{"type", "item_reference"}, {"id", "x"}}}}},
                 400)["error"]["param"],
            "input[0].type");
  EXPECT_EQ(post(c, "/v1/responses", {{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}},
                 400)["error"]["param"],
            "text.format.type");
  EXPECT_EQ(post(c, "/v1/responses", {{"input", "x"}, {"max_output_tokens", -5}}, 400)["error"]["param"],
            "max_tokens");
  auto g = c.Get("/v1/responses");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 405);
}

}  // namespace
}  // namespace ferrum::test::responses_test
