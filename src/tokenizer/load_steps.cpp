#include "tokenizer/load_steps.h"

#include <fstream>
#include <iterator>

#include "core/fail.h"

namespace ferrum::tok {

std::string read_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open{}{}", path, what.empty() ? "" : " ", what);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void set_llamacpp_spm_defaults(TokenizerImpl& t) {
  t.sem = Semantics::LlamaCpp;
  t.algo = Algo::Spm;
  t.bos = 1, t.eos = 2, t.unk = 0;
  t.add_space_prefix = true;
  t.add_bos = true;
  t.strip_first_space = true;
  t.piece_mode = TokenizerImpl::PieceMode::Spm;
}

bool split_merge(std::string_view m, std::string_view& a, std::string_view& b) {
  const size_t sp = m.find(' ', 1);
  if (sp == std::string_view::npos) return false;
  a = m.substr(0, sp), b = m.substr(sp + 1);
  return true;
}

bool add_merge(TokenizerImpl& t, std::string_view a, std::string_view b, int32_t rank) {
  std::string joined(a);
  joined.append(b);
  const int32_t ia = t.find(a), ib = t.find(b), ic = t.find(joined);
  if (ia < 0 || ib < 0 || ic < 0) return false;
  t.merges.emplace((uint64_t(uint32_t(ia)) << 32) | uint32_t(ib), std::make_pair(rank, ic));
  return true;
}

}  // namespace ferrum::tok
