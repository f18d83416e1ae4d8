#!/usr/bin/env bash
# The numbers grader before and after a change, side by side: `python -m benchmarks number_formats --against`
# (its docstring says how); prints the locale cases' scores of both, whether the GSM8K scores are the same,
# and answers/s (best of each side's rounds).
#
#   bash benchmarks/compare_numbers.sh <git-ref> [rounds=3] [gsm8k file]
set -euo pipefail
ref=${1:?usage: compare_numbers.sh <git-ref> [rounds] [gsm8k file]}
rounds=${2:-3}
here=$(git rev-parse --show-toplevel)
data=${3:-$here/../shared/data/gsm8k-model-solutions/example_model_solutions.dev.jsonl}
cd "$here"
exec .venv/bin/python -m benchmarks number_formats --against "$ref" --rounds "$rounds" --gsm8k "$data"
