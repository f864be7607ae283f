// What one MPI rank reads from another (src/dist): a forward pass (cache operations, items, ids,
// rows, adapters), a stop, an error or a result; and a LoRA adapter's matrices. The first byte
// picks the decoder. Whatever decodes must encode back to bytes that decode to the same thing; a
// bad message must be refused with ferrum::Error, never read past its end or allocated without
// bound.
#include <cstdint>
#include <cstdlib>

#include "dist/lora_message.h"
#include "dist/stage_message.h"
#include "ferrum/error.h"

using namespace ferrum;
using namespace ferrum::dist;

namespace {

void forward_round_trip(const Bytes& m) {
  StageBatch b;
  decode_forward(m, b);
  const Bytes again = encode_forward(b);
  StageBatch c;
  decode_forward(again, c);
  if (encode_forward(c) != again) std::abort();
  if (c.items.size() != b.items.size() || c.ids != b.ids || c.ops.size() != b.ops.size() ||
      c.adapters != b.adapters)
    std::abort();
}

void adapter_round_trip(const Bytes& m) {
  const auto a = decode_adapter(m);
  const Bytes again = encode_adapter(*a);
  if (encode_adapter(*decode_adapter(again)) != again) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > (1 << 20)) return 0;
  const Bytes m(data + 1, data + size);
  try {
    if (data[0] % 2 == 1) {
      adapter_round_trip(m);
      return 0;
    }
    switch (kind_of(m)) {
      case MsgKind::Forward:
        forward_round_trip(m);
        break;
      case MsgKind::Error:
        (void)decode_error(m);
        break;
      case MsgKind::Result: {
        const ResultView v = view_result(m);  // the views must lie inside the message
        if (v.n_logits && (v.logits < m.data() || v.logits + 4 * v.n_logits > m.data() + m.size())) abort();
        if (v.n_hidden && (v.hidden < m.data() || v.hidden + 4 * v.n_hidden > m.data() + m.size())) abort();
        break;
      }
      case MsgKind::Stop:
        break;
    }
  } catch (const Error&) {  // the expected answer to a bad message
  }
  return 0;
}
