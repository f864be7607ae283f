#include "models/quantize.h"

#include <vector>

#include "core/fail.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "models/quant_recipe.h"

namespace ferrum {

int quantize_model(const std::string& in_path, const std::string& out_path, const std::string& preset_name,
                   int n_threads, const ProgressFn& progress) {
  const QuantPreset& preset = find_quant_preset(preset_name);
  auto in = gguf::File::open(in_path);
  QuantRecipe recipe(preset, recipe_model(*in));
  gguf::Writer w;
  w.copy_metadata_from(*in);
  ThreadPool pool(n_threads);
  std::vector<std::vector<uint8_t>> buffers;
  buffers.reserve(in->tensors().size());
  int converted = 0;
  ProgressUpdate up{"quantize", 0, 0, 0, static_cast<int>(in->tensors().size())};
  for (const TensorView& t : in->tensors()) up.total += t.nbytes;
  auto step = [&](const TensorView& t) {
    up.done += t.nbytes;
    ++up.items;
    if (progress) progress(up);
  };
  for (const TensorView& t : in->tensors()) {
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    const DType to = recipe.type_of(t);
    if (to == t.type) {
      w.add_tensor(t);
      step(t);
      continue;
    }
    const int64_t cols = t.ne[0], rows = t.rows();
    const size_t out_row = row_size(to, cols);
    buffers.emplace_back(out_row * rows);
    uint8_t* dst = buffers.back().data();
    pool.parallel_for(rows, [&](int64_t b, int64_t e, int) {
      std::vector<float> tmp(cols);
      for (int64_t r = b; r < e; ++r) {
        dequantize_row(t.type, t.row(r), tmp.data(), cols);
        quantize_row(to, tmp.data(), dst + r * out_row, cols);
      }
    });
    w.add_tensor(t.name, to, ne, dst, out_row * rows);
    ++converted;
    step(t);
  }
  w.set_u32("general.file_type", preset.file_type);
  w.write(out_path, progress);
  return converted;
}

}  // namespace ferrum
