#include "models/quantize.h"

#include <optional>
#include <vector>

#include "core/fail.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/imatrix.h"
#include "models/quant_recipe.h"

namespace ferrum {
namespace {

// Every tensor's type under the preset, decided before any work so that a missing importance
// matrix is reported at once (as llama-quantize does).
std::vector<DType> plan_types(const gguf::File& in, QuantRecipe& recipe, const ImportanceMatrix* im,
                              const std::string& preset) {
  std::vector<DType> types;
  for (const TensorView& t : in.tensors()) {
    types.push_back(recipe.type_of(t));
    if (types.back() == t.type || !recipe.needs_importance(t, types.back())) continue;
    if (!im)
      fail(
          "preset {} writes tensor '{}' as {}, which needs an importance matrix: make one with llama-imatrix "
          "and "
          "pass --imatrix FILE",
          preset, t.name, dtype_name(types.back()));
    if (!im->find(t.name, t.ne[0], t.ne[2]))
      fail("{}: the importance matrix has no entry for tensor '{}', which preset {} writes as {}", im->path,
           t.name, preset, dtype_name(types.back()));
  }
  return types;
}

// What llama-quantize records of the importance matrix it used.
void record_imatrix(gguf::Writer& w, const ImportanceMatrix& im) {
  w.set_string("quantize.imatrix.file", im.path);
  if (!im.datasets.empty()) w.set_string("quantize.imatrix.dataset", im.datasets.front());
  w.set_i32("quantize.imatrix.entries_count", static_cast<int32_t>(im.entries.size()));
  w.set_i32("quantize.imatrix.chunks_count", static_cast<int32_t>(im.chunk_count));
}

}  // namespace

int quantize_model(const std::string& in_path, const std::string& out_path, const std::string& preset_name,
                   int n_threads, const ProgressFn& progress, const std::string& imatrix_path,
                   const QuantOverrides& overrides) {
  const QuantPreset& preset = find_quant_preset(preset_name);
  auto in = gguf::File::open(in_path);
  std::optional<ImportanceMatrix> im;
  if (!imatrix_path.empty()) im = read_imatrix(imatrix_path);
  QuantRecipe recipe(preset, recipe_model(*in), im.has_value(), overrides);
  const std::vector<DType> types = plan_types(*in, recipe, im ? &*im : nullptr, preset.name);
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
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const TensorView& t = in->tensors()[i];
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    const DType to = types[i];
    if (to == t.type) {
      w.add_tensor(t);
      step(t);
      continue;
    }
    const int64_t cols = t.ne[0], rows = t.rows(), rows_per_matrix = t.ne[1];
    // One importance row per matrix of a stack (an expert's), used for each of its rows.
    const float* importance = im && t.name != "token_embd.weight" ? im->find(t.name, cols, t.ne[2]) : nullptr;
    const size_t out_row = row_size(to, cols);
    buffers.emplace_back(out_row * rows);
    uint8_t* dst = buffers.back().data();
    pool.parallel_for(rows, [&](int64_t b, int64_t e, int) {
      std::vector<float> tmp(cols);
      for (int64_t r = b; r < e; ++r) {
        dequantize_row(t.type, t.row(r), tmp.data(), cols);
        const float* w_row = importance ? importance + (r / rows_per_matrix) * cols : nullptr;
        quantize_row(to, tmp.data(), dst + r * out_row, cols, w_row);
      }
    });
    w.add_tensor(t.name, to, ne, dst, out_row * rows);
    ++converted;
    step(t);
  }
  w.set_u32("general.file_type", preset.file_type);
  if (im) record_imatrix(w, *im);
  w.write(out_path, progress);
  return converted;
}

}  // namespace ferrum
