#!/usr/bin/env bash
# BERT sentence-embedding throughput: `ferrum embed` against llama.cpp's llama-embedding on the same
# GGUF files, in one run, rounds alternated (ferrum, llama.cpp, ferrum, llama.cpp, ...).
#
#   bench/embed_compare.sh                                               # ferrum only
#   LLAMA_CPP_BIN=/tmp/llama.cpp/build-native/bin bench/embed_compare.sh   # + llama.cpp, ratios
#
# Workload: the 32 English sentences below, every one exactly 24 WordPiece tokens with [CLS] and
# [SEP] (768 tokens in all, the same ids in both engines), mean pooling, L2 normalization (as
# bge-small-en-v1.5), embedded (a) one sentence per forward pass (batch 1) and (b) all 32 in one
# forward pass (batch 32). Every round is one process per engine; the table gives sentences/s
# and tokens/s, median over the rounds, and the ratio of the medians ferrum / llama.cpp.
#
# Models (MODELS unset): a random-weight BERT of the bge-small-en-v1.5 shape (hidden 384, 12 layers,
# 12 heads, FFN 1536, 512 positions, the real 30522-token bge / bert-base-uncased WordPiece
# vocabulary from tests/data/tokenizer/hf/bert-bge-rebuilt-from-gguf), written as a Hugging Face
# BertModel directory by the numpy generator below, converted with `ferrum convert` (F16) and
# quantized with `ferrum quantize` (Q8_0) into $BENCH_DIR. Needs a python3 with numpy (Debian:
# python3-numpy) the first time only.
#
# Timing
#   ferrum:    `ferrum embed M -f FILE --batch N --timings`, its stderr line
#              "embed: 32 sentences, 768 tokens in 123.4 ms: ...".
#   llama.cpp: `llama-embedding -f FILE` with -b = -ub = -c = N x 24 tokens, so that its batching
#              loop (which packs whole prompts into one llama_decode until -b tokens) puts exactly
#              N sentences into every llama_decode; the script checks every "batch_decode: n_tokens
#              = T, n_seq = S" line. Time = llama_perf_context_print's "total time": wall time
#              from the end of llama.cpp's warm-up run (after model load and context creation) to
#              the end: tokenization, every llama_decode, pooled-embedding read-out, L2
#              normalization and printing the (short, default-format) summary (~1 ms). Its "prompt
#              eval time" is kept in the logs but not used: at 3f545becc it reads 0.00 ms whenever
#              a llama_decode has to grow the output buffer (the batch-32 run: output_reserve()
#              calls synchronize() in the middle of the decode and restarts the clock), so it is
#              only right for batch 1, where it is ~1% below "total time".
#   llama.cpp's flash attention is left at its default (auto = on for the CPU). Batch 32 is ONE
#   ubatch of 768 tokens with a 768 x 768 mask that hides the other sentences: with flash attention
#   the CPU kernel skips the masked tiles, with `LLAMA_ARGS='-fa off'` it computes and softmaxes the
#   whole 768 x 768 score matrix per head and is several times slower than at batch 1.
#   llama.cpp's GELU is the tanh form through an F16 table; K/V go through F16 under flash attention.
#
# Environment (all optional):
#   FERRUM=build/ferrum   LLAMA_CPP_BIN= (dir with llama-embedding)   BENCH_DIR=/tmp/ferrum-bench
#   MODELS=<comma list of GGUF files> (default: $BENCH_DIR/bge-small-F16.gguf,$BENCH_DIR/bge-small-Q8_0.gguf)
#   ROUNDS=5   THREADS=<all cores>   BATCHES=1,32 (each must divide 32)
#   FERRUM_ARGS= (extra flags for ferrum embed, e.g. '--precision exact')
#   LLAMA_ARGS= (extra flags for llama-embedding, e.g. '-fa off')
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FERRUM=${FERRUM:-$ROOT/build/ferrum}
BENCH_DIR=${BENCH_DIR:-/tmp/ferrum-bench}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-$(nproc)}
BATCHES=${BATCHES:-1,32}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-}
MODELS=${MODELS:-$BENCH_DIR/bge-small-F16.gguf,$BENCH_DIR/bge-small-Q8_0.gguf}
TOKENS_PER_SENTENCE=24  # every sentence below, [CLS] and [SEP] included (checked in the llama.cpp logs)
N_SENTENCES=32

[ -x "$FERRUM" ] || { echo "embed_compare: $FERRUM not found (build it: ninja -C build ferrum, or set FERRUM=)" >&2; exit 1; }
if [ -n "$LLAMA_CPP_BIN" ] && [ ! -x "$LLAMA_CPP_BIN/llama-embedding" ]; then
  echo "embed_compare: $LLAMA_CPP_BIN/llama-embedding not found" >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "embed_compare: python3 is needed for the table" >&2; exit 1; }
