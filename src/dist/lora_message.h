// A LoRA adapter sent to the other ranks of a pipeline or tensor-parallel job: rank 0 loads it
// (from a file only rank 0 needs to see) and sends its matrices once, with the first pass that
// uses it; the other ranks keep the copy under rank 0's adapter id (the prefix cache's namespace
// for its sequences on every rank).
#pragma once

#include <map>
#include <memory>

#include "dist/transport.h"
#include "models/lora_adapter.h"

namespace ferrum::dist {

Bytes encode_adapter(const LoraAdapter& a);
// Throws for a message that is cut short or holds impossible shapes.
std::shared_ptr<LoraAdapter> decode_adapter(const Bytes& m);

}  // namespace ferrum::dist
