// Throughput benchmark (disabled by default; run with
// --gtest_also_run_disabled_tests --gtest_filter='*Throughput*'). Encodes >= 1 MB of the stress
// corpus (repeated) and compares, in the same run, with the pre-tokenizer alone and with naive
// quadratic merge loops (scan every adjacent pair for the best merge, as the reference Python
// GPT-2 / llama2.c encoders do).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <limits>

#include "core/utf8.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer_fixtures.h"

namespace ferrum {
namespace {

using Clock = std::chrono::steady_clock;

std::string corpus_text(size_t min_bytes) {
  std::string one;
  for (const auto& row : test::load_jsonl("tokenizer/corpus.jsonl")) {
    one += row["text"].get<std::string>();
    one += "\n";
  }
  std::string all;
  while (all.size() < min_bytes) all += one;
  return all;
}

template <typename F>
double seconds(F&& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Naive byte-level BPE on one pre-token: rescan all pairs for the lowest rank after each merge.
void naive_bpe(const TokenizerImpl& t, std::string_view word, std::vector<int32_t>& out) {
  std::vector<int32_t> syms;
  for (unsigned char c : word) syms.push_back(t.byte_token[c]);
  for (;;) {
    int32_t best = std::numeric_limits<int32_t>::max(), at = -1, id = -1;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      const auto* m = t.merges.find((uint64_t(uint32_t(syms[i])) << 32) | uint32_t(syms[i + 1]));
      if (m && m->first < best) {
        best = m->first, at = static_cast<int32_t>(i), id = m->second;
      }
    }
    if (at < 0) break;
    syms[at] = id;
    syms.erase(syms.begin() + at + 1);
  }
  out.insert(out.end(), syms.begin(), syms.end());
}

// Naive SentencePiece merge loop (llama2.c's encode): best-scoring adjacent pair, rescan.
void naive_spm(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out) {
  std::vector<std::string> syms;
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8::lead_len(static_cast<uint8_t>(text[i]));
    syms.emplace_back(text.substr(i, len));
    i += len;
  }
  for (;;) {
    float best = -1e30f;
    int at = -1;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      const int32_t id = t.find(syms[i] + syms[i + 1]);
      if (id >= 0 && t.score[id] > best) best = t.score[id], at = static_cast<int>(i);
    }
    if (at < 0) break;
    syms[at] += syms[at + 1];
    syms.erase(syms.begin() + at + 1);
  }
  for (const auto& s : syms) {
    const int32_t id = t.find(s);
    if (id >= 0) {
      out.push_back(id);
    } else {
      for (unsigned char c : s) out.push_back(t.byte_token[c]);
    }
  }
}

TEST(TokenizerBench, DISABLED_Throughput) {
  const std::string text = corpus_text(1 << 20);
  const double mb = text.size() / 1e6;
  std::printf("input: %.2f MB (stress corpus repeated)\n", mb);

  auto report = [&](const char* name, const Tokenizer& tok) {
    std::vector<int32_t> ids;
    const double s = seconds([&] { ids = tok.encode(text, false, false); });
    std::string dec;
    const double d = seconds([&] { dec = tok.decode(ids); });
    std::printf("%-34s encode %7.2f MB/s (%zu tokens)  decode %7.2f MB/s\n", name, mb / s, ids.size(),
                mb / d);
    return ids;
  };
  const Tokenizer& l3 = test::gguf_tokenizer("llama3-tokref");
  const auto l3_ids = report("BPE llama3 (GGUF)", l3);
  {
    // The input repeats the corpus, so the per-call pre-token cache hits a lot; this line
    // encodes each corpus copy separately (cache cold every call).
    const std::string one = corpus_text(1);
    std::vector<int32_t> ids;
    const double s = seconds([&] {
      for (size_t k = 0; k < text.size() / one.size(); ++k) {
        ids = l3.encode(one, false, false);
      }
    });
    std::printf("%-34s encode %7.2f MB/s (%zu x %zu bytes)\n", "BPE llama3 (GGUF), cold cache", mb / s,
                text.size() / one.size(), one.size());
  }
  report("BPE qwen3 (tokenizer.json, NFC)", test::hf_tokenizer("qwen3"));
  report("BPE gpt-2 (GGUF)", test::gguf_tokenizer("gpt-2"));
  const Tokenizer& spm = test::gguf_tokenizer("llama-spm");
  report("SPM llama-2 (GGUF)", spm);
  report("WordPiece bge (GGUF)", test::gguf_tokenizer("bert-bge"));
  report("WordPiece bge (tokenizer.json)", test::hf_tokenizer("bert-bge-rebuilt-from-gguf"));

  // Baseline 1: llama3 pre-tokenizer (PCRE2 JIT split) alone.
  {
    const TokenizerImpl& t = l3.impl();
    std::string buf = text;
    std::vector<std::pair<size_t, size_t>> spans;
    const double s = seconds([&] { tok::pre_tokenize(t.pretok, buf, spans, true); });
    std::printf("%-34s        %7.2f MB/s (%zu pre-tokens)\n", "  baseline: llama3 regex split only", mb / s,
                spans.size());
    // Baseline 2: naive quadratic BPE per pre-token on the same split.
    std::vector<int32_t> naive;
    const double n = seconds([&] {
      for (const auto& [b, e] : spans) {
        const std::string_view w = std::string_view(buf).substr(b, e - b);
        const int32_t* id = t.bytes_to_id.find(w);  // ignore_merges, as the real path
        if (id) {
          naive.push_back(*id);
        } else {
          naive_bpe(t, w, naive);
        }
      }
    });
    std::printf("%-34s encode %7.2f MB/s\n", "  baseline: naive BPE merge loop", mb / n);
    EXPECT_EQ(naive, l3_ids);
  }
  // Baseline 3: naive SPM on the first 16 KB (quadratic; full 1 MB would take hours).
  {
    const std::string part = text.substr(0, 16 << 10);
    std::string esc = " " + part;
    for (size_t p = 0; (p = esc.find(' ', p)) != std::string::npos;)
      esc.replace(p, 1, "\xE2\x96\x81"), p += 3;
    std::vector<int32_t> naive, fast;
    const double n = seconds([&] { naive_spm(spm.impl(), esc, naive); });
    const double f = seconds([&] { tok::spm_encode(spm.impl(), esc, fast); });
    std::printf("SPM 16 KB: priority queue %7.2f MB/s, naive rescan %7.4f MB/s\n", part.size() / 1e6 / f,
                part.size() / 1e6 / n);
    EXPECT_EQ(naive.size(), fast.size());
  }
}

}  // namespace
}  // namespace ferrum
