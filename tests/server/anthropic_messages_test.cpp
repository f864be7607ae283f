// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) over loopback: the same
// answer as /v1/chat/completions for the same conversation (greedy), the stream's events in
// Anthropic's order adding up to the non-streamed message, stop reasons (end_turn, max_tokens,
// stop_sequence, tool_use), a forced tool call as a tool_use block and its round trip through
// tool_use / tool_result blocks, count_tokens, x-api-key, and errors in Anthropic's shape.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server_fixture.h"

namespace ferrum::test {
namespace {

using json = nlohmann::json;

const json kConversation = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});

json message_body(int max_tokens, const json& extra = json::object()) {
  json b = {
      {"model", "test-model"}, {"max_tokens", max_tokens}, {"temperature", 0}, {"messages", kConversation}};
  b.update(extra);
  return b;
}

struct Event {
  std::string type;
  json data;
};

// The events of an SSE body ("event: T\ndata: JSON\n\n"; pings and comments skipped).
std::vector<Event> events_of(const std::string& body) {
  std::vector<Event> out;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find("\n\n", at);
    if (end == std::string::npos) end = body.size();
    const std::string block = body.substr(at, end - at);
    at = end + 2;
    const size_t ev = block.find("event: "), data = block.find("data: ");
    if (ev != 0 || data == std::string::npos) continue;
    Event e{block.substr(7, block.find('\n') - 7), json::parse(block.substr(data + 6))};
    if (e.type != "ping") out.push_back(e);
  }
  return out;
}

std::string text_of(const json& message) {
  std::string t;
  for (const json& b : message["content"])
    if (b["type"] == "text") t += b["text"].get<std::string>();
  return t;
}

