// What every rank of a multi-process job must have loaded alike, checked at start: a rank whose
// model file differs (another version on another host) stops the job before any pass runs.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "dist/transport.h"
#include "loading/loader.h"

namespace ferrum::dist {

// The shape and the tensor directory (names, types, shapes, sizes) of the files, and `split` (how
// the job cuts the model). Not the tensor bytes: reading them would cost a pass over the file.
uint64_t directory_hash(const ModelFiles& files, std::span<const int64_t> split);

// Every rank sends rank 0 its hash; rank 0 fails naming the first rank that differs. `flag` names
// the option in the message ("--pipeline", "--tp").
void check_ranks_agree(Transport& t, uint64_t hash, const std::string& path, const char* flag);

}  // namespace ferrum::dist
