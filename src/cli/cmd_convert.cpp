// `ferrum convert` (llama2.c checkpoint or Hugging Face directory -> GGUF) and `ferrum quantize`.
#include <cstdio>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/progress.h"
#include "core/fail.h"
#include "formats/convert_hf.h"
#include "formats/convert_llama2c.h"
#include "loading/loader.h"
#include "models/quantize.h"
#include "models/registry.h"

namespace ferrum::cli {

Runner add_convert(CLI::App& app) {
  struct Flags {
    std::string in, out, tokenizer;
    bool allow_requantize = false, quiet = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("convert", "convert a llama2.c checkpoint or a Hugging Face directory to GGUF");
  sub->add_option("input", f->in, "llama2.c checkpoint (.bin) or Hugging Face model directory")->required();
  sub->add_option("output", f->out, "output GGUF file")->required();
  sub->add_option("--tokenizer", f->tokenizer, "llama2.c tokenizer.bin (default: beside the checkpoint)");
  sub->add_flag("--allow-requantize", f->allow_requantize,
                "GPTQ act-order layers: write them requantized (not exact) instead of refusing");
  sub->add_flag("-q,--quiet", f->quiet, "print nothing but errors (no progress)");
  return [f] {
    ProgressDisplay progress(f->quiet);
    const ModelFormat fmt = detect_format(f->in);
    if (fmt == ModelFormat::Gguf)
      fail("{}: is already a GGUF file (use `ferrum quantize` to change its type)", f->in);
    if (fmt == ModelFormat::Llama2c) {
      convert_llama2c_to_gguf(f->in, llama2c_tokenizer_path(f->in, f->tokenizer), f->out, progress.fn());
    } else {
      HfConvertOptions opt;
      opt.allow_requantize = f->allow_requantize;
      opt.progress = progress.fn();
      convert_hf_to_gguf(f->in, f->out, opt);
    }
    progress.message("wrote " + f->out);
    return 0;
  };
}

namespace {

// The value of --output-tensor-type / --token-embedding-type: a type ferrum writes, any case.
CLI::Validator quant_type() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return writable_type(s)
                   ? ""
                   : "expects a type ferrum writes (" + writable_type_names() + "), got " + shown_value(s);
      },
      "TYPE", kChoice);
}

// The value of --tensor-type: PATTERN=TYPE.
CLI::Validator tensor_type() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const size_t eq = s.find('=');
        if (eq == std::string::npos || eq == 0 || !writable_type(s.substr(eq + 1)))
          return "expects PATTERN=TYPE with a type ferrum writes (e.g. attn_v=q8_0), got " + shown_value(s);
        return {};
      },
      "PATTERN=TYPE", kChoice);
}

}  // namespace

Runner add_quantize(CLI::App& app) {
  struct Flags {
    std::string in, out, type, imatrix, output_type, embedding_type;
    std::vector<std::string> tensor_types;
    int threads = 0;
    bool quiet = false, pure = false, leave_output = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("quantize", "rewrite a GGUF model with its weights in another type");
  sub->add_option("input", f->in, "input GGUF")->required();
  sub->add_option("output", f->out, "output GGUF")->required();
  sub->add_option(
         "type", f->type,
         "llama-quantize's preset: Q8_0, Q6_K, Q5_K_M, Q5_K_S, Q5_1, Q5_0, Q4_K_M, Q4_K_S, Q4_1, "
         "Q4_0, IQ4_XS, IQ4_NL, Q3_K_L, Q3_K_M, Q3_K_S, IQ3_M, IQ3_S, IQ3_XS, IQ3_XXS, Q2_K, Q2_K_S, "
         "IQ2_M, IQ2_S, IQ2_XS, IQ2_XXS, IQ1_M, IQ1_S, MXFP4_MOE, F16, BF16, F32")
      ->required();
  sub->add_option(
         "--imatrix", f->imatrix,
         "importance matrix from llama-imatrix (GGUF or .dat): weights each column's error; required "
         "by IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS and Q2_K_S")
      ->check(non_empty());
  sub->add_flag("--pure", f->pure, "every quantizable tensor in the preset's type (no per-tensor mix)");
  sub->add_flag("--leave-output-tensor", f->leave_output, "keep output.weight as it is");
  sub->add_option("--output-tensor-type", f->output_type, "type of output.weight (e.g. q8_0)")
      ->check(quant_type());
  sub->add_option("--token-embedding-type", f->embedding_type, "type of token_embd.weight (e.g. q8_0)")
      ->check(quant_type());
  sub->add_option(
         "--tensor-type", f->tensor_types,
         "PATTERN=TYPE: tensors whose name the regular expression matches get TYPE (repeatable; the first "
         "match wins), e.g. attn_v=q8_0")
      ->check(tensor_type());
  sub->add_option("-t,--threads", f->threads, "worker threads")
      ->transform(whole(1, ModelFlags::kMaxThreads))
      ->default_str("all cores");
  sub->add_flag("-q,--quiet", f->quiet, "print nothing but errors (no progress)");
  return [f] {
    QuantOverrides o;
    o.pure = f->pure;
    o.leave_output = f->leave_output;
    if (!f->output_type.empty()) o.output_type = quant_type_from_name(f->output_type, "--output-tensor-type");
    if (!f->embedding_type.empty())
      o.embedding_type = quant_type_from_name(f->embedding_type, "--token-embedding-type");
    for (const std::string& v : f->tensor_types) o.tensor_types.push_back(parse_tensor_type(v));
    ProgressDisplay progress(f->quiet);
    const int n = quantize_model(f->in, f->out, f->type, f->threads, progress.fn(), f->imatrix, o);
    progress.message(fmt::format("wrote {} ({} tensors converted)", f->out, n));
    return 0;
  };
}

}  // namespace ferrum::cli
