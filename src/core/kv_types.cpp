// Names of the KV cache's layouts and element types (ferrum/kv_types.h).
#include "ferrum/kv_types.h"

#include "core/fail.h"

namespace ferrum {

const char* kv_layout_name(KvLayout l) {
  return l == KvLayout::Paged ? "paged" : "contiguous";
}

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::F32:
      return "f32";
    case KvType::F16:
      return "f16";
    case KvType::BF16:
      return "bf16";
    case KvType::INT8:
      return "int8";
  }
  return "?";
}

KvLayout parse_kv_layout(std::string_view name) {
  if (name == "contiguous") return KvLayout::Contiguous;
  if (name == "paged") return KvLayout::Paged;
  fail("KV layout '{}' is not known (use contiguous or paged)", name);
}

KvType parse_kv_type(std::string_view name) {
  for (KvType t : {KvType::F32, KvType::F16, KvType::BF16, KvType::INT8})
    if (name == kv_type_name(t)) return t;
  fail("KV type '{}' is not known (use f32, f16, bf16 or int8)", name);
}

}  // namespace ferrum
