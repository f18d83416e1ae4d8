"""Agreement between a grader and human labels, group by group.

Pure: labelled groups and the grader's scores in, a report out. Human labels are scores (higher is better;
scaled to 0-1 with the group's `scale`, default 0-1) or ranks (1 is best). Only answers both sides scored
are compared.

Per group, on the answers both sides scored:
* Kendall tau-b and Spearman rho (average ranks for ties, i.e. scipy's defaults); None when either side
  has fewer than two distinct values, where neither is defined.
* Pairwise accuracy: of the answer pairs the human strictly prefers one of, the share the grader orders
  the same way; a grader tie counts half.
* Mean absolute error of the 0-1 scores, for score labels only (a rank has no score to compare).
Across groups: tau and rho are averaged over the groups where they are defined (each group counts once,
as GRPO uses each group on its own); pairwise accuracy and MAE pool all pairs and answers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from judge_service.schemas import AgreementReport, GroupAgreement, HumanLabels

_TOLERANCE = 1e-9  # grader scores are rounded to 6 places: closer than this is a tie

Scores = Mapping[str, float | None]


# --------------------------------------------------------------------------- statistics


def _sign(d: float) -> int:
    return 0 if abs(d) <= _TOLERANCE else (1 if d > 0 else -1)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """tau-b = (concordant - discordant) / sqrt((n0 - ties_x) * (n0 - ties_y)); None if undefined."""
    _same_length(x, y)
    n = len(x)
    n0 = n * (n - 1) // 2
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            sx, sy = _sign(x[i] - x[j]), _sign(y[i] - y[j])
            ties_x += sx == 0
            ties_y += sy == 0
            concordant += sx * sy > 0
            discordant += sx * sy < 0
    denominator = (n0 - ties_x) * (n0 - ties_y)
    return (concordant - discordant) / math.sqrt(denominator) if denominator else None


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and abs(values[order[end + 1]] - values[order[start]]) <= _TOLERANCE:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson correlation of the average ranks; None when either side is constant."""
    _same_length(x, y)
    rx, ry = average_ranks(x), average_ranks(y)
    mx, my = sum(rx) / len(rx) if rx else 0.0, sum(ry) / len(ry) if ry else 0.0
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(vx * vy) if vx > 0 and vy > 0 else None


def pairwise_agreement(human: Sequence[float], grader: Sequence[float]) -> tuple[float, int]:
    """(agreeing pairs, with grader ties as 0.5; pairs with a strict human preference)."""
    _same_length(human, grader)
    agreed, pairs = 0.0, 0
    for i in range(len(human)):
        for j in range(i + 1, len(human)):
            sh = _sign(human[i] - human[j])
            if sh == 0:
                continue
            pairs += 1
            sg = _sign(grader[i] - grader[j])
            agreed += 0.5 if sg == 0 else float(sg == sh)
    return agreed, pairs


def _same_length(x: Sequence[float], y: Sequence[float]) -> None:
    if len(x) != len(y):
        raise ValueError(f"paired sequences differ in length: {len(x)} and {len(y)}")


# --------------------------------------------------------------------------- groups and report


def group_agreement(
    labels: HumanLabels, grader: Scores, default_scale: tuple[float, float] = (0.0, 1.0)
) -> GroupAgreement:
    """One group's figures; ValueError when a human score lies outside its scale."""
    scored = {i: s for i in labels.human if (s := grader.get(i)) is not None}
    ids = list(scored)
    missing = [i for i in labels.human if i not in scored]
    raw = [labels.human[i] for i in ids]
    # Ranks: 1 is best, so negate them to get "higher is better" like the grader's scores.
    human = [-r for r in raw] if labels.kind == "rank" else raw
    scores = [scored[i] for i in ids]
    agreed, pairs = pairwise_agreement(human, scores)
    mae = None
    if labels.kind == "score" and ids:
        scaled = _scaled(labels, raw, labels.scale or default_scale)
        mae = sum(abs(h - g) for h, g in zip(scaled, scores, strict=True)) / len(ids)
    return GroupAgreement(
        key=labels.key,
        kind=labels.kind,
        answers=len(ids),
        kendall_tau_b=kendall_tau_b(human, scores),
        spearman_rho=spearman_rho(human, scores),
        pairs=pairs,
        pairwise_accuracy=agreed / pairs if pairs else None,
        mean_absolute_error=mae,
        missing_answers=missing,
    )


