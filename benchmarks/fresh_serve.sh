#!/usr/bin/env bash
# `make serve` on a fresh clone, timed until /readyz says ready: the install (a new virtual environment;
# the package index and wheel cache as this machine has them) and the engine's start on the embedded model,
# prepared from scratch. Then what the serving environment holds: its size and whether test-only packages
# (Playwright, TRL, schemathesis) are in it.
#
#   bash benchmarks/fresh_serve.sh [REV=HEAD] [port=8124]
set -euo pipefail
rev=${1:-HEAD}
port=${2:-8124}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=$(mktemp -d)
git clone -q "$repo" "$work/clone"
git -C "$work/clone" checkout -q "$rev"
export JUDGE_HOME_DIR=$work/home JUDGE_PORT=$port JUDGE_DB_PATH=$work/judgements.sqlite3
log=$work/serve.log
cd "$work/clone"
started=$(date +%s.%N)
setsid make serve >"$log" 2>&1 &
server=$!
trap 'kill -TERM -- -$server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
until curl -sf "localhost:$port/readyz" >/dev/null; do
  kill -0 $server 2>/dev/null || { echo "make serve exited:"; tail -30 "$log"; exit 1; }
  sleep 0.5
done
ready=$(date +%s.%N)
installed=$(stat -c %Y .venv/.installed* | sort -n | tail -1)
echo "rev $(git rev-parse --short HEAD): ready $(python3 -c "print(round($ready - $started))") s after make serve" \
  "(install $(python3 -c "print(round($installed - $started))") s, then the engine)"
size=$(du -sh .venv | cut -f1)
packages=$(.venv/bin/python -m pip list --format=freeze 2>/dev/null || true)
test_only=$(grep -ioE '^(playwright|trl|schemathesis|vllm-router|pytest)==' <<<"$packages" | tr -d '=' | tr '\n' ' ' || true)
echo "environment: $size, $(wc -l <<<"$packages") packages; test-only packages in it: ${test_only:-none}"
