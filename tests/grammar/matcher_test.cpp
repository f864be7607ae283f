#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <memory>

#include "grammar/gbnf.h"
#include "test_util.h"

namespace ferrum::grammar {
namespace {

using test::error_of;

std::shared_ptr<const Grammar> gbnf(const std::string& text) {
  return std::make_shared<const Grammar>(compile_gbnf(text));
}

// Whether the whole string is in the language.
bool matches(const std::string& text, const std::string& s) {
  Matcher m(gbnf(text));
  return m.accept(s) && m.can_end();
}
// Whether s is a prefix of some string in the language.
bool prefix_ok(const std::string& text, const std::string& s) {
  Matcher m(gbnf(text));
  return m.accept(s);
}

TEST(Gbnf, LiteralsAlternativesAndGroups) {
  const std::string g = "root ::= \"ab\" (\"c\" | \"d\") | \"x\"";
  EXPECT_TRUE(matches(g, "abc"));
  EXPECT_TRUE(matches(g, "abd"));
  EXPECT_TRUE(matches(g, "x"));
  EXPECT_FALSE(matches(g, "ab"));
  EXPECT_TRUE(prefix_ok(g, "ab"));
  EXPECT_FALSE(prefix_ok(g, "abx"));
  EXPECT_FALSE(matches(g, "abcd"));
}

TEST(Gbnf, RepetitionOperators) {
  EXPECT_TRUE(matches("root ::= \"a\"*", ""));
  EXPECT_TRUE(matches("root ::= \"a\"*", "aaaa"));
  EXPECT_FALSE(matches("root ::= \"a\"+", ""));
  EXPECT_TRUE(matches("root ::= \"a\"+ \"b\"?", "aab"));
  const std::string g = "root ::= [0-9]{2,4}";
  EXPECT_FALSE(matches(g, "1"));
  EXPECT_TRUE(matches(g, "12"));
  EXPECT_TRUE(matches(g, "1234"));
  EXPECT_FALSE(prefix_ok(g, "12345"));
  EXPECT_TRUE(matches("root ::= \"a\"{3}", "aaa"));
  EXPECT_FALSE(matches("root ::= \"a\"{3}", "aa"));
  EXPECT_TRUE(matches("root ::= \"a\"{2,}", "aaaaaaa"));
  EXPECT_FALSE(matches("root ::= \"a\"{2,}", "a"));
}

TEST(Gbnf, CharacterClassesOverUtf8) {
  const std::string g = "root ::= [^\"\\\\]*";  // no quote, no backslash
  EXPECT_TRUE(matches(g, "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(matches(g, "a\"b"));
  EXPECT_FALSE(prefix_ok(g, "\xC3\x28"));      // invalid continuation byte
  EXPECT_FALSE(prefix_ok(g, "\xED\xA0\x80"));  // a surrogate is not UTF-8
  EXPECT_TRUE(prefix_ok(g, "\xE2\x82"));       // an incomplete character is a valid prefix
  EXPECT_FALSE(matches(g, "\xE2\x82"));
  EXPECT_TRUE(matches("root ::= [\\u00e0-\\u00ff]", "\xC3\xA9"));
  EXPECT_FALSE(matches("root ::= [\\u00e0-\\u00ff]", "\xC3\x89"));
  EXPECT_TRUE(matches("root ::= \"\\x41\\n\" [\\t]", "A\n\t"));
  EXPECT_TRUE(matches("root ::= .", "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(matches("root ::= [a-zA-Z_-]+", "a-Z_"));
}

TEST(Gbnf, CommentsNewlinesAndContinuationLines) {
  const std::string g =
      "# a comment\n"
      "root ::= item (\n"
      "   \",\" item  # inside a group\n"
      ")*\n"
      "item ::= \"a\"\n"
      "  | \"b\"\n";
  EXPECT_TRUE(matches(g, "a,b,a"));
  EXPECT_FALSE(matches(g, "a,"));
}

TEST(Gbnf, RecursionNestsAndMayEndOnlyWhenBalanced) {
  const std::string g = "root ::= \"(\" root \")\" | \"x\"";
  EXPECT_TRUE(matches(g, "(((x)))"));
  EXPECT_FALSE(matches(g, "((x)"));
  EXPECT_TRUE(prefix_ok(g, "((x)"));
  EXPECT_FALSE(prefix_ok(g, "(x))"));
}

TEST(Gbnf, ErrorsNameLineAndColumn) {
  EXPECT_NE(error_of([] { compile_gbnf("root ::= \"a\"\nfoo ::= [a-\n"); }).find("line 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= \"abc"); }).find("unterminated string literal"),
            std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= missing"); }).find("'missing'"), std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("start ::= \"a\""); }).find("'root'"), std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= root \"a\" | \"b\""); }).find("left-recursive"),
            std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= \"a\"\nroot ::= \"b\""); }).find("defined twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= [z-a]"); }).find("line 1, column"), std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= \"a\"{3,2}"); }).find("max < min"), std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= \"\\q\""); }).find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= (\"a\""); }).find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf("root ::= \"a\" b ::= \"c\""); }).find("missing newline"),
            std::string::npos);
}

