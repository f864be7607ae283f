#include "runtime/prefix_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/fail.h"
#include "core/hash.h"

namespace ferrum::runtime {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'F', 'E', 'R', 'R', 'K', 'V', 'B', '1'};
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Reads the file's fields in order; any read past the end makes ok false.
struct Reader {
  const std::vector<uint8_t>& b;
  size_t at = 0;
  bool ok = true;
  template <typename T>
  T get() {
    T v{};
    if (at + sizeof v > b.size()) {
      ok = false;
      return v;
    }
    std::memcpy(&v, b.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::span<const uint8_t> bytes(uint64_t n) {
    if (n > b.size() - std::min(at, b.size())) {
      ok = false;
      return {};
    }
    auto s = std::span(b.data() + at, n);
    at += n;
    return s;
  }
};

}  // namespace

PrefixStore::PrefixStore(const std::string& dir, std::string identity, uint64_t max_bytes, Log log)
    : identity_(std::move(identity)), max_bytes_(max_bytes), log_(std::move(log)) {
  const auto* id = reinterpret_cast<const uint8_t*>(identity_.data());
  folder_ = (fs::path(dir) / fmt::format("{:016x}", fnv1a64(std::span(id, identity_.size())))).string();
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (ec || !fs::is_directory(folder_, ec))
    fail("--prefix-cache-dir {}: cannot create the folder {} ({})", dir, folder_, ec.message());
  for (const auto& e : fs::directory_iterator(folder_, ec))
    if (e.is_regular_file(ec)) bytes_ += e.file_size(ec);
  if (!log_) log_ = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
}

std::string PrefixStore::path_of(uint64_t hash) const {
  return fmt::format("{}/{:016x}.kvb", folder_, hash);
}

bool PrefixStore::has(uint64_t hash) const {
  std::error_code ec;
  return fs::is_regular_file(path_of(hash), ec);
}

void PrefixStore::save(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens, uint32_t group_mask,
                       std::span<const std::span<const uint8_t>> payload) {
  std::lock_guard lk(mu_);
  const std::string path = path_of(hash);
  std::error_code ec;
  if (fs::exists(path, ec)) return;
  std::string head(kMagic, sizeof kMagic);
  put(head, kVersion);
  put(head, static_cast<uint32_t>(identity_.size()));
  head += identity_;
  put(head, hash);
  put(head, parent);
  put(head, static_cast<uint32_t>(tokens.size()));
  head.append(reinterpret_cast<const char*>(tokens.data()), tokens.size_bytes());
  put(head, group_mask);
  uint64_t n = 0, sum = 0xcbf29ce484222325ull;
  for (const auto& p : payload) n += p.size(), sum = fnv1a64(p, sum);
  put(head, n);
  put(head, sum);
  // A temporary name renamed over the file: a reader never sees half a block.
  const std::string tmp = fmt::format("{}.{}.tmp", path, static_cast<const void*>(&head));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    for (const auto& p : payload)
      out.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size()));
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      log_(fmt::format("ferrum: prefix cache: cannot write {} (disk full?); the block is not kept", path));
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return;
  }
  bytes_ += head.size() + n;
  ++saved_;
  if (max_bytes_ && bytes_ > max_bytes_) trim();
}

bool PrefixStore::load(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens, uint32_t& group_mask,
                       std::vector<uint8_t>& payload) {
  std::lock_guard lk(mu_);
  if (bad_.count(hash)) return false;
  const std::string path = path_of(hash);
  auto reject = [&](const char* why) {
    bad_.insert(hash);
    log_(fmt::format("ferrum: prefix cache: {} ignored: {}", path, why));
    return false;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Reader r{b};
  const auto magic = r.bytes(sizeof kMagic);
  if (!r.ok || std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0)
    return reject("not a ferrum KV block file");
  if (r.get<uint32_t>() != kVersion) return reject("written by another format version");
  const auto id = r.bytes(r.get<uint32_t>());
  if (!r.ok || std::string_view(reinterpret_cast<const char*>(id.data()), id.size()) != identity_)
    return reject("computed by another model, precision, kernel tier or KV layout");
  const uint64_t h = r.get<uint64_t>(), p = r.get<uint64_t>();
  const uint32_t n_tok = r.get<uint32_t>();
  const auto toks = r.bytes(uint64_t{n_tok} * sizeof(int32_t));
  if (!r.ok || h != hash || p != parent || n_tok != tokens.size() ||
      std::memcmp(toks.data(), tokens.data(), tokens.size_bytes()) != 0)
    return reject("it holds another prompt block");
  group_mask = r.get<uint32_t>();
  const uint64_t n = r.get<uint64_t>(), sum = r.get<uint64_t>();
  const auto data = r.bytes(n);
  if (!r.ok || r.at != b.size()) return reject("truncated or with trailing bytes");
  if (fnv1a64(data) != sum) return reject("checksum mismatch (corrupted)");
  payload.assign(data.begin(), data.end());
  ++loaded_;
  return true;
}

void PrefixStore::trim() {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  for (const auto& e : fs::directory_iterator(folder_, ec))
    if (e.is_regular_file(ec) && e.path().extension() == ".kvb")
      files.emplace_back(e.last_write_time(ec), e.path());
  std::sort(files.begin(), files.end());
  for (const auto& [t, p] : files) {
    if (bytes_ <= max_bytes_ / 10 * 9) break;
    const uint64_t size = fs::file_size(p, ec);
    if (fs::remove(p, ec)) bytes_ -= std::min(bytes_, size);
  }
}

}  // namespace ferrum::runtime