[ -z "$LLAMA_CPP_BIN" ] || export LD_LIBRARY_PATH="$LLAMA_CPP_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for b in ${BATCHES//,/ }; do
  [ $((N_SENTENCES % b)) = 0 ] || { echo "embed_compare: batch $b does not divide $N_SENTENCES" >&2; exit 1; }
done
mkdir -p "$BENCH_DIR"
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
load() { cut -d' ' -f1 /proc/loadavg; }

# ferrum embed grows -f/--batch/--timings; until then only the llama.cpp half runs.
FERRUM_OK=1
if ! "$FERRUM" embed --help 2>&1 | grep -q -- '--timings'; then
  log "warning: '$FERRUM embed' has no --timings flag yet: ferrum columns will be empty"
  FERRUM_OK=0
fi

# 1. The sentences (32 x 24 WordPiece tokens with [CLS] and [SEP]).
SENTS="$BENCH_DIR/embed_sentences.txt"
cat >"$SENTS" <<'EOF'
The quick brown fox jumps over the lazy dog while the old farmer watches from the porch of his big house.
Paris is the capital of France, and Berlin is the capital of Germany, but Rome is in sunny Italy.
Machine learning models can translate text, answer hard questions and summarize very long documents in a few seconds.
I have been reading three books about history and science since last year; the last one was really very great.
The weather today is sunny and warm, so we plan to walk along the river and have lunch outside together.
She opened the window to let in some fresh air before she sat down to write a letter to her brother.
Our small team finished the difficult project two weeks early because everyone worked hard together and openly shared all their ideas.
The train to London leaves at seven in the morning, so please arrive at the station before six thirty today.
Doctors often recommend drinking plenty of clean water, eating fresh green vegetables and sleeping at least eight hours every night.
The museum downtown has opened a new exhibition of paintings from the nineteenth century and some large modern stone sculptures too.
After the long meeting, the manager sent an email to all employees explaining the new rules for working from home.
Children in the small village learn to swim in the lake during the summer when the water is warm enough again.
The old library was built more than two hundred years ago and still holds many thousands of very rare old books.
He forgot his umbrella at home, so he got completely wet when the rain started on his way to work.
Scientists recently discovered a new species of green frog in the tropical forest during an expedition in early spring this year.
The restaurant on the corner serves the best pizza in town, and it is always full on friday nights too.
My grandmother taught me how to bake bread when I was a child, and I still use her recipe.
The company announced today that its profits grew by ten percent this year thanks to very strong sales in asia too.
We watched the sun set over the mountains and then walked back to the camp before it got too dark outside.
Learning a new language takes time and patience, but it opens many doors to other cultures and many people abroad.
The city council voted to build a new bridge across the river to reduce heavy traffic in the old town center.
Music can change our mood, help us relax after a long day and bring many people together at summer festivals.
The students asked the teacher many questions about the planets, the stars and the long history of human space travel.
A small boat sailed slowly across the calm sea while white seagulls flew in circles above the fishing nets.
The new phone has a larger screen, a faster processor and a battery that lasts for almost two full days.
During the storm, the power went out in the whole neighborhood and we had to use candles all night long.
The garden behind the house is full of roses, tulips and sunflowers that bloom every summer.
Many people prefer to work from home because they save time on travel and can focus much better on their tasks.
The football match ended in a draw after both teams scored twice in the second half of the exciting final game.
Every morning he drinks a cup of black coffee, reads the newspaper and takes the dog for a short walk.
The latest software update fixed several annoying bugs, improved the battery life and added a new dark mode option too.
Volunteers cleaned the whole beach on saturday morning and collected more than five hundred kilograms of old plastic waste and glass.
EOF

