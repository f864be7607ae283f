#include "grammar/json_schema.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "test_util.h"

namespace ferrum::grammar {
namespace {

using json = nlohmann::json;
using test::error_of;

struct Lang {
  std::shared_ptr<const Grammar> g;
  bool operator()(const std::string& s) const {
    Matcher m(g);
    return m.accept(s) && m.can_end();
  }
};
Lang schema(const json& s) {
  return {std::make_shared<const Grammar>(compile_gbnf(json_schema_gbnf(s)))};
}
Lang expr(const std::string& e) {
  return {std::make_shared<const Grammar>(compile_gbnf("root ::= " + e))};
}

TEST(JsonSchema, IntegerRangesMatchExactlyTheirIntegers) {
  const std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> ranges = {
      {0, 0},  {17, 4242}, {-1234, -7}, {-15, 309}, {100, std::nullopt}, {std::nullopt, -5},
      {-2, 2}, {1, 99999}};
  for (auto [lo, hi] : ranges) {
    SCOPED_TRACE(
        fmt::format("[{}, {}]", lo ? std::to_string(*lo) : "-inf", hi ? std::to_string(*hi) : "inf"));
    const Lang in = expr(integer_range_gbnf(lo, hi));
    for (int64_t v = -5000; v <= 5000; ++v)
      ASSERT_EQ(in(std::to_string(v)), (!lo || v >= *lo) && (!hi || v <= *hi)) << v;
    EXPECT_FALSE(in("-0"));
    EXPECT_FALSE(in("007"));
  }
  EXPECT_TRUE(expr(integer_range_gbnf(100, std::nullopt))("1234567890123456"));
}

TEST(JsonSchema, NumberBoundsAreInclusiveIntegers) {
  const Lang n = schema({{"type", "number"}, {"minimum", -2}, {"maximum", 3}});
  for (const char* ok : {"0", "3", "3.000", "2.999", "-2", "-2.0", "-1.5", "-0.25", "0.5", "1"})
    EXPECT_TRUE(n(ok)) << ok;
  for (const char* no : {"3.01", "4", "-2.5", "-3", "1e2", "03", "-"}) EXPECT_FALSE(n(no)) << no;
  const Lang pos = schema({{"type", "number"}, {"minimum", 0}});
  EXPECT_TRUE(pos("12345.5"));
  EXPECT_FALSE(pos("-0.5"));
  EXPECT_NE(error_of([] {
              schema({{"type", "number"}, {"minimum", 0.5}});
            }).find("'minimum' 0.5"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              schema({{"type", "number"}, {"exclusiveMinimum", 0}});
            }).find("integers only"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              schema({{"type", "integer"}, {"minimum", 5}, {"maximum", 4}});
            }).find("no value"),
            std::string::npos);
  const Lang ex = schema({{"type", "integer"}, {"exclusiveMinimum", -3}, {"exclusiveMaximum", 3}});
  EXPECT_TRUE(ex("-2") && ex("2"));
  EXPECT_FALSE(ex("-3") || ex("3"));
}

TEST(JsonSchema, ObjectsWithRequiredOptionalAndAdditionalMembers) {
  const Lang o = schema(
      {{"type", "object"},
       {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "string"}}}, {"c", {{"type", "null"}}}}},
       {"required", {"b"}}});
  for (const char* ok :
       {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"b":"x","c":null})", R"({"a":-5,"b":"","c":null})",
        "{ \"b\" : \"x\" , \"c\" : null }", "{\n  \"b\": \"x\"\n}"})
    EXPECT_TRUE(o(ok)) << ok;
  for (const char* no : {R"({})", R"({"a":1})", R"({"b":"x",})", R"({"b":"x","d":1})", R"({,"b":"x"})",
                         R"({"b":"x""c":null})", "{   \"b\":\"x\"}"})
    EXPECT_FALSE(o(no)) << no;
  const Lang extra = schema({{"type", "object"}, {"additionalProperties", {{"type", "boolean"}}}});
  EXPECT_TRUE(extra(R"({"x":true,"y":false})"));
  EXPECT_TRUE(extra("{}"));
  EXPECT_FALSE(extra(R"({"x":1})"));
  const Lang any = schema({{"type", "object"}, {"additionalProperties", true}});
  EXPECT_TRUE(any(R"({"x":[1,{"y":null}],"z":"\u00e9\n"})"));
  EXPECT_TRUE(expr("x\nx ::= " + std::string("\"{}\""))("{}"));  // the helper itself
}

TEST(JsonSchema, ArraysEnumsConstAnyOfAndRefs) {
  const Lang a =
      schema({{"type", "array"}, {"items", {{"enum", {"a", 1, nullptr}}}}, {"minItems", 2}, {"maxItems", 3}});
  EXPECT_TRUE(a(R"(["a",1])"));
  EXPECT_TRUE(a(R"([null, "a", 1])"));
  EXPECT_FALSE(a(R"(["a"])"));
  EXPECT_FALSE(a(R"(["a",1,1,1])"));
  EXPECT_FALSE(a(R"(["b",1])"));
  const Lang c = schema({{"const", {{"k", {1, 2}}}}});
  EXPECT_TRUE(c(R"({"k":[1,2]})"));
  EXPECT_FALSE(c(R"({"k":[1,3]})"));
  const Lang u = schema({{"anyOf", {{{"type", "integer"}}, {{"type", "string"}, {"maxLength", 2}}}}});
  EXPECT_TRUE(u("12") && u(R"("ab")"));
  EXPECT_FALSE(u(R"("abc")") || u("true"));
  const Lang tree = schema(
      {{"$defs", {{"t", {{"type", "array"}, {"items", {{"$ref", "#/$defs/t"}}}}}}}, {"$ref", "#/$defs/t"}});
  EXPECT_TRUE(tree("[[],[[[]]]]"));
  EXPECT_FALSE(tree("[[],[[[]]]"));
  const Lang self = schema({{"type", "object"}, {"properties", {{"next", {{"$ref", "#"}}}}}});
  EXPECT_TRUE(self(R"({"next":{"next":{}}})"));
}

