// GrammarBuilder::build: Expr trees -> the flat Grammar (see grammar.h), and the checks that keep
// the matcher's expansion finite (no undefined rules, no left recursion).
#include <algorithm>

#include "core/fail.h"
#include "grammar/grammar.h"
#include "grammar/utf8_ranges.h"

namespace ferrum::grammar {

Expr Expr::seq(std::vector<Expr> items) {
  Expr e;
  e.kind = Kind::Seq;
  e.items = std::move(items);
  return e;
}
Expr Expr::alt(std::vector<Expr> items) {
  Expr e;
  e.kind = Kind::Alt;
  e.items = std::move(items);
  return e;
}
Expr Expr::chars(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated) {
  Expr e;
  e.kind = Kind::Chars;
  e.ranges = std::move(ranges);
  e.negated = negated;
  return e;
}
Expr Expr::literal(std::string_view utf8) {
  // Byte by byte: a byte above 0x7F taken as a code point would be re-encoded.
  std::vector<Expr> items;
  for (unsigned char c : utf8) {
    Expr b = chars({{c, c}});
    b.raw = true;
    items.push_back(std::move(b));
  }
  return seq(std::move(items));
}
Expr Expr::ref(std::string name) {
  Expr e;
  e.kind = Kind::Ref;
  e.name = std::move(name);
  return e;
}
Expr Expr::repeat(Expr item, int min, int max) {
  Expr e;
  e.kind = Kind::Repeat;
  e.items.push_back(std::move(item));
  e.min = min;
  e.max = max;
  return e;
}

void GrammarBuilder::define(const std::string& name, Expr body) {
  if (rules_.count(name)) fail("grammar: rule '{}' is defined twice", name);
  rules_.emplace(name, std::move(body));
  order_.push_back(name);
}

namespace {

using Body = std::vector<Element>;

class Flattener {
 public:
  Flattener(const std::map<std::string, Expr>& rules, const std::vector<std::string>& order) {
    for (const auto& n : order) add_rule(n);
    for (const auto& n : order) {
      const uint32_t id = ids_.at(n);
      bodies_[id] = alternatives(rules.at(n), n);
    }
  }

  Grammar finish(const std::string& root) {
    auto it = ids_.find(root);
    if (it == ids_.end()) fail("grammar: no rule named '{}' (the start rule)", root);
    check_left_recursion();
    Grammar g;
    g.root = it->second;
    g.sets = std::move(sets_);
    g.names = std::move(names_);
    g.alts.resize(bodies_.size());
    for (uint32_t r = 0; r < bodies_.size(); ++r)
      for (const Body& alt : bodies_[r]) {
        g.alts[r].push_back(static_cast<uint32_t>(g.elems.size()));
        g.elems.insert(g.elems.end(), alt.begin(), alt.end());
        g.elems.push_back({Element::End, r});
      }
    return g;
  }

 private:
  uint32_t add_rule(const std::string& name) {
    const auto id = static_cast<uint32_t>(names_.size());
    names_.push_back(name);
    bodies_.emplace_back();
    ids_.emplace(name, id);
    return id;
  }
  uint32_t new_rule(const std::string& owner, std::vector<Body> alts) {
    const uint32_t id = add_rule(owner + "_" + std::to_string(names_.size()));
    bodies_[id] = std::move(alts);
    return id;
  }

  std::vector<Body> alternatives(const Expr& e, const std::string& owner) {
    std::vector<Body> out;
    if (e.kind == Expr::Kind::Alt) {
      for (const Expr& a : e.items) out.push_back(emit_all(a, owner));
    } else {
      out.push_back(emit_all(e, owner));
    }
    return out;
  }
  Body emit_all(const Expr& e, const std::string& owner) {
    Body b;
    emit(e, owner, b);
    return b;
  }

  void emit(const Expr& e, const std::string& owner, Body& out) {
    switch (e.kind) {
      case Expr::Kind::Seq:
        for (const Expr& x : e.items) emit(x, owner, out);
        return;
      case Expr::Kind::Alt:
        if (e.items.size() == 1) return emit(e.items[0], owner, out);
        out.push_back({Element::Ref, new_rule(owner, alternatives(e, owner))});
        return;
      case Expr::Kind::Ref: {
        auto it = ids_.find(e.name);
        if (it == ids_.end()) fail("grammar: rule '{}' (used in '{}') is not defined", e.name, owner);
        out.push_back({Element::Ref, it->second});
        return;
      }
      case Expr::Kind::Chars:
        return chars(e, owner, out);
      case Expr::Kind::Repeat:
        return repeat(e, owner, out);
    }
  }

  uint32_t set_index(const ByteSet& s) {
    auto [it, fresh] = set_ids_.emplace(s, static_cast<uint32_t>(sets_.size()));
    if (fresh) sets_.push_back(s);
    return it->second;
  }

