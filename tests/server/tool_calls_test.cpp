// Tool calling over HTTP with each template style (Hermes, Llama 3, Mistral through real chat
// templates served in place of the model's, and the default format of a model without one):
// tool_choice "required" answers with OpenAI tool_calls whose arguments follow the schema, non-
// streamed and streamed as delta.tool_calls, and the call and its result are taken back in for a
// second turn. Bad tool fields are 400s naming them.
#include <gtest/gtest.h>

#include <fstream>

#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::test::tool_calls_test {
namespace {

using json = nlohmann::json;

json post(httplib::Client& c, const json& body, int* status) {
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  if (!r) {
    ADD_FAILURE() << "no response";
    return {};
  }
  *status = r->status;
  return json::parse(r->body, nullptr, false);
}

std::string template_text(const std::string& name) {
  std::ifstream f(data_path("chat/templates/" + name), std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Bounded arguments (an enum and a small integer), so a tiny model finishes its call in time.
const json kTools = json::array({{{"type", "function"},
                                  {"function",
                                   {{"name", "get_weather"},
                                    {"description", "Current weather of a city"},
                                    {"parameters",
                                     {{"type", "object"},
                                      {"properties",
                                       {{"city", {{"type", "string"}, {"enum", {"Paris", "Oslo"}}}},
                                        {"days", {{"type", "integer"}, {"minimum", 1}, {"maximum", 9}}}}},
                                      {"required", {"city"}}}}}}}});

const json kQuestion = json::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}});

void expect_valid_call(const json& call, size_t id_size) {
  ASSERT_TRUE(call.is_object()) << call;
  EXPECT_TRUE(call["id"].is_string()) << call;
  if (id_size) EXPECT_EQ(call["id"].get<std::string>().size(), id_size) << call;
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  ASSERT_TRUE(call["function"]["arguments"].is_string()) << call;
  const json args = json::parse(call["function"]["arguments"].get<std::string>());
  ASSERT_TRUE(args.is_object());
  EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Oslo") << args;
  for (const auto& [k, v] : args.items()) {
    EXPECT_TRUE(k == "city" || k == "days") << args;
    if (k == "days") EXPECT_TRUE(v.is_number_integer() && v >= 1 && v <= 9) << args;
  }
}

// The deltas of a streamed answer put together: content, and calls merged by index.
struct StreamedAnswer {
  std::string content, finish_reason;
  json calls = json::array();
  bool done = false;
};

StreamedAnswer post_stream(httplib::Client& c, json body) {
  body["stream"] = true;
  StreamedAnswer s;
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  if (!r) {
    ADD_FAILURE() << "no response";
    return s;
  }
  EXPECT_EQ(r->status, 200) << r->body;
  std::string buf = r->body;
  for (size_t pos; (pos = buf.find("\n\n")) != std::string::npos; buf.erase(0, pos + 2)) {
    const std::string data = buf.substr(6, pos - 6);
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    const json j = json::parse(data);
    for (const json& ch : j["choices"]) {
      const json& d = ch["delta"];
      if (d.contains("content") && d["content"].is_string()) s.content += d["content"].get<std::string>();
      if (d.contains("tool_calls"))
        for (const json& tc : d["tool_calls"]) {
          const size_t i = tc["index"].get<size_t>();
          if (i >= s.calls.size()) s.calls.push_back({{"function", {{"name", ""}, {"arguments", ""}}}});
          json& call = s.calls[i];
          if (tc.contains("id")) call["id"] = tc["id"];
          if (tc.contains("type")) call["type"] = tc["type"];
          if (tc["function"].contains("name"))
            call["function"]["name"] =
                call["function"]["name"].get<std::string>() + tc["function"]["name"].get<std::string>();
          if (tc["function"].contains("arguments"))
            call["function"]["arguments"] = call["function"]["arguments"].get<std::string>() +
                                            tc["function"]["arguments"].get<std::string>();
        }
      if (!ch["finish_reason"].is_null()) s.finish_reason = ch["finish_reason"];
    }
  }
  return s;
}

