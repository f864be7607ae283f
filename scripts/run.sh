#!/usr/bin/env bash
# One command for a newcomer: install what is needed, build, and let the bundled TinyStories
# model (models/stories260K.gguf) write a story. Extra arguments go to `ferrum run`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if [ $# -eq 0 ]; then set -- --prompt "Once upon a time" --max-tokens 256; fi
exec ./build/ferrum run "$@"
