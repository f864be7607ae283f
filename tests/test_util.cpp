#include "test_util.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "formats/npy.h"

namespace fs = std::filesystem;

namespace ferrum::test {

std::string data_path(const std::string& rel) {
  return std::string(FERRUM_TEST_DATA) + "/" + rel;
}

namespace {
// The directories temp_dir() made, removed when the test process exits.
struct TempDirs {
  std::mutex mu;
  std::vector<std::string> dirs;
  ~TempDirs() {
    for (const std::string& d : dirs) {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  }
};
TempDirs& temp_dirs() {
  static TempDirs t;
  return t;
}
}  // namespace

std::string self_command() {
  const char* emulator = std::getenv("FERRUM_TEST_EMULATOR");
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  return (emulator && *emulator ? std::string(emulator) + " " : std::string()) + "'" + self + "'";
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

std::string bundled_model() {
  return std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf";
}

std::string temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "ferrum-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  TempDirs& t = temp_dirs();
  std::lock_guard lk(t.mu);
  t.dirs.push_back(tmpl);
  return tmpl;
}

static std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string unxz(const std::string& rel) {
  std::string plain = data_path(rel);
  if (fs::exists(plain)) return plain;
  std::string xz = plain + ".xz";
  if (!fs::exists(xz)) throw std::runtime_error("missing test fixture " + plain + "(.xz)");
  fs::path cache = fs::temp_directory_path() / "ferrum-test-cache" / fs::path(rel).parent_path();
  fs::create_directories(cache);
  fs::path out = cache / fs::path(rel).filename();
  if (fs::exists(out) && fs::last_write_time(out) >= fs::last_write_time(xz)) return out.string();
  // Decompress to a unique temp name, then rename: safe when tests run in parallel.
  std::string tmp = out.string() + ".tmp" + std::to_string(getpid());
  std::string cmd = "xz -dc '" + xz + "' > '" + tmp + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("xz failed on " + xz);
  fs::rename(tmp, out);
  return out.string();
}

void copy_file_atomic(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".tmp" + std::to_string(getpid());
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, to);
}

Npy load_npy(const std::string& path) {
  npy::Array a = npy::read_f32(path);
  return Npy{std::move(a.shape), std::move(a.data)};
}

std::string npy_bytes(const std::string& header_dict, const std::string& payload, int major) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = header_dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t k = 0; k < (major == 1 ? 2u : 4u); ++k)
    out.push_back(static_cast<char>((header.size() >> (8 * k)) & 0xff));
  return out + header + payload;
}

RunResult run_ferrum(const std::string& args) {
  std::string dir = temp_dir();
  std::string out = dir + "/out", err = dir + "/err";
  std::string cmd =
      std::string("'") + FERRUM_BINARY + "' " + args + " > '" + out + "' 2> '" + err + "' < /dev/null";
  int rc = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = read_all(out);
  r.err = read_all(err);
  fs::remove_all(dir);
  return r;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old, had_ = true;
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (had_)
    setenv(name_.c_str(), old_.c_str(), 1);
  else
    unsetenv(name_.c_str());
}

}  // namespace ferrum::test
