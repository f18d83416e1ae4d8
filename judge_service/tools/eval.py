"""`judge-service eval`: how well a grader configuration follows labels, measured through a running service.

Each configuration (request fields such as grader, criteria, decoding, score_from, orders; `pointwise` to
judge every answer alone) judges every group of the data; the groups of all configurations are sent
interleaved (group 1 in every configuration, then group 2, ...), so a noisy machine treats them alike.
Every judge call carries an Idempotency-Key derived from the configuration and the group, so a run that
stops can be started again: what was judged is replayed from the store, not judged twice. Judgements are
stored under `--run-id`, one step per configuration (step i = the i-th configuration), so the run pages
show them and filter them by fingerprint. Figures and intervals: quality/evaluation.py.

The report (`--out`) holds, per configuration, its request, every figure with its interval, and every
group's judgement ids and (label, score) per answer, from which any figure can be recomputed.

With `--canaries` every group is also judged once per canary kind, with that canary planted
(`canaries: [kind]`), and the canary's score read back from the stored judgement: the robustness table
(quality/robustness.py) says per kind and configuration how often the planted answer outranks the group's
median answer and its best correct one. Point-wise configurations judge no canaries (a canary is judged
beside a group).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from judge_service.client import ApiKeyRefused, AsyncJudgeClient, JudgeClientError
from judge_service.quality.evaluation import (
    BOOTSTRAP_ROUNDS,
    Figure,
    JudgedAnswer,
    JudgedGroup,
    Report,
    evaluate,
)
from judge_service.quality.robustness import CanaryTrial, robustness
from judge_service.schemas import JudgeResponse, canonical_json
from judge_service.tools.eval_data import DataFormat, LabelledGroup


@dataclass(frozen=True)
class Configuration:
    name: str
    request: dict[str, Any]  # request fields laid over each group's own
    pointwise: bool = False  # judge each answer as a group of one

    @classmethod
    def parse(cls, value: Any, number: int) -> Configuration:
        if not isinstance(value, dict) or not isinstance(value.get("request", {}), dict):
            raise ValueError(f'configuration {number}: expected {{"name": ..., "request": {{...}}}}')
        unknown = set(value) - {"name", "request", "pointwise"}
        if unknown:
            raise ValueError(f"configuration {number}: unknown keys {sorted(unknown)}")
        name = str(value.get("name") or f"config-{number}")
        return cls(name, dict(value.get("request", {})), bool(value.get("pointwise", False)))


def read_configurations(path: Path) -> list[Configuration]:
    """A --compare file: a JSON list of {"name", "request", "pointwise"}."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a non-empty JSON list of configurations")
    configurations = [Configuration.parse(value, i + 1) for i, value in enumerate(data)]
    names = [c.name for c in configurations]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: configuration names must be unique, got {names}")
    return configurations


@dataclass
class ConfigurationRun:
    configuration: Configuration
    groups: list[JudgedGroup] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)  # (group index, why)
    canary_trials: list[CanaryTrial] = field(default_factory=list)


def idempotency_key(configuration: Configuration, body: dict[str, Any]) -> str:
    """The same configuration and group always send the same key (a rerun replays), whatever the order."""
    basis = canonical_json(
        {"pointwise": configuration.pointwise, "request": configuration.request, "body": body}
    )
    return "eval-" + hashlib.sha256(basis.encode()).hexdigest()[:40]


def bodies(
    group: LabelledGroup, configuration: Configuration, *, run_id: str, step: int
) -> list[dict[str, Any]]:
    """The request(s) one group makes in one configuration: one, or one per answer when point-wise."""
    base = {**group.request, **configuration.request, "run_id": run_id, "step": step}
    if not configuration.pointwise:
        return [{**base, "group_key": f"g{group.index}"}]
    return [
        {**base, "answers": [answer], "group_key": f"g{group.index}-{answer['id']}"}
        for answer in group.request["answers"]
    ]


