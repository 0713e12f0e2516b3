#!/usr/bin/env bash
# One fair sitting (see bench/sitting.py): peers and hookagent interleaved store by store, the
# load and every row's CPU/wall checked, W4, the 10,000-call runs, baselines, a busy-neighbour
# pass, then bench/results/sitting-<stamp>/summary.md and its PNGs.
#
#   bash bench/sitting.sh                          # the published sitting, ~25-30 min on 2 cores
#   SMOKE=1 bash bench/sitting.sh                  # tiny counts, a few peers (~5-8 min)
#   PEER_CONFIGS="adk:mem langgraph:postgres:exit" W4=0 BASELINES=0 NEIGHBOUR=0 bash bench/sitting.sh
#
# PEERS_HARNESS (default <repo>/../shared/bench/peers), PEERS_VENV (default <repo>/../peers-venv,
# made as bench/README.md says). Runs as root: the harness's throwaway Postgres runs as postgres.
# It installs a snapshot of HEAD into the venv (SNAPSHOT=0: measure the venv's install as it is).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
VENV=${PEERS_VENV:-$REPO/../peers-venv}
[ -x "$VENV/bin/python" ] || { echo "no venv at $VENV: set PEERS_VENV (bench/README.md)"; exit 2; }
exec "$VENV/bin/python" "$HERE/sitting.py" "$@"