TEST(JsonSchema, StringsLengthsEscapesPatternsAndFormats) {
  const Lang s = schema({{"type", "string"}, {"minLength", 2}, {"maxLength", 3}});
  EXPECT_TRUE(s(R"("ab")") && s(R"("\n\u00e9")") && s("\"\xC3\xA9t\xC3\xA9\""));
  EXPECT_FALSE(s(R"("a")") || s(R"("abcd")") || s("\"a\nb\"") || s(R"("\ud800x")"));
  const Lang p = schema({{"type", "string"}, {"pattern", "^[A-Z]{2}\\d{2}(-x)?$"}});
  EXPECT_TRUE(p(R"("AB12")") && p(R"("AB12-x")"));
  EXPECT_FALSE(p(R"("AB1")") || p(R"("ab12")") || p(R"("AB12-")"));
  const Lang unanchored = schema({{"type", "string"}, {"pattern", "b+c"}});
  EXPECT_TRUE(unanchored(R"("xxbbcyy")") && unanchored(R"("bc")"));
  EXPECT_FALSE(unanchored(R"("xxb")"));
  const Lang quote = schema({{"type", "string"}, {"pattern", "^a\"[^a]$"}});
  EXPECT_TRUE(quote(R"("a\"b")"));
  EXPECT_FALSE(quote(R"("a\""")") || quote(R"("a\"a")"));
  const Lang date = schema({{"type", "string"}, {"format", "date"}});
  EXPECT_TRUE(date(R"("2024-02-28")") && date(R"("0001-12-31")"));
  EXPECT_FALSE(date(R"("2024-02-30")") || date(R"("0000-01-01")") || date(R"("2024-13-01")"));
  const Lang uuid = schema({{"type", "string"}, {"format", "uuid"}});
  EXPECT_TRUE(uuid(R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(uuid(R"("123e4567-e89b-12d3-a456-42661417400")"));
  const Lang dt = schema({{"type", "string"}, {"format", "date-time"}});
  EXPECT_TRUE(dt(R"("2024-05-01T23:59:59.5+02:00")") && dt(R"("2024-05-01T00:00:00Z")"));
  EXPECT_FALSE(dt(R"("2024-05-01T24:00:00Z")"));
}

TEST(JsonSchema, UnsupportedKeywordsAreErrorsNamingKeywordAndPath) {
  EXPECT_EQ(
      error_of([] {
        schema({{"type", "object"}, {"properties", {{"a", {{"type", "array"}, {"uniqueItems", true}}}}}});
      }),
      "json_schema: unsupported keyword 'uniqueItems' (at #/properties/a)");
  EXPECT_NE(error_of([] { schema({{"allOf", json::array()}}); }).find("'allOf'"), std::string::npos);
  EXPECT_NE(error_of([] {
              schema({{"type", "string"}, {"format", "ipv4"}});
            }).find("'ipv4'"),
            std::string::npos);
  EXPECT_NE(error_of([] { schema({{"type", "strin"}}); }).find("unknown type 'strin'"), std::string::npos);
  EXPECT_NE(error_of([] { schema({{"$ref", "#/$defs/nope"}}); }).find("\"#/$defs/nope\""), std::string::npos);
  EXPECT_NE(error_of([] {
              schema({{"type", "string"}, {"pattern", "(?=a)"}});
            }).find("lookaround"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              schema({{"type", "string"}, {"pattern", "a\\bc"}});
            }).find("'\\b'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              schema({{"type", "array"}, {"maxItems", -1}});
            }).find("maxItems"),
            std::string::npos);
  EXPECT_NE(error_of([] { schema(false); }).find("matches nothing"), std::string::npos);
}

TEST(JsonSchema, ComposesWithALiteralPrefixForToolCalls) {
  GrammarBuilder b;
  add_json_schema(
      b, {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}},
      "args");
  b.define("root",
           Expr::seq({Expr::literal("<tool_call>"), Expr::ref("args"), Expr::literal("</tool_call>")}));
  auto g = std::make_shared<const Grammar>(b.build("root"));
  Matcher m(g);
  EXPECT_TRUE(m.accept(R"(<tool_call>{"city":"Paris"}</tool_call>)") && m.can_end());
  Matcher bad(g);
  EXPECT_FALSE(bad.accept(R"(<tool_call>{"town":"Paris"})"));
}

TEST(JsonSchema, WhitespaceBetweenTokensIsBounded) {
  const Lang o = schema({{"type", "array"}, {"items", {{"type", "integer"}}}});
  EXPECT_TRUE(o("[1, 2,\n    3]"));
  EXPECT_TRUE(o("[\n" + std::string(20, ' ') + "1]"));
  EXPECT_FALSE(o("[\n" + std::string(21, ' ') + "1]"));
  EXPECT_FALSE(o("[  1]"));
}

}  // namespace
}  // namespace ferrum::grammar
