#!/usr/bin/env bash
# hookagent beside the peers, in ONE sitting, through the peers' own harness (unedited).
#
#   bash bench/run_peers.sh                       # the default sitting (see CONFIGS below)
#   W1_CALLS=300 CONFIGS="hookagent:mem langgraph:none" bash bench/run_peers.sh
#   EXTRA="--w2-sessions 20 --w3-reps 1" BASELINES=0 ...   # extra driver.py arguments
#
# Copies shared/bench/peers to a temp dir, drops bench/peer_hookagent.py (+ the workload's
# agent and strings) beside it, registers it through bench/run_peers.py, starts the harness's
# throwaway servers (Postgres 127.0.0.1:55432, Redis 127.0.0.1:6390), runs every config, then
# baselines.py and report.py. Results: bench/results/peers-<date>/ (git-ignored).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS_SRC=${PEERS_HARNESS:-${PEERS_SRC:-$HERE/../../shared/bench/peers}}  # <repo>/../shared/...
[ -f "$PEERS_SRC/driver.py" ] || { echo "no peers' harness at $PEERS_SRC: set PEERS_HARNESS"; exit 2; }
PY=${PEERS_VENV:-$HERE/../../peers-venv}/bin/python
W1_CALLS=${W1_CALLS:-300}
W1_BUDGET=${W1_BUDGET:-120}
BASELINES=${BASELINES:-1}
CONFIGS=${CONFIGS:-"hookagent:mem hookagent:file hookagent:redis hookagent:postgres hookagent:sqlite \
langgraph:none langgraph:sqlite langgraph:postgres openai_agents:none openai_agents:sqlite \
agentscope:mem agentscope:redis"}

WORK=$(mktemp -d /tmp/habench-peers.XXXXXX)
chmod 755 "$WORK"  # the throwaway Postgres runs as user postgres under it
cp -r "$PEERS_SRC"/. "$WORK"/
chmod -R u+w "$WORK"
cp "$HERE"/peer_hookagent.py "$HERE"/run_peers.py "$HERE"/bench_agent.py "$HERE"/bench_texts.py "$WORK"/
export TMPDIR=$WORK BENCH_DATA_DIR=$WORK/data
OUT=${OUT:-$HERE/results/peers-$(date +%Y%m%d-%H%M)}
mkdir -p "$OUT"
echo "harness copy: $WORK   results: $OUT"

cd "$WORK"
bash servers.sh start
trap 'cd "$WORK" && bash servers.sh stop || true' EXIT
for cfg in $CONFIGS; do
  peer=${cfg%%:*}; store=${cfg##*:}
  echo "==> $peer $store ($(date +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
  "$PY" run_peers.py run --peer "$peer" --store "$store" --w1-calls "$W1_CALLS" \
      --w1-budget "$W1_BUDGET" ${EXTRA:-} 2>&1 | tail -n 6 | cut -c1-400 || echo "!! $peer $store failed"
done
if [ "$BASELINES" = 1 ]; then
  echo "==> baselines ($(date +%H:%M:%S))"
  "$PY" baselines.py 2>&1 | tail -n 40 || echo "!! baselines failed"
fi
"$PY" report.py > results/tables.md || echo "!! report failed"
cp -r results/. "$OUT"/
echo "tables: $OUT/tables.md"
