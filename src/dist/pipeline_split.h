// Which layers each pipeline stage runs: contiguous ranges balanced by the bytes of their weights
// (the last stage's share includes the output matrix, the first's nothing for the embedding rows
// it only looks up), or as the user gave them.
#pragma once

#include <string>
#include <vector>

#include "ferrum/model_config.h"

namespace ferrum {
struct ModelFiles;
}

namespace ferrum::dist {

struct StageRange {
  int begin = 0, end = 0;  // layers [begin, end)
};

// layer_bytes: the weight bytes of each layer; head_bytes: the output matrix (and final norm).
std::vector<StageRange> balanced_split(const std::vector<size_t>& layer_bytes, size_t head_bytes, int stages);
// "10,14": the layers of each stage, in order; they must add up to n_layer. Throws naming the flag.
std::vector<StageRange> parse_split(const std::string& text, int n_layer, int stages);
// The split of a loaded file: parse_split when `text` is set, else balanced by its tensors' bytes.
std::vector<StageRange> split_model(const ModelFiles& files, const std::string& text, int stages);
// The weight bytes each stage of a split holds: its layers; the first also the embedding, the last
// the final norm and the output matrix (the embedding too when they are tied).
std::vector<size_t> stage_weight_bytes(const ModelFiles& files, const std::vector<StageRange>& ranges);

}  // namespace ferrum::dist