struct Style {
  std::string template_file;  // "" = stories260K's own (none: the default format)
  size_t id_size;             // 9 for Mistral's ids, else any
};

class ToolCalls : public ::testing::TestWithParam<Style> {};

TEST_P(ToolCalls, RequiredCallThenAnswer) {
  server::ServerOptions so;
  if (!GetParam().template_file.empty()) so.chat_template = template_text(GetParam().template_file);
  TestServer ts(stories_gguf(), so, {}, 2048);  // Llama 3's prompt lists the tools indented: 1000 tokens
  auto c = ts.client();
  const json first = {{"messages", kQuestion}, {"tools", kTools}, {"tool_choice", "required"},
                      {"max_tokens", 120},     {"seed", 7},       {"parallel_tool_calls", false}};
  int status = 0;
  json r = post(c, first, &status);
  ASSERT_EQ(status, 200) << r.dump();
  const json& msg = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls") << r.dump();
  EXPECT_TRUE(msg["content"].is_null()) << r.dump();
  ASSERT_TRUE(msg["tool_calls"].is_array() && msg["tool_calls"].size() == 1) << r.dump();
  expect_valid_call(msg["tool_calls"][0], GetParam().id_size);

  const StreamedAnswer s = post_stream(c, first);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.finish_reason, "tool_calls");
  EXPECT_EQ(s.content, "");
  ASSERT_EQ(s.calls.size(), 1u) << s.calls.dump();
  expect_valid_call(s.calls[0], GetParam().id_size);
  EXPECT_EQ(s.calls[0]["function"]["arguments"], msg["tool_calls"][0]["function"]["arguments"]);  // same seed

  json messages = kQuestion;
  messages.push_back(msg);
  messages.push_back(
      {{"role", "tool"}, {"tool_call_id", msg["tool_calls"][0]["id"]}, {"content", "18 C, sunny"}});
  r = post(c, {{"messages", messages}, {"tools", kTools}, {"max_tokens", 8}, {"seed", 7}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), 0);
}

INSTANTIATE_TEST_SUITE_P(Styles, ToolCalls,
                         ::testing::Values(Style{"Qwen-Qwen2.5-7B-Instruct.jinja", 0},
                                           Style{"meta-llama-Llama-3.2-3B-Instruct.jinja", 0},
                                           Style{"mistralai-Mistral-Nemo-Instruct-2407.jinja", 9},
                                           Style{"", 0}),
                         [](const auto& info) {
                           const std::string& f = info.param.template_file;
                           return f.empty() ? std::string("Default") : f.substr(0, f.find_first_of("-."));
                         });

TEST(ToolCallRequests, AutoChoiceStreamsTheSameAnswer) {
  server::ServerOptions so;
  so.chat_template = template_text("Qwen-Qwen2.5-7B-Instruct.jinja");
  TestServer ts(stories_gguf(), so, {}, 2048);
  auto c = ts.client();
  const json body = {{"messages", kQuestion}, {"tools", kTools}, {"max_tokens", 30}, {"temperature", 0}};
  int status = 0;
  const json r = post(c, body, &status);
  ASSERT_EQ(status, 200) << r.dump();
  const json& msg = r["choices"][0]["message"];
  const StreamedAnswer s = post_stream(c, body);
  EXPECT_EQ(s.finish_reason, r["choices"][0]["finish_reason"].get<std::string>());
  EXPECT_EQ(s.content, msg["content"].is_string() ? msg["content"].get<std::string>() : "");
  EXPECT_EQ(s.calls.size(), msg.contains("tool_calls") ? msg["tool_calls"].size() : 0u);
}

