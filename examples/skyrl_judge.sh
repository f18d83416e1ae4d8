#!/usr/bin/env bash
# GRPO on GSM8K with SkyRL (skyrl 0.3.0), rewarded by the judge service instead of the gsm8k rule: SkyRL's
# usual command with one override naming the adapter, and the judge's URL. Run where SkyRL runs (GPUs,
# Ray), with the judge service up at JUDGE_URL. Extra arguments are passed on to SkyRL.
set -euo pipefail
JUDGE_URL=${JUDGE_URL:-http://127.0.0.1:8000}
DATA=${DATA:-$HOME/data/gsm8k}

python -m skyrl.train.entrypoints.main_base \
  trainer.override_entrypoint=judge_service.adapters.skyrl \
  generator.judge.url="$JUDGE_URL" \
  generator.judge.timeout_s=600 \
  data.train_data="['$DATA/train.parquet']" \
  data.val_data="['$DATA/validation.parquet']" \
  trainer.algorithm.advantage_estimator=grpo \
  trainer.policy.model.path=Qwen/Qwen2.5-1.5B-Instruct \
  trainer.run_name=gsm8k-judged \
  trainer.logger=console \
  generator.n_samples_per_prompt=8 \
  environment.env_class=gsm8k \
  "$@"
