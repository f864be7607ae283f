#include "dist/lora_message.h"

#include <cstring>

#include "core/fail.h"

namespace ferrum::dist {
namespace {

void put_bytes(Bytes& b, const void* p, size_t n) {
  const size_t at = b.size();
  b.resize(at + n);
  if (n) std::memcpy(b.data() + at, p, n);
}
template <typename T>
void put(Bytes& b, T v) {
  put_bytes(b, &v, sizeof v);
}

class In {
 public:
  explicit In(const Bytes& b) : b_(b) {}
  const uint8_t* take(size_t n) {
    if (b_.size() - at_ < n) fail("adapter message: truncated ({} bytes)", b_.size());
    const uint8_t* p = b_.data() + at_;
    at_ += n;
    return p;
  }
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }

 private:
  const Bytes& b_;
  size_t at_ = 0;
};

// A matrix: type, two dimensions and its bytes (none for an empty view).
void put_view(Bytes& b, const TensorView& t) {
  put<uint32_t>(b, static_cast<uint32_t>(t.type));
  put<int64_t>(b, t.data ? t.ne[0] : 0);
  put<int64_t>(b, t.data ? t.ne[1] : 0);
  put<uint64_t>(b, t.data ? t.nbytes : 0);
  if (t.data) put_bytes(b, t.data, t.nbytes);
}

TensorView get_view(In& in, std::vector<std::shared_ptr<const void>>& storage) {
  TensorView t;
  t.type = static_cast<DType>(in.get<uint32_t>());
  const int64_t c = in.get<int64_t>(), r = in.get<int64_t>();
  const uint64_t n = in.get<uint64_t>();
  if (n == 0) return t;
  if (t.type != DType::F32 && t.type != DType::F16)
    fail("adapter message: a matrix of type {}", static_cast<int>(t.type));
  constexpr int64_t kMaxSide = int64_t{1} << 30;
  if (c <= 0 || r <= 0 || c > kMaxSide || r > kMaxSide || row_size(t.type, c) * static_cast<uint64_t>(r) != n)
    fail("adapter message: a {} x {} matrix of {} bytes", r, c, n);
  const uint8_t* bytes = in.take(n);  // checks the message holds them before anything is allocated
  auto buf = std::shared_ptr<uint8_t[]>(new uint8_t[n]);
  std::memcpy(buf.get(), bytes, n);
  t.n_dims = 2;
  t.ne = {c, r, 1, 1};
  t.nbytes = n;
  t.data = buf.get();
  storage.push_back(std::move(buf));
  return t;
}

}  // namespace

Bytes encode_adapter(const LoraAdapter& a) {
  Bytes b;
  for (int v : {a.shape.n_layer, a.shape.n_embd, a.shape.q_dim, a.shape.kv_dim, a.shape.n_ff})
    put<int32_t>(b, v);
  put<uint64_t>(b, a.id);
  put<uint64_t>(b, a.name.size());
  put_bytes(b, a.name.data(), a.name.size());
  put<uint32_t>(b, static_cast<uint32_t>(a.layers.size()));
  for (const LoraLayer& l : a.layers)
    for (const LoraSiteWeights& s : l.sites) {
      put_view(b, s.a);
      put<uint32_t>(b, static_cast<uint32_t>(s.slots.size()));
      for (const LoraSlot& slot : s.slots) {
        put<int64_t>(b, slot.col0);
        put<int64_t>(b, slot.rank0);
        put<float>(b, slot.scale);
        put_view(b, slot.bt);
      }
      put<uint64_t>(b, s.slot_of_rank.size());
      for (int64_t v : s.slot_of_rank) put<int64_t>(b, v);
    }
  return b;
}

std::shared_ptr<LoraAdapter> decode_adapter(const Bytes& m) {
  In in(m);
  auto a = std::make_shared<LoraAdapter>();
  for (int* v : {&a->shape.n_layer, &a->shape.n_embd, &a->shape.q_dim, &a->shape.kv_dim, &a->shape.n_ff}) {
    *v = in.get<int32_t>();
    if (*v < 0) fail("adapter message: a negative model size");
  }
  a->id = in.get<uint64_t>();
  const uint64_t name = in.get<uint64_t>();
  if (name > m.size()) fail("adapter message: a name of {} bytes", name);
  const uint8_t* p = in.take(name);
  a->name.assign(p, p + name);
  const uint32_t layers = in.get<uint32_t>();
  if (layers != static_cast<uint32_t>(a->shape.n_layer))
    fail("adapter message: {} layers for a model of {}", layers, a->shape.n_layer);
  constexpr size_t kLeastPerLayer = kLoraSites * 40;  // an empty site: its A's header, no slots, no ranks
  if (layers > m.size() / kLeastPerLayer) fail("adapter message: {} layers in {} bytes", layers, m.size());
  a->layers.resize(layers);
  const LoraAdapter::Shape& sh = a->shape;
  // Each site's inputs and output columns (LoraSite order: q|k|v, attention output, gate|up, down).
  const int64_t site_in[kLoraSites] = {sh.n_embd, sh.q_dim, sh.n_embd, sh.n_ff};
  const int64_t site_out[kLoraSites] = {int64_t{sh.q_dim} + 2 * sh.kv_dim, sh.n_embd, 2 * int64_t{sh.n_ff},
                                        sh.n_embd};
  for (LoraLayer& l : a->layers)
    for (int si = 0; si < kLoraSites; ++si) {
      LoraSiteWeights& s = l.sites[si];
      s.a = get_view(in, a->storage);
      if (s.a.data && s.a.ne[0] != site_in[si])
        fail("adapter message: A of {} columns at a site of {} inputs", s.a.ne[0], site_in[si]);
      const uint32_t slots = in.get<uint32_t>();
      if (slots > 64) fail("adapter message: {} slots at one site", slots);
      s.slots.resize(slots);
      for (LoraSlot& slot : s.slots) {
        slot.col0 = in.get<int64_t>();
        slot.rank0 = in.get<int64_t>();
        slot.scale = in.get<float>();
        slot.bt = get_view(in, a->storage);
        const int64_t rank = s.a.data ? s.a.ne[1] : 0;
        if (!slot.bt.data || slot.col0 < 0 || slot.rank0 < 0 || slot.col0 + slot.bt.ne[0] > site_out[si] ||
            slot.rank0 + slot.bt.ne[1] > rank)
          fail("adapter message: a slot past its site (columns {}+{} of {}, ranks {}+{} of {})", slot.col0,
               slot.bt.ne[0], site_out[si], slot.rank0, slot.bt.ne[1], rank);
      }
      const uint64_t ranks = in.get<uint64_t>();
      if (ranks != static_cast<uint64_t>(s.a.data ? s.a.ne[1] : 0))
        fail("adapter message: {} ranks for {} A rows", ranks, s.a.ne[1]);
      s.slot_of_rank.resize(ranks);
      for (int64_t& v : s.slot_of_rank) {
        v = in.get<int64_t>();
        if (v < 0 || v >= static_cast<int64_t>(s.slots.size()))
          fail("adapter message: rank of slot {} of {}", v, s.slots.size());
      }
    }
  a->bytes = a->matrix_bytes();
  return a;
}

}  // namespace ferrum::dist
