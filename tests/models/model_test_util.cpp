#include "model_test_util.h"

#include <fmt/format.h>
#include <time.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "ferrum/loader.h"
#include "ferrum/sampler.h"
#include "formats/convert_hf.h"
#include "models/quantize.h"

namespace fs = std::filesystem;

namespace ferrum::test {

std::string model_file(const std::string& model, const std::string& rel) {
  return unxz("models/" + model + "/" + rel);
}

std::string data_dir(const std::string& rel) {
  const fs::path src = data_path(rel);
  std::string flat = rel;
  for (char& c : flat)
    if (c == '/') c = '-';
  const fs::path dst = fs::temp_directory_path() / "ferrum-test-cache" / "hf" / flat;
  fs::create_directories(dst);
  // A cached copy older than its fixture (regenerated since) is replaced.
  auto refresh = [](const fs::path& from, const fs::path& to) {
    if (!fs::exists(to) || fs::last_write_time(to) < fs::last_write_time(from))
      copy_file_atomic(from.string(), to.string());
  };
  for (const auto& e : fs::recursive_directory_iterator(src)) {  // BERT has a 1_Pooling/ folder
    const std::string name = fs::relative(e.path(), src).string();
    if (e.is_directory()) {
      fs::create_directories(dst / name);
    } else if (name.size() > 3 && name.compare(name.size() - 3, 3, ".xz") == 0) {
      const std::string plain = unxz(rel + "/" + name.substr(0, name.size() - 3));
      refresh(plain, dst / name.substr(0, name.size() - 3));
    } else {
      refresh(e.path(), dst / name);
    }
  }
  return dst.string();
}

std::string hf_dir(const std::string& model, const std::string& sub) {
  return data_dir("models/" + model + "/" + sub);
}

nlohmann::json load_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(f);
}

bool is_family(const std::string& name) {
  return fs::exists(data_path("families/" + name + "/reference.json"));
}

std::string family_gguf(const std::string& family, const std::string& type) {
  static std::mutex mu;
  static std::map<std::string, std::string> made;  // family/type -> file
  std::lock_guard lk(mu);
  auto get = [&](const std::string& t, auto&& make) {
    std::string& path = made[family + "/" + t];
    if (path.empty()) {
      const std::string out = temp_dir() + "/" + family + "-" + t + ".gguf";
      make(out);
      path = out;
    }
    return path;
  };
  const std::string f32 = get("F32", [&](const std::string& out) {
    convert_hf_to_gguf(data_dir("families/" + family + "/hf"), out);
  });
  if (type == "F32") return f32;
  return get(type, [&](const std::string& out) { quantize_model(f32, out, type, 2); });
}

std::vector<int32_t> prompt_ids(const std::string& model, const std::string& pid) {
  if (is_family(model)) {  // one prompt: p1..p3 are its first 9, 23 and 37 tokens, p4 it twice
    auto ids = load_json(data_path("families/" + model + "/reference.json"))["prompt"]["token_ids"]
                   .get<std::vector<int32_t>>();
    if (pid == "p4") {
      const std::vector<int32_t> once = ids;
      ids.insert(ids.end(), once.begin() + 1, once.end());  // past a 16-token window and its rollback
      return ids;
    }
    ids.resize(std::min<size_t>(pid == "p1" ? 9 : pid == "p2" ? 23 : 37, ids.size()));
    return ids;
  }
  auto ref = load_json(data_path("models/" + model + "/reference.json"));
  for (const auto& p : ref["prompts"])
    if (p["id"] == pid) return p["token_ids"].get<std::vector<int32_t>>();
  throw std::runtime_error("no prompt " + pid + " in " + model);
}

std::unique_ptr<CachedModel> with_cache(std::unique_ptr<Model> m, int64_t capacity,
                                        const std::string& kv_type) {
  KvOptions kv;
  if (!kv_type.empty()) kv.type = parse_kv_type(kv_type);
  kv.capacity = capacity;
  return std::make_unique<CachedModel>(std::move(m), kv);
}

std::unique_ptr<CachedModel> open_model(const std::string& path, Precision prec, int threads,
                                        const std::string& kv_type, int64_t capacity) {
  ModelFiles files = open_model_files(path);
  ModelOptions o;
  o.precision = prec;
  o.n_threads = threads;
  return with_cache(create_model(std::move(files.config), std::move(files.weights), o), capacity, kv_type);
}

SeqInput seq_input(int seq, std::span<const int32_t> tokens, Want logits, Want hidden) {
  SeqInput in;
  in.seq = seq;
  in.tokens = tokens;
  in.logits = logits;
  in.hidden = hidden;
  return in;
}

std::vector<float> all_logits(CachedModel& m, const std::vector<int32_t>& ids) {
  std::vector<float> out(ids.size() * m.config().n_vocab);
  m.reset();
  m.prefill(0, ids, out.data(), true);
  m.reset();
  return out;
}

std::vector<int32_t> greedy_continuation(CachedModel& m, const std::vector<int32_t>& prompt, size_t n) {
  const int V = m.config().n_vocab;
  std::vector<float> logits(V);
  m.reset();
  m.prefill(0, prompt, logits.data());
  std::vector<int32_t> got;
  for (size_t i = 0; i < n; ++i) {
    got.push_back(argmax(logits.data(), V));
    if (i + 1 < n) m.decode(0, got.back(), m.seq_len(0), logits.data());
  }
  return got;
}

std::pair<std::string, std::string> greedy_text_vs_llamacpp(const std::string& family,
                                                            const std::vector<int32_t>& prompt) {
  const std::string ref = data_path("families/" + family + "/llamacpp-greedy24.hex");
  std::ifstream f(ref);
  std::string want;
  if (!(f >> want)) return {};
  const std::string gguf = family_gguf(family, "F32");
  auto m = open_model(gguf, Precision::Exact, 2, kReferenceKvType, 256);
  const auto tok = load_tokenizer(gguf);
  std::string text;
  for (int32_t id : greedy_continuation(*m, prompt, 24)) text += tok->token_to_piece(id);
  std::string hex;
  for (unsigned char c : text) hex += fmt::format("{:02x}", c);
  return {hex, want};
}

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int bench_threads() {
  const char* v = std::getenv("FERRUM_BENCH_THREADS");
  return v ? std::atoi(v) : 0;
}

Diff compare(const std::vector<float>& a, const std::vector<float>& b, int64_t rows, int64_t cols) {
  Diff d;
  d.rows = rows;
  double sum = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t ia = 0, ib = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double x = a[r * cols + c], y = b[r * cols + c];
      const double e = std::fabs(x - y);
      d.max_abs = std::max(d.max_abs, e);
      sum += e;
      if (a[r * cols + c] > a[r * cols + ia]) ia = c;
      if (b[r * cols + c] > b[r * cols + ib]) ib = c;
    }
    d.argmax_agree += ia == ib;
  }
  d.mean_abs = sum / static_cast<double>(rows * cols);
  return d;
}

}  // namespace ferrum::test
