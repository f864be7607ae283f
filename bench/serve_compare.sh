#!/usr/bin/env bash
# Serving load test of `ferrum serve` and, when given, llama.cpp's llama-server on the same model
# file with the same number of parallel slots, one after the other in one run (bench/serve_load.mjs
# against each: N requests one at a time, then all N at once as streams, every streamed answer
# checked against its own single-request answer). Prints one markdown row per server.
#
#   bench/serve_compare.sh MODEL.gguf                                   # ferrum only
#   LLAMA_CPP_BIN=/tmp/llama.cpp/build/bin bench/serve_compare.sh MODEL.gguf
#
# Environment: FERRUM=build/ferrum  N=32 (requests = slots)  MAX_TOKENS=32  THREADS=<all cores>
#   CTX=256 (KV tokens per sequence / per llama-server slot; both servers get N*CTX KV tokens in all)
#   BUDGET=512 (ferrum --max-batched-tokens)
#   ROUNDS=1 (alternate ferrum / llama-server this many times)
# KV cache: each server's default, f16 K and V for both (FERRUM_KV_TYPE=f32 changes ferrum's).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${1:?usage: bench/serve_compare.sh MODEL.gguf}
FERRUM=${FERRUM:-$ROOT/build/ferrum}
N=${N:-32}
MAX_TOKENS=${MAX_TOKENS:-32}
THREADS=${THREADS:-$(nproc)}
CTX=${CTX:-256}
BUDGET=${BUDGET:-512}
ROUNDS=${ROUNDS:-1}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-}
PORT_F=18190
PORT_L=18191
NAME=$(basename "$MODEL" .gguf)

command -v node >/dev/null || { echo "serve_compare: node (>= 18) is needed" >&2; exit 1; }
[ -x "$FERRUM" ] || { echo "serve_compare: $FERRUM not found" >&2; exit 1; }
if [ -n "$LLAMA_CPP_BIN" ] && [ ! -x "$LLAMA_CPP_BIN/llama-server" ]; then
  echo "serve_compare: $LLAMA_CPP_BIN/llama-server not found" >&2
  exit 1
fi

pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap cleanup EXIT

wait_ready() {
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { echo "serve_compare: server exited, see $2" >&2; exit 1; }
    sleep 1
  done
  echo "serve_compare: server on port $1 not ready after 120 s" >&2
  exit 1
}

row() {  # server-name json-file
  python3 - "$1" "$2" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
j = json.load(open(path))
s, c = j["sequential"], j["concurrent"]
print(f"| {name} | {j['requests']} | {j['max_tokens']} | {s['tok_per_s']} tok/s ({s['seconds']} s) | "
      f"{c['tok_per_s']} tok/s ({c['seconds']} s) | {j['speedup']}x | {c['ttft_ms_p50'] / 1000:.1f} s / "
      f"{c['ttft_ms_max'] / 1000:.1f} s | {j['completed']}/{j['requests']} | {j['mismatches']} ({j['mixups']} mix-ups) |")
EOF
}

echo "| server | requests | tokens each | one at a time | all at once (streaming) | speed-up | TTFT p50 / max | completed | mismatches |"
echo "|---|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  log=/tmp/serve_compare_ferrum.log
  "$FERRUM" serve "$MODEL" --port "$PORT_F" -t "$THREADS" --max-num-seqs "$N" --max-batched-tokens "$BUDGET" \
    --kv-capacity "$CTX" --kv-pool $((N * CTX)) >"$log" 2>&1 &
  pid=$!
  wait_ready "$PORT_F" "$log"
  node "$ROOT/bench/serve_load.mjs" "http://127.0.0.1:$PORT_F" "$N" "$MAX_TOKENS" "$NAME" >/tmp/serve_compare_ferrum.json || true
  cleanup
  row "ferrum serve (round $round)" /tmp/serve_compare_ferrum.json
  if [ -n "$LLAMA_CPP_BIN" ]; then
    log=/tmp/serve_compare_llama.log
    LD_LIBRARY_PATH="$LLAMA_CPP_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$LLAMA_CPP_BIN/llama-server" -m "$MODEL" \
      --port "$PORT_L" -t "$THREADS" -np "$N" -c $((N * CTX)) >"$log" 2>&1 &
    pid=$!
    wait_ready "$PORT_L" "$log"
    node "$ROOT/bench/serve_load.mjs" "http://127.0.0.1:$PORT_L" "$N" "$MAX_TOKENS" "$NAME" >/tmp/serve_compare_llama.json || true
    cleanup
    row "llama-server -np $N (round $round)" /tmp/serve_compare_llama.json
  fi
done
