#!/usr/bin/env bash
# The layering rule of docs/architecture.md: a source area includes headers of its own area and of
# areas below it only. The order is the one CMakeLists.txt declares the areas in (`ferrum_area(...)`
# lines, lowest first), with the command line (src/cli) above them all. Prints every include that
# goes up and exits 1 if there is one. Usage: check_includes.sh SOURCE_DIR
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
cd "$root"

mapfile -t areas < <(sed -n 's/^ferrum_area(\([a-z_]*\).*/\1/p' CMakeLists.txt)
areas+=(cli)
if [ ${#areas[@]} -lt 5 ]; then
  echo "layering: found only ${#areas[@]} areas in CMakeLists.txt" >&2
  exit 1
fi
declare -A rank
for i in "${!areas[@]}"; do rank[${areas[$i]}]=$i; done

status=0
checked=0
for area in "${areas[@]}"; do
  [ -d "src/$area" ] || continue
  while IFS= read -r hit; do
    file=${hit%%:*}
    [[ $hit =~ \#include\ \"([a-z_]+)/ ]] || continue
    target=${BASH_REMATCH[1]}
    checked=$((checked + 1))
    [ -n "${rank[$target]+x}" ] || continue  # not an area (e.g. ferrum/ public headers)
    if [ "${rank[$target]}" -gt "${rank[$area]}" ]; then
      echo "layering: $file (area $area) includes a header of $target, an area above it: ${hit#*:}"
      status=1
    fi
  done < <(grep -rn '#include "[a-z_]*/' "src/$area" --include='*.h' --include='*.cpp' || true)
done
echo "layering: ${#areas[@]} areas (${areas[*]}), $checked includes checked"
exit $status
