// What moves between pipeline stages (one message per forward pass and stage boundary): the
// cache operations rank 0's caller made since the last pass, the batch's items and token ids, and
// the previous stage's hidden rows (F32, or BF16 to halve the bytes); and back from the last
// stage to rank 0, the logits and hidden rows the batch asked for. Encoded as little-endian bytes
// of fixed-width fields; decoding checks every length against the message size.
#pragma once

#include <string>

#include "dist/transport.h"
#include "ferrum/kv_cache.h"
#include "ferrum/model.h"

namespace ferrum::dist {

enum class MsgKind : uint8_t { Forward = 1, Stop = 2, Error = 3, Result = 4 };

// Output rows an item of n positions asks for.
inline int64_t rows_wanted(Want w, int64_t n) {
  return w == Want::All ? n : w == Want::Last ? 1 : 0;
}

struct StageItem {
  int32_t seq = 0;
  int64_t n = 0;
  Want logits = Want::None, hidden = Want::None;
  bool rows_in = false;  // tensor parallelism: the item's input is rows of StageBatch::rows, not its ids
  uint64_t lora = 0;     // the item's LoRA adapter (rank 0's adapter id), 0 for none
};

struct StageBatch {
  int32_t cache = 0;       // the cache (KvOp::cache) the pass runs on
  bool bf16_rows = false;  // rows travel as BF16 (--pipeline-dtype bf16)
  std::vector<KvOp> ops;
  std::vector<Bytes> adapters;  // LoRA adapters first used by this pass (lora_message.h)
  std::vector<StageItem> items;
  std::vector<int32_t> ids;  // the items' token ids in order (-1: a position from input rows)
  std::vector<float> rows;   // hidden rows, one per position (n_embd floats each)
};

Bytes encode_forward(const StageBatch& b);
Bytes encode_stop();
Bytes encode_error(const std::string& what);
Bytes encode_result(const std::vector<float>& logits, const std::vector<float>& hidden);

MsgKind kind_of(const Bytes& m);
void decode_forward(const Bytes& m, StageBatch& out);
std::string decode_error(const Bytes& m);
// A result's logit and hidden floats where they lie in the message (not copied; not aligned).
struct ResultView {
  const uint8_t* logits = nullptr;
  size_t n_logits = 0;
  const uint8_t* hidden = nullptr;
  size_t n_hidden = 0;
};
ResultView view_result(const Bytes& m);

}  // namespace ferrum::dist
