// Cutting a decoder's weights into one tensor-parallel rank's share (models/tensor_parallel.h).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/fail.h"
#include "models/tensor_parallel.h"

namespace ferrum {
namespace {

// Rows or columns [begin, end) of tensor `from`, becoming tensor `to`. With groups > 1 (a stack of
// experts) the rows [begin, end) of each of `groups` equal row blocks. `zero`: the same shape, all
// zeros (a bias added after the ranks' sum, which only rank 0 keeps).
struct Cut {
  std::string from, to;
  bool columns = false;
  int64_t begin = 0, end = 0;
  bool drop_source = true;  // false: `from` stays whole too (the tied embedding)
  int64_t groups = 1;
  bool zero = false;
};

using Shares = TensorShares;

int64_t block_of(DType t) {
  return dtype_info(t).block_size;
}

std::string blk(int l, const char* name) {
  return "blk." + std::to_string(l) + "." + name;
}

// The heads of rank r: a whole group of query heads per key/value head, or (more ranks than
// key/value heads) one key/value head shared by the ranks of its group.
void head_shares(const ModelConfig& c, int r, int n, Shares& s) {
  if (c.n_head % n != 0)
    fail("--tp {}: the model's {} attention heads do not split evenly over {} ranks", n, c.n_head, n);
  const int hq = c.n_head / n, g = c.n_head / c.n_head_kv;
  s.q = {int64_t{r} * hq, int64_t{r + 1} * hq};
  if (hq % g == 0)
    s.kv = {s.q.begin / g, s.q.end / g};
  else if (g % hq == 0)
    s.kv = {s.q.begin / g, s.q.begin / g + 1};
  else
    fail(
        "--tp {}: {} query heads per rank do not fit the model's groups of {} query heads per key/value head",
        n, hq, g);
}

// The width unit of an FFN split: the down matrix's block, and whole 16-row groups of the gate and
// up rows (the packed layouts' unit) where the width allows.
int64_t granule(int64_t width, DType down) {
  const int64_t b = block_of(down);
  const int64_t g = std::lcm(b, int64_t{16});
  return width % g == 0 ? g : b;
}

// A mixture-of-experts layer: every expert's FFN width split alike (the router stays whole).
void moe_cuts(const ModelConfig& c, const WeightSet& w, int l, int r, ShareRange ff, std::vector<Cut>& cuts) {
  const int64_t E = c.n_expert;
  for (const char* name : {"ffn_gate_exps.weight", "ffn_up_exps.weight"})
    cuts.push_back({blk(l, name), blk(l, name), false, ff.begin, ff.end, true, E});
  cuts.push_back({blk(l, "ffn_down_exps.weight"), blk(l, "ffn_down_exps.weight"), true, ff.begin, ff.end});
  for (const char* name : {"ffn_gate_exps.bias", "ffn_up_exps.bias"})  // [n_ff_exp, n_expert]
    if (w.find(blk(l, name))) cuts.push_back({blk(l, name), blk(l, name), true, ff.begin, ff.end});
  if (const std::string b = blk(l, "ffn_down_exps.bias"); w.find(b) && r > 0)
    cuts.push_back({b, b, false, 0, 0, true, 1, true});
}

// What rank r of n holds of the model; throws naming what cannot be split (head counts, a model kind).
TensorShares tensor_shares(const ModelConfig& c, const WeightSet& w, int r, int n) {
  if (n < 2) fail("--tp {}: tensor parallelism needs 2 ranks at least", n);
  if (r < 0 || r >= n) fail("--tp {}: rank {} is not one of the {} ranks", n, r, n);
  if (c.is_encoder()) fail("--tp: {} is an encoder; tensor parallelism runs decoders", w.source());
  TensorShares s;
  head_shares(c, r, n, s);
  if (c.n_expert > 0)  // an expert's rows are a row range of its stack: whole 16-row groups where they fit
    s.ff_expert =
        share_of(c.n_ff_expert, n, r, granule(c.n_ff_expert, w.get(blk(0, "ffn_down_exps.weight")).type));
  else
    s.ff = share_of(c.n_ff, n, r, granule(c.n_ff, w.get(blk(0, "ffn_down.weight")).type));
  s.vocab = share_of(c.n_vocab, n, r);
  return s;
}

std::vector<Cut> plan_cuts(const ModelConfig& c, const WeightSet& w, int r, int n, const ShardPart& part,
                           Shares& s) {
  s = tensor_shares(c, w, r, n);
  const bool moe = c.n_expert > 0;
  const int64_t hd = c.head_dim, qd = c.q_dim(), kvd = c.kv_dim();
  std::vector<Cut> cuts;
  auto rows = [&](const std::string& from, const std::string& to, ShareRange k, int64_t unit) {
    cuts.push_back({from, to, false, k.begin * unit, k.end * unit});
  };
  const int end = part.layer_end < 0 ? c.n_layer : part.layer_end;
  if (part.layer_begin < 0 || part.layer_begin >= end || end > c.n_layer)
    fail("--tp: layers [{}, {}) are not a range of the model's {}", part.layer_begin, end, c.n_layer);
  for (int l = part.layer_begin; l < end; ++l) {
    for (const char* part : {"weight", "bias"}) {
      const std::string sfx = std::string(".") + part;
      if (const std::string fused = blk(l, "attn_qkv") + sfx; w.find(fused)) {
        rows(fused, blk(l, "attn_q") + sfx, s.q, hd);
        cuts.push_back({fused, blk(l, "attn_k") + sfx, false, qd + s.kv.begin * hd, qd + s.kv.end * hd});
        cuts.push_back(
            {fused, blk(l, "attn_v") + sfx, false, qd + kvd + s.kv.begin * hd, qd + kvd + s.kv.end * hd});
      } else if (w.find(blk(l, "attn_q") + sfx)) {
        rows(blk(l, "attn_q") + sfx, blk(l, "attn_q") + sfx, s.q, hd);
        rows(blk(l, "attn_k") + sfx, blk(l, "attn_k") + sfx, s.kv, hd);
        rows(blk(l, "attn_v") + sfx, blk(l, "attn_v") + sfx, s.kv, hd);
      }
    }
    if (w.find(blk(l, "attn_sinks.weight")))
      rows(blk(l, "attn_sinks.weight"), blk(l, "attn_sinks.weight"), s.q, 1);
    const std::string wo = blk(l, "attn_output.weight");
    cuts.push_back({wo, wo, true, s.q.begin * hd, s.q.end * hd});
    if (moe) {
      moe_cuts(c, w, l, r, s.ff_expert, cuts);
      continue;
    }
    const std::string up = blk(l, "ffn_up.weight"), gate = blk(l, "ffn_gate.weight");
    const std::string fused = w.find(blk(l, "ffn_gate_up.weight"))              ? blk(l, "ffn_gate_up.weight")
                              : !w.find(gate) && w.get(up).rows() == 2 * c.n_ff ? up  // GGUF phi3: gate|up
                                                                                : "";
    if (!fused.empty()) {
      rows(fused, gate, s.ff, 1);
      cuts.push_back({fused, up, false, c.n_ff + s.ff.begin, c.n_ff + s.ff.end});
    } else {
      rows(gate, gate, s.ff, 1);
      rows(up, up, s.ff, 1);
    }
    const std::string dn = blk(l, "ffn_down.weight");
    cuts.push_back({dn, dn, true, s.ff.begin, s.ff.end});
  }
  if (!part.head) return cuts;
  if (w.find("output.weight"))
    rows("output.weight", "output.weight", s.vocab, 1);
  else  // tied: the head is a slice of the embedding, which every rank keeps whole for the lookup
    cuts.push_back({"token_embd.weight", "output.weight", false, s.vocab.begin, s.vocab.end, false});
  return cuts;
}

// The view of a row cut (into the same memory), or the shape of a column cut (data left null).
TensorView cut_view(const WeightSet& w, const Cut& k) {
  const TensorView& t = w.get(k.from);
  TensorView v = t;
  v.name = k.to;
  if (k.zero) {  // same shape, zeros (made by shard_weights)
    v.data = nullptr;
    return v;
  }
  if (k.groups > 1) {  // [cols, rows per group, groups] -> [cols, end - begin, groups], copied
    if (t.ne[2] != k.groups || k.end > t.ne[1])
      fail("{}: tensor '{}' has shape {}, the split needs {} groups of {} rows", w.source(), k.from,
           t.shape_string(), k.groups, k.end);
    v.ne = {t.ne[0], k.end - k.begin, k.groups, 1};
    v.n_dims = 3;
    v.data = nullptr;
    v.nbytes = static_cast<size_t>((k.end - k.begin) * k.groups) * t.row_bytes();
    return v;
  }
  if (!k.columns) {
    const int64_t have = t.n_dims <= 1 ? t.ne[0] : t.rows();
    if (k.end > have)
      fail("{}: tensor '{}' has {} rows, the split needs {}", w.source(), k.from, have, k.end);
    v.n_dims = std::max(t.n_dims, 1);
    if (t.n_dims <= 1) {
      v.ne = {k.end - k.begin, 1, 1, 1};
      v.data = t.data + k.begin * dtype_info(t.type).type_size / block_of(t.type);
      v.nbytes = row_size(t.type, k.end - k.begin);
    } else {
      v.ne = {t.ne[0], k.end - k.begin, 1, 1};
      v.n_dims = 2;
      v.data = t.row(k.begin);
      v.nbytes = static_cast<size_t>(k.end - k.begin) * t.row_bytes();
    }
    return v;
  }
  const int64_t b = block_of(t.type);
  if (k.begin % b != 0 || k.end % b != 0)
    fail(
        "{}: tensor '{}' ({}, blocks of {}) cannot be cut at columns {} and {}: the ranks' shares must end "
        "on "
        "block boundaries (try another --tp)",
        w.source(), k.from, dtype_name(t.type), b, k.begin, k.end);
  if (t.input_order)
    fail("{}: tensor '{}' is act-order GPTQ; its columns are not split over ranks", w.source(), k.from);
  v.ne[0] = k.end - k.begin;  // the other dimensions as they were (a stack of experts stays one)
  v.data = nullptr;
  v.nbytes = static_cast<size_t>(t.rows()) * row_size(t.type, k.end - k.begin);
  return v;
}

}  // namespace

ShareRange share_of(int64_t n, int parts, int r, int64_t granule) {
  const int64_t units = n / granule;
  return {units * r / parts * granule, units * (r + 1) / parts * granule};
}

ShareRange vocab_share(const ModelConfig& full, int rank, int size) {
  return share_of(full.n_vocab, size, rank);
}

TensorShares shard_weights(ModelConfig& cfg, WeightSet& w, int rank, int size, const ShardPart& part) {
  Shares s;
  const std::vector<Cut> cuts = plan_cuts(cfg, w, rank, size, part, s);
  std::vector<TensorView> made;
  for (const Cut& k : cuts) {
    TensorView v = cut_view(w, k);
    if (!v.data) {  // copied from the file (columns, rows of every expert) or zeros
      const TensorView& t = w.get(k.from);
      uint8_t* p = w.allocate(v.nbytes);
      if (k.zero) {
        std::memset(p, 0, v.nbytes);
      } else if (k.columns) {
        const size_t skip = row_size(t.type, k.begin), n = row_size(t.type, k.end - k.begin);
        for (int64_t r = 0; r < t.rows(); ++r) std::memcpy(p + r * n, t.row(r) + skip, n);
      } else {
        const size_t n = (k.end - k.begin) * t.row_bytes();
        for (int64_t g = 0; g < k.groups; ++g) std::memcpy(p + g * n, t.row(g * t.ne[1] + k.begin), n);
      }
      w.release_pages(t);
      v.data = p;
      w.mark_transient(v.name);
    }
    made.push_back(std::move(v));
  }
  for (const Cut& k : cuts)
    if (k.drop_source) w.remove(k.from);
  for (TensorView& v : made) w.add(std::move(v));
  cfg.n_head = static_cast<int>(s.q.size());
  cfg.n_head_kv = static_cast<int>(s.kv.size());
  if (cfg.n_expert > 0)
    cfg.n_ff_expert = static_cast<int>(s.ff_expert.size());
  else
    cfg.n_ff = static_cast<int>(s.ff.size());
  return s;
}

uint64_t shard_bytes(const ModelConfig& cfg, const WeightSet& w, int rank, int size, const ShardPart& part) {
  Shares s;
  const std::vector<Cut> cuts = plan_cuts(cfg, w, rank, size, part, s);
  uint64_t n = w.total_bytes();
  std::vector<std::string> dropped;
  for (const Cut& k : cuts) {
    n += cut_view(w, k).nbytes;
    if (k.drop_source && std::find(dropped.begin(), dropped.end(), k.from) == dropped.end()) {
      dropped.push_back(k.from);
      n -= w.get(k.from).nbytes;
    }
  }
  return n;
}

}  // namespace ferrum