def _scaled(labels: HumanLabels, raw: list[float], scale: tuple[float, float]) -> list[float]:
    low, high = scale
    outside = [v for v in raw if not low - _TOLERANCE <= v <= high + _TOLERANCE]
    if outside:
        raise ValueError(
            f"group {labels.key!r}: human score(s) {outside[:5]} outside the scale {low:g}-{high:g}; "
            "give the group's `scale` (e.g. [1, 5])"
        )
    return [(v - low) / (high - low) for v in raw]


def agreement(
    labelled: Iterable[tuple[HumanLabels, Scores | None]],
    default_scale: tuple[float, float] = (0.0, 1.0),
) -> AgreementReport:
    """The report over labelled groups, each with the grader's scores (None: no judgement found)."""
    per_group: list[GroupAgreement] = []
    unmatched: list[str] = []
    n = 0
    mae_sum, mae_answers = 0.0, 0
    agreed_sum, pairs = 0.0, 0
    for labels, grader in labelled:
        n += 1
        if grader is None:
            unmatched.append(labels.key)
            continue
        group = group_agreement(labels, grader, default_scale)
        per_group.append(group)
        if group.pairwise_accuracy is not None:
            agreed_sum += group.pairwise_accuracy * group.pairs
            pairs += group.pairs
        if group.mean_absolute_error is not None:
            mae_sum += group.mean_absolute_error * group.answers
            mae_answers += group.answers
    taus = [g.kendall_tau_b for g in per_group if g.kendall_tau_b is not None]
    rhos = [g.spearman_rho for g in per_group if g.spearman_rho is not None]
    return AgreementReport(
        groups=n,
        matched_groups=len(per_group),
        unmatched=unmatched,
        mean_kendall_tau_b=sum(taus) / len(taus) if taus else None,
        mean_spearman_rho=sum(rhos) / len(rhos) if rhos else None,
        tau_groups=len(taus),
        rho_groups=len(rhos),
        pairs=pairs,
        pairwise_accuracy=agreed_sum / pairs if pairs else None,
        mae_answers=mae_answers,
        mean_absolute_error=mae_sum / mae_answers if mae_answers else None,
        per_group=per_group,
    )


# --------------------------------------------------------------------------- reading inputs


def labels_from_jsonl(lines: Iterable[str]) -> list[HumanLabels]:
    """Parse the human-labels file; ValueError naming the line for anything malformed."""
    labels = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            labels.append(HumanLabels.model_validate_json(line))
        except ValueError as exc:
            raise ValueError(f"human labels line {number}: {exc}") from exc
    return labels


def answer_scores(judgement: Mapping[str, Any]) -> dict[str, float | None]:
    """answer id -> score (None when unscored) of one judgement document (response or stored)."""
    scores: dict[str, float | None] = {}
    for answer in judgement.get("answers", []):
        score = answer.get("score")
        usable = isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
        scored = answer.get("status", "scored") == "scored" and usable
        scores[str(answer.get("id"))] = float(score) if scored else None
    return scores


class JudgementIndex:
    """Grader scores of many judgements, found by judgement_id or by group_key (the latest wins)."""

    def __init__(self) -> None:
        self._by_id: dict[str, dict[str, float | None]] = {}
        self._by_group_key: dict[str, dict[str, float | None]] = {}

    def add(self, judgement: Mapping[str, Any]) -> None:
        judgement = judgement.get("judgement", judgement) or {}
        if not isinstance(judgement.get("answers"), list):
            return  # an error line: no judgement
        scores = answer_scores(judgement)
        if judgement.get("judgement_id"):
            self._by_id[str(judgement["judgement_id"])] = scores
        if judgement.get("group_key"):
            self._by_group_key[str(judgement["group_key"])] = scores

    def add_jsonl(self, lines: Iterable[str]) -> None:
        for line in lines:
            if line.strip():
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut off by an interrupted writer
                if isinstance(doc, dict):
                    self.add(doc)

    def find(self, labels: HumanLabels) -> dict[str, float | None] | None:
        if labels.judgement_id is not None:
            return self._by_id.get(labels.judgement_id)
        return self._by_group_key.get(labels.group_key or "")
