#!/usr/bin/env bash
# The numbers grader before and after a change, side by side: benchmarks/number_formats.py run alternately
# with an earlier commit's judge_service (a temporary git worktree, same venv) and this tree's; prints the
# locale cases' scores, whether the GSM8K scores are the same, and answers/s (best of each side's runs).
#
#   bash benchmarks/compare_numbers.sh <git-ref> [rounds=3] [gsm8k file]
set -euo pipefail
ref=${1:?usage: compare_numbers.sh <git-ref> [rounds] [gsm8k file]}
rounds=${2:-3}
here=$(git rev-parse --show-toplevel)
data=${3:-$here/../shared/data/gsm8k-model-solutions/example_model_solutions.dev.jsonl}
python="$here/.venv/bin/python"
before=$(mktemp -d)
out=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$before"; rm -rf "$out"' EXIT
git -C "$here" worktree add --detach --force "$before" "$ref" >/dev/null
for round in $(seq "$rounds"); do
  for side in before after; do
    tree=$here; [ "$side" = before ] && tree=$before
    (cd "$tree" && PYTHONPATH="$tree" "$python" "$here/benchmarks/number_formats.py" --gsm8k "$data" --rounds 1) \
      > "$out/$side-$round.json"
  done
done
"$python" - "$out" "$rounds" "$ref" <<'PY'
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
out, rounds, ref = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
runs = {side: [json.loads((out / f"{side}-{r}.json").read_text()) for r in range(1, rounds + 1)] for side in ("before", "after")}
from benchmarks.number_formats import CASES
print(f"| case | expected | {ref} | this tree |\n|---|---|---|---|")
for name, _, _, expected in CASES:
    b, a = runs["before"][0]["cases"][name], runs["after"][0]["cases"][name]
    print(f"| {name} | {expected:g} | {b:g} | {a:g} |")
g = {side: runs[side][0]["gsm8k"] for side in runs}
same = g["before"]["digest"] == g["after"]["digest"]
print(f"\nGSM8K dev: {g['after']['answers']} answers; scores {'identical' if same else 'DIFFERENT'} "
      f"(ones {g['before']['ones']} -> {g['after']['ones']}, zeros {g['before']['zeros']} -> {g['after']['zeros']})")
speed = {side: max(r["speed"]["answers_per_s"] for r in runs[side]) for side in runs}
print(f"speed: {speed['before']} -> {speed['after']} answers/s ({speed['after'] / speed['before']:.2f}x), best of {rounds}")
PY
