#include "grammar/matcher.h"

#include <algorithm>

#include "core/fail.h"

namespace ferrum::grammar {

namespace {
constexpr uint32_t kUnset = UINT32_MAX;

void sort_unique(Matcher::State& s) {
  if (s.size() < 2) return;
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
}
}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  for (int i = 0; i < 2; ++i) {  // kEnd, kEscape
    nodes_.push_back({0, 0});
    adv_begin_.push_back(kUnset);
    adv_len_.push_back(0);
  }
  State init;
  for (uint32_t a : g_->alts.at(g_->root)) expand(a, kEnd, init);
  sort_unique(init);
  history_.push_back(std::move(init));
}

uint32_t Matcher::intern(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  auto [it, fresh] = ids_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (fresh) {
    nodes_.push_back({pos, parent});
    adv_begin_.push_back(kUnset);
    adv_len_.push_back(0);
  }
  return it->second;
}

// Pushes every stack whose top is a byte set, reachable from position `pos` with `parent` below.
// Ends of alternatives are popped in a loop; references recurse, as deep as the grammar nests
// rules at one point plus the nullable continuations popped on the way, which input can grow
// (a run of openings over nullable tails), hence the bound.
void Matcher::expand(uint32_t pos, uint32_t parent, State& out, int depth) {
  if (depth > kMaxExpandDepth)
    fail("grammar: the output nests deeper than {} levels at one point of the grammar", kMaxExpandDepth);
  for (;;) {
    const Element& e = g_->elems[pos];
    if (e.kind == Element::Bytes) {
      out.push_back(intern(pos, parent));
      return;
    }
    if (e.kind == Element::End) {
      if (parent == kEnd || parent == kEscape) {
        out.push_back(parent);
        return;
      }
      pos = nodes_[parent].pos;
      parent = nodes_[parent].parent;
      continue;
    }
    const uint32_t next = g_->elems[pos + 1].kind == Element::End ? parent : intern(pos + 1, parent);
    for (uint32_t a : g_->alts[e.arg]) expand(a, next, out, depth + 1);
    return;
  }
}

void Matcher::compute_advance(uint32_t node) {
  State s;
  const Node n = nodes_[node];
  expand(n.pos + 1, n.parent, s);
  sort_unique(s);
  adv_begin_[node] = static_cast<uint32_t>(adv_pool_.size());
  adv_len_[node] = static_cast<uint32_t>(s.size());
  adv_pool_.insert(adv_pool_.end(), s.begin(), s.end());
}

void Matcher::step(const State& in, uint8_t b, State& out) {
  out.clear();
  int sources = 0;
  for (uint32_t s : in) {
    if (s == kEnd || s == kEscape) continue;
    const uint32_t pos = nodes_[s].pos;
    if (!g_->sets[g_->elems[pos].arg].has(b)) continue;
    if (adv_begin_[s] == kUnset) compute_advance(s);
    const uint32_t* p = adv_pool_.data() + adv_begin_[s];
    out.insert(out.end(), p, p + adv_len_[s]);
    ++sources;
  }
  if (sources > 1) sort_unique(out);
}

void Matcher::top_positions(uint32_t node, size_t k, std::vector<uint32_t>& out) const {
  out.clear();
  for (; node != kEnd && node != kEscape && out.size() < k; node = nodes_[node].parent)
    out.push_back(nodes_[node].pos);
}

uint32_t Matcher::detached(const std::vector<uint32_t>& positions) {
  uint32_t node = kEscape;
  for (size_t i = positions.size(); i-- > 0;) node = intern(positions[i], node);
  return node;
}

bool Matcher::accept(std::string_view bytes) {
  State cur = state(), next;
  for (unsigned char c : bytes) {
    step(cur, c, next);
    if (next.empty()) return false;
    cur.swap(next);
  }
  history_.push_back(std::move(cur));
  return true;
}

void Matcher::rollback(size_t n) {
  if (n > history_size())
    fail("grammar: cannot roll back {} tokens, only {} were accepted", n, history_size());
  history_.resize(history_.size() - n);
}

}  // namespace ferrum::grammar
