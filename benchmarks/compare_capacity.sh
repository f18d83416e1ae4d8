#!/usr/bin/env bash
# Capacity before and after a change, side by side: benchmarks/capacity_guard.py with an earlier commit.
#
#   bash benchmarks/compare_capacity.sh <git-ref> [rounds=3] [extra fake_capacity args...]
set -euo pipefail
ref=${1:?usage: compare_capacity.sh <git-ref> [rounds] [fake_capacity args]}
rounds=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
here=$(git rev-parse --show-toplevel)
cd "$here"
exec .venv/bin/python -m benchmarks capacity_guard --against "$ref" --rounds "$rounds" -- "$@"
