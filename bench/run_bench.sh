#!/usr/bin/env bash
# ferrum vs llama.cpp on the same GGUF files, on this machine, in one run.
#
#   bench/run_bench.sh                               # ferrum only
#   LLAMA_CPP_BIN=/tmp/llama.cpp/build/bin bench/run_bench.sh   # + llama-bench, ratios per cell
#
# Builds random-weight models of real shapes with `ferrum make-model` (Llama-3.2-1B and
# Qwen2.5-0.5B; also gemma3-1b, phi4-mini, qwen3-30b-a3b, gpt-oss-20b), quantizes them with
# `ferrum quantize` (a file $BENCH_DIR/<shape>-<TYPE>.gguf already there is used as it is: e.g.
# `ferrum make-model $BENCH_DIR/gpt-oss-20b-MXFP4_MOE.gguf --shape gpt-oss-20b --type Q8_0`), runs `ferrum bench` (pp/tg, batched
# decode, memory-bandwidth roofline) and, when given, `llama-bench` with the same thread count,
# prompt/generation lengths and repetitions. Prints a markdown table; JSON of every run is kept
# in $BENCH_DIR.
#
# Environment (all optional):
#   FERRUM=build/ferrum   BENCH_DIR=/tmp/ferrum-bench   LLAMA_CPP_BIN=   (dir with llama-bench)
#   SHAPES=llama-1b,qwen-0.5b   TYPES=Q8_0,Q4_0,Q4_K_M,F16   THREADS=<all cores>   REPS=3
#   PP=512   TG=128   BATCH=4,16 (ferrum batched decode, first shape only; empty = skip)
#   DEPTHS=0 (comma list: every test also at these depths, -d of both benches; a row per depth)
#   ROUNDS=1 (run ferrum and llama-bench alternately this many times per file and keep each
#             engine's best round per test: on a shared VM whose memory bandwidth varies by
#             +-30% from minute to minute, this compares the engines' best against best; the
#             table also gives the ratio of the medians over the rounds and every round's
#             generation speeds)
#   FERRUM_ARGS= (extra flags for ferrum bench)   LLAMA_ARGS= (extra flags for llama-bench)
# KV cache: each engine's default, f16 K and V for both (FERRUM_ARGS='--kv-type f32' and
# LLAMA_ARGS='-ctk f32 -ctv f32' compare F32 caches).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FERRUM=${FERRUM:-$ROOT/build/ferrum}
BENCH_DIR=${BENCH_DIR:-/tmp/ferrum-bench}
SHAPES=${SHAPES:-llama-1b,qwen-0.5b}
TYPES=${TYPES:-Q8_0,Q4_0,Q4_K_M,F16}
THREADS=${THREADS:-$(nproc)}
REPS=${REPS:-3}
PP=${PP:-512}
TG=${TG:-128}
DEPTHS=${DEPTHS:-0}
BATCH=${BATCH-4,16}
ROUNDS=${ROUNDS:-1}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-}

[ -x "$FERRUM" ] || { echo "run_bench: $FERRUM not found (build it: ninja -C build ferrum, or set FERRUM=)" >&2; exit 1; }
if [ -n "$LLAMA_CPP_BIN" ] && [ ! -x "$LLAMA_CPP_BIN/llama-bench" ]; then
  echo "run_bench: $LLAMA_CPP_BIN/llama-bench not found" >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "run_bench: python3 is needed for the tables" >&2; exit 1; }
mkdir -p "$BENCH_DIR"

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
log "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"

