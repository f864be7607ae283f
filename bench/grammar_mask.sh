#!/usr/bin/env bash
# Constrained decoding: time of the token mask per generated token (median, p99) on a ~150k-token
# vocabulary, for a JSON schema and for free JSON (response_format json_object). Runs
# `ferrum grammar-bench`: random outputs are drawn token by token among the allowed tokens (the
# first WARMUP outputs are not timed; they fill the grammar's stack-top mask cache), and every
# mask is checked against a full walk of the vocabulary trie. Results: bench/README.md.
#   VOCAB=qwen3|llama3 (151,669 / 128,256 tokens)  SAMPLES=16 WARMUP=4 TOKENS=128  FERRUM=build/ferrum
set -euo pipefail
cd "$(dirname "$0")/.."
FERRUM=${FERRUM:-build/ferrum}
VOCAB=${VOCAB:-qwen3}
SAMPLES=${SAMPLES:-16}
WARMUP=${WARMUP:-4}
TOKENS=${TOKENS:-128}
SCHEMA=${SCHEMA:-tests/data/grammar/schemas/32_object_with_array_and_enum.json}
dir=${TMPDIR:-/tmp}/ferrum-grammar-bench
mkdir -p "$dir"
vocab=$dir/$VOCAB.gguf
[ -f "$vocab" ] || xz -dc "tests/data/tokenizer/gguf/ggml-vocab-$VOCAB-tokref.gguf.xz" > "$vocab"
args=(--samples "$SAMPLES" --warmup "$WARMUP" -n "$TOKENS")
echo "== $VOCAB, JSON schema $SCHEMA"
"$FERRUM" grammar-bench "$vocab" --json-schema "$SCHEMA" "${args[@]}"
echo "== $VOCAB, free JSON (json_object)"
"$FERRUM" grammar-bench "$vocab" --json-object "${args[@]}"