  void chars(const Expr& e, const std::string& owner, Body& out) {
    if (e.raw) {
      ByteSet s;
      for (auto [lo, hi] : e.ranges)
        s.add_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(std::min(hi, 255u)));
      out.push_back({Element::Bytes, set_index(s)});
      return;
    }
    auto ranges = e.negated ? complement(e.ranges) : e.ranges;
    auto key = std::make_pair(ranges, false);
    if (auto it = class_rules_.find(key); it != class_rules_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
    // One-byte sequences share one byte set; each longer sequence is an alternative.
    std::vector<Body> alts;
    ByteSet ascii;
    bool any_ascii = false;
    for (const Utf8Sequence& seq : utf8_sequences(ranges)) {
      if (seq.size() == 1) {
        ascii.add_range(seq[0].lo, seq[0].hi);
        any_ascii = true;
        continue;
      }
      Body b;
      for (ByteRange r : seq) {
        ByteSet s;
        s.add_range(r.lo, r.hi);
        b.push_back({Element::Bytes, set_index(s)});
      }
      alts.push_back(std::move(b));
    }
    if (any_ascii) alts.insert(alts.begin(), Body{{Element::Bytes, set_index(ascii)}});
    if (alts.empty()) fail("grammar: an empty character class in rule '{}' matches nothing", owner);
    Body result = alts.size() == 1 ? alts[0] : Body{{Element::Ref, new_rule(owner, std::move(alts))}};
    class_rules_.emplace(std::move(key), result);
    out.insert(out.end(), result.begin(), result.end());
  }

  void repeat(const Expr& e, const std::string& owner, Body& out) {
    if (e.min < 0 || e.min > kMaxRepeat || e.max > kMaxRepeat || (e.max >= 0 && e.max < e.min))
      fail("grammar: repetition {{{},{}}} in rule '{}' is out of range (0 <= min <= max <= {})", e.min, e.max,
           owner, kMaxRepeat);
    const Body x = emit_all(e.items[0], owner);
    charge(owner, x.size() * static_cast<size_t>(std::max(e.min, e.max) + 1));
    for (int i = 0; i < e.min; ++i) out.insert(out.end(), x.begin(), x.end());
    if (e.max < 0) {  // R ::= x R | (empty)
      const uint32_t r = new_rule(owner, {});
      Body more = x;
      more.push_back({Element::Ref, r});
      bodies_[r] = {std::move(more), Body{}};
      out.push_back({Element::Ref, r});
      return;
    }
    // O_k ::= x O_(k-1) | (empty), nested so the optional copies follow one another.
    uint32_t prev = 0;
    for (int k = 1; k <= e.max - e.min; ++k) {
      Body more = x;
      if (k > 1) more.push_back({Element::Ref, prev});
      prev = new_rule(owner, {std::move(more), Body{}});
    }
    if (e.max > e.min) out.push_back({Element::Ref, prev});
  }

  // Unrolled repetition grows the grammar multiplicatively ({1000}{1000}); bound its size.
  void charge(const std::string& owner, size_t elements) {
    elements_ += elements;
    if (elements_ > kMaxElements)
      fail("grammar: rule '{}' unrolls to more than {} elements (nested repetition counts?)", owner,
           kMaxElements);
  }
  static constexpr size_t kMaxElements = 4'000'000;
  size_t elements_ = 0;

  // A rule that can reach itself as its own leftmost element (through nullable prefixes) would
  // make the matcher expand forever.
  void check_left_recursion() const {
    const size_t n = bodies_.size();
    std::vector<char> nullable(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const Body& alt : bodies_[r])
          if (std::all_of(alt.begin(), alt.end(),
                          [&](const Element& el) { return el.kind == Element::Ref && nullable[el.arg]; })) {
            nullable[r] = changed = true;
            break;
          }
      }
    }
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r)
      for (const Body& alt : bodies_[r])
        for (const Element& el : alt) {
          if (el.kind != Element::Ref) break;
          left[r].push_back(el.arg);
          if (!nullable[el.arg]) break;
        }
    // Depth-first search with an explicit stack (a long chain of rules must not overflow it).
    std::vector<char> color(n, 0);                  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;  // rule, next edge
    for (uint32_t r0 = 0; r0 < n; ++r0) {
      if (color[r0]) continue;
      color[r0] = 1;
      path.emplace_back(r0, 0);
      while (!path.empty()) {
        auto& [r, k] = path.back();
        if (k == left[r].size()) {
          color[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t s = left[r][k++];
        if (color[s] == 1) fail("grammar: rule '{}' is left-recursive (it can start with itself)", names_[s]);
        if (color[s] == 0) {
          color[s] = 1;
          path.emplace_back(s, 0);
        }
      }
    }
  }

  std::map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
  std::vector<std::vector<Body>> bodies_;
  std::vector<ByteSet> sets_;
  std::map<ByteSet, uint32_t> set_ids_;
  std::map<std::pair<std::vector<std::pair<uint32_t, uint32_t>>, bool>, Body> class_rules_;
};

}  // namespace

Grammar GrammarBuilder::build(const std::string& root) const {
  Flattener f(rules_, order_);
  return f.finish(root);
}

}  // namespace ferrum::grammar