# 2. The default models, made once.
make_models() {
  local f16="$BENCH_DIR/bge-small-F16.gguf" q8="$BENCH_DIR/bge-small-Q8_0.gguf" hf="$BENCH_DIR/hf-bge-small"
  if [ ! -s "$f16" ]; then
    local py=
    for p in ${PYTHON:-} python3 /usr/bin/python3; do
      if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
    done
    [ -n "$py" ] || { echo "embed_compare: a python3 with numpy is needed to make the model (apt-get install python3-numpy)" >&2; exit 1; }
    log "writing a random bge-small-shape BertModel to $hf"
    "$py" - "$hf" "$ROOT/tests/data/tokenizer/hf/bert-bge-rebuilt-from-gguf" <<'EOF'
# Random-weight HF BertModel of the bge-small-en-v1.5 shape, F16 safetensors. Weights ~ N(0, s^2),
# s by fan-in like the shared fixtures (q/k/v/up 1/sqrt(in), o/down 0.7/sqrt(in), embeddings 0.5,
# biases 0.05, LayerNorm weights 1 + 0.1 N(0,1)), seed 384.
import json, lzma, os, struct, sys
import numpy as np
out, tokdir = sys.argv[1], sys.argv[2]
H, L, NH, FF, POS, V, TT = 384, 12, 12, 1536, 512, 30522, 2
rng = np.random.default_rng(384)
os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
tj = json.loads(lzma.open(os.path.join(tokdir, "tokenizer.json.xz")).read())
vocab = sorted(tj["model"]["vocab"].items(), key=lambda kv: kv[1])
assert len(vocab) == V and all(i == id_ for i, (_, id_) in enumerate(vocab))
with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
    f.write("".join(t + "\n" for t, _ in vocab))
with open(os.path.join(tokdir, "tokenizer_config.json")) as src, open(os.path.join(out, "tokenizer_config.json"), "w") as dst:
    dst.write(src.read())
def dump(obj, *path):
    with open(os.path.join(out, *path), "w") as f:
        json.dump(obj, f, indent=1)
dump({"architectures": ["BertModel"], "model_type": "bert", "vocab_size": V, "hidden_size": H,
      "num_hidden_layers": L, "num_attention_heads": NH, "intermediate_size": FF, "hidden_act": "gelu",
      "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "max_position_embeddings": POS,
      "type_vocab_size": TT, "layer_norm_eps": 1e-12, "pad_token_id": 0,
      "position_embedding_type": "absolute", "torch_dtype": "float16"}, "config.json")
dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
      {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}], "modules.json")
