#!/usr/bin/env bash
# Two ferrum builds on the same files, alternated round by round: a change's before/after.
#
#   BEFORE=/tmp/ferrum-before AFTER=build/ferrum bench/builds_ab.sh FILE.gguf [FILE.gguf ...]
#
# Each round runs `ferrum bench FILE -p PP -n TG -r REPS` with BEFORE, then with AFTER, so both
# see the same machine state (on a shared VM memory bandwidth and CPU time jump between levels;
# see decode_ab.sh). Prints every round, then per file and test the medians and the ratio
# after/before (1.00 = no change).
#
# Environment: BEFORE, AFTER (required)  ROUNDS=3  PP=512  TG=128  REPS=2  THREADS=<all cores>
set -euo pipefail

ROUNDS=${ROUNDS:-3}
PP=${PP:-512}
TG=${TG:-128}
REPS=${REPS:-2}
THREADS=${THREADS:-$(nproc)}
BEFORE=${BEFORE:-}
AFTER=${AFTER:-}

[ $# -ge 1 ] || { echo "usage: BEFORE=BIN AFTER=BIN $0 FILE.gguf [FILE.gguf ...]" >&2; exit 2; }
for b in "$BEFORE" "$AFTER"; do
  [ -x "$b" ] || { echo "builds_ab: set BEFORE and AFTER to two ferrum binaries (got '$b')" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "builds_ab: python3 is needed for the summary" >&2; exit 1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
speeds() {  # prints "<pp t/s> <tg t/s>"
  "$1" bench "$2" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" --json |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["results"]; print(*[[x["avg_ts"] for x in r if x[k] > 0][0] for k in ("n_prompt", "n_gen")])'
}
for f in "$@"; do
  [ -s "$f" ] || { echo "builds_ab: $f not found" >&2; exit 1; }
  for round in $(seq 1 "$ROUNDS"); do
    read -r bpp btg < <(speeds "$BEFORE" "$f")
    read -r app atg < <(speeds "$AFTER" "$f")
    printf '%s round %d: before pp%s %.1f tg%s %.2f | after pp%s %.1f tg%s %.2f t/s\n' "$(basename "$f")" "$round" \
      "$PP" "$bpp" "$TG" "$btg" "$PP" "$app" "$TG" "$atg" >&2
    echo "$f $bpp $btg $app $atg" >>"$out"
  done
done

python3 - "$out" "$PP" "$TG" "$ROUNDS" "$THREADS" <<'PY'
import statistics as st, sys, os
path, pp, tg, rounds, threads = sys.argv[1:6]
runs = {}
for line in open(path):
    f, *v = line.split()
    runs.setdefault(f, []).append([float(x) for x in v])
print(f"\n{rounds} alternating rounds per file, {threads} threads (t/s, each round the mean of its repetitions)\n")
print("| file | test | before per round | after per round | before median | after median | after/before |")
print("|---|---|---|---|---|---|---|")
for f, rs in runs.items():
    for name, i in ((f"pp{pp}", 0), (f"tg{tg}", 1)):
        b, a = [r[i] for r in rs], [r[i + 2] for r in rs]
        print(f"| {os.path.basename(f)} | {name} | {', '.join(f'{x:.1f}' for x in b)} | {', '.join(f'{x:.1f}' for x in a)} | "
              f"{st.median(b):.2f} | {st.median(a):.2f} | **{st.median(a) / st.median(b):.2f}** |")
PY
