#!/usr/bin/env bash
# A GPTQ/AWQ directory against GGUF files of the same weights, alternated on this machine in one run:
# ferrum on the directory, then ferrum and (when given) llama-bench on each GGUF file, ROUNDS times.
# Prints every round and the median prompt and generation speeds, with ratios to the first GGUF.
#
#   /usr/bin/python3 bench/make_gptq_dir.py /tmp/fb/llama-1b-F16.gguf /tmp/fb/llama-1b-gptq-4bit-g128-act --act-order
#   LLAMA_CPP_BIN=/tmp/llama.cpp/build-native/bin bench/gptq_ab.sh /tmp/fb/llama-1b-gptq-4bit-g128-act \
#       /tmp/fb/llama-1b-Q4_K_M.gguf /tmp/fb/llama-1b-Q4_0.gguf
#
# Environment: FERRUM=build/ferrum  LLAMA_CPP_BIN=  ROUNDS=3  PP=512  TG=128  REPS=1  THREADS=<all cores>
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FERRUM=${FERRUM:-$ROOT/build/ferrum}
ROUNDS=${ROUNDS:-3}
PP=${PP:-512}
TG=${TG:-128}
REPS=${REPS:-1}
THREADS=${THREADS:-$(nproc)}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-}
[ $# -ge 2 ] || { echo "usage: bench/gptq_ab.sh GPTQ_DIR FILE.gguf [FILE.gguf ...]" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

for round in $(seq "$ROUNDS"); do
  for m in "$@"; do
    name=$(basename "$m")
    echo "[$(date -u +%H:%M:%S)] round $round: ferrum $name" >&2
    "$FERRUM" bench "$m" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" --json > "$OUT/ferrum.$name.$round.json"
    if [ -n "$LLAMA_CPP_BIN" ] && [ -f "$m" ]; then
      echo "[$(date -u +%H:%M:%S)] round $round: llama-bench $name" >&2
      "$LLAMA_CPP_BIN/llama-bench" -m "$m" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" -o json \
        > "$OUT/llama.cpp.$name.$round.json" 2>/dev/null
    fi
  done
done

python3 - "$OUT" "$PP" "$TG" "$@" <<'EOF'
import glob, json, os, statistics, sys
out, pp, tg, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def speeds(engine, name):
    res = {"pp": [], "tg": []}
    for f in sorted(glob.glob(f"{out}/{engine}.{name}.*.json")):
        j = json.load(open(f))
        for r in (j["results"] if engine == "ferrum" else j):
            if r.get("batch", 1) == 1:
                res["pp" if r["n_prompt"] else "tg"].append(r["avg_ts"])
    return res
rows = []
for m in models:
    name = os.path.basename(m)
    for engine in ("ferrum", "llama.cpp"):
        s = speeds(engine, name)
        if s["pp"]:
            rows.append((f"{engine} {name}", statistics.median(s["pp"]), statistics.median(s["tg"]), s["tg"]))
base = next(r for r in rows if r[0] == f"ferrum {os.path.basename(models[1])}")
print(f"| engine, model | pp{pp} t/s (median) | vs ferrum {os.path.basename(models[1])} | tg{tg} t/s (median) | vs | tg per round |")
print("|---|---|---|---|---|---|")
for n, p, t, per in rows:
    print(f"| {n} | {p:.1f} | {p / base[1]:.2f} | {t:.1f} | {t / base[2]:.2f} | {' '.join(f'{x:.1f}' for x in per)} |")
EOF
