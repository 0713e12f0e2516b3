#!/bin/bash
# Instructions per W2 call of one checkout on one store (see w2_callgrind.py):
#   bash bench/w2_callgrind.sh CHECKOUT STORE_URL [INFLIGHT]
# PYTHONPATH=<an older copy of src/plugins/store-sql> swaps that plugin in (same kernel).
set -euo pipefail
checkout=$1; url=$2; inflight=${3:-50}
here=$(cd "$(dirname "$0")" && pwd)
count() {
  local log
  log=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$checkout/.venv/bin/python" \
    "$here/w2_callgrind.py" --checkout "$checkout" --store "$url" --sessions "$1" \
    --inflight "$inflight" >"$log" 2>&1
  grep -q "w2_callgrind: done" "$log" || { echo "failed: see $log" >&2; exit 1; }
  grep -o "Collected : [0-9]*" "$log" | grep -o "[0-9]*"
  rm -f "$log"
}
a=$(count 20); b=$(count 200)
echo "$checkout $url: $(( (b - a) / 900 )) instructions per W2 call (I20=$a I200=$b)"
