#!/usr/bin/env bash
# A long coverage-guided campaign of one target (see fuzz/harnesses.py):
#   fuzz/run.sh TARGET SECONDS [libFuzzer flags...]
#   fuzz/run.sh all SECONDS       # every target in turn, SECONDS each
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?target: footer, pages, decoders, bloom, index, scan or all}
seconds=${2:?seconds}
shift 2
if [ "$target" = all ]; then
  exec python fuzz/harnesses.py --all --seconds "$seconds" "$@"
fi
exec python fuzz/harnesses.py "$target" --seconds "$seconds" "$@"
