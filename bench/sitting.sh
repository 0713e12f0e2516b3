#!/usr/bin/env bash
# One sitting: a snapshot of the committed kernel and store plugins (HEAD), our workload on
# every store, then hookagent beside the peers through their harness (run_peers.sh).
#
#   bash bench/sitting.sh                 # ~25 min on 2 cores
#   OURS_W1=1000 PEERS_W1=300 bash bench/sitting.sh
#
# The snapshot keeps other people's uncommitted edits out of the figures; it is installed
# (editable, no deps) into the peers venv, which is the only interpreter used here.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
VENV=${PEERS_VENV:-/work/peers-venv}
PY=$VENV/bin/python
OURS_W1=${OURS_W1:-1000}
PEERS_W1=${PEERS_W1:-300}
STAMP=$(date +%Y%m%d-%H%M)
SNAP=/tmp/habench-snapshot-$STAMP
OUT=$HERE/results/sitting-$STAMP
mkdir -p "$SNAP" "$OUT"

COMMIT=$(git -C "$REPO" rev-parse HEAD)
git -C "$REPO" archive "$COMMIT" src | tar -x -C "$SNAP"
echo "$COMMIT" > "$OUT"/commit.txt
echo "snapshot of ${COMMIT:0:7} in $SNAP"
"$VENV"/bin/pip install -q --no-deps -e "$SNAP"/src/core \
    $(for p in "$SNAP"/src/plugins/store-*; do echo "-e $p"; done) 2>&1 | grep -v "^WARNING: Location" || true

PGURL='postgresql+asyncpg://postgres@127.0.0.1:5432/test?table_prefix=habench_'
for store in memory "file:///tmp/habench/files" "redis://127.0.0.1:6379/15?prefix=habench" \
             "$PGURL" "sqlite+aiosqlite:////tmp/habench/w1.db"; do
  mkdir -p /tmp/habench
  label=$("$PY" -c "import sys; sys.path.insert(0, '$HERE'); from bench_stores import probe_for; print(probe_for(sys.argv[1]).kind)" "$store")
  echo "==> hookagent $label ($(date +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
  "$PY" "$HERE"/workload.py --store "$store" --w1-calls "$OURS_W1" --w3 \
      --json "$OUT/$label.json" 2>&1 | cut -c1-300
  cp "$HERE"/results/"$label".w1times.json "$OUT"/ 2>/dev/null || true
done
"$PY" "$HERE"/report.py ours "$OUT" > "$OUT"/ours.md
W1_CALLS=$PEERS_W1 PEERS_VENV=$VENV OUT=$OUT/peers bash "$HERE"/run_peers.sh
# the store owners' physical limits (redis-benchmark included), on the machine's servers
"$PY" "$HERE"/baselines_redis.py --url 'redis://127.0.0.1:6379/15' > "$OUT"/baselines_redis.txt 2>&1
"$PY" "$HERE"/baselines_jsonfile.py --json "$OUT"/baselines_jsonfile.json > "$OUT"/baselines_jsonfile.txt 2>&1
# a noisy neighbour: W2 and W3 again with one core kept busy by another process
if [ "${NEIGHBOUR:-1}" = 1 ]; then
  mkdir -p "$OUT"/neighbour
  "$PY" -c 'while True: pass' & BURNER=$!
  trap 'kill $BURNER 2>/dev/null || true' EXIT
  for store in "file:///tmp/habench/files" "redis://127.0.0.1:6379/15?prefix=habench"; do
    label=$("$PY" -c "import sys; sys.path.insert(0, '$HERE'); from bench_stores import probe_for; print(probe_for(sys.argv[1]).kind)" "$store")
    echo "==> hookagent $label beside a busy core ($(date +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
    "$PY" "$HERE"/workload.py --store "$store" --w3 --w3-reps 9 --skip w1,build \
        --json "$OUT/neighbour/$label.json" 2>&1 | cut -c1-300
  done
  kill $BURNER
  "$PY" "$HERE"/report.py ours "$OUT"/neighbour > "$OUT"/neighbour/ours.md
fi
echo "ours: $OUT/ours.md"