# 1. Models: an F16 base per shape, quantized to every other type.
declare -a FILES=()
for shape in ${SHAPES//,/ }; do
  base="$BENCH_DIR/$shape-F16.gguf"
  missing=false  # the F16 base is made only for files still to quantize (a big MoE may come ready-made)
  for type in ${TYPES//,/ }; do [ -s "$BENCH_DIR/$shape-$type.gguf" ] || missing=true; done
  if [ "$missing" = true ] && [ ! -s "$base" ]; then
    log "make-model $shape -> $base"
    "$FERRUM" make-model "$base" --shape "$shape" --type F16 -t "$THREADS"
  fi
  for type in ${TYPES//,/ }; do
    f="$BENCH_DIR/$shape-$type.gguf"
    if [ "$type" != F16 ] && [ ! -s "$f" ]; then
      log "quantize $shape $type"
      "$FERRUM" quantize "$base" "$f" "$type" -t "$THREADS" 2>/dev/null
    fi
    FILES+=("$shape:$type:$f")
  done
done

# 2. Memory read bandwidth, once (the roofline of every decode cell).
BW=$("$FERRUM" bench "$BENCH_DIR/$(echo "$SHAPES" | cut -d, -f1)-$(echo "$TYPES" | cut -d, -f1).gguf" \
      -p 0 -n 1 -r 1 -t "$THREADS" --roofline --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["roofline"]["read_bandwidth_gbs"])')
log "memory read bandwidth: $BW GB/s"

# 3. The runs (ROUNDS alternating rounds of ferrum then llama-bench per file).
first_shape=${SHAPES%%,*}
for entry in "${FILES[@]}"; do
  IFS=: read -r shape type f <<<"$entry"
  for round in $(seq 1 "$ROUNDS"); do
    batch_args=()
    [ "$shape" = "$first_shape" ] && [ -n "$BATCH" ] && [ "$round" = 1 ] && batch_args=(--batch "$BATCH")
    log "ferrum bench $shape $type round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    # shellcheck disable=SC2086
    "$FERRUM" bench "$f" -p "$PP" -n "$TG" -d "$DEPTHS" -r "$REPS" -t "$THREADS" --bandwidth "$BW" "${batch_args[@]}" \
      ${FERRUM_ARGS:-} --json >"$BENCH_DIR/ferrum-$shape-$type.r$round.json"
    if [ -n "$LLAMA_CPP_BIN" ]; then
      log "llama-bench $shape $type round $round (load $(cut -d' ' -f1 /proc/loadavg))"
      # shellcheck disable=SC2086
      depth_args=()
      [ "$DEPTHS" != 0 ] && depth_args=(-d "$DEPTHS")  # older llama-bench builds have no -d
      "$LLAMA_CPP_BIN/llama-bench" -m "$f" -p "$PP" -n "$TG" "${depth_args[@]}" -r "$REPS" -t "$THREADS" ${LLAMA_ARGS:-} -o json \
        >"$BENCH_DIR/llama-$shape-$type.r$round.json" 2>"$BENCH_DIR/llama-$shape-$type.r$round.log"
    fi
  done
done
log "done (load $(cut -d' ' -f1-3 /proc/loadavg))"

# 4. The table.
python3 - "$BENCH_DIR" "$PP" "$TG" "$BW" "$ROUNDS" "$DEPTHS" "${FILES[@]}" <<'EOF'
import json, os, sys
from statistics import median
bench_dir, pp, tg, bw, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
depths = [int(d) for d in sys.argv[6].split(",")]
def best(results, key):
    """The result with the highest mean over the rounds (results: one list per round)."""
    cands = [r for rs in results for r in rs if key(r)]
    return max(cands, key=lambda r: r["avg_ts"]) if cands else None
def fmt(m, s): return f"{m:.2f} ± {s:.2f}"
def ratio(a, b): return f"**{a / b:.2f}**" if a and b else "–"
rows, batch_rows, llama_build = [], [], None
for e, d in [(e, d) for e in sys.argv[7:] for d in depths]:
    shape, typ, _ = e.split(":", 2)
    fjs = [json.load(open(f"{bench_dir}/ferrum-{shape}-{typ}.r{k}.json")) for k in range(1, rounds + 1)]
    fj = fjs[0]
    fres = [j["results"] for j in fjs]
    at_d = lambda r: r.get("n_depth", 0) == d
    fpp = best(fres, lambda r: r["n_prompt"] == pp and at_d(r))
    ftg = best(fres, lambda r: r["n_gen"] == tg and r.get("batch", 1) == 1 and at_d(r))
    lres = []
    for k in range(1, rounds + 1):
        lpath = f"{bench_dir}/llama-{shape}-{typ}.r{k}.json"
        if os.path.exists(lpath) and os.path.getsize(lpath) > 0:
            lres.append(json.load(open(lpath)))
            for r in lres[-1]:
                llama_build = f'{r.get("build_commit", "?")} (build {r.get("build_number", "?")}), {r.get("cpu_info", "")}'
    lpp = best(lres, lambda r: r["n_prompt"] == pp and r["n_gen"] == 0 and at_d(r))
    ltg = best(lres, lambda r: r["n_gen"] == tg and r["n_prompt"] == 0 and at_d(r))
    # Generation per round, ferrum/llama.cpp: the spread shows how much of a cell is the machine.
    def tg_of(rs, pick):
        m = [r for r in rs if pick(r)]
        return m[0]["avg_ts"] if m else None
    ftg_r = [tg_of(rs, lambda r: r["n_gen"] == tg and r.get("batch", 1) == 1 and at_d(r)) for rs in fres]
    ltg_r = [tg_of(rs, lambda r: r["n_gen"] == tg and r["n_prompt"] == 0 and at_d(r)) for rs in lres]
    per_round = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(ftg_r, ltg_r) if a and b)
    tg_med = f"{median([a for a in ftg_r if a]) / median([b for b in ltg_r if b]):.2f}" if per_round else "–"
    per_tok = fj["model"]["weight_bytes_per_token"]
    roof = bw * 1e9 / per_tok
    rows.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0f}% | {} |".format(
        shape, typ, d,
        fmt(fpp["avg_ts"], fpp["stddev_ts"]) if fpp else "–",
        fmt(lpp["avg_ts"], lpp["stddev_ts"]) if lpp else "–",
        ratio(fpp and fpp["avg_ts"], lpp and lpp["avg_ts"]),
        fmt(ftg["avg_ts"], ftg["stddev_ts"]) if ftg else "–",
        fmt(ltg["avg_ts"], ltg["stddev_ts"]) if ltg else "–",
        ratio(ftg and ftg["avg_ts"], ltg and ltg["avg_ts"]),
        tg_med, per_round or "–",
        100 * ftg["avg_ts"] / roof if ftg else 0,
        f"{100 * ltg['avg_ts'] / roof:.0f}%" if ltg else "–"))
    for r in fj["results"]:
        if r["n_gen"] > 0 and at_d(r):
            batch_rows.append("| {} | {} | {} | {} | {} | {} |".format(shape, typ, d, r["batch"], fmt(r["avg_ts"], r["stddev_ts"]),
                              f'{r.get("ratio_to_batch1", 1.0):.2f}x'))
    setup = fj["setup"]
print(f"\nbest of {rounds} alternating round(s) per engine and test, each the mean of the repetitions")
print(f"ferrum: {setup['threads']} threads, isa {setup['isa']}, precision {setup['precision']}, ubatch {setup['ubatch']}; "
      f"memory read bandwidth {bw:.1f} GB/s")
if llama_build: print(f"llama.cpp: {llama_build}")
print(f"\n| shape | type | depth | ferrum pp{pp} t/s | llama.cpp pp{pp} t/s | pp ratio | ferrum tg{tg} t/s | llama.cpp tg{tg} t/s | tg ratio | tg ratio of medians | tg{tg} per round ferrum/llama.cpp | ferrum tg % roofline | llama.cpp tg % roofline |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
if any("| 1 |" not in r for r in batch_rows):
    print(f"\nBatched decode (ferrum, tg{tg} per sequence, tokens/s summed over M sequences):\n")
    print("| shape | type | depth | M | tokens/s | vs M=1 |\n|---|---|---|---|---|---|")
    print("\n".join(batch_rows))
EOF