namespace ferrum {
namespace {

// Columns [c0, c1) of each row of a LoRA matrix (r rows of `cols` values), copied.
TensorView lora_columns(const TensorView& t, int64_t c0, int64_t c1,
                        std::vector<std::shared_ptr<const void>>& keep) {
  TensorView v = t;
  v.ne = {c1 - c0, t.ne[1], 1, 1};
  v.n_dims = 2;
  v.nbytes = row_size(t.type, c1 - c0) * static_cast<size_t>(t.ne[1]);
  auto buf = std::shared_ptr<uint8_t[]>(new uint8_t[v.nbytes]);
  const size_t skip = row_size(t.type, c0), n = row_size(t.type, c1 - c0);
  for (int64_t r = 0; r < t.ne[1]; ++r) std::memcpy(buf.get() + r * n, t.row(r) + skip, n);
  v.data = buf.get();
  keep.push_back(std::move(buf));
  return v;
}

// A site's output columns that rank keeps: global [begin, end) lands at local column `to`.
struct ColumnMap {
  int64_t begin, end, to;
};

}  // namespace

std::shared_ptr<const LoraAdapter> shard_lora(const LoraAdapter& a, const ModelConfig& c,
                                              const TensorShares& s) {
  const int64_t hd = c.head_dim, qd = c.q_dim(), kvd = c.kv_dim(), ff = c.n_ff;
  const int64_t qd_l = s.q.size() * hd, kvd_l = s.kv.size() * hd;
  auto out = std::make_shared<LoraAdapter>();
  out->id = a.id;
  out->name = a.name;
  out->shape = {a.shape.n_layer, a.shape.n_embd, static_cast<int>(qd_l), static_cast<int>(kvd_l),
                static_cast<int>(s.ff.size())};
  out->storage = a.storage;  // the whole A/B matrices that stay as they are
  out->layers.resize(a.layers.size());
  const std::vector<ColumnMap> qkv = {{s.q.begin * hd, s.q.end * hd, 0},
                                      {qd + s.kv.begin * hd, qd + s.kv.end * hd, qd_l},
                                      {qd + kvd + s.kv.begin * hd, qd + kvd + s.kv.end * hd, qd_l + kvd_l}};
  const std::vector<ColumnMap> gate_up = {{s.ff.begin, s.ff.end, 0},
                                          {ff + s.ff.begin, ff + s.ff.end, s.ff.size()}};
  for (size_t l = 0; l < a.layers.size(); ++l)
    for (int si = 0; si < kLoraSites; ++si) {
      const LoraSiteWeights& w = a.layers[l].sites[si];
      LoraSiteWeights& o = out->layers[l].sites[si];
      if (!w.a.data) continue;
      const auto site = static_cast<LoraSite>(si);
      if (site == LoraSite::Out || site == LoraSite::Down) {  // the rank's inputs: A's columns
        const ShareRange in = site == LoraSite::Out ? ShareRange{s.q.begin * hd, s.q.end * hd} : s.ff;
        o = w;
        o.a = lora_columns(w.a, in.begin, in.end, out->storage);
        continue;
      }
      o.a = w.a;
      const std::vector<ColumnMap>& maps = site == LoraSite::Qkv ? qkv : gate_up;
      std::vector<int64_t> first_slot(w.slots.size(), -1);
      for (size_t k = 0; k < w.slots.size(); ++k) {
        const LoraSlot& slot = w.slots[k];
        for (const ColumnMap& m : maps) {  // the slot's columns inside each part the rank keeps
          const int64_t b = std::max(m.begin, slot.col0), e = std::min(m.end, slot.col0 + slot.bt.ne[0]);
          if (b >= e) continue;
          if (first_slot[k] < 0) first_slot[k] = static_cast<int64_t>(o.slots.size());
          o.slots.push_back({m.to + (b - m.begin), slot.rank0,
                             lora_columns(slot.bt, b - slot.col0, e - slot.col0, out->storage), slot.scale});
        }
      }
      for (int64_t k :
           w.slot_of_rank)  // a rank's scale: that of its slot's first piece (all pieces share it)
        o.slot_of_rank.push_back(first_slot[k] >= 0 ? first_slot[k] : 0);
      if (o.slots.empty()) o = LoraSiteWeights{};  // nothing of this site on this rank
    }
  out->bytes = out->matrix_bytes();
  return out;
}

}  // namespace ferrum
