// Where the time of a forward pass goes: time per op kind (each matrix product by weight type and
// shape, attention, norms, RoPE, KV writes, element-wise steps, LoRA, sampling, thread-pool waits),
// per layer and per forward pass. Off unless asked for (`ferrum bench --profile`, FERRUM_PROFILE=1
// for run and serve): a scope then costs one relaxed atomic load.
//
// Scopes nest and time is exclusive: a thread-pool wait inside a matrix product counts as the
// wait, not as the product.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace ferrum::profile {

// Exchange: time in tensor-parallel sums and gathers (waiting for the other ranks included).
enum class Op : uint8_t {
  Matmul,
  Attention,
  Norm,
  Rope,
  KvWrite,
  Elementwise,
  Lora,
  Sampling,
  PoolWait,
  Exchange
};
const char* op_name(Op op);

extern std::atomic<bool> g_enabled;
inline bool enabled() {
  return g_enabled.load(std::memory_order_relaxed);
}
// Turns profiling on or off and clears what was recorded. FERRUM_PROFILE=1 turns it on at start.
void enable(bool on);
// The layer the scopes that follow on this thread belong to (-1: none, e.g. the LM head).
void set_layer(int layer);
// Counts one forward pass (the unit of the report's per-pass figures).
void count_pass();

class Scope {
 public:
  // detail (e.g. "Q4_K 2048x8192") must outlive the scope; it is copied once per distinct key.
  explicit Scope(Op op, const std::string* detail = nullptr) {
    if (enabled()) begin(op, detail);
  }
  ~Scope() {
    if (active_) end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void begin(Op op, const std::string* detail);
  void end();
  bool active_ = false;
  Op op_ = Op::Matmul;
  const std::string* detail_ = nullptr;
  int64_t t0_ = 0, child_ns_ = 0;
  int64_t* parent_child_ns_ = nullptr;
};

struct Row {
  Op op;
  std::string detail;
  int layer;  // -1: outside the layers
  int64_t calls;
  double seconds;  // exclusive
};
struct Report {
  int64_t passes = 0;
  std::vector<Row> rows;
};
// What was recorded since the last take (or enable), and a fresh start.
Report take();
// The report as text: ops (merged over layers) by time, then time per layer; per forward pass.
std::string format(const Report& r, const std::string& title);

}  // namespace ferrum::profile
