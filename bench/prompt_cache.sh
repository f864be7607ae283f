#!/usr/bin/env bash
# Time to first token of a long prompt served three ways: cold, from the in-memory prefix cache,
# and after a restart from the prompt cache on disk (--prefix-cache-dir); then the time a models
# folder takes to switch to a model that is not loaded (--models-dir, load on demand).
#
#   bench/prompt_cache.sh MODEL.gguf
#
# Each cache time is a /v1/completions request of PROMPT_TOKENS token ids with max_tokens 1 (prefill
# and one token), measured by curl; each switch time a one-token prompt with max_tokens 1 to the
# model, unloaded then loaded. ROUNDS rounds, each with fresh servers and a fresh cache folder; the
# median per case is printed. Environment: FERRUM=build/ferrum PROMPT_TOKENS=2048 ROUNDS=3
# THREADS=<all cores> PORT=18491 PARTS="cache switch"
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FERRUM=${FERRUM:-$ROOT/build/ferrum}
PROMPT_TOKENS=${PROMPT_TOKENS:-2048}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-$(nproc)}
PORT=${PORT:-18491}
PARTS=${PARTS:-cache switch}
MODEL=${1:?usage: $0 MODEL.gguf}
[ -x "$FERRUM" ] || { echo "prompt_cache: $FERRUM not found (build it, or set FERRUM=)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

BODY=$WORK/body.json
{
  printf '{"model": "%s", "max_tokens": 1, "temperature": 0, "prompt": [' "${MODEL_ID:-m}"
  for ((i = 0; i < PROMPT_TOKENS; i++)); do printf '%s%d' "$([ $i -gt 0 ] && echo ,)" $((100 + (i * 7919) % 20000)); done
  printf ']}'
} > "$BODY"

start() {  # start ARGS...: a server in the background, waited for
  "$FERRUM" serve "$@" --port "$PORT" -t "$THREADS" --log-format off 2> "$WORK/serve.log" &
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && return 0
    sleep 0.1
  done
  cat "$WORK/serve.log" >&2
  exit 1
}
stop() {
  kill -TERM %% 2> /dev/null || true
  wait %% 2> /dev/null || true
}
ask() {  # ask MODEL_ID [BODY]: seconds of one request (and its cached prompt tokens on stderr)
  sed "s/\"model\": \"[^\"]*\"/\"model\": \"$1\"/" "${2:-$BODY}" > "$WORK/b.json"
  curl -s -o "$WORK/answer.json" -w '%{time_total}' -H 'Content-Type: application/json' \
    --data-binary @"$WORK/b.json" "http://127.0.0.1:$PORT/v1/completions"
  grep -o '"cached_tokens":[0-9]*' "$WORK/answer.json" >&2 || cat "$WORK/answer.json" >&2
}

SHORT=$WORK/short.json
printf '{"model": "m", "max_tokens": 1, "temperature": 0, "prompt": [100]}' > "$SHORT"

declare -A t
for ((r = 1; r <= ROUNDS; r++)); do
  if [[ " $PARTS " == *" cache "* ]]; then
  rm -rf "$WORK/cache" && mkdir -p "$WORK/cache"
  start "$MODEL" --model-name m -c $((PROMPT_TOKENS + 64)) --prefix-cache-dir "$WORK/cache"
  t[cold]+="$(ask m) "
  t[memory]+="$(ask m) "
  stop
  start "$MODEL" --model-name m -c $((PROMPT_TOKENS + 64)) --prefix-cache-dir "$WORK/cache"
  t[disk]+="$(ask m) "
  stop
  fi
  [[ " $PARTS " == *" switch "* ]] || continue
  rm -rf "$WORK/models" && mkdir -p "$WORK/models"
  ln -s "$(realpath "$MODEL")" "$WORK/models/big.gguf"
  ln -s "$ROOT/models/stories260K.gguf" "$WORK/models/small.gguf"
  start --models-dir "$WORK/models" -c $((PROMPT_TOKENS + 64))
  curl -s -o /dev/null -H 'Content-Type: application/json' -d '{"model": "small", "prompt": "Hi", "max_tokens": 1}' \
    "http://127.0.0.1:$PORT/v1/completions"
  t[switch]+="$(ask big "$SHORT") "
  t[loaded]+="$(ask big "$SHORT") "
  stop
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "prompt of $PROMPT_TOKENS tokens, max_tokens 1, $THREADS threads, median of $ROUNDS rounds (s):"
for k in cold memory disk switch loaded; do
  [ -n "${t[$k]:-}" ] || continue
  printf '  %-7s %8.3f   (%s)\n' "$k" "$(echo "${t[$k]}" | median)" "${t[$k]}"
done
echo "cold: a fresh server; memory: the same prompt again (in-memory prefix cache); disk: the first"
echo "request after a restart on the same --prefix-cache-dir; switch: a one-token request naming a"
echo "model of --models-dir that is not loaded (its load); loaded: the same request again."
