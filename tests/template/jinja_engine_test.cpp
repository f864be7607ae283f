// Unit tests of the Jinja engine: error locations, limits, robustness on malformed input, and
// the API (Template, Value) beyond what the differential cases cover.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "template/chat_template.h"
#include "template/jinja/template.h"
#include "test_util.h"

namespace {

using ferrum::jinja::Template;
using ferrum::jinja::TemplateError;
using ferrum::jinja::Value;

std::string render(const std::string& src, const Value& vars = Value()) {
  return Template(src, "t").render(vars);
}

TemplateError render_error(const std::string& src) {
  try {
    render(src);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << src;
  return TemplateError("none", "none", "none");
}

TEST(JinjaEngine, RuntimeErrorNamesLine) {
  TemplateError e = render_error("a\nb\n{% for x in [1] %}\n{{ x + 'a' }}\n{% endfor %}");
  EXPECT_EQ(e.type(), "TypeError");
  EXPECT_EQ(e.message(), "unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(std::string(e.what()), "t:4: TypeError: unsupported operand type(s) for +: 'int' and 'str'");
}

TEST(JinjaEngine, SyntaxErrorsNameLineAndColumn) {
  struct Case {
    const char* src;
    const char* where;
    const char* text;
  };
  const Case cases[] = {
      {"ok\n  {{ 1 + }}", "t:2:10:", "unexpected end of print statement"},
      {"{% if x %}\n{% for y in z %}\n", "t:2:", "expected 'else' or 'endfor' to close 'for'"},
      {"{{ x | nosuch }}", "t:1:8:", "No filter named 'nosuch'."},
      {"\n\n{% include 'x' %}", "t:3:4:", "unsupported or unknown tag 'include'"},
      {"{{ 'abc }}", "t:1:4:", "unterminated string literal"},
      {"{# never closed", "t:1:1:", "missing end of comment tag"},
      {"{% endfor %}", "t:1:4:", "unexpected 'endfor'"},
      {"{{ a[1:2:3:4] }}", "t:1:", "too many ':'"},
      {"{% set %}", "t:1:8:", "expected a variable name"},
      {"{% macro m(a=1, b) %}{% endmacro %}", "t:1:", "non-default argument follows default argument"},
      {"{{ f(a=1, 2) }}", "t:1:", "positional argument follows keyword argument"},
      {"{% extends 'base.html' %}", "t:1:4:", "unsupported or unknown tag 'extends'"},
      {"{% with a = 1 %}", "t:1:", "expected 'endwith' to close 'with'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src);
    try {
      Template t(c.src, "t");
      ADD_FAILURE() << "no syntax error";
    } catch (const TemplateError& e) {
      std::string what = e.what();
      EXPECT_EQ(e.type(), "TemplateSyntaxError");
      EXPECT_EQ(what.rfind(c.where, 0), 0u) << what;
      EXPECT_NE(what.find(c.text), std::string::npos) << what;
    }
  }
}

TEST(JinjaEngine, LimitsFailCleanly) {
  // Deep nesting of expressions and blocks is refused instead of overflowing the stack.
  std::string deep_expr = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_THROW(Template(deep_expr, "t"), TemplateError);
  std::string deep_blocks;
  for (int i = 0; i < 2000; ++i) deep_blocks += "{% if true %}";
  for (int i = 0; i < 2000; ++i) deep_blocks += "{% endif %}";
  EXPECT_THROW(Template(deep_blocks, "t"), TemplateError);
  // Unbounded macro recursion, huge ranges and huge repetitions raise errors.
  EXPECT_EQ(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").type(), "RecursionError");
  EXPECT_EQ(render_error("{{ range(200000) | length }}").type(), "OverflowError");
  EXPECT_EQ(render_error("{{ 'x' * 1000000000000 }}").type(), "MemoryError");
  EXPECT_EQ(render_error("{{ 9223372036854775807 + 1 }}").type(), "OverflowError");
  // Moderate nesting is fine.
  std::string ok;
  for (int i = 0; i < 50; ++i) ok += "{% for x in [1] %}";
  ok += "{{ x }}";
  for (int i = 0; i < 50; ++i) ok += "{% endfor %}";
  EXPECT_EQ(render(ok), "1");
}

TEST(JinjaEngine, VariablesAndScopes) {
  Value vars = Value::dict();
  vars.dict_obj().set("name", Value("world"));
  vars.dict_obj().set("items", Value::list({Value(1), Value(2)}));
  EXPECT_EQ(render("Hello {{ name | upper }}{% for i in items %} {{ i }}{% endfor %}", vars),
            "Hello WORLD 1 2");
  // The render leaves the caller's values untouched and can be repeated.
  Template t("{% set items = items + [3] %}{{ items | length }}", "t");
  EXPECT_EQ(t.render(vars), "3");
  EXPECT_EQ(t.render(vars), "3");
  EXPECT_EQ(vars.dict_obj().find("items")->items().size(), 2u);
}

TEST(JinjaEngine, StrictPythonStrAndReprOfValues) {
  EXPECT_EQ(render("{{ [1.5, 'it\\'s', none, {'a': (1,)}] }}"), "[1.5, \"it's\", None, {'a': (1,)}]");
  EXPECT_EQ(render("{{ 1e100 }} {{ 123456789012345678 }} {{ 0.1 }}"), "1e+100 123456789012345678 0.1");
}

// Random mutations of real templates must parse or fail with TemplateError; rendering a parsed
// mutant must succeed or fail with TemplateError - never crash or hang.
TEST(JinjaEngine, MutatedTemplatesNeverCrash) {
  namespace fs = std::filesystem;
  std::vector<std::string> sources;
  for (auto& entry : fs::directory_iterator(ferrum::test::data_path("chat/templates"))) {
    std::ifstream f(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    sources.push_back(ss.str());
  }
  ASSERT_EQ(sources.size(), 14u);  // tests/data/chat/templates
  auto messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "abcdefghi", "type": "function",
      "function": {"name": "f", "arguments": {"a": 1}}}]},
    {"role": "tool", "tool_call_id": "abcdefghi", "content": "42"}, {"role": "user", "content": "ok"}])");
  const std::string alphabet = "{}%#-+()[]|.,:~'\"\n =!<>*/abcxyz019_";
  std::mt19937 rng(1234);
  int parsed = 0, rendered = 0, failed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string src = sources[iter % sources.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits && !src.empty(); ++k) {
      size_t pos = rng() % src.size();
      switch (rng() % 3) {
        case 0:
          src.erase(pos, 1 + rng() % 8);
          break;
        case 1:
          src.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          src[pos] = alphabet[rng() % alphabet.size()];
      }
    }
    try {
      ferrum::ChatTemplate t(src, "mutant");
      ++parsed;
      ferrum::ChatTemplateOptions opt;
      opt.tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
      t.render(messages, opt);
      ++rendered;
    } catch (const ferrum::Error&) {
      ++failed;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(failed, 0);
  EXPECT_EQ(rendered + failed, 3000);
  std::printf("mutants: %d parsed, %d rendered, %d failed cleanly\n", parsed, rendered, failed);
}

// A parsed template is immutable: concurrent renders (a server's request threads) are safe.
TEST(JinjaEngine, ConcurrentRendersAgree) {
  std::ifstream f(ferrum::test::data_path("chat/templates/Qwen-Qwen3-0.6B.jinja"), std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  const ferrum::ChatTemplate t(ss.str(), "qwen3");
  auto messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"},
    {"role": "assistant", "content": "<think>r</think>ok"}, {"role": "user", "content": "again"}])");
  ferrum::ChatTemplateOptions opt;
  const std::string want = t.render(messages, opt);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int i = 0; i < 100; ++i) mismatches[k] += t.render(messages, opt) != want;
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
  EXPECT_NE(want.find("<|im_start|>assistant\nok<|im_end|>"), std::string::npos) << want;
}

TEST(JinjaEngine, ChatTemplateRejectsBadInputs) {
  ferrum::ChatTemplate t("{{ messages | length }}", "t");
  ferrum::ChatTemplateOptions opt;
  EXPECT_THROW(t.render(nlohmann::ordered_json::object(), opt), ferrum::Error);
  opt.extra = nlohmann::ordered_json::array();
  EXPECT_THROW(t.render(nlohmann::ordered_json::array(), opt), ferrum::Error);
  // A plain nlohmann::json converts (with its keys sorted).
  nlohmann::json plain = nlohmann::json::parse(R"([{"role": "user", "content": "x"}])");
  opt.extra = nullptr;
  EXPECT_EQ(t.render(plain, opt), "1");
}

}  // namespace
