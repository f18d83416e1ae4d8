"""SkyRL (skyrl 0.3.0 with skyrl-gym 0.4.0): the judge as the reward of SkyRL's generator, one judgement
per prompt's group.

One line: SkyRL's own hook for integrations, added to the usual training command,

    python -m skyrl.train.entrypoints.main_base trainer.override_entrypoint=judge_service.adapters.skyrl \\
        generator.judge.url=http://judge:8000 ...

(`generator.judge.url` may instead come from JUDGE_SERVICE_URL; also `generator.judge.grader`, `.criteria`
(criterion definitions as the API takes them), `.run_id` (default `trainer.run_name`), `.timeout_s`,
`.api_key` or JUDGE_SERVICE_API_KEY, `.request_options` for further request fields such as
`{cascade: {rule: numbers, judge: ties}}`, checked at start). An entry point
of one's own uses `JudgedPPOExp` in place of `BasePPOExp`, or returns `JudgeServiceGenerator.from_config`
from its `get_generator`.

SkyRL's environments score one trajectory at a time, so no environment sees a group; the generator sees
the whole batch. `JudgeServiceGenerator` runs SkyRL's generation as it is (environments, multi-turn,
token-in-token-out), then judges each prompt's trajectories (those sharing a `trajectory_ids` instance id,
SkyRL's GRPO group) as one group in POST /v1/judge/batch, and the judge's 0-1 score replaces the
environment's reward. The conversation is the prompt, the answer the decoded response, the reference the
row's `reward_spec.ground_truth`, and an `item` in the row's extras the grader fields (code graders).
Token-level rewards keep their form: the score sits on the last token the policy wrote.

An answer the judge did not score, or every answer of a batch the judge failed or did not answer within
`timeout_s`, is masked: its loss mask becomes all zeros (as SkyRL's overlong filtering does) and its
reward the mean of its group's scored answers, so it moves neither the loss nor its siblings' advantages;
it is logged with the reason and counted in `judge/unscored_share`. Per-criterion means are logged as
`judge/<criterion>`, each trajectory's scores in its `env_metrics`. The Idempotency-Key hashes the
batch's content with the run, step and phase, so a retried step replays its stored judgements.
Step-wise trajectories (`generator.step_wise_trajectories`) are not supported: the judge marks whole
answers.
"""

# No `from __future__ import annotations`: SkyRL builds its config dataclasses from their field types,
# which must be classes, not strings.
import asyncio
import logging
import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
from skyrl.train.config import GeneratorConfig, SkyRLTrainConfig
from skyrl.train.config.config import BaseConfig
from skyrl.train.entrypoints.main_base import BasePPOExp
from skyrl.train.generators.base import GeneratorInput, GeneratorOutput
from skyrl.train.generators.skyrl_gym_generator import SkyRLGymGenerator
from skyrl.train.generators.utils import get_rollout_metrics
from skyrl.train.utils import validate_cfg
from skyrl.train.utils.utils import initialize_ray

from judge_service.adapters.groups import (
    BatchResults,
    GroupOptions,
    judge_async,
    prepare,
    request_options,
    score_components,
    shared_clients,
)
from judge_service.client import JudgeClientError

__all__ = ["JudgeServiceConfig", "JudgeServiceGenerator", "JudgedPPOExp", "JudgedTrainConfig", "main"]

log = logging.getLogger("judge_service.adapters.skyrl")


@dataclass
class JudgeServiceConfig(BaseConfig):
    """`generator.judge.*` on SkyRL's command line."""

    url: str | None = None  # else JUDGE_SERVICE_URL
    grader: str | None = None
    criteria: list[Any] | None = None  # criterion definitions ({name, description, mark_1, mark_5}, ...)
    run_id: str | None = None  # else trainer.run_name
    timeout_s: float = 600.0  # for a batch's judging, retries included
    api_key: str | None = None  # else JUDGE_SERVICE_API_KEY
    request_options: dict[str, Any] | None = None  # further request fields for every group (cascade, ...)


@dataclass
class JudgedGeneratorConfig(GeneratorConfig):
    judge: JudgeServiceConfig = field(default_factory=JudgeServiceConfig)


