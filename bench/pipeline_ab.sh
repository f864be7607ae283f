#!/usr/bin/env bash
# Pipeline stages (or tensor-parallel ranks) over MPI against one process, alternated in one run on
# this machine: the same file with `ferrum bench` in one process (THREADS threads) and under
# `mpirun -np STAGES ... --pipeline STAGES` (or `--tp STAGES` with MODE=tp; THREADS threads per
# rank), ROUNDS times. Prints every round and the medians of prompt, generation and batched
# generation speeds, with the ratio to one process.
#
#   bench/pipeline_ab.sh /tmp/fb/llama-1b-Q4_0.gguf
#   STAGES=2 THREADS=1 BATCH=16 MICRO=8 DTYPE=bf16 bench/pipeline_ab.sh /tmp/fb/llama-1b-Q4_0.gguf
#   MODE=tp bench/pipeline_ab.sh /tmp/fb/llama-1b-Q4_0.gguf
#
# Environment: FERRUM=build/ferrum  STAGES=2  THREADS=1  ROUNDS=3  PP=128  TG=32  BATCH=16  REPS=1
#              MICRO= (--pipeline-micro-batches; default one per stage)  DTYPE=f32 (--pipeline-dtype)
#              MODE=pipeline|tp  SPLIT= (--pipeline-split, e.g. 12,4; default balanced by weight bytes)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FERRUM=${FERRUM:-$ROOT/build/ferrum}
STAGES=${STAGES:-2}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
PP=${PP:-128}
TG=${TG:-32}
BATCH=${BATCH:-16}
REPS=${REPS:-1}
MICRO=${MICRO:-}
DTYPE=${DTYPE:-f32}
MODE=${MODE:-pipeline}
SPLIT=${SPLIT:-}
[ $# -eq 1 ] || { echo "usage: bench/pipeline_ab.sh MODEL" >&2; exit 1; }
command -v mpirun > /dev/null || { echo "pipeline_ab: no mpirun (Debian: openmpi-bin)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
ARGS=(bench "$1" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" --batch "1,$BATCH" --json)
PIPE=(--pipeline "$STAGES" --pipeline-dtype "$DTYPE" ${MICRO:+--pipeline-micro-batches "$MICRO"} ${SPLIT:+--pipeline-split "$SPLIT"})
[ "$MODE" = tp ] && PIPE=(--tp "$STAGES")

for round in $(seq "$ROUNDS"); do
  echo "[$(date -u +%H:%M:%S)] round $round: one process" >&2
  "$FERRUM" "${ARGS[@]}" > "$OUT/one.$round.json"
  echo "[$(date -u +%H:%M:%S)] round $round: $STAGES ranks ($MODE)" >&2
  mpirun --allow-run-as-root --oversubscribe -np "$STAGES" "$FERRUM" "${ARGS[@]}" "${PIPE[@]}" \
    > "$OUT/pipe.$round.json" 2> "$OUT/pipe.$round.err" || { cat "$OUT/pipe.$round.err" >&2; exit 1; }
done

/usr/bin/python3 - "$OUT" "$ROUNDS" "$STAGES" "$THREADS" "$MODE" <<'PY'
import json, statistics, sys
out, rounds, stages, threads, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
speeds = {}
for kind in ("one", "pipe"):
    for r in range(1, rounds + 1):
        for e in json.load(open(f"{out}/{kind}.{r}.json"))["results"]:
            speeds.setdefault((kind, e["test"]), []).append(e["avg_ts"])
tests = sorted({t for (_, t) in speeds}, key=lambda t: (t.startswith("tg"), t))
what = "stages" if mode == "pipeline" else "tensor-parallel ranks"
print(f"| test | one process ({threads} thread(s)) t/s | {stages} {what} ({threads} per rank) t/s | ratio |")
print("|---|---|---|---|")
for t in tests:
    a, b = statistics.median(speeds[("one", t)]), statistics.median(speeds[("pipe", t)])
    rounds_a = " ".join(f"{x:.1f}" for x in speeds[("one", t)])
    rounds_b = " ".join(f"{x:.1f}" for x in speeds[("pipe", t)])
    print(f"| {t} | {a:.2f} ({rounds_a}) | {b:.2f} ({rounds_b}) | **{b / a:.2f}** |")
PY