TEST(Matcher, RollbackRestoresEarlierStates) {
  Matcher m(gbnf("root ::= \"ab\" \"c\"* \"d\""));
  ASSERT_TRUE(m.accept("a"));
  ASSERT_TRUE(m.accept("bc"));
  ASSERT_TRUE(m.accept("cc"));
  EXPECT_EQ(m.history_size(), 3u);
  EXPECT_FALSE(m.accept("x"));  // a rejected chunk changes nothing
  EXPECT_EQ(m.history_size(), 3u);
  m.rollback(2);
  EXPECT_EQ(m.history_size(), 1u);
  EXPECT_FALSE(m.accept("d"));  // after "a" only "b" may follow
  ASSERT_TRUE(m.accept("bd"));
  EXPECT_TRUE(m.done());
  EXPECT_NE(error_of([&] { m.rollback(5); }).find("cannot roll back"), std::string::npos);
}

TEST(Matcher, DeepRightRecursionKeepsStacksFlat) {
  Matcher m(gbnf("root ::= \"a\"* \"b\""));
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(m.accept("a"));
  EXPECT_EQ(m.state().size(), 2u);  // the "a" and the "b" positions
  EXPECT_TRUE(m.accept("b"));
  EXPECT_TRUE(m.can_end());
}

}  // namespace
}  // namespace ferrum::grammar

namespace ferrum::grammar {
namespace {

TEST(Matcher, NestingPastTheBoundIsAnErrorNotACrash) {
  // Every level leaves a nullable tail (ws), so popping back down recurses once per level.
  auto g = std::make_shared<const Grammar>(compile_gbnf("root ::= \"[\" root? ws\nws ::= \" \"?"));
  Matcher ok(g);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(ok.accept("["));
  Matcher deep(g);
  std::string err;
  try {
    for (int i = 0; i < 10000; ++i) deep.accept("[");
  } catch (const Error& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("nests deeper than"), std::string::npos) << err;
  EXPECT_NE(test::error_of([] {
              compile_gbnf("root ::= " + std::string(100, '(') + "\"a\"" + std::string(100, ')'));
            }).find("groups nest deeper than 64"),
            std::string::npos);
  // A long chain of rules (not recursive) builds without overflowing the checker's stack.
  std::string chain;
  for (int i = 0; i < 20000; ++i)
    chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"a\"\n";
  chain += "r20000 ::= \"b\"\nroot ::= \"z\"\n";
  EXPECT_NO_THROW(compile_gbnf(chain));
}

}  // namespace
}  // namespace ferrum::grammar

namespace ferrum::grammar {
namespace {

TEST(Gbnf, UnrolledRepetitionIsBounded) {
  EXPECT_NE(
      test::error_of([] { compile_gbnf("root ::= ((\"ab\"){10000}){10000}"); }).find("unrolls to more than"),
      std::string::npos);
  EXPECT_NE(test::error_of([] { compile_gbnf("root ::= \"a\"{10001}"); }).find("repetition count above"),
            std::string::npos);
}

}  // namespace
}  // namespace ferrum::grammar
