"""How well a grader's scores follow labels nobody here wrote: the figures of `judge-service eval`, pure
computations over judged groups, each with a seeded 95% bootstrap interval over groups.

- `auroc`: over every scored answer with a true/false label, the chance that a correct answer scores above
  a wrong one (Mann-Whitney), ties counted half;
- `pairwise_accuracy`: within each group that mixes labels, the share of (correct, wrong) pairs the grader
  orders right, ties half; pooled over the groups' pairs;
- `kendall_tau` and `spearman`: the mean over groups of tau-b and rho between scores and numeric labels
  (groups whose labels are numbers, two scored answers at least, neither side constant);
- `flat_share`: groups whose scored answers (two at least) all got one score: no GRPO signal;
- `unscored_share`: answers the grader could not score (left out of every rank figure, never taken as 0);
- `order_sensitivity` (groups judged under several orders), `tokens_per_group`, `seconds_per_group`,
  `calls_per_group` (judge calls: a comparison grader's comparisons, a point-wise run's calls per answer).
A figure that no group defines (no mixed group, no numeric labels) is null, with a null interval.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from judge_service.quality.agreement import kendall_tau_b, pairwise_agreement, spearman_rho
from judge_service.quality.calibration import is_flat

Label = bool | float
BOOTSTRAP_ROUNDS = 1000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class JudgedAnswer:
    id: str
    label: Label
    score: float | None  # None: unscored


@dataclass(frozen=True)
class JudgedGroup:
    """One group of the data as one configuration judged it."""

    index: int  # the group's line in the data file, from 0
    answers: tuple[JudgedAnswer, ...]
    judgement_ids: tuple[str, ...] = ()  # one, or one per answer when judged point-wise
    order_sensitivity: float | None = None
    tokens: int = 0
    seconds: float = 0.0
    calls: int = 0  # judge calls (engine requests), retries and comparisons included

    @property
    def scored(self) -> list[JudgedAnswer]:
        return [a for a in self.answers if a.score is not None]


@dataclass(frozen=True)
class Figure:
    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass
class Report:
    groups: int
    figures: dict[str, Figure] = field(default_factory=dict)


def _scores_labelled(groups: Sequence[JudgedGroup], label: bool) -> list[float]:
    return [a.score for g in groups for a in g.answers if a.label is label and a.score is not None]


def auroc(groups: Sequence[JudgedGroup]) -> float | None:
    positives, negatives = _scores_labelled(groups, True), _scores_labelled(groups, False)
    if not positives or not negatives:
        return None
    wins = 0.0
    for p in positives:
        for n in negatives:
            wins += 1.0 if p > n else 0.5 if p == n else 0.0
    return wins / (len(positives) * len(negatives))


def pairwise_accuracy(groups: Sequence[JudgedGroup]) -> float | None:
    agreed, pairs = 0.0, 0
    for group in groups:
        scored = [a for a in group.scored if isinstance(a.label, bool)]
        if len({a.label for a in scored}) < 2:
            continue
        got, n = pairwise_agreement([float(a.label) for a in scored], [a.score or 0.0 for a in scored])
        agreed, pairs = agreed + got, pairs + n
    return agreed / pairs if pairs else None


def _mean_over_groups(
    groups: Sequence[JudgedGroup], statistic: Callable[[list[float], list[float]], float | None]
) -> float | None:
    values = []
    for group in groups:
        scored = [a for a in group.scored if not isinstance(a.label, bool)]
        if len(scored) < 2:
            continue
        value = statistic([float(a.label) for a in scored], [a.score or 0.0 for a in scored])
        if value is not None:
            values.append(value)
    return sum(values) / len(values) if values else None


def kendall_tau(groups: Sequence[JudgedGroup]) -> float | None:
    return _mean_over_groups(groups, kendall_tau_b)


def spearman(groups: Sequence[JudgedGroup]) -> float | None:
    return _mean_over_groups(groups, spearman_rho)


def flat_share(groups: Sequence[JudgedGroup]) -> float | None:
    eligible = [[a.score for a in g.scored if a.score is not None] for g in groups if len(g.scored) >= 2]
    if not eligible:
        return None
    return sum(1 for scores in eligible if is_flat(scores)) / len(eligible)


def unscored_share(groups: Sequence[JudgedGroup]) -> float | None:
    answers = [a for g in groups for a in g.answers]
    return sum(1 for a in answers if a.score is None) / len(answers) if answers else None


def order_sensitivity(groups: Sequence[JudgedGroup]) -> float | None:
    values = [g.order_sensitivity for g in groups if g.order_sensitivity is not None]
    return sum(values) / len(values) if values else None


def tokens_per_group(groups: Sequence[JudgedGroup]) -> float | None:
    return sum(g.tokens for g in groups) / len(groups) if groups else None


def seconds_per_group(groups: Sequence[JudgedGroup]) -> float | None:
    return sum(g.seconds for g in groups) / len(groups) if groups else None


def calls_per_group(groups: Sequence[JudgedGroup]) -> float | None:
    return sum(g.calls for g in groups) / len(groups) if groups else None


FIGURES: dict[str, Callable[[Sequence[JudgedGroup]], float | None]] = {
    "auroc": auroc,
    "pairwise_accuracy": pairwise_accuracy,
    "kendall_tau": kendall_tau,
    "spearman": spearman,
    "flat_share": flat_share,
    "unscored_share": unscored_share,
    "order_sensitivity": order_sensitivity,
    "tokens_per_group": tokens_per_group,
    "seconds_per_group": seconds_per_group,
    "calls_per_group": calls_per_group,
}


def bootstrap(
    groups: Sequence[JudgedGroup],
    figure: Callable[[Sequence[JudgedGroup]], float | None],
    *,
    rounds: int = BOOTSTRAP_ROUNDS,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """The 95% percentile interval of `figure` over `rounds` resamples of the groups (with replacement);
    resamples on which the figure is undefined are left out. Seeded: the same groups give the same
    interval."""
    rng = random.Random(seed)
    values = []
    for _ in range(rounds):
        sample = [groups[rng.randrange(len(groups))] for _ in groups]
        value = figure(sample)
        if value is not None:
            values.append(value)
    if not values:
        return None, None
    values.sort()
    tail = (1 - CONFIDENCE) / 2
    low = values[int(tail * (len(values) - 1))]
    high = values[round((1 - tail) * (len(values) - 1))]
    return low, high


def evaluate(groups: Sequence[JudgedGroup], *, rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0) -> Report:
    report = Report(groups=len(groups))
    for name, figure in FIGURES.items():
        value = figure(groups) if groups else None
        low, high = bootstrap(groups, figure, rounds=rounds, seed=seed) if value is not None else (None, None)
        report.figures[name] = Figure(value, low, high)
    return report
