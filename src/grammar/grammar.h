// A context-free grammar over UTF-8 bytes, the form every structured-output input (GBNF, JSON
// Schema, later tool-call formats) is compiled to, and the builder that produces it.
//
// Grammar is the flattened, immutable result: every rule is a list of alternatives, every
// alternative a run of elements (a byte set or a reference to a rule) ended by an End element.
// Character classes over code points are turned into byte-set sequences (UTF-8), repetition into
// right-recursive helper rules, so the matcher (matcher.h) sees only bytes and rule references.
//
// Expr is the builder's input, a tree of sequences, alternations, character classes, rule
// references and bounded/unbounded repetition. Rules can be built programmatically or parsed from
// GBNF (gbnf.h); both go through GrammarBuilder, so grammars compose: a tool-call grammar is a
// literal prefix followed by a reference to a rule made from a JSON schema.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferrum::grammar {

// A set of bytes, one bit each.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool operator==(const ByteSet&) const = default;
  auto operator<=>(const ByteSet&) const = default;
};

struct Element {
  enum Kind : uint8_t { Bytes, Ref, End };
  Kind kind;
  uint32_t arg;  // Bytes: index into Grammar::sets; Ref: rule id; End: the rule id it ends
};

struct Grammar {
  std::vector<Element> elems;               // all alternatives, each ended by End
  std::vector<ByteSet> sets;                // byte sets referred to by Bytes elements
  std::vector<std::vector<uint32_t>> alts;  // per rule: start index of each alternative
  std::vector<std::string> names;           // per rule, for messages
  uint32_t root = 0;
};

// A node of a rule body.
struct Expr {
  enum class Kind { Seq, Alt, Chars, Ref, Repeat };
  Kind kind = Kind::Seq;
  std::vector<Expr> items;                            // Seq/Alt: children; Repeat: the repeated one
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // Chars: inclusive code point ranges
  bool negated = false;                               // Chars: every code point not in `ranges`
  bool raw = false;                                   // Chars: `ranges` are bytes, not code points
  std::string name;                                   // Ref: rule name
  int min = 0, max = -1;                              // Repeat: max -1 is unbounded

  static Expr seq(std::vector<Expr> items);
  static Expr alt(std::vector<Expr> items);
  static Expr chars(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated = false);
  static Expr literal(std::string_view utf8);  // the exact bytes of a (valid UTF-8) string
  static Expr ref(std::string name);
  static Expr repeat(Expr item, int min, int max);
  static Expr empty() { return seq({}); }
};

// The most times a bounded repetition may be unrolled ({m,n} with n above this is an error).
inline constexpr int kMaxRepeat = 10000;

class GrammarBuilder {
 public:
  // Throws ferrum::Error when `name` is already defined.
  void define(const std::string& name, Expr body);
  bool defined(const std::string& name) const { return rules_.count(name) != 0; }
  // Flattens the rules reachable from `root`. Throws ferrum::Error naming an undefined rule, a
  // left-recursive rule (the matcher would expand it forever) or a repetition bound out of range.
  Grammar build(const std::string& root) const;

 private:
  std::map<std::string, Expr> rules_;
  std::vector<std::string> order_;  // definition order (stable rule ids)
};

}  // namespace ferrum::grammar