TEST(AnthropicMessages, AnswerEqualsChatCompletionsAndStopReasons) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  int status = 0;
  const json chat = post_json(c, "/v1/chat/completions",
                              {{"max_tokens", 24}, {"temperature", 0}, {"messages", kConversation}}, &status);
  ASSERT_EQ(status, 200) << chat.dump();
  const json m = post_json(c, "/v1/messages", message_body(24), &status);
  ASSERT_EQ(status, 200) << m.dump();
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["model"], "test-model");
  EXPECT_TRUE(m["id"].get<std::string>().starts_with("msg"));
  EXPECT_EQ(text_of(m), chat["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(m["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(m["usage"]["output_tokens"], 24);
  EXPECT_EQ(m["stop_reason"], "max_tokens");
  EXPECT_TRUE(m["stop_sequence"].is_null());

  // A stop sequence from the middle of that text ends the answer right before it.
  const std::string text = text_of(m);
  const std::string stop = text.substr(text.size() / 2, 3);
  const json s = post_json(c, "/v1/messages", message_body(24, {{"stop_sequences", {stop}}}), &status);
  ASSERT_EQ(status, 200) << s.dump();
  EXPECT_EQ(s["stop_reason"], "stop_sequence");
  EXPECT_EQ(s["stop_sequence"], stop);
  EXPECT_EQ(text_of(s), text.substr(0, text.find(stop)));

  // count_tokens: the prompt the message was answered from.
  const json n = post_json(c, "/v1/messages/count_tokens", {{"messages", kConversation}}, &status);
  ASSERT_EQ(status, 200) << n.dump();
  EXPECT_EQ(n["input_tokens"], m["usage"]["input_tokens"]);
}

TEST(AnthropicMessages, StreamEventsAddUpToTheMessage) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  int status = 0;
  const json m = post_json(c, "/v1/messages", message_body(20), &status);
  ASSERT_EQ(status, 200);
  auto r = c.Post("/v1/messages", message_body(20, {{"stream", true}}).dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const std::vector<Event> ev = events_of(r->body);
  ASSERT_GE(ev.size(), 5u) << r->body;
  EXPECT_EQ(ev.front().type, "message_start");
  EXPECT_EQ(ev.front().data["message"]["usage"]["input_tokens"], m["usage"]["input_tokens"]);
  EXPECT_EQ(ev.back().type, "message_stop");
  const Event& delta = ev[ev.size() - 2];
  EXPECT_EQ(delta.type, "message_delta");
  EXPECT_EQ(delta.data["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(delta.data["usage"]["output_tokens"], 20);
  std::string text;
  int open = 0;
  for (const Event& e : ev) {
    EXPECT_EQ(e.data["type"], e.type);
    if (e.type == "content_block_start") {
      ++open;
      EXPECT_EQ(e.data["index"], 0);
    }
    if (e.type == "content_block_stop") --open;
    if (e.type == "content_block_delta") text += e.data["delta"]["text"].get<std::string>();
  }
  EXPECT_EQ(open, 0);
  EXPECT_EQ(text, text_of(m));
}

// A bounded argument, so the tiny model finishes its call in time.
const json kTools =
    json::array({{{"name", "get_weather"},
                  {"description", "The weather in a city"},
                  {"input_schema",
                   {{"type", "object"},
                    {"properties", {{"city", {{"type", "string"}, {"enum", {"Paris", "Oslo"}}}}}},
                    {"required", {"city"}}}}}});

TEST(AnthropicMessages, ForcedToolCallIsAToolUseBlockAndRoundTrips) {
  TestServer ts(stories_gguf(), {}, {}, 2048);
  auto c = ts.client();
  int status = 0;
  const json forced = {
      {"tools", kTools},
      {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}, {"disable_parallel_tool_use", true}}}};
  const json m = post_json(c, "/v1/messages", message_body(200, forced), &status);
  ASSERT_EQ(status, 200) << m.dump();
  EXPECT_EQ(m["stop_reason"], "tool_use") << m.dump();
  const json& use = m["content"].back();
  ASSERT_EQ(use["type"], "tool_use") << m.dump();
  EXPECT_EQ(use["name"], "get_weather");
  ASSERT_TRUE(use["input"].is_object());
  EXPECT_TRUE(use["input"]["city"] == "Paris" || use["input"]["city"] == "Oslo") << use.dump();

  // Streamed: the same call, its input as input_json_delta.
  json streamed = message_body(200, forced);
  streamed["stream"] = true;
  auto r = c.Post("/v1/messages", streamed.dump(), "application/json");
  ASSERT_TRUE(r);
  json streamed_input;
  std::string streamed_name, stop_reason;
  for (const Event& e : events_of(r->body)) {
    if (e.type == "content_block_start" && e.data["content_block"]["type"] == "tool_use")
      streamed_name = e.data["content_block"]["name"];
    if (e.type == "content_block_delta" && e.data["delta"]["type"] == "input_json_delta")
      streamed_input = json::parse(e.data["delta"]["partial_json"].get<std::string>());
    if (e.type == "message_delta") stop_reason = e.data["delta"]["stop_reason"];
  }
  EXPECT_EQ(streamed_name, "get_weather");
  EXPECT_EQ(streamed_input, use["input"]);
  EXPECT_EQ(stop_reason, "tool_use");

  // The call and its result sent back as tool_use / tool_result blocks: the model answers on.
  json turn = message_body(8, {{"tools", kTools}});
  turn["messages"].push_back({{"role", "assistant"}, {"content", m["content"]}});
  turn["messages"].push_back(
      {{"role", "user"},
       {"content", {{{"type", "tool_result"}, {"tool_use_id", use["id"]}, {"content", "sunny, 21 C"}}}}});
  const json next = post_json(c, "/v1/messages", turn, &status);
  ASSERT_EQ(status, 200) << next.dump();
  EXPECT_GT(next["usage"]["input_tokens"].get<int>(), m["usage"]["input_tokens"].get<int>());
}

TEST(AnthropicMessages, ErrorsInAnthropicsShapeAndTheApiKeyHeader) {
  server::ServerOptions so;
  so.api_key = "sekret";
  TestServer ts(stories_gguf(), so);
  auto c = ts.client();
  int status = 0;
  auto expect_error = [&](const json& body, int want, const std::string& type, const std::string& words) {
    httplib::Headers h = {{"x-api-key", "sekret"}};
    auto r = c.Post("/v1/messages", h, body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, want) << body.dump();
    const json e = json::parse(r->body);
    EXPECT_EQ(e["type"], "error") << r->body;
    EXPECT_EQ(e["error"]["type"], type) << r->body;
    EXPECT_NE(e["error"]["message"].get<std::string>().find(words), std::string::npos) << r->body;
  };
  json no_max = message_body(8);
  no_max.erase("max_tokens");
  expect_error(no_max, 400, "invalid_request_error", "max_tokens");
  expect_error(message_body(0), 400, "invalid_request_error", "max_tokens");
  expect_error(message_body(8, {{"messages", json::array()}}), 400, "invalid_request_error", "messages");
  expect_error(message_body(8, {{"messages", {{{"role", "system"}, {"content", "x"}}}}}), 400,
               "invalid_request_error", "role");
  expect_error(message_body(8, {{"messages", {{{"role", "user"}, {"content", {{{"type", "image"}}}}}}}}), 400,
               "invalid_request_error", "'image'");
  expect_error(message_body(8, {{"tool_choice", {{"type", "maybe"}}}, {"tools", kTools}}), 400,
               "invalid_request_error", "maybe");
  expect_error(message_body(8, {{"model", "claude-x"}}), 404, "not_found_error", "claude-x");
  // The key: x-api-key or a bearer token; a wrong one is a 401 in the route's shape.
  auto ok = c.Post("/v1/messages", httplib::Headers{{"x-api-key", "sekret"}}, message_body(2).dump(),
                   "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto wrong = c.Post("/v1/messages", httplib::Headers{{"x-api-key", "nope"}}, message_body(2).dump(),
                      "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  const json w = json::parse(wrong->body);
  EXPECT_EQ(w["type"], "error") << wrong->body;
  EXPECT_EQ(w["error"]["type"], "authentication_error") << wrong->body;
  (void)status;
}

}  // namespace
}  // namespace ferrum::test
