#include "dist/stage_message.h"

#include <cstring>

#include "core/fail.h"

namespace ferrum::dist {
namespace {

class Writer {
 public:
  explicit Writer(MsgKind k) { put<uint8_t>(static_cast<uint8_t>(k)); }
  template <typename T>
  void put(T v) {
    const size_t at = b_.size();
    b_.resize(at + sizeof(T));
    std::memcpy(b_.data() + at, &v, sizeof(T));
  }
  template <typename T>
  void put_array(const T* p, size_t n) {
    put<uint64_t>(n);
    const auto* bytes = reinterpret_cast<const uint8_t*>(p);
    if (n) b_.insert(b_.end(), bytes, bytes + n * sizeof(T));  // no zero fill first
  }
  Bytes take() { return std::move(b_); }

 private:
  Bytes b_;
};

class Reader {
 public:
  explicit Reader(const Bytes& b) : b_(b), at_(1) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <typename T>
  void get_array(std::vector<T>& out) {
    size_t n = 0;
    const uint8_t* p = view_array<T>(n);
    out.resize(n);
    if (n) std::memcpy(out.data(), p, n * sizeof(T));
  }
  // The bytes of an array of n items of T, in place.
  template <typename T>
  const uint8_t* view_array(size_t& n) {
    const uint64_t count = get<uint64_t>();
    if (count > (b_.size() - at_) / sizeof(T))
      fail("pipeline message: an array of {} items runs past its end", count);
    const uint8_t* p = b_.data() + at_;
    n = static_cast<size_t>(count);
    at_ += n * sizeof(T);
    return p;
  }

