// Structured outputs over HTTP: response_format (json_object, json_schema) and llama.cpp's
// `grammar`, in /v1/chat/completions and /v1/completions; invalid grammars and schemas are 400s
// naming the problem and the field.
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace ferrum::test {
namespace {

using json = nlohmann::json;

const json kMessages = json::array({{{"role", "user"}, {"content", "Tell me about a cat."}}});

json schema_format(const json& schema) {
  return {{"type", "json_schema"},
          {"json_schema", {{"name", "answer"}, {"schema", schema}, {"strict", true}}}};
}

TEST(GrammarRequests, ResponseFormatsAndGrammarConstrainTheOutput) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  const json schema = {
      {"type", "object"},
      {"properties",
       {{"n", {{"type", "integer"}, {"minimum", 1}, {"maximum", 9}}}, {"ok", {{"type", "boolean"}}}}},
      {"required", {"n", "ok"}}};
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    int status = 0;
    json r = test::post_json(c, "/v1/chat/completions",
                             {{"messages", kMessages},
                              {"max_tokens", 60},
                              {"seed", seed},
                              {"response_format", schema_format(schema)}},
                             &status);
    ASSERT_EQ(status, 200) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
    const json out = json::parse(r["choices"][0]["message"]["content"].get<std::string>());
    EXPECT_TRUE(out["n"].is_number_integer() && out["n"] >= 1 && out["n"] <= 9) << out;
    EXPECT_TRUE(out["ok"].is_boolean()) << out;
    EXPECT_EQ(out.size(), 2u) << out;
  }
  int status = 0;
  json r = test::post_json(
      c, "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"grammar", "root ::= (\"yes\" | \"no\") \"!\""}},
      &status);
  ASSERT_EQ(status, 200) << r.dump();
  const std::string text = r["choices"][0]["text"];
  EXPECT_TRUE(text == "yes!" || text == "no!") << text;
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");

  r = test::post_json(c, "/v1/chat/completions",
                      {{"messages", kMessages},
                       {"max_tokens", 200},
                       {"seed", 7},
                       {"response_format", {{"type", "json_object"}}}},
                      &status);
  ASSERT_EQ(status, 200) << r.dump();
  if (r["choices"][0]["finish_reason"] == "stop")
    EXPECT_TRUE(json::parse(r["choices"][0]["message"]["content"].get<std::string>()).is_object());
}

TEST(GrammarRequests, GrammarThatCannotEndWithinMaxTokensFinishesWithLength) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  int status = 0;
  json r = test::post_json(
      c, "/v1/completions",
      {{"prompt", "Once"}, {"max_tokens", 3}, {"grammar", "root ::= \"[\" [a-z]{40} \"]\""}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
}

TEST(GrammarRequests, InvalidGrammarsAndSchemasAre400sNamingTheProblem) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  struct Case {
    json extra;
    std::string param, message_part;
  };
  const std::vector<Case> cases = {
      {{{"grammar", "root ::= \"a\" (\n"}}, "grammar", "line 2, column 1: expected ')'"},
      {{{"grammar", "root ::= undefined-rule"}}, "grammar", "undefined-rule"},
      {{{"grammar", 5}}, "grammar", "must be a string"},
      {{{"response_format", schema_format({{"type", "object"}, {"minProperties", 1}})}},
       "response_format.json_schema.schema",
       "unsupported keyword 'minProperties'"},
      {{{"response_format",
         schema_format({{"type", "object"}, {"properties", {{"a", {{"allOf", json::array()}}}}}})}},
       "response_format.json_schema.schema",
       "#/properties/a"},
      {{{"response_format", schema_format({{"type", "integer"}, {"minimum", 0.5}})}},
       "response_format.json_schema.schema",
       "minimum"},
      {{{"response_format", schema_format({{"$ref", "#/$defs/missing"}})}},
       "response_format.json_schema.schema",
       "$ref"},
      {{{"response_format", {{"type", "xml"}}}}, "response_format.type", "'xml'"},
      {{{"response_format", {{"type", "json_schema"}}}}, "response_format.json_schema", "schema"},
      {{{"response_format", "json"}}, "response_format", "object"},
      {{{"response_format", {{"type", "json_object"}}}, {"grammar", "root ::= \"a\""}}, "grammar", "exclude"},
  };
  for (const auto& k : cases) {
    json body = {{"messages", kMessages}, {"max_tokens", 4}};
    body.update(k.extra);
    int status = 0;
    json r = test::post_json(c, "/v1/chat/completions", body, &status);
    EXPECT_EQ(status, 400) << k.extra.dump() << " -> " << r.dump();
    EXPECT_EQ(r["error"]["param"], k.param) << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(k.message_part), std::string::npos) << r.dump();
  }
  // The server still answers.
  int status = 0;
  test::post_json(c, "/v1/chat/completions", {{"messages", kMessages}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 200);
}

}  // namespace
}  // namespace ferrum::test
