#include "dist/pipeline_split.h"

#include <charconv>
#include <cmath>

#include "core/fail.h"
#include "loading/loader.h"

namespace ferrum::dist {

std::vector<StageRange> balanced_split(const std::vector<size_t>& layer_bytes, size_t head_bytes,
                                       int stages) {
  const int n = static_cast<int>(layer_bytes.size());
  if (stages < 1 || stages > n)
    fail("--pipeline {}: the model has {} layers, one at least per stage", stages, n);
  double total = static_cast<double>(head_bytes);
  for (size_t b : layer_bytes) total += static_cast<double>(b);
  std::vector<StageRange> out;
  int l = 0;
  double done = 0;
  for (int s = 0; s < stages; ++s) {
    StageRange r{l, l};
    const double target = total * (s + 1) / stages;
    // Take layers while the stage stays nearer its share, leaving one for each stage after it.
    while (r.end < n - (stages - 1 - s)) {
      const double with = done + static_cast<double>(layer_bytes[r.end]);
      if (r.end > r.begin && std::abs(with - target) > std::abs(done - target)) break;
      done = with;
      ++r.end;
    }
    if (s == stages - 1) r.end = n;
    out.push_back(r);
    l = r.end;
  }
  return out;
}

std::vector<StageRange> parse_split(const std::string& text, int n_layer, int stages) {
  std::vector<StageRange> out;
  int at = 0;
  for (size_t i = 0; i <= text.size();) {
    const size_t comma = std::min(text.find(',', i), text.size());
    int v = 0;
    const auto [p, ec] = std::from_chars(text.data() + i, text.data() + comma, v);
    if (ec != std::errc() || p != text.data() + comma || v < 1)
      fail("--pipeline-split '{}': expects the layers of each stage as positive numbers, e.g. 10,14", text);
    out.push_back({at, at + v});
    at += v;
    i = comma + 1;
  }
  if (static_cast<int>(out.size()) != stages)
    fail("--pipeline-split '{}' gives {} stages for --pipeline {}", text, out.size(), stages);
  if (at != n_layer) fail("--pipeline-split '{}' covers {} layers; the model has {}", text, at, n_layer);
  return out;
}

namespace {

// A file's weight bytes by where they live: each layer, the output side, the embedding.
struct WeightBytes {
  std::vector<size_t> layer;
  size_t head = 0, embd = 0;
};

WeightBytes weight_bytes(const ModelFiles& files) {
  const int n = files.config.n_layer;
  WeightBytes w;
  w.layer.assign(n, 0);
  for (const auto& [name, t] : files.weights.all()) {
    int l = -1;
    if (name.rfind("blk.", 0) == 0) std::from_chars(name.data() + 4, name.data() + name.size(), l);
    if (l >= 0 && l < n)
      w.layer[l] += t.nbytes;
    else if (name.rfind("output", 0) == 0)
      w.head += t.nbytes;
    else if (name == "token_embd.weight")
      w.embd += t.nbytes;
  }
  if (files.config.tied_embeddings) w.head += w.embd;  // the last stage multiplies by it
  return w;
}

}  // namespace

std::vector<StageRange> split_model(const ModelFiles& files, const std::string& text, int stages) {
  if (!text.empty()) return parse_split(text, files.config.n_layer, stages);
  const WeightBytes w = weight_bytes(files);
  return balanced_split(w.layer, w.head, stages);
}

std::vector<size_t> stage_weight_bytes(const ModelFiles& files, const std::vector<StageRange>& ranges) {
  const WeightBytes w = weight_bytes(files);
  std::vector<size_t> out;
  for (size_t s = 0; s < ranges.size(); ++s) {
    size_t b = s == 0 ? w.embd : 0;
    for (int l = ranges[s].begin; l < ranges[s].end; ++l) b += w.layer[l];
    if (s + 1 == ranges.size()) b += w.head;
    out.push_back(b);
  }
  return out;
}

}  // namespace ferrum::dist
