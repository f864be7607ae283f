// `ferrum export-lora`: merges LoRA adapters into a GGUF base (W + scale * B A), writing a new GGUF.
#include <cstdio>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/progress.h"
#include "core/fail.h"
#include "models/lora_merge.h"

namespace ferrum::cli {

Runner add_export_lora(CLI::App& app) {
  struct Flags {
    std::string base, out, type;
    std::vector<std::string> lora;
    bool quiet = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("export-lora", "merge LoRA adapters into a GGUF model's weights");
  sub->add_option("base", f->base, "base GGUF model")->required();
  sub->add_option("output", f->out, "output GGUF")->required();
  sub->add_option("--lora", f->lora, "adapter PATH[:scale] (PEFT directory or GGUF LoRA; repeatable: summed)")
      ->required();
  sub->add_option("--type", f->type,
                  "type of the merged matrices: F32, F16, BF16 or Q8_0 (default: each keeps its own)")
      ->check(one_of({"F32", "F16", "BF16", "Q8_0"}));
  sub->add_flag("-q,--quiet", f->quiet, "print nothing but errors (no progress)");
  return [f] {
    ProgressDisplay progress(f->quiet);
    std::vector<LoraSpec> specs;
    for (const std::string& s : f->lora) specs.push_back(parse_lora_spec(s));
    std::optional<DType> type;
    if (!f->type.empty()) type = dtype_from_name(f->type);
    const int n = export_lora(f->base, specs, f->out, type, progress.fn());
    progress.message(fmt::format("wrote {} ({} tensors merged)", f->out, n));
    return 0;
  };
}

}  // namespace ferrum::cli
