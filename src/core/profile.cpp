#include "core/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace ferrum::profile {
namespace {

bool from_environment() {
  const char* e = std::getenv("FERRUM_PROFILE");
  return e && *e && std::strcmp(e, "0") != 0;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Key {
  Op op;
  const std::string* detail;  // by identity: no string is built on the hot path
  int layer;
  bool operator<(const Key& o) const {
    return std::tie(op, detail, layer) < std::tie(o.op, o.detail, o.layer);
  }
};
struct Totals {
  std::string detail;  // copied at the key's first use
  int64_t calls = 0, ns = 0;
};

struct Recorder {
  std::mutex mu;
  std::map<Key, Totals> totals;
  int64_t passes = 0;
};
Recorder& recorder() {
  static Recorder r;
  return r;
}

thread_local int t_layer = -1;
thread_local int64_t* t_child_ns = nullptr;  // the innermost open scope's child time

}  // namespace

std::atomic<bool> g_enabled{from_environment()};

const char* op_name(Op op) {
  switch (op) {
    case Op::Matmul:
      return "matmul";
    case Op::Attention:
      return "attention";
    case Op::Norm:
      return "norm";
    case Op::Rope:
      return "rope";
    case Op::KvWrite:
      return "kv write";
    case Op::Elementwise:
      return "elementwise";
    case Op::Lora:
      return "lora";
    case Op::Sampling:
      return "sampling";
    case Op::PoolWait:
      return "pool wait";
    case Op::Exchange:
      return "exchange";
  }
  return "?";
}

void enable(bool on) {
  take();
  g_enabled.store(on, std::memory_order_relaxed);
}

void set_layer(int layer) {
  t_layer = layer;
}

void count_pass() {
  if (!enabled()) return;
  Recorder& r = recorder();
  std::lock_guard lock(r.mu);
  ++r.passes;
}

void Scope::begin(Op op, const std::string* detail) {
  active_ = true;
  op_ = op;
  detail_ = detail;
  parent_child_ns_ = t_child_ns;
  t_child_ns = &child_ns_;
  t0_ = now_ns();
}

void Scope::end() {
  const int64_t elapsed = now_ns() - t0_;
  t_child_ns = parent_child_ns_;
  if (parent_child_ns_) *parent_child_ns_ += elapsed;
  Recorder& r = recorder();
  std::lock_guard lock(r.mu);
  Totals& t = r.totals[Key{op_, detail_, t_layer}];
  if (t.calls == 0 && detail_) t.detail = *detail_;
  ++t.calls;
  t.ns += elapsed - child_ns_;
}

Report take() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mu);
  Report out;
  out.passes = r.passes;
  for (const auto& [k, t] : r.totals) out.rows.push_back({k.op, t.detail, k.layer, t.calls, t.ns * 1e-9});
  r.totals.clear();
  r.passes = 0;
  return out;
}

std::string format(const Report& r, const std::string& title) {
  const double per = r.passes > 0 ? 1.0 / static_cast<double>(r.passes) : 1.0;
  double total = 0;
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, double>> by_op;  // (op, detail)
  std::map<int, double> by_layer;
  for (const Row& row : r.rows) {
    total += row.seconds;
    auto& e = by_op[{op_name(row.op), row.detail}];
    e.first += row.calls;
    e.second += row.seconds;
    by_layer[row.layer] += row.seconds;
  }
  std::vector<std::pair<std::pair<std::string, std::string>, std::pair<int64_t, double>>> ops(by_op.begin(),
                                                                                              by_op.end());
  std::sort(ops.begin(), ops.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::string s = fmt::format("\nprofile: {} ({} forward passes; ms per pass)\n", title, r.passes);
  s += fmt::format("| {:<11} | {:<22} | {:>9} | {:>9} | {:>6} |\n", "op", "detail", "calls/pass", "ms", "%");
  s += "|-------------|------------------------|------------|-----------|--------|\n";
  for (const auto& [k, v] : ops)
    s += fmt::format("| {:<11} | {:<22} | {:>10.1f} | {:>9.3f} | {:>5.1f}% |\n", k.first, k.second,
                     static_cast<double>(v.first) * per, v.second * 1e3 * per,
                     total > 0 ? 100.0 * v.second / total : 0.0);
  s += fmt::format("| {:<11} | {:<22} | {:>10} | {:>9.3f} | {:>5.1f}% |\n", "total", "", "",
                   total * 1e3 * per, 100.0);
  s += "per layer (ms per pass):";
  for (const auto& [layer, sec] : by_layer)
    s += layer < 0 ? fmt::format(" rest {:.3f}", sec * 1e3 * per)
                   : fmt::format(" {}:{:.3f}", layer, sec * 1e3 * per);
  s += "\n";
  return s;
}

}  // namespace ferrum::profile