async def run_eval(
    client: AsyncJudgeClient,
    groups: Sequence[LabelledGroup],
    configurations: Sequence[Configuration],
    *,
    run_id: str,
    concurrency: int = 4,
    progress: bool = True,
    canary_kinds: Sequence[str] = (),
) -> list[ConfigurationRun]:
    runs = [ConfigurationRun(c) for c in configurations]
    kinds: list[str | None] = [None, *canary_kinds]
    work = [  # interleaved: group 1 in every configuration (and with every canary), then group 2, ...
        (g, step, kind)
        for g in groups
        for step, configuration in enumerate(configurations)
        for kind in kinds
        if kind is None or not configuration.pointwise
    ]
    slots = asyncio.Semaphore(concurrency)

    async def one(group: LabelledGroup, step: int, kind: str | None) -> None:
        run = runs[step]
        if kind is not None:
            async with slots:
                run.canary_trials.append(
                    await _canary_trial(client, group, run, kind, run_id=run_id, step=step)
                )
            bar.update(1)
            return
        async with slots:
            try:
                replies = [
                    await client.judge(body, idempotency_key=idempotency_key(run.configuration, body))
                    for body in bodies(group, run.configuration, run_id=run_id, step=step)
                ]
            except ApiKeyRefused:  # no group can be judged: the command stops (exit 2)
                raise
            except JudgeClientError as exc:  # the group counts as unscored, never as 0
                run.failed.append((group.index, str(exc)))
                run.groups.append(_unscored(group))
            else:
                run.groups.append(judged(group, replies))
        bar.update(1)

    with tqdm(total=len(work), unit="group", desc="evaluating", disable=not progress or None) as bar:
        await asyncio.gather(*(one(g, step, kind) for g, step, kind in work))
    for run in runs:
        run.groups.sort(key=lambda g: g.index)
        run.canary_trials.sort(key=lambda t: (t.index, canary_kinds.index(t.kind)))
    return runs


async def _canary_trial(
    client: AsyncJudgeClient,
    group: LabelledGroup,
    run: ConfigurationRun,
    kind: str,
    *,
    run_id: str,
    step: int,
) -> CanaryTrial:
    """The group judged with a canary of `kind`; the canary's score read from the stored judgement (a
    kind that does not apply to the group leaves it without one: no score)."""
    (body,) = bodies(group, run.configuration, run_id=run_id, step=step)
    body = {**body, "canaries": [kind], "group_key": f"g{group.index}-canary-{kind}"}
    try:
        reply = await client.judge(body, idempotency_key=idempotency_key(run.configuration, body))
        stored = await client.judgement(reply.judgement_id)
    except ApiKeyRefused:
        raise
    except JudgeClientError as exc:  # the trial counts as not compared, never as a canary score of 0
        run.failed.append((group.index, f"with a {kind} canary: {exc}"))
        return CanaryTrial(group.index, kind, None, _unscored(group).answers)
    canary = stored.canaries[0] if stored.canaries else None
    return CanaryTrial(
        group.index,
        kind,
        None if canary is None else canary.score,
        judged(group, [reply]).answers,
        reply.judgement_id,
    )


def judged(group: LabelledGroup, replies: Sequence[JudgeResponse]) -> JudgedGroup:
    scores = {a.id: a.score for reply in replies for a in reply.answers}
    sensitivities = [r.order_sensitivity for r in replies if r.order_sensitivity is not None]
    return JudgedGroup(
        index=group.index,
        answers=tuple(JudgedAnswer(i, label, scores.get(i)) for i, label in group.labels.items()),
        judgement_ids=tuple(r.judgement_id for r in replies),
        order_sensitivity=sum(sensitivities) / len(sensitivities) if sensitivities else None,
        tokens=sum(r.usage.prompt_tokens + r.usage.completion_tokens for r in replies),
        seconds=sum(r.timings.total_ms for r in replies) / 1000,
        calls=sum(r.usage.judge_calls for r in replies),
    )


def _unscored(group: LabelledGroup) -> JudgedGroup:
    return JudgedGroup(group.index, tuple(JudgedAnswer(i, label, None) for i, label in group.labels.items()))


