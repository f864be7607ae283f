#include "tokenizer/decoder.h"

#include <algorithm>

#include "core/fail.h"

namespace ferrum::tok {

namespace {

// One replace pass over buf; stops before a tail that is a proper prefix of a pattern unless
// final. Returns the number of bytes consumed.
size_t run_pass(const CleanupPass& pass, const std::string& buf, bool final, std::string& out) {
  size_t i = 0;
  while (i < buf.size()) {
    // Fast path: copy up to the next byte that can start a pattern.
    size_t next = std::string::npos;
    for (const auto& r : pass.rules) next = std::min(next, buf.find(r.first[0], i));
    if (next == std::string::npos) next = buf.size();
    if (next > i) {
      out.append(buf, i, next - i);
      i = next;
      continue;
    }
    bool matched = false, partial = false;
    for (const auto& [pat, rep] : pass.rules) {
      if (buf.compare(i, pat.size(), pat) == 0) {
        out += rep;
        i += pat.size();
        matched = true;
        break;
      }
      const size_t rest = buf.size() - i;
      if (!final && rest < pat.size() && pat.compare(0, rest, buf, i, rest) == 0) partial = true;
    }
    if (matched) continue;
    if (partial) break;
    out += buf[i++];
  }
  return i;
}

// The clean-up replacements, in the order transformers and tokenizers apply them, and which
// clean-ups use each. Those two run one pass per rule (sequential replace calls), in table order;
// llama.cpp scans the text three times (" ?", " !", " .", " ,"; then " ' "; then the contractions
// " 's", " 'm", " 're", " 've"), each scan trying its rules together, and leaves " n't" alone.
struct CleanupRule {
  const char* from;
  const char* to;
  bool transformers, wordpiece;  // one pass per rule
  int llamacpp_scan;             // which of llama.cpp's scans (-1: not used)
};
// clang-format off
constexpr CleanupRule kCleanupRules[] = {
    // from       to        transformers  wordpiece  llama.cpp scan
    {" .",       ".",       true,         true,       0},
    {" ?",       "?",       true,         true,       0},
    {" !",       "!",       true,         true,       0},
    {" ,",       ",",       true,         true,       0},
    {" ' ",      "'",       true,         true,       1},
    {" n't",     "n't",     true,         true,      -1},
    {" 'm",      "'m",      true,         true,       2},
    {" do not",  " don't",  false,        true,      -1},
    {" 's",      "'s",      true,         true,       2},
    {" 've",     "'ve",     true,         true,       2},
    {" 're",     "'re",     true,         true,       2},
};
// clang-format on
constexpr int kLlamaCppScans = 3;

std::vector<CleanupPass> build_cleanup(Cleanup which) {
  std::vector<CleanupPass> passes;
  if (which == Cleanup::LlamaCpp) {
    passes.resize(kLlamaCppScans);
    for (const CleanupRule& r : kCleanupRules) {
      if (r.llamacpp_scan >= 0) passes[r.llamacpp_scan].rules.emplace_back(r.from, r.to);
    }
    return passes;
  }
  for (const CleanupRule& r : kCleanupRules) {
    if (which == Cleanup::Transformers ? r.transformers : r.wordpiece) passes.push_back({{{r.from, r.to}}});
  }
  return passes;
}

}  // namespace

const std::vector<CleanupPass>& cleanup_passes(Cleanup which) {
  static const std::vector<CleanupPass> kTransformers = build_cleanup(Cleanup::Transformers),
                                        kWordPiece = build_cleanup(Cleanup::WordPieceDecoder),
                                        kLlamaCpp = build_cleanup(Cleanup::LlamaCpp);
  switch (which) {
    case Cleanup::Transformers:
      return kTransformers;
    case Cleanup::WordPieceDecoder:
      return kWordPiece;
    case Cleanup::LlamaCpp:
      return kLlamaCpp;
  }
  return kTransformers;
}

std::string apply_cleanup(const std::vector<CleanupPass>& passes, std::string s) {
  for (const auto& p : passes) {
    bool hit = false;
    for (const auto& r : p.rules) hit = hit || s.find(r.first) != std::string::npos;
    if (!hit) continue;
    std::string out;
    out.reserve(s.size());
    run_pass(p, s, true, out);
    s.swap(out);
  }
  return s;
}

DecodeState::DecodeState(const TokenizerImpl& t, bool skip_special, bool clean_up_spaces, bool at_text_start)
    : t_(t), skip_(skip_special), first_(at_text_start), pending_(clean_up_spaces ? t.cleanup.size() : 0) {}

void DecodeState::run_passes(std::string text, bool final, std::string& out) {
  if (pending_.empty()) {
    out += text;
    return;
  }
  for (size_t k = 0; k < pending_.size(); ++k) {
    std::string& buf = pending_[k];
    buf += text;
    scratch_.clear();
    const size_t used = run_pass(t_.cleanup[k], buf, final, scratch_);
    buf.erase(0, used);
    text.swap(scratch_);
  }
  out += text;
}

void DecodeState::push(int32_t id, std::string& out) {
  t_.check_id(id, "decode");
  if (skip_ && t_.skippable[id]) return;
  const std::string& p = t_.piece[id];
  if (!t_.wp_decoder && !(first_ && t_.strip_first_space) && pending_.empty()) {
    out += p;  // common case: nothing to rewrite
    first_ = false;
    return;
  }
  std::string c = p;
  if (t_.wp_decoder) {
    // HF WordPiece decoder: "##x" glues to the previous token, other tokens get a space.
    if (!first_) {
      if (c.compare(0, t_.wp_prefix.size(), t_.wp_prefix) == 0) {
        c.erase(0, t_.wp_prefix.size());
      } else {
        c.insert(0, " ");
      }
    }
    if (t_.wp_decoder_cleanup) {
      c = apply_cleanup(cleanup_passes(Cleanup::WordPieceDecoder), std::move(c));
    }
  } else if (first_ && t_.strip_first_space && !c.empty() && c[0] == ' ') {
    c.erase(0, 1);
  }
  first_ = false;
  run_passes(std::move(c), false, out);
}

void DecodeState::finish(std::string& out) {
  run_passes(std::string(), true, out);
  first_ = true;
}

}  // namespace ferrum::tok
