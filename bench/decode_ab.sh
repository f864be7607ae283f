#!/usr/bin/env bash
# Generation speed of ferrum against llama.cpp, alternated many times on the same files.
#
#   LLAMA_CPP_BIN=/tmp/llama.cpp/build/bin bench/decode_ab.sh FILE.gguf [FILE.gguf ...]
#
# Why: decode is memory-bound for both engines, and on a shared VM the memory bandwidth two
# threads get can switch between levels from one second to the next (on the 2-vCPU VM of
# bench/README.md: about 32 or about 53 GB/s, while one thread steadily gets about 28). A single
# tg128 run of either engine then mostly measures which level it happened to get. This script runs
# ROUNDS short rounds per file, ferrum then llama-bench each time (tgN only, REPS repetitions),
# prints every round, and the median, best and mean per engine with the ratios.
#
# Environment: FERRUM=build/ferrum  LLAMA_CPP_BIN= (required)  ROUNDS=6  TG=128  REPS=2
#              THREADS=<all cores>
# KV cache: each engine's default, f16 K and V for both (FERRUM_KV_TYPE=f32 changes ferrum's).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FERRUM=${FERRUM:-$ROOT/build/ferrum}
ROUNDS=${ROUNDS:-6}
TG=${TG:-128}
REPS=${REPS:-2}
THREADS=${THREADS:-$(nproc)}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-}

[ $# -ge 1 ] || { echo "usage: LLAMA_CPP_BIN=DIR $0 FILE.gguf [FILE.gguf ...]" >&2; exit 2; }
[ -x "$FERRUM" ] || { echo "decode_ab: $FERRUM not found (build it, or set FERRUM=)" >&2; exit 1; }
[ -x "$LLAMA_CPP_BIN/llama-bench" ] || { echo "decode_ab: set LLAMA_CPP_BIN to a directory with llama-bench" >&2; exit 1; }
command -v python3 >/dev/null || { echo "decode_ab: python3 is needed for the summary" >&2; exit 1; }
export LD_LIBRARY_PATH="$LLAMA_CPP_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in "$@"; do
  [ -s "$f" ] || { echo "decode_ab: $f not found" >&2; exit 1; }
  for round in $(seq 1 "$ROUNDS"); do
    fts=$("$FERRUM" bench "$f" -p 0 -n "$TG" -r "$REPS" -t "$THREADS" --json |
      python3 -c 'import json,sys; print([r["avg_ts"] for r in json.load(sys.stdin)["results"] if r["n_gen"] > 0][0])')
    lts=$("$LLAMA_CPP_BIN/llama-bench" -m "$f" -p 0 -n "$TG" -r "$REPS" -t "$THREADS" -o json 2>/dev/null |
      python3 -c 'import json,sys; print([r["avg_ts"] for r in json.load(sys.stdin) if r["n_gen"] > 0][0])')
    printf '%s round %d: ferrum %.2f t/s, llama.cpp %.2f t/s\n' "$(basename "$f")" "$round" "$fts" "$lts" >&2
    echo "$f $fts $lts" >>"$out"
  done
done

python3 - "$out" "$TG" "$ROUNDS" "$THREADS" <<'EOF'
import statistics as st, sys, os
path, tg, rounds, threads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
runs = {}
for line in open(path):
    f, a, b = line.split()
    runs.setdefault(f, []).append((float(a), float(b)))
print(f"\ntg{tg}, {rounds} alternating rounds per file, {threads} threads (t/s, each round the mean of its repetitions)\n")
print("| file | ferrum per round | llama.cpp per round | ferrum median | llama.cpp median | median ratio | best ratio | mean ratio | rounds ferrum ahead |")
print("|---|---|---|---|---|---|---|---|---|")
for f, rs in runs.items():
    fa, la = [r[0] for r in rs], [r[1] for r in rs]
    ahead = sum(1 for a, b in rs if a > b)
    print(f"| {os.path.basename(f)} | {', '.join(f'{v:.1f}' for v in fa)} | {', '.join(f'{v:.1f}' for v in la)} | "
          f"{st.median(fa):.2f} | {st.median(la):.2f} | **{st.median(fa) / st.median(la):.2f}** | "
          f"{max(fa) / max(la):.2f} | {st.mean(fa) / st.mean(la):.2f} | {ahead}/{len(rs)} |")
EOF
