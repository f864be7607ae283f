#include "test_util.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace ferrum::test {

std::string data_path(const std::string& rel) { return std::string(FERRUM_TEST_DATA) + "/" + rel; }

std::string temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "ferrum-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
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

Npy load_npy(const std::string& path_in) {
  std::string path = path_in;
  std::string raw = read_all(path);
  if (raw.size() < 10 || raw.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": not a .npy file");
  uint8_t major = static_cast<uint8_t>(raw[6]);
  size_t hlen, off;
  if (major == 1) {
    hlen = static_cast<uint8_t>(raw[8]) | (static_cast<uint8_t>(raw[9]) << 8);
    off = 10;
  } else {
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<uint8_t>(raw[8 + i])) << (8 * i);
    off = 12;
  }
  std::string header = raw.substr(off, hlen);
  if (header.find("'<f4'") == std::string::npos) throw std::runtime_error(path + ": expected <f4 data");
  if (header.find("'fortran_order': False") == std::string::npos) throw std::runtime_error(path + ": fortran order");
  auto lp = header.find('(', header.find("'shape'"));
  auto rp = header.find(')', lp);
  Npy npy;
  std::string dims = header.substr(lp + 1, rp - lp - 1);
  std::stringstream ds(dims);
  std::string tok;
  size_t count = 1;
  while (std::getline(ds, tok, ',')) {
    if (tok.find_first_of("0123456789") == std::string::npos) continue;
    npy.shape.push_back(std::stoll(tok));
    count *= npy.shape.back();
  }
  size_t data_off = off + hlen;
  if (raw.size() < data_off + count * 4) throw std::runtime_error(path + ": truncated");
  npy.data.resize(count);
  std::memcpy(npy.data.data(), raw.data() + data_off, count * 4);
  return npy;
}

RunResult run_ferrum(const std::string& args) {
  std::string dir = temp_dir();
  std::string out = dir + "/out", err = dir + "/err";
  std::string cmd = std::string("'") + FERRUM_BINARY + "' " + args + " > '" + out + "' 2> '" + err + "' < /dev/null";
  int rc = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = read_all(out);
  r.err = read_all(err);
  fs::remove_all(dir);
  return r;
}

}  // namespace ferrum::test
