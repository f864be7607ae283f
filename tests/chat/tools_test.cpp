// Tool calling pieces on fixed inputs: request validation (400s naming the field), the style of
// each real template, answers parsed into OpenAI tool calls, and the grammar of forced calls
// (what it admits parses back to the same call; what breaks the schema is refused).
#include "chat/tools.h"

#include <gtest/gtest.h>

#include <fstream>

#include "chat/chat_error.h"
#include "chat/tool_grammar.h"
#include "chat/tool_parser.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "test_util.h"

namespace ferrum::chat::tools_test {
namespace {

using json = nlohmann::json;

const json kWeather = {{"type", "function"},
                       {"function",
                        {{"name", "get_weather"},
                         {"parameters",
                          {{"type", "object"},
                           {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}},
                           {"required", {"city"}}}}}}};
const json kTime = {{"type", "function"}, {"function", {{"name", "get_time"}}}};  // no parameters: any object

std::string param_of(const json& body) {
  try {
    parse_tool_request(body);
  } catch (const ChatError& e) {
    return e.param;
  }
  return "";
}

TEST(ToolRequest, ParsesChoicesAndParallel) {
  const json tools = json::array({kWeather, kTime});
  ToolRequest r = parse_tool_request({{"tools", tools}});
  EXPECT_EQ(r.choice.mode, ToolChoice::Mode::Auto);
  EXPECT_TRUE(r.active());
  EXPECT_FALSE(r.forced());
  EXPECT_TRUE(r.parallel);
  r = parse_tool_request({{"tools", tools}, {"tool_choice", "required"}, {"parallel_tool_calls", false}});
  EXPECT_TRUE(r.forced());
  EXPECT_FALSE(r.parallel);
  r = parse_tool_request(
      {{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}});
  EXPECT_EQ(r.choice.mode, ToolChoice::Mode::Named);
  EXPECT_EQ(r.choice.name, "get_time");
  r = parse_tool_request({{"tools", tools}, {"tool_choice", "none"}});
  EXPECT_FALSE(r.active());
  EXPECT_FALSE(parse_tool_request(json::object()).active());
  EXPECT_NE(r.function("get_weather"), nullptr);
  EXPECT_EQ(r.function("nope"), nullptr);
}

TEST(ToolRequest, MalformedFieldsAreNamed) {
  const json tools = json::array({kWeather});
  EXPECT_EQ(param_of({{"tools", "x"}}), "tools");
  EXPECT_EQ(param_of({{"tools", {1}}}), "tools[0]");
  EXPECT_EQ(param_of({{"tools", {{{"type", "retrieval"}}}}}), "tools[0].type");
  EXPECT_EQ(param_of({{"tools", {{{"type", "function"}}}}}), "tools[0].function");
  EXPECT_EQ(param_of({{"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}}),
            "tools[0].function.name");
  EXPECT_EQ(param_of({{"tools", {{{"type", "function"}, {"function", {{"name", std::string(65, 'a')}}}}}}}),
            "tools[0].function.name");
  EXPECT_EQ(
      param_of({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", "x"}}}}}}}),
      "tools[0].function.parameters");
  EXPECT_EQ(param_of({{"tools", {kWeather, kWeather}}}), "tools[1].function.name");
  EXPECT_EQ(param_of({{"tools", tools}, {"tool_choice", "sometimes"}}), "tool_choice");
  EXPECT_EQ(param_of({{"tools", tools}, {"tool_choice", 1}}), "tool_choice");
  EXPECT_EQ(param_of({{"tools", tools}, {"tool_choice", {{"type", "function"}}}}), "tool_choice");
  EXPECT_EQ(
      param_of({{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "x"}}}}}}),
      "tool_choice.function.name");
  EXPECT_EQ(param_of({{"tool_choice", "required"}}), "tool_choice");
  EXPECT_EQ(param_of({{"tools", json::array()}, {"tool_choice", "auto"}}), "tool_choice");
  EXPECT_EQ(param_of({{"tool_choice", "none"}}), "");
  EXPECT_EQ(param_of({{"tools", tools}, {"parallel_tool_calls", "yes"}}), "parallel_tool_calls");
}

std::string template_text(const std::string& name) {
  std::ifstream f(test::data_path("chat/templates/" + name), std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(ToolStyle, ChosenFromTheTemplate) {
  EXPECT_EQ(detect_tool_style(template_text("Qwen-Qwen2.5-7B-Instruct.jinja")), ToolStyle::Hermes);
  EXPECT_EQ(detect_tool_style(template_text("Qwen-Qwen3-0.6B.jinja")), ToolStyle::Hermes);
  // SmolLM3 writes tools its own way and drops assistant tool_calls: the default format serves it.
  EXPECT_EQ(detect_tool_style(template_text("HuggingFaceTB-SmolLM3-3B.jinja")), ToolStyle::Default);
  EXPECT_EQ(detect_tool_style(template_text("meta-llama-Llama-3.1-8B-Instruct.jinja")), ToolStyle::Llama3);
  EXPECT_EQ(detect_tool_style(template_text("meta-llama-Llama-3.2-3B-Instruct.jinja")), ToolStyle::Llama3);
  EXPECT_EQ(detect_tool_style(template_text("mistralai-Mistral-Nemo-Instruct-2407.jinja")),
            ToolStyle::Mistral);
  EXPECT_EQ(detect_tool_style(template_text("llama3-tokenizer_config.jinja")), ToolStyle::Default);
  EXPECT_EQ(detect_tool_style(template_text("phi-3.jinja")), ToolStyle::Default);
  EXPECT_EQ(detect_tool_style(template_text("microsoft-Phi-4-mini-instruct.jinja")), ToolStyle::Phi4);
  EXPECT_EQ(detect_tool_style(template_text("google-gemma-3-1b-it.jinja")), ToolStyle::Default);
  EXPECT_EQ(detect_tool_style(""), ToolStyle::Default);
}

void expect_calls(const ParsedAnswer& a, const std::string& content, const std::vector<ToolCall>& calls) {
  EXPECT_EQ(a.content, content);
  ASSERT_EQ(a.calls.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].name, calls[i].name);
    EXPECT_EQ(json::parse(a.calls[i].arguments), json::parse(calls[i].arguments));
  }
}

TEST(ToolParser, Hermes) {
  const ToolCall paris{"get_weather", R"({"city":"Paris"})"};
  expect_calls(
      parse_tool_answer(
          ToolStyle::Hermes,
          "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
      "", {paris});
  expect_calls(
      parse_tool_answer(ToolStyle::Hermes,
                        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                        "\"Paris\"}}\n</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": "
                        "\"{}\"}</tool_call>\n"),
      "Let me check.", {paris, {"get_time", "{}"}});
  // A closing tag inside an argument string is not the end; a missing last one is tolerated.
  expect_calls(
      parse_tool_answer(ToolStyle::Default,
                        "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"</tool_call>\"}}</tool_call>"),
      "", {{"f", R"({"s":"</tool_call>"})"}});
  expect_calls(parse_tool_answer(ToolStyle::Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}"), "",
               {{"f", "{}"}});
  // Not a well-formed call: all of it stays content.
  for (const std::string& bad : std::vector<std::string>{
           "plain answer", "<tool_call>{\"name\": \"f\"}</tool_call>",
           "<tool_call>{\"name\": 1, \"arguments\": {}}</tool_call>",
           "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
           "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> trailing text",
           "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(5000, '[')})
    expect_calls(parse_tool_answer(ToolStyle::Hermes, bad), bad, {});
}

TEST(ToolParser, Llama3) {
  expect_calls(
      parse_tool_answer(ToolStyle::Llama3, R"({"name": "get_weather", "parameters": {"city": "Paris"}})"), "",
      {{"get_weather", R"({"city":"Paris"})"}});
  expect_calls(
      parse_tool_answer(ToolStyle::Llama3, "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n"),
      "", {{"f", R"({"x":1})"}});
  for (const std::string bad : {"The weather is fine.", "{\"name\": \"f\"}", "{\"city\": \"Paris\"}",
                                "{\"name\": \"f\", \"parameters\": {}} and more"})
    expect_calls(parse_tool_answer(ToolStyle::Llama3, bad), bad, {});
}

TEST(ToolParser, Mistral) {
  expect_calls(
      parse_tool_answer(
          ToolStyle::Mistral,
          R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcDEF123"}])"),
      "", {{"get_weather", R"({"city":"Paris"})"}});
  // The marker is a control token a detokenizer may drop: a bare call array counts.
  expect_calls(
      parse_tool_answer(ToolStyle::Mistral,
                        R"( [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": [1]}}])"),
      "", {{"a", "{}"}, {"b", R"({"k":[1]})"}});
  for (const std::string bad :
       {"Hello", "[1, 2]", "[]", "[TOOL_CALLS][{\"name\": \"a\"}]", "[TOOL_CALLS]oops"})
    expect_calls(parse_tool_answer(ToolStyle::Mistral, bad), bad, {});
}

TEST(ToolParser, Phi4) {
  expect_calls(
      parse_tool_answer(
          ToolStyle::Phi4,
          R"(Sure.<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>)"),
      "Sure.", {{"get_weather", R"({"city":"Paris"})"}});
  // The closing marker left out, and the markers dropped by a detokenizer: still calls.
  expect_calls(parse_tool_answer(ToolStyle::Phi4, R"(<|tool_call|>[{"name": "a", "arguments": {}}])"), "",
               {{"a", "{}"}});
  expect_calls(parse_tool_answer(ToolStyle::Phi4,
                                 R"([{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": 1}}])"),
               "", {{"a", "{}"}, {"b", R"({"k":1})"}});
  for (const std::string bad : {"Hello", "[1, 2]", "<|tool_call|>oops", "<|tool_call|>[{\"name\": \"a\"}]"})
    expect_calls(parse_tool_answer(ToolStyle::Phi4, bad), bad, {});
}

