"""How far the training judge and an audit judge part on the same groups, group by group and step by step.

Pure: each audited group's scores from both judges in, figures out. Only answers both judges scored count.

Per group:
* `rank_correlation`: Spearman's rho between the two judges' overall scores (average ranks for ties); None
  where either side has fewer than two distinct scores.
* `gap`: the mean over answers of training score less audit score (the training judge's generosity), and
  `criterion_gaps`, the same per criterion both judges marked. A constant offset between two judges is
  not gaming; a gap that grows is (onset.py looks for the change, not the level).
* `best_differs`: whether the answer the training judge scores highest is not the audit judge's highest;
  None where either has no single best.
Per step: the mean of each over the step's audited groups (over the groups where it is defined), the share
of groups whose best answers differ, and how many groups were audited.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from judge_service.quality.agreement import spearman_rho

_TIE = 1e-9


@dataclass(frozen=True)
class AnswerScores:
    """One answer as one judge scored it: overall, and per criterion (empty for a grader without)."""

    score: float | None
    criteria: Mapping[str, float]


@dataclass(frozen=True)
class GroupDivergence:
    step: int
    answers: int  # scored by both judges
    rank_correlation: float | None
    gap: float | None
    criterion_gaps: Mapping[str, float]
    best_differs: bool | None


@dataclass(frozen=True)
class StepDivergence:
    step: int
    groups: int
    rank_correlation: float | None
    gap: float | None
    criterion_gaps: Mapping[str, float]
    best_disagreement: float | None  # share of groups (with a single best on both sides) whose best differs


def group_divergence(
    step: int, training: Mapping[str, AnswerScores], audit: Mapping[str, AnswerScores]
) -> GroupDivergence:
    """The figures of one group (module docstring) over the answers both judges scored."""
    both: list[str] = []
    x: list[float] = []  # the training judge's scores of `both`
    y: list[float] = []  # the audit judge's
    for answer_id, trained in training.items():
        checked = audit.get(answer_id)
        if trained.score is not None and checked is not None and checked.score is not None:
            both.append(answer_id)
            x.append(trained.score)
            y.append(checked.score)
    rho = spearman_rho(x, y) if len(both) >= 2 else None
    gap = sum(t - a for t, a in zip(x, y, strict=True)) / len(both) if both else None
    shared = (
        set.intersection(*(set(training[a].criteria) & set(audit[a].criteria) for a in both))
        if both
        else set()
    )
    criterion_gaps = {
        name: sum(training[a].criteria[name] - audit[a].criteria[name] for a in both) / len(both)
        for name in sorted(shared)
    }
    best_training, best_audit = _single_best(both, x), _single_best(both, y)
    differs = None if best_training is None or best_audit is None else best_training != best_audit
    return GroupDivergence(step, len(both), rho, gap, criterion_gaps, differs)


def step_divergence(groups: Iterable[GroupDivergence]) -> list[StepDivergence]:
    """Per step, in step order: the means of its groups' figures (each over the groups where defined)."""
    by_step: dict[int, list[GroupDivergence]] = defaultdict(list)
    for group in groups:
        by_step[group.step].append(group)
    steps = []
    for step in sorted(by_step):
        members = by_step[step]
        names = sorted({name for g in members for name in g.criterion_gaps})
        steps.append(
            StepDivergence(
                step=step,
                groups=len(members),
                rank_correlation=_mean(g.rank_correlation for g in members),
                gap=_mean(g.gap for g in members),
                criterion_gaps={
                    name: m
                    for name in names
                    if (m := _mean(g.criterion_gaps.get(name) for g in members)) is not None
                },
                best_disagreement=_mean(
                    None if g.best_differs is None else float(g.best_differs) for g in members
                ),
            )
        )
    return steps


def _single_best(ids: list[str], scores: list[float]) -> str | None:
    if not scores:
        return None
    top = max(scores)
    best = [answer_id for answer_id, score in zip(ids, scores, strict=True) if top - score <= _TIE]
    return best[0] if len(best) == 1 else None


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None
