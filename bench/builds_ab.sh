#!/usr/bin/env bash
# Two ferrum builds on the same files, alternated round by round: a change's before/after.
#
#   BEFORE=/tmp/ferrum-before AFTER=build/ferrum bench/builds_ab.sh FILE.gguf [FILE.gguf ...]
#
# Each round runs `ferrum bench FILE -p PP -n TG -r REPS` with BEFORE, then with AFTER, so both
# see the same machine state (on a shared VM memory bandwidth and CPU time jump between levels;
# see decode_ab.sh). Prints every round, then per file and test the medians and the ratio
# after/before (1.00 = no change). With BATCH=M it also times decode with M sequences together
# (`--batch M`), reported as a third test.
#
# Environment: BEFORE, AFTER (required)  ROUNDS=3  PP=512  TG=128  REPS=2  THREADS=<all cores>  BATCH=
set -euo pipefail

ROUNDS=${ROUNDS:-3}
PP=${PP:-512}
TG=${TG:-128}
REPS=${REPS:-2}
THREADS=${THREADS:-$(nproc)}
BATCH=${BATCH:-}
BEFORE=${BEFORE:-}
AFTER=${AFTER:-}

[ $# -ge 1 ] || { echo "usage: BEFORE=BIN AFTER=BIN $0 FILE.gguf [FILE.gguf ...]" >&2; exit 2; }
for b in "$BEFORE" "$AFTER"; do
  [ -x "$b" ] || { echo "builds_ab: set BEFORE and AFTER to two ferrum binaries (got '$b')" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "builds_ab: python3 is needed for the summary" >&2; exit 1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
speeds() {  # prints "<pp t/s> <tg t/s> <tg xBATCH t/s or 0>"
  "$1" bench "$2" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" ${BATCH:+--batch "$BATCH"} --json |
    python3 -c 'import json,sys
r = json.load(sys.stdin)["results"]
one = [x for x in r if x.get("batch", 1) == 1]
many = [x["avg_ts"] for x in r if x.get("batch", 1) > 1]
print(*[[x["avg_ts"] for x in one if x[k] > 0][0] for k in ("n_prompt", "n_gen")], many[0] if many else 0)'
}
for f in "$@"; do
  [ -s "$f" ] || { echo "builds_ab: $f not found" >&2; exit 1; }
  for round in $(seq 1 "$ROUNDS"); do
    read -r bpp btg bmb < <(speeds "$BEFORE" "$f")
    read -r app atg amb < <(speeds "$AFTER" "$f")
    printf '%s round %d: before pp%s %.1f tg%s %.2f x%s %.1f | after pp%s %.1f tg%s %.2f x%s %.1f t/s\n' \
      "$(basename "$f")" "$round" "$PP" "$bpp" "$TG" "$btg" "${BATCH:-1}" "$bmb" "$PP" "$app" "$TG" "$atg" \
      "${BATCH:-1}" "$amb" >&2
    echo "$f $bpp $btg $bmb $app $atg $amb" >>"$out"
  done
done

python3 - "$out" "$PP" "$TG" "$ROUNDS" "$THREADS" "$BATCH" <<'PY'
import statistics as st, sys, os
path, pp, tg, rounds, threads, batch = sys.argv[1:7]
runs = {}
for line in open(path):
    f, *v = line.split()
    runs.setdefault(f, []).append([float(x) for x in v])
print(f"\n{rounds} alternating rounds per file, {threads} threads (t/s, each round the mean of its repetitions)\n")
print("| file | test | before per round | after per round | before median | after median | after/before |")
print("|---|---|---|---|---|---|---|")
for f, rs in runs.items():
    tests = [(f"pp{pp}", 0), (f"tg{tg}", 1)] + ([(f"tg{tg} x{batch}", 2)] if batch else [])
    for name, i in tests:
        b, a = [r[i] for r in rs], [r[i + 3] for r in rs]
        print(f"| {os.path.basename(f)} | {name} | {', '.join(f'{x:.1f}' for x in b)} | {', '.join(f'{x:.1f}' for x in a)} | "
              f"{st.median(b):.2f} | {st.median(a):.2f} | **{st.median(a) / st.median(b):.2f}** |")
PY