 private:
  void need(size_t n) const {
    if (b_.size() - at_ < n) fail("pipeline message: truncated ({} bytes)", b_.size());
  }
  const Bytes& b_;
  size_t at_;
};

uint16_t to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A cache's options (resolved: every field set).
void put_options(Writer& w, const KvOptions& o) {
  w.put<uint8_t>(static_cast<uint8_t>(o.layout));
  w.put<uint8_t>(static_cast<uint8_t>(o.type.value_or(kDefaultKvType)));
  w.put<int64_t>(o.capacity);
  w.put<int64_t>(o.pool_tokens);
  w.put<uint8_t>(o.prefix_cache);
  w.put<int64_t>(o.pool_sequences);
  w.put<int64_t>(o.rollback_tokens);
}

KvOptions get_options(Reader& r) {
  KvOptions o;
  const uint8_t layout = r.get<uint8_t>(), type = r.get<uint8_t>();
  if (layout > 1 || type > 3) fail("pipeline message: bad cache options");
  o.layout = static_cast<KvLayout>(layout);
  o.type = static_cast<KvType>(type);
  o.capacity = r.get<int64_t>();
  o.pool_tokens = r.get<int64_t>();
  o.prefix_cache = r.get<uint8_t>() != 0;
  o.pool_sequences = r.get<int64_t>();
  o.rollback_tokens = r.get<int64_t>();
  return o;
}

}  // namespace

Bytes encode_forward(const StageBatch& b) {
  Writer w(MsgKind::Forward);
  w.put<int32_t>(b.cache);
  w.put<uint32_t>(static_cast<uint32_t>(b.ops.size()));
  for (const KvOp& op : b.ops) {
    w.put<uint8_t>(static_cast<uint8_t>(op.kind));
    w.put<int32_t>(op.cache);
    w.put<int32_t>(op.seq);
    w.put<int64_t>(op.n);
    w.put<uint64_t>(op.lora_id);
    w.put_array(op.prompt.data(), op.prompt.size());
    if (op.kind == KvOp::Kind::Create) put_options(w, op.options);
  }
  w.put<uint32_t>(static_cast<uint32_t>(b.items.size()));
  for (const StageItem& it : b.items) {
    w.put<int32_t>(it.seq);
    w.put<int64_t>(it.n);
    w.put<uint8_t>(static_cast<uint8_t>(it.logits));
    w.put<uint8_t>(static_cast<uint8_t>(it.hidden));
    w.put<uint8_t>(it.rows_in);
    w.put<uint64_t>(it.lora);
  }
  w.put<uint32_t>(static_cast<uint32_t>(b.adapters.size()));
  for (const Bytes& a : b.adapters) w.put_array(a.data(), a.size());
  w.put_array(b.ids.data(), b.ids.size());
  w.put<uint8_t>(b.bf16_rows);
  if (b.bf16_rows) {
    std::vector<uint16_t> h(b.rows.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = to_bf16(b.rows[i]);
    w.put_array(h.data(), h.size());
  } else {
    w.put_array(b.rows.data(), b.rows.size());
  }
  return w.take();
}

Bytes encode_stop() {
  return Writer(MsgKind::Stop).take();
}

Bytes encode_error(const std::string& what) {
  Writer w(MsgKind::Error);
  w.put_array(what.data(), what.size());
  return w.take();
}

Bytes encode_result(const std::vector<float>& logits, const std::vector<float>& hidden) {
  Writer w(MsgKind::Result);
  w.put_array(logits.data(), logits.size());
  w.put_array(hidden.data(), hidden.size());
  return w.take();
}

MsgKind kind_of(const Bytes& m) {
  if (m.empty() || m[0] < 1 || m[0] > 4) fail("pipeline message of an unknown kind");
  return static_cast<MsgKind>(m[0]);
}

// A count of records of at least `least` bytes each, checked against the message's size (a bad
// count must not size a vector).
static uint32_t get_count(Reader& r, const Bytes& m, size_t least, const char* what) {
  const uint32_t n = r.get<uint32_t>();
  if (n > m.size() / least) fail("pipeline message: {} {} in {} bytes", n, what, m.size());
  return n;
}

void decode_forward(const Bytes& m, StageBatch& b) {
  Reader r(m);
  b.cache = r.get<int32_t>();
  b.ops.resize(get_count(r, m, 33, "cache operations"));
  for (KvOp& op : b.ops) {
    const uint8_t k = r.get<uint8_t>();
    if (k > static_cast<uint8_t>(KvOp::Kind::Drop)) fail("pipeline message: unknown cache operation {}", k);
    op.kind = static_cast<KvOp::Kind>(k);
    op.cache = r.get<int32_t>();
    op.seq = r.get<int32_t>();
    op.n = r.get<int64_t>();
    op.lora_id = r.get<uint64_t>();
    r.get_array(op.prompt);
    if (op.kind == KvOp::Kind::Create) op.options = get_options(r);
  }
  b.items.resize(get_count(r, m, 23, "items"));
  for (StageItem& it : b.items) {
    it.seq = r.get<int32_t>();
    it.n = r.get<int64_t>();
    const uint8_t lw = r.get<uint8_t>(), hw = r.get<uint8_t>();
    if (lw > 2 || hw > 2) fail("pipeline message: bad output request");
    it.logits = static_cast<Want>(lw);
    it.hidden = static_cast<Want>(hw);
    it.rows_in = r.get<uint8_t>() != 0;
    it.lora = r.get<uint64_t>();
  }
  b.adapters.resize(get_count(r, m, 8, "adapters"));
  for (Bytes& a : b.adapters) r.get_array(a);
  r.get_array(b.ids);
  b.bf16_rows = r.get<uint8_t>() != 0;
  if (b.bf16_rows) {
    std::vector<uint16_t> h;
    r.get_array(h);
    b.rows.resize(h.size());
    for (size_t i = 0; i < h.size(); ++i) b.rows[i] = from_bf16(h[i]);
  } else {
    r.get_array(b.rows);
  }
}

std::string decode_error(const Bytes& m) {
  Reader r(m);
  std::vector<char> s;
  r.get_array(s);
  return std::string(s.begin(), s.end());
}

ResultView view_result(const Bytes& m) {
  Reader r(m);
  ResultView v;
  v.logits = r.view_array<float>(v.n_logits);
  v.hidden = r.view_array<float>(v.n_hidden);
  return v;
}

}  // namespace ferrum::dist
