#!/usr/bin/env bash
# Speculative decoding, ferrum against llama.cpp on the same files and prompt, alternated.
#
#   LLAMA_CPP_BIN=/tmp/llama.cpp/build/bin bench/spec_compare.sh TARGET.gguf DRAFT.gguf
#   LLAMA_CPP_BIN=... bench/spec_compare.sh TARGET.gguf ngram
#
# Each round runs, greedy, N tokens from the same prompt:
#   ferrum:    `ferrum bench --draft-model DRAFT` (or --spec-ngram): plain and speculative decode of
#              the request, alternated inside the command (its -r rounds), tokens/s of each;
#   llama.cpp: `llama-speculative -m TARGET -md DRAFT` (or `llama-lookup` for ngram), its decode
#              tokens/s, and `llama-bench -p 0 -n N -d P` (plain decode at the prompt's depth) as
#              its own baseline.
# Prints every round and the medians: each engine's speed-up over its own plain decode, and the
# speculative tokens/s of ferrum over llama.cpp's.
#
# Environment: FERRUM=build/ferrum  LLAMA_CPP_BIN= (required)  ROUNDS=3  N=128  DRAFT_MAX=5
#              THREADS=<all cores>  PROMPT_FILE=<ferrum's built-in self-repeating prompt>
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FERRUM=${FERRUM:-$ROOT/build/ferrum}
ROUNDS=${ROUNDS:-3}
N=${N:-128}
DRAFT_MAX=${DRAFT_MAX:-5}
THREADS=${THREADS:-$(nproc)}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-}

[ $# -eq 2 ] || { echo "usage: LLAMA_CPP_BIN=DIR $0 TARGET.gguf DRAFT.gguf|ngram" >&2; exit 2; }
target=$1 draft=$2
[ -x "$FERRUM" ] || { echo "spec_compare: $FERRUM not found (build it, or set FERRUM=)" >&2; exit 1; }
for t in llama-speculative llama-lookup llama-bench; do
  [ -x "$LLAMA_CPP_BIN/$t" ] || { echo "spec_compare: set LLAMA_CPP_BIN to a directory with $t" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$LLAMA_CPP_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The prompt both engines get: ferrum's built-in one unless PROMPT_FILE is given.
prompt_file=$(mktemp)
out=$(mktemp)
trap 'rm -f "$prompt_file" "$out"' EXIT
if [ -n "${PROMPT_FILE:-}" ]; then cp "$PROMPT_FILE" "$prompt_file"; else
  printf 'def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n\ndef div(a, b):\n    return a / b\n\ndef add(a, b):\n' >"$prompt_file"
fi
n_prompt=$("$FERRUM" tokenize "$target" "$(cat "$prompt_file")" --ids-only | wc -w)

if [ "$draft" = ngram ]; then fflags=(--spec-ngram); else fflags=(--draft-model "$draft"); fi
for round in $(seq 1 "$ROUNDS"); do
  read -r fplain fspec facc < <("$FERRUM" bench "$target" "${fflags[@]}" --draft-max "$DRAFT_MAX" -n "$N" -r 1 \
      -t "$THREADS" --spec-prompt "$(cat "$prompt_file")" --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["plain_ts"][0], j["spec_ts"][0], j["acceptance_rate"])')
  if [ "$draft" = ngram ]; then
    log=$("$LLAMA_CPP_BIN/llama-lookup" -m "$target" -f "$prompt_file" -n "$N" --spec-draft-n-max "$DRAFT_MAX" \
      --temp 0 -t "$THREADS" -c 4096 2>&1 || true)
  else
    log=$("$LLAMA_CPP_BIN/llama-speculative" -m "$target" -md "$draft" -f "$prompt_file" -n "$N" \
      --spec-draft-n-max "$DRAFT_MAX" --temp 0 -t "$THREADS" -td "$THREADS" -c 4096 2>&1 || true)
  fi
  lspec=$(echo "$log" | sed -n 's/.*decoded .* speed: *\([0-9.]*\) t\/s.*/\1/p' | tail -1)
  lacc=$(echo "$log" | sed -n 's/.*accept *= *\([0-9.]*\)%.*/\1/p' | tail -1)
  [ -n "$lspec" ] || { echo "spec_compare: no speed in llama.cpp's output:" >&2; echo "$log" | tail -20 >&2; exit 1; }
  lplain=$("$LLAMA_CPP_BIN/llama-bench" -m "$target" -p 0 -n "$N" -d "$n_prompt" -r 1 -t "$THREADS" -o json 2>/dev/null |
    python3 -c 'import json,sys; print([r["avg_ts"] for r in json.load(sys.stdin) if r["n_gen"] > 0][0])')
  printf 'round %d: ferrum plain %.2f spec %.2f (accept %.0f%%) | llama.cpp plain %.2f spec %.2f (accept %s%%)\n' \
    "$round" "$fplain" "$fspec" "$(python3 -c "print(100*$facc)")" "$lplain" "$lspec" "${lacc:-?}" >&2
  echo "$fplain $fspec $lplain $lspec" >>"$out"
done

python3 - "$out" "$target" "$draft" "$N" "$THREADS" "$DRAFT_MAX" <<'PY'
import statistics as st, sys, os
path, target, draft, n, threads, dmax = sys.argv[1:]
rows = [list(map(float, l.split())) for l in open(path)]
med = [st.median(c) for c in zip(*rows)]
print(f"\n{os.path.basename(target)} with {os.path.basename(draft)}: {n} tokens greedy, draft max {dmax}, {threads} threads, "
      f"{len(rows)} rounds (medians, t/s)\n")
print("| engine | plain | speculative | speed-up |")
print("|---|---|---|---|")
print(f"| ferrum | {med[0]:.2f} | {med[1]:.2f} | {st.median(r[1] / r[0] for r in rows):.2f}x |")
print(f"| llama.cpp | {med[2]:.2f} | {med[3]:.2f} | {st.median(r[3] / r[2] for r in rows):.2f}x |")
print(f"\nferrum speculative / llama.cpp speculative: **{st.median(r[1] / r[3] for r in rows):.2f}x**")
PY