// An answer stopped by max_tokens inside its second call: the first, finished, stands; only a cut
// answer drops an unfinished call (one that ended on its own keeps all of it as content).
TEST(ToolParser, CutAnswerKeepsFinishedCalls) {
  const std::string paris =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n";
  const ToolCall want{"get_weather", R"({"city":"Paris"})"};
  for (const std::string& tail :
       {std::string("<tool_call>\n{\"name\": \"get_weather\", \"argu"), std::string("<tool_call>\n"),
        std::string("<tool_"), std::string("<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"a\\\"")}) {
    const std::string text = "Checking.\n" + paris + "</tool_call>\n" + tail;
    SCOPED_TRACE(text);
    expect_calls(parse_tool_answer(ToolStyle::Hermes, text, /*cut=*/true), "Checking.", {want});
    expect_calls(parse_tool_answer(ToolStyle::Hermes, text), text, {});
  }
  // Cut inside a closing tag: that call is finished.
  expect_calls(parse_tool_answer(ToolStyle::Default, paris + "</tool", true), "", {want});
  expect_calls(parse_tool_answer(ToolStyle::Default, paris + "</tool_call>\n" + paris + "</", true), "",
               {want, want});
  // Nothing finished: all of it stays content, cut or not.
  for (const std::string& text : {paris.substr(0, 30), std::string("<tool_call>")})
    expect_calls(parse_tool_answer(ToolStyle::Hermes, text, true), text, {});

  const std::string first = R"([TOOL_CALLS][{"name": "a", "arguments": {"k": "]}"}}, )";
  for (const std::string& tail : {"", "{\"name\": \"b\", \"arguments\": {\"k\": [1, {", "{\"na"}) {
    SCOPED_TRACE(first + tail);
    expect_calls(parse_tool_answer(ToolStyle::Mistral, first + tail, true), "", {{"a", R"({"k":"]}"})"}});
    expect_calls(parse_tool_answer(ToolStyle::Mistral, first + tail), first + tail, {});
  }
  for (const std::string bad :
       {"[TOOL_CALLS][1, {\"name\": \"a\"", "[TOOL_CALLS][{\"name\": 1}, {", "[{\"na"})
    expect_calls(parse_tool_answer(ToolStyle::Mistral, bad, true), bad, {});
}