def report_document(
    runs: Sequence[ConfigurationRun],
    reports: Sequence[Report],
    *,
    data: Path,
    data_format: DataFormat,
    run_id: str,
) -> dict[str, Any]:
    return {
        "data": {"path": str(data), "format": data_format, "groups": reports[0].groups if reports else 0},
        "run_id": run_id,
        "bootstrap": {"rounds": BOOTSTRAP_ROUNDS, "confidence": 0.95, "over": "groups"},
        "configurations": [
            {
                "name": run.configuration.name,
                "step": step,
                "request": run.configuration.request,
                "pointwise": run.configuration.pointwise,
                "metrics": {
                    name: {"value": f.value, "low": f.low, "high": f.high}
                    for name, f in report.figures.items()
                },
                "failed_groups": [{"group": index, "error": why} for index, why in run.failed],
                **_robustness_document(run),
                "items": [
                    {
                        "group": g.index,
                        "judgement_id": g.judgement_ids[0] if len(g.judgement_ids) == 1 else None,
                        "judgement_ids": list(g.judgement_ids),
                        "answers": [{"id": a.id, "label": a.label, "score": a.score} for a in g.answers],
                    }
                    for g in run.groups
                ],
            }
            for step, (run, report) in enumerate(zip(runs, reports, strict=True))
        ],
    }


def _robustness_document(run: ConfigurationRun) -> dict[str, Any]:
    if not run.canary_trials:
        return {}
    figures = robustness(run.canary_trials)
    return {
        "robustness": {
            kind: {
                "trials": f.trials,
                "compared": f.compared,
                "with_correct": f.with_correct,
                **{
                    name: {"value": figure.value, "low": figure.low, "high": figure.high}
                    for name, figure in (
                        ("outranks_median", f.outranks_median),
                        ("outranks_best_correct", f.outranks_best_correct),
                        ("reaches_best_correct", f.reaches_best_correct),
                    )
                },
            }
            for kind, f in figures.items()
        },
        "canary_items": [
            {"group": t.index, "kind": t.kind, "judgement_id": t.judgement_id, "canary_score": t.canary_score}
            for t in run.canary_trials
        ],
    }


def format_robustness_table(runs: Sequence[ConfigurationRun]) -> str:
    """Per configuration and canary kind: groups compared, and how often the canary outranked the median
    answer and the best correct one (quality/robustness.py)."""
    header = ["configuration", "canary", "groups", "outranks median", "outranks best correct", "reaches it"]
    rows = [header, ["---"] * len(header)]
    for run in runs:
        for kind, f in robustness(run.canary_trials).items():
            cells = [run.configuration.name, kind, str(f.compared)]
            for figure in (f.outranks_median, f.outranks_best_correct, f.reaches_best_correct):
                cells.append(_share(figure))
            rows.append(cells)
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def _share(figure: Figure) -> str:
    if figure.value is None or figure.low is None or figure.high is None:
        return "-"
    return f"{figure.value:.3f} [{figure.low:.3f}, {figure.high:.3f}]"


TABLE_FIGURES = (
    "auroc",
    "pairwise_accuracy",
    "kendall_tau",
    "flat_share",
    "unscored_share",
    "seconds_per_group",
    "calls_per_group",
)


def format_table(runs: Sequence[ConfigurationRun], reports: Sequence[Report]) -> str:
    shown = [name for name in TABLE_FIGURES if any(r.figures[name].value is not None for r in reports)]
    header = ["configuration", "groups", *shown]
    rows = [header, ["---"] * len(header)]
    for run, report in zip(runs, reports, strict=True):
        cells = [run.configuration.name, str(report.groups)]
        for name in shown:
            f = report.figures[name]
            if f.value is None:
                cells.append("-")
            elif f.low is None or f.high is None:
                cells.append(f"{f.value:.3f}")
            else:
                cells.append(f"{f.value:.3f} [{f.low:.3f}, {f.high:.3f}]")
        rows.append(cells)
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def evaluate_runs(runs: Sequence[ConfigurationRun], *, seed: int = 0) -> list[Report]:
    return [evaluate(run.groups, seed=seed) for run in runs]
