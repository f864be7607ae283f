#!/usr/bin/env bash
# Soak test: `ferrum serve` under 30 minutes of mixed traffic from 32 clients (bench/soak.mjs:
# streamed chat, completions, embeddings, hang-ups, malformed requests, slow clients), with
# throughput, resident memory and errors printed every minute and every greedy answer checked
# against the same request sent alone. Exits non-zero on any mismatch or unexpected error.
#
#   bench/soak.sh [MODEL.gguf]          # default: the bundled stories260K model
#
# Environment: FERRUM=build/ferrum  DURATION_S=1800  CLIENTS=32  MAX_TOKENS=48  REPORT_S=60
#   ENCODER=tests/data/models/bert/gguf/bert-Q8_0.gguf ("" to skip embeddings)
#   SERVE_ARGS="--max-num-seqs 16" (extra flags for the decoder server)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${1:-$ROOT/models/stories260K.gguf}
FERRUM=${FERRUM:-$ROOT/build/ferrum}
ENCODER=${ENCODER-$ROOT/tests/data/models/bert/gguf/bert-Q8_0.gguf}
SERVE_ARGS=${SERVE_ARGS:-}
PORT_D=18290
PORT_E=18291

command -v node >/dev/null || { echo "soak: node (>= 18) is needed" >&2; exit 1; }
[ -x "$FERRUM" ] || { echo "soak: $FERRUM not found (run ./scripts/setup.sh)" >&2; exit 1; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done; }
trap cleanup EXIT

wait_ready() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "soak: server on port $1 did not start" >&2
  exit 1
}

# shellcheck disable=SC2086
"$FERRUM" serve "$MODEL" --port $PORT_D --model-name soak $SERVE_ARGS 2>/tmp/ferrum-soak-decoder.log &
pids+=($!)
dec_pid=$!
wait_ready $PORT_D
enc_args=()
if [ -n "$ENCODER" ]; then
  "$FERRUM" serve "$ENCODER" --port $PORT_E 2>/tmp/ferrum-soak-encoder.log &
  pids+=($!)
  enc_args=("http://127.0.0.1:$PORT_E" "$!")
  wait_ready $PORT_E
fi
echo "soak: $(basename "$MODEL"), ${DURATION_S:-1800} s, ${CLIENTS:-32} clients; server logs in /tmp/ferrum-soak-*.log"
node "$ROOT/bench/soak.mjs" "http://127.0.0.1:$PORT_D" "$dec_pid" "${enc_args[@]}"
