#!/usr/bin/env bash
# Runs a fuzz target once on every file of its committed seed corpus and of its past findings
# (fuzz/regressions/<target>/, when there are any): the test command's check that each target still
# builds and that no fixed finding has come back. Usage: replay.sh FUZZ_BINARY DIR...
set -euo pipefail
bin=$1
shift
files=()
for dir in "$@"; do
  [ -d "$dir" ] || continue
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$dir" -maxdepth 1 -type f -print0 | sort -z)
done
if [ ${#files[@]} -eq 0 ]; then
  echo "replay: no inputs in $*" >&2
  exit 1
fi
# The limits of scripts/fuzz.sh: an input over them is a finding here too.
exec "$bin" -rss_limit_mb=2560 -malloc_limit_mb=512 -timeout=120 "${files[@]}"