// tool_choice "required" with parallel calls (the default) and a max_tokens that ends inside the
// second call: the first, finished, call is the answer, with finish_reason "length", streamed or not.
TEST(ToolCallRequests, FinishedCallSurvivesACutOne) {
  TestServer ts(stories_gguf(), {}, {}, 2048);
  auto c = ts.client();
  json body = {{"messages", kQuestion},
               {"tools", kTools},
               {"tool_choice", "required"},
               {"max_tokens", 400},
               {"logprobs", true}};
  // A seed whose answer (as generated: its tokens' texts) makes two calls; the model picks how many...
  std::string text;
  json pieces;
  for (int seed = 1; seed <= 60; ++seed) {
    body["seed"] = seed;
    int status = 0;
    const json r = post(c, body, &status);
    ASSERT_EQ(status, 200) << r.dump();
    pieces = r["choices"][0]["logprobs"]["content"];
    text.clear();
    for (const json& p : pieces) text += p["token"].get<std::string>();
    const size_t close = text.find("</tool_call>");
    if (close != std::string::npos && text.find("</tool_call>", close + 1) != std::string::npos) break;
    text.clear();
  }
  ASSERT_FALSE(text.empty()) << "no seed made two calls";
  const size_t open = text.find("<tool_call>"), close = text.find("</tool_call>");
  const json first = json::parse(text.substr(open + 11, close - open - 11));
  // ...and the number of its tokens that ends a few bytes into the second call.
  const size_t second = text.find("<tool_call>", close);
  ASSERT_NE(second, std::string::npos) << text;
  const size_t target = second + std::string("<tool_call>\n{\"na").size();
  ASSERT_LT(target, text.find("</tool_call>", second)) << text;
  int cut = 0;
  for (size_t got = 0; got < target; ++cut) got += pieces[cut]["token"].get<std::string>().size();
  body["max_tokens"] = cut;
  body.erase("logprobs");
  auto expect_first = [&](const json& f) {
    EXPECT_EQ(f["name"], first["name"]);
    EXPECT_EQ(json::parse(f["arguments"].get<std::string>()), first["arguments"]) << f;
  };

  int status = 0;
  const json r = post(c, body, &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length") << r.dump();
  EXPECT_EQ(r["usage"]["completion_tokens"], cut);
  const json& msg = r["choices"][0]["message"];
  EXPECT_TRUE(msg["content"].is_null()) << r.dump();
  ASSERT_TRUE(msg.contains("tool_calls") && msg["tool_calls"].size() == 1) << r.dump();
  expect_valid_call(msg["tool_calls"][0], 0);
  expect_first(msg["tool_calls"][0]["function"]);

  const StreamedAnswer st = post_stream(c, body);
  EXPECT_TRUE(st.done);
  EXPECT_EQ(st.finish_reason, "length");
  EXPECT_EQ(st.content, "");
  ASSERT_EQ(st.calls.size(), 1u) << st.calls.dump();
  expect_first(st.calls[0]["function"]);
}

TEST(ToolCallRequests, BadToolFieldsAreNamed) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  auto param_of = [&](json body) {
    if (!body.contains("messages")) body["messages"] = kQuestion;
    int status = 0;
    const json r = post(c, body, &status);
    EXPECT_EQ(status, 400) << r.dump();
    return r["error"]["param"].get<std::string>();
  };
  EXPECT_EQ(param_of({{"tools", "x"}}), "tools");
  EXPECT_EQ(param_of({{"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}}),
            "tools[0].function.name");
  EXPECT_EQ(param_of({{"tools", kTools}, {"tool_choice", "always"}}), "tool_choice");
  EXPECT_EQ(
      param_of({{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "x"}}}}}}),
      "tool_choice.function.name");
  EXPECT_EQ(
      param_of(
          {{"tools", kTools}, {"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}}),
      "tool_choice");
  EXPECT_EQ(
      param_of(
          {{"tools",
            {{{"type", "function"},
              {"function", {{"name", "f"}, {"parameters", {{"type", "object"}, {"not", json::object()}}}}}}}},
           {"tool_choice", "required"}}),
      "tools[0].function.parameters");
  json bad_call = kQuestion;
  bad_call.push_back(
      {{"role", "assistant"}, {"tool_calls", {{{"function", {{"name", "f"}, {"arguments", "{"}}}}}}});
  EXPECT_EQ(param_of({{"messages", bad_call}}), "messages[1].tool_calls[0].function.arguments");
}

}  // namespace
}  // namespace ferrum::test::tool_calls_test
