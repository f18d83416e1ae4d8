#!/usr/bin/env bash
# Capacity before and after a change, side by side: runs benchmarks/fake_capacity.py alternately on an
# earlier commit (checked out in a temporary git worktree, same venv) and on this working tree.
#
#   bash benchmarks/compare_capacity.sh <git-ref> [rounds=3] [extra fake_capacity args...]
set -euo pipefail
ref=${1:?usage: compare_capacity.sh <git-ref> [rounds] [fake_capacity args]}
rounds=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--levels 1,8,32 --batch-levels 1 --seconds 5 --stage-groups 300)

here=$(git rev-parse --show-toplevel)
python="$here/.venv/bin/python"
before=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$before"' EXIT
git -C "$here" worktree add --detach --force "$before" "$ref" >/dev/null

for round in $(seq "$rounds"); do
  for tree in "$before" "$here"; do
    label=$([ "$tree" = "$here" ] && echo "now" || echo "$ref")
    echo "== round $round: $label"
    # `python -m` puts the tree first on sys.path, so each run imports its own judge_service.
    (cd "$tree" && "$python" -m benchmarks.fake_capacity "${args[@]}" 2>&1 | grep -E "c=|whole path")
  done
done
