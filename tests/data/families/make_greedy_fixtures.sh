#!/usr/bin/env bash
# llama.cpp's greedy continuations of the family fixtures (families/<f>/llamacpp-greedy24.hex): each
# HF directory converted by ferrum to an F32 GGUF (in a folder named "model": llama.cpp changes the
# vocabulary of files whose general.name says phi3), then llama.cpp's `llama-simple -n 24` on the
# fixture's prompt (greedy; context padded by llama.cpp to 256 tokens). The file holds the hex bytes
# of the 24 generated tokens' pieces as llama-simple prints them (the prompt echo and the final newline
# removed). Mistral is left out (llama.cpp's llama architecture ignores the sliding window).
#
#   tests/data/families/make_greedy_fixtures.sh [LLAMA_BIN=/tmp/llama.cpp/build-native/bin] [FERRUM=build/ferrum]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
LLAMA_BIN=${LLAMA_BIN:-/tmp/llama.cpp/build-native/bin}
FERRUM=${FERRUM:-$ROOT/build/ferrum}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in gemma2 gemma3 phi3 smollm3 gpt-oss; do
  rm -rf "$work/model"
  cp -r "$HERE/$f/hf" "$work/model"
  for x in "$work/model"/*.xz; do xz -d "$x"; done
  "$FERRUM" convert "$work/model" "$work/$f.gguf" > /dev/null 2>&1
  prompt=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prompt"]["text"], end="")' \
    "$HERE/$f/reference.json")
  "$LLAMA_BIN/llama-simple" -m "$work/$f.gguf" -n 24 "$prompt" > "$work/out" 2> /dev/null
  /usr/bin/python3 - "$work/out" "$prompt" "$HERE/$f/llamacpp-greedy24.hex" <<'PY'
import sys
out, prompt, dst = open(sys.argv[1], "rb").read(), sys.argv[2].encode(), sys.argv[3]
assert out.startswith(prompt) and out.endswith(b"\n"), out[:80]
open(dst, "w").write(out[len(prompt):-1].hex() + "\n")
PY
  echo "$f: $(cat "$HERE/$f/llamacpp-greedy24.hex")"
done