@dataclass
class JudgedTrainConfig(SkyRLTrainConfig):
    generator: JudgedGeneratorConfig = field(default_factory=JudgedGeneratorConfig)


class JudgeServiceGenerator(SkyRLGymGenerator):
    """SkyRL's generator, with rewards from the judge service (module docstring)."""

    def __init__(self, *args: Any, judge: JudgeServiceConfig, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.generator_cfg.step_wise_trajectories:
            raise ValueError(
                "the judge marks whole answers: turn generator.step_wise_trajectories off to judge with it"
            )
        self.judge_url = judge.url or os.environ.get("JUDGE_SERVICE_URL") or ""
        if not self.judge_url:
            raise ValueError("set generator.judge.url (or JUDGE_SERVICE_URL) to the judge service's URL")
        self.judge = judge
        self.judge_api_key = judge.api_key or os.environ.get("JUDGE_SERVICE_API_KEY") or None
        self.judge_options = GroupOptions(
            grader=judge.grader,
            criteria=judge.criteria,
            run_id=judge.run_id,
            request=request_options(judge.request_options),
        )

    @classmethod
    def from_config(
        cls, cfg: JudgedTrainConfig, tokenizer: Any, inference_engine_client: Any, **kwargs: Any
    ) -> "JudgeServiceGenerator":
        """As SkyRL's `BasePPOExp.get_generator` builds its generator; the run name is the default run id."""
        judge = cfg.generator.judge
        if judge.run_id is None:
            judge = JudgeServiceConfig(**{**vars(judge), "run_id": cfg.trainer.run_name})
        return cls(
            generator_cfg=cfg.generator,
            skyrl_gym_cfg=cfg.environment.skyrl_gym,
            inference_engine_client=inference_engine_client,
            tokenizer=tokenizer,
            judge=judge,
            **kwargs,
        )

    async def generate(self, input_batch: GeneratorInput, disable_tqdm: bool = False) -> GeneratorOutput:
        output = await super().generate(input_batch, disable_tqdm=disable_tqdm)
        ids = input_batch.get("trajectory_ids")
        uids = [t.instance_id for t in ids] if ids else [str(i) for i in range(len(output["response_ids"]))]
        first_seen = {uid: n for n, uid in enumerate(dict.fromkeys(uids))}
        order = sorted(range(len(uids)), key=lambda i: first_seen[uids[i]])  # each group's rows together
        texts = self.tokenizer.batch_decode(
            [output["response_ids"][i] for i in order], skip_special_tokens=True
        )
        extras = input_batch.get("env_extras") or [{} for _ in uids]
        metadata = input_batch.get("batch_metadata")
        batch = prepare(
            [input_batch["prompts"][i] for i in order],
            texts,
            [_reference(extras[i]) for i in order],
            num_generations=None,
            options=self.judge_options,
            step=metadata.global_step if metadata is not None else None,
            scope=f"skyrl-{metadata.training_phase if metadata is not None else 'train'}/",
            items=[extras[i].get("item") for i in order],
            group_ids=[uids[i] for i in order],
        )
        results = await self._judge(batch)
        self._apply(output, input_batch["env_classes"], order, [uids[i] for i in order], results)
        return output

    async def _judge(self, batch: Any) -> BatchResults:
        """The batch's judgements; a failed or late call leaves every answer unscored, with the reason."""
        client = shared_clients(self.judge_url, self.judge_api_key, self.judge.timeout_s).get()
        try:
            async with asyncio.timeout(self.judge.timeout_s):
                return await judge_async(client, batch)
        except (JudgeClientError, TimeoutError) as exc:
            why = str(exc) or f"no answer within {self.judge.timeout_s:g} s"
            log.warning("the judge failed the batch (%s): all %d answers are masked", why, len(batch.spans))
            size = batch.spans[-1].stop if batch.spans else 0
            return BatchResults([None] * size, [f"unscored: {why}"] * size)

    def _apply(
        self,
        output: GeneratorOutput,
        env_classes: list[str],
        order: list[int],
        uids: list[str],
        results: BatchResults,
    ) -> None:
        """Scores into rewards (masking the unscored), metrics and per-trajectory env metrics."""
        rewards: list[Any] = list(output["rewards"])
        masks = [list(m) for m in output["loss_masks"]]
        env_metrics = list(output.get("env_metrics") or [{} for _ in rewards])
        stop_reasons = output.get("stop_reasons") or ["stop"] * len(rewards)
        group_means: dict[str, float] = {}
        for uid in dict.fromkeys(uids):
            scored = [s for s, u in zip(results.scores, uids, strict=True) if u == uid and s is not None]
            group_means[uid] = statistics.fmean(scored) if scored else 0.0
        components: dict[str, list[float]] = {}
        masked = [position for position, score in enumerate(results.scores) if score is None]
        if masked:
            log.warning(
                "%d of %d trajectories are masked (unscored); the first: %s",
                len(masked),
                len(order),
                results.reasons[masked[0]],
            )
        for position, i in enumerate(order):
            answer, score = results.answers[position], results.scores[position]
            if score is None:
                masks[i] = [0] * len(masks[i])
                score = group_means[uids[position]]
            elif self.generator_cfg.zero_reward_on_non_stop and stop_reasons[i] != "stop":
                score = 0.0  # the user's choice for unfinished answers, as SkyRL applies it to env rewards
            rewards[i] = _reward_like(rewards[i], score, masks[i])
            row = {**env_metrics[i], "judge_ok": float(answer is not None and answer.score is not None)}
            if answer is not None and answer.score is not None:
                for name, value in score_components(answer).items():
                    row[f"judge_{name}"] = value
                    components.setdefault(name, []).append(value)
            env_metrics[i] = row
        output["rewards"], output["loss_masks"], output["env_metrics"] = rewards, masks, env_metrics
        metrics = get_rollout_metrics(
            output["response_ids"],
            rewards,
            env_metrics,
            env_classes,
            masks,
            trajectory_completion_times=output.get("trajectory_generation_times"),
        )
        metrics["judge/unscored_share"] = results.unscored_share
        metrics.update({f"judge/{name}": statistics.fmean(v) for name, v in components.items()})
        output["rollout_metrics"] = metrics


def _reference(extras: dict[str, Any]) -> str | None:
    spec = extras.get("reward_spec") or {}
    return spec.get("ground_truth") if isinstance(spec, dict) else None


def _reward_like(old: Any, score: float, mask: Sequence[int]) -> Any:
    """The score in the form SkyRL gave the reward: a float, or per token on the last token the policy
    wrote (the last token when it wrote none that count)."""
    if not isinstance(old, list):
        return score
    tokens = [0.0] * len(old)
    if tokens:
        last = max((k for k, m in enumerate(mask) if m), default=len(tokens) - 1)
        tokens[min(last, len(tokens) - 1)] = score
    return tokens


class JudgedPPOExp(BasePPOExp):
    """SkyRL's experiment with the judge service's generator."""

    def get_generator(
        self, cfg: Any, tokenizer: Any, inference_engine_client: Any
    ) -> "JudgeServiceGenerator":
        return JudgeServiceGenerator.from_config(cfg, tokenizer, inference_engine_client)


def parse_config(argv: Sequence[str]) -> JudgedTrainConfig:
    """SkyRL's command line with the `generator.judge` fields; the override that chose this module is
    not a field of SkyRL's config, so it is dropped before the strict parse."""
    args = [a for a in argv if not a.startswith("trainer.override_entrypoint=")]
    cfg = JudgedTrainConfig.from_cli_overrides(args)
    if not isinstance(cfg, JudgedTrainConfig):
        raise TypeError(f"SkyRL built {type(cfg).__name__}, not JudgedTrainConfig")
    return cfg


@ray.remote(num_cpus=1)
def skyrl_entrypoint(cfg: JudgedTrainConfig) -> None:
    JudgedPPOExp(cfg).run()


def main() -> None:
    """What `trainer.override_entrypoint=judge_service.adapters.skyrl` runs: SkyRL's main with the judge."""
    cfg = parse_config(sys.argv[1:])
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(skyrl_entrypoint.remote(cfg))


if __name__ == "__main__":
    main()