dump({"word_embedding_dimension": H, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
      "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, "1_Pooling", "config.json")
T = {}
def normal(shape, s): return (rng.standard_normal(shape, dtype=np.float32) * s).astype(np.float16)
def ln(p):
    T[p + ".weight"] = (1 + 0.1 * rng.standard_normal(H, dtype=np.float32)).astype(np.float16)
    T[p + ".bias"] = normal(H, 0.05)
def lin(p, n_out, n_in, scale):
    T[p + ".weight"] = normal((n_out, n_in), scale / np.sqrt(n_in))
    T[p + ".bias"] = normal(n_out, 0.05)
T["embeddings.word_embeddings.weight"] = normal((V, H), 0.5)
T["embeddings.position_embeddings.weight"] = normal((POS, H), 0.5)
T["embeddings.token_type_embeddings.weight"] = normal((TT, H), 0.5)
ln("embeddings.LayerNorm")
for l in range(L):
    p = f"encoder.layer.{l}."
    for m in ("query", "key", "value"):
        lin(p + "attention.self." + m, H, H, 1.0)
    lin(p + "attention.output.dense", H, H, 0.7)
    ln(p + "attention.output.LayerNorm")
    lin(p + "intermediate.dense", FF, H, 1.0)
    lin(p + "output.dense", H, FF, 0.7)
    ln(p + "output.LayerNorm")
header, off = {"__metadata__": {"format": "pt"}}, 0
for name, a in T.items():
    header[name] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
    off += a.nbytes
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for a in T.values():
        f.write(np.ascontiguousarray(a).tobytes())
EOF
    "$FERRUM" convert "$hf" "$f16" >&2
  fi
  if [ ! -s "$q8" ]; then
    "$FERRUM" quantize "$f16" "$q8" Q8_0 -t "$THREADS" >&2
  fi
}
if [ "$MODELS" = "$BENCH_DIR/bge-small-F16.gguf,$BENCH_DIR/bge-small-Q8_0.gguf" ]; then make_models; fi

log "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $THREADS threads, load: $(cut -d' ' -f1-3 /proc/loadavg)"

# 3. The runs. One line per run in $RES: engine model batch round ms sentences tokens load
RES="$BENCH_DIR/embed_compare.tsv"
: >"$RES"
ferrum_run() {  # model batch round
  local m=$1 b=$2 r=$3 name errf line
  name=$(basename "$m" .gguf)
  errf="$BENCH_DIR/embed-ferrum-$name-b$b.r$r.log"
  local l0; l0=$(load)
  # shellcheck disable=SC2086
  "$FERRUM" embed "$m" -f "$SENTS" --batch "$b" --timings --pooling mean --normalize -t "$THREADS" \
    ${FERRUM_ARGS:-} >/dev/null 2>"$errf" || { echo "embed_compare: ferrum embed failed, see $errf" >&2; exit 1; }
  line=$(grep -E '^embed: [0-9]+ sentences, [0-9]+ tokens in [0-9.]+ ms' "$errf" | tail -1 || true)
  [ -n "$line" ] || { echo "embed_compare: no timing line in $errf" >&2; exit 1; }
  echo "$line" | sed -E "s/^embed: ([0-9]+) sentences, ([0-9]+) tokens in ([0-9.]+) ms.*/ferrum $name $b $r \3 \1 \2 $l0/" >>"$RES"
}
llama_run() {  # model batch round
  local m=$1 b=$2 r=$3 name errf nb np total
  name=$(basename "$m" .gguf)
  errf="$BENCH_DIR/embed-llama-$name-b$b.r$r.log"
  nb=$((b * TOKENS_PER_SENTENCE))
  # -np: the output buffer is reserved for max(-np, tokens) rows and must not exceed -b; -np 1 would
  # mean "unified, 256 sequences" in llama-embedding (and 256 > -b at batch 1).
  np=$b; [ "$b" = 1 ] && np=$nb
  local l0; l0=$(load)
  # shellcheck disable=SC2086
  "$LLAMA_CPP_BIN/llama-embedding" -m "$m" -f "$SENTS" --pooling mean --embd-normalize 2 -t "$THREADS" \
    -c "$nb" -b "$nb" -ub "$nb" -np "$np" -lv 4 ${LLAMA_ARGS:-} >/dev/null 2>"$errf" ||
    { echo "embed_compare: llama-embedding failed, see $errf" >&2; exit 1; }
  # every llama_decode must hold exactly b sentences of TOKENS_PER_SENTENCE tokens
  local bad
  bad=$(grep -E 'batch_decode: n_tokens = [0-9]+, n_seq = [0-9]+' "$errf" |
    sed -E 's/.*n_tokens = ([0-9]+), n_seq = ([0-9]+).*/\1 \2/' |
    awk -v nb="$nb" -v b="$b" -v want=$((N_SENTENCES / b)) '{ n++; if ($1 != nb || $2 != b) bad++ } END { if (n != want) bad++; print bad + 0 }')
  [ "$bad" = 0 ] || { echo "embed_compare: llama-embedding did not put $b sentences into each decode, see $errf" >&2; exit 1; }
  total=$(sed -nE 's/.*llama_perf_context_print: +total time = +([0-9.]+) ms.*/\1/p' "$errf")
  [ -n "$total" ] || { echo "embed_compare: no llama_perf 'total time' in $errf" >&2; exit 1; }
  echo "llama.cpp $name $b $r $total $N_SENTENCES $((N_SENTENCES * TOKENS_PER_SENTENCE)) $l0" >>"$RES"
}

for m in ${MODELS//,/ }; do
  [ -s "$m" ] || { echo "embed_compare: $m not found" >&2; exit 1; }
  for b in ${BATCHES//,/ }; do
    for r in $(seq 1 "$ROUNDS"); do
      if [ "$FERRUM_OK" = 1 ]; then ferrum_run "$m" "$b" "$r"; fi
      if [ -n "$LLAMA_CPP_BIN" ]; then llama_run "$m" "$b" "$r"; fi
      log "$(basename "$m") batch $b round $r: $(grep " $(basename "$m" .gguf) $b $r " "$RES" | awk '{ printf "%s %.1f sent/s  ", $1, $6 * 1000 / $5 }')(load $(load))"
    done
  done
done
log "done (load $(cut -d' ' -f1-3 /proc/loadavg))"

# 4. The table.
python3 - "$RES" "$ROUNDS" "$THREADS" <<'EOF'
import sys
from statistics import median
path, rounds, threads = sys.argv[1], sys.argv[2], sys.argv[3]
runs = {}  # (model, batch) -> engine -> [(sent/s, tok/s, load)]
for line in open(path):
    eng, model, b, r, ms, ns, nt, ld = line.split()
    ms = float(ms)
    runs.setdefault((model, int(b)), {}).setdefault(eng, []).append((int(ns) * 1000 / ms, int(nt) * 1000 / ms, float(ld)))
print(f"\nBERT embeddings, {threads} threads, {rounds} alternating rounds, 32 sentences x 24 tokens, mean pooling + L2; "
      "median of the rounds (sentences/s; tokens/s in parentheses)\n")
print("| model | batch | ferrum | llama.cpp | ferrum / llama.cpp | ferrum per round | llama.cpp per round | load (1 min) |")
print("|---|---|---|---|---|---|---|---|")
for (model, b), e in runs.items():
    f, l = e.get("ferrum", []), e.get("llama.cpp", [])
    fm = median(x[0] for x in f) if f else None
    lm = median(x[0] for x in l) if l else None
    cell = lambda xs, m: f"{m:.1f} ({median(x[1] for x in xs):.0f})" if xs else "–"
    per = lambda xs: ", ".join(f"{x[0]:.1f}" for x in xs) or "–"
    loads = [x[2] for x in f + l]
    print(f"| {model} | {b} | {cell(f, fm)} | {cell(l, lm)} | "
          f"{f'**{fm / lm:.2f}**' if fm and lm else '–'} | {per(f)} | {per(l)} | "
          f"{min(loads):.1f}–{max(loads):.1f} |")
EOF