std::shared_ptr<const grammar::Grammar> forced_grammar(ToolStyle style, const json& body) {
  return std::make_shared<const grammar::Grammar>(
      grammar::compile_gbnf(tool_call_gbnf(style, parse_tool_request(body))));
}

bool admits(const std::shared_ptr<const grammar::Grammar>& g, const std::string& text) {
  grammar::Matcher m(g);
  return m.accept(text) && m.can_end();
}

TEST(ToolGrammar, ForcedCallsParseBackAndFollowTheSchema) {
  const json tools = json::array({kWeather, kTime});
  struct Case {
    ToolStyle style;
    std::string good, bad_args, bad_name;
  };
  const std::vector<Case> cases = {
      {ToolStyle::Hermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": "
       "2}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 2}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {}}\n</tool_call>"},
      {ToolStyle::Default,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": "
       "2}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 5}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"},
      {ToolStyle::Llama3, R"({"name": "get_weather", "parameters": {"city": "Paris", "days": 2}})",
       R"({"name": "get_weather", "parameters": {"city": "Paris", "days": 2.5}})",
       R"({"name": "get_weather", "arguments": {"city": "Paris"}})"},
      {ToolStyle::Mistral, R"([{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}])",
       R"([{"name": "get_weather", "arguments": {"city": "Paris", "extra": 1}}])",
       R"([{"name": "x", "arguments": {}}])"},
      {ToolStyle::Phi4,
       R"(<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]<|/tool_call|>)",
       R"(<|tool_call|>[{"name": "get_weather", "arguments": {"city": 1}}]<|/tool_call|>)",
       R"(<|tool_call|>[{"name": "x", "arguments": {}}]<|/tool_call|>)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(tool_style_name(c.style));
    const auto g = forced_grammar(c.style, {{"tools", tools}, {"tool_choice", "required"}});
    EXPECT_TRUE(admits(g, c.good));
    EXPECT_FALSE(admits(g, c.bad_args));
    EXPECT_FALSE(admits(g, c.bad_name));
    EXPECT_FALSE(admits(g, "Sure, here is the weather."));
    expect_calls(parse_tool_answer(c.style, c.good), "", {{"get_weather", R"({"city":"Paris","days":2})"}});
  }
}

TEST(ToolGrammar, NamedChoiceAndParallelCalls) {
  const json tools = json::array({kWeather, kTime});
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const std::string time =
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>";
  const json named = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  const auto only_time = forced_grammar(ToolStyle::Hermes, {{"tools", tools}, {"tool_choice", named}});
  EXPECT_TRUE(admits(only_time, time));
  EXPECT_FALSE(admits(only_time, weather));
  const auto parallel = forced_grammar(ToolStyle::Hermes, {{"tools", tools}, {"tool_choice", "required"}});
  EXPECT_TRUE(admits(parallel, weather + "\n" + time));
  expect_calls(parse_tool_answer(ToolStyle::Hermes, weather + "\n" + time), "",
               {{"get_weather", R"({"city":"Oslo"})"}, {"get_time", R"({"tz":"UTC"})"}});
  const auto single = forced_grammar(
      ToolStyle::Hermes, {{"tools", tools}, {"tool_choice", "required"}, {"parallel_tool_calls", false}});
  EXPECT_TRUE(admits(single, weather));
  EXPECT_FALSE(admits(single, weather + "\n" + time));
  const auto mistral = forced_grammar(ToolStyle::Mistral, {{"tools", tools}, {"tool_choice", "required"}});
  EXPECT_TRUE(admits(
      mistral,
      R"([{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "A"}}])"));
}

TEST(ToolGrammar, UnsupportedSchemaNamesTheTool) {
  const json odd = {
      {"type", "function"},
      {"function",
       {{"name", "f"}, {"parameters", {{"type", "object"}, {"patternProperties", json::object()}}}}}};
  try {
    tool_call_gbnf(ToolStyle::Hermes,
                   parse_tool_request({{"tools", {kWeather, odd}}, {"tool_choice", "required"}}));
    FAIL() << "no error";
  } catch (const ChatError& e) {
    EXPECT_EQ(e.param, "tools[1].function.parameters");
    EXPECT_NE(std::string(e.what()).find("patternProperties"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferrum::chat::tools_test
