"""View models of the run pages: what a template shows, computed from the service's typed results (the
charts of a run's steps, the answer rows of a group, a comparison grader's win matrix)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judge_service.judging.comparison.strength import outcome
from judge_service.schemas import ComparisonRecord, RunAudit, StepFigures, StoredJudgement
from judge_service.ui.charts import Series, line_chart


def charts(steps: list[StepFigures], audit: RunAudit | None = None) -> list[dict[str, str]]:
    numbers = [s.step for s in steps]

    def chart(key: str, title: str, values: list[float | None], caption: str, **kw: Any) -> dict[str, str]:
        svg = line_chart(Series(title, numbers, values, **kw))
        return {"key": key, "title": title, "svg": svg, "caption": caption}

    return [
        chart(
            "mean_score",
            "Mean score",
            [s.mean_score for s in steps],
            "Mean score of the scored answers, with one standard deviation either side.",
            spread=[s.score_sd for s in steps],
            lower=0.0,
            upper=1.0,
        ),
        chart(
            "flat_share",
            "Flat groups",
            [s.flat_share for s in steps],
            "Share of groups whose answers all got the same score: no learning signal for GRPO.",
            lower=0.0,
            upper=1.0,
        ),
        chart(
            "unscored_share",
            "Unscored answers",
            [s.unscored_share for s in steps],
            "Share of answers the judge could not score (never counted as 0).",
            lower=0.0,
            upper=1.0,
        ),
        chart(
            "order_sensitivity",
            "Order sensitivity",
            [s.order_sensitivity for s in steps],
            "Mean spread of answers' scores across answer orders, where groups were judged under several.",
            lower=0.0,
        ),
        chart(
            "canary_outrank_share",
            "Canaries outranking their group",
            [s.canary_outrank_share for s in steps],
            "Share of canary answers (planted bad answers) that scored above their group's median answer: "
            "the judge can be gamed. " + _by_kind(steps),
            lower=0.0,
            upper=1.0,
        ),
        chart(
            "length_bias",
            "Length bias",
            [s.length_bias for s in steps],
            "Mean over groups of the rank correlation of answer length and score: near 1, longer answers "
            "win whatever they say.",
            lower=-1.0,
            upper=1.0,
        ),
        *(audit_charts(steps, audit) if audit is not None else []),
        chart(
            "judge_tokens",
            "Judge tokens per group",
            [_tokens(s) for s in steps],
            "Prompt and completion tokens the judge spent per group.",
            lower=0.0,
            unit=" tokens",
        ),
        chart(
            "judge_ms",
            "Judge time per group",
            [s.judge_ms for s in steps],
            "Mean judge time per group, in milliseconds.",
            lower=0.0,
            unit=" ms",
        ),
    ]


def audit_charts(steps: list[StepFigures], audit: RunAudit) -> list[dict[str, str]]:
    """The run against the audit judge (JUDGE_AUDIT), with where the divergence began marked."""
    numbers = [s.step for s in steps]
    onset = audit.onset
    began = None
    if onset is not None:
        began = onset.detected_at_step if onset.began_at_step is None else onset.began_at_step
    marker = None if began is None else (began, f"divergence from step {began}")

    def chart(key: str, title: str, values: list[float | None], caption: str, **kw: Any) -> dict[str, str]:
        svg = line_chart(Series(title, numbers, values, marker=marker, **kw))
        return {"key": key, "title": title, "svg": svg, "caption": caption}

    return [
        chart(
            "audit_gap",
            "Training judge less audit judge",
            [None if s.audit is None else s.audit.gap for s in steps],
            "Mean score gap over the audited groups: a gap that grows while the rewards rise is the policy "
            "pleasing the training judge, not getting better.",
        ),
        chart(
            "audit_rank_correlation",
            "Rank agreement with the audit judge",
            [None if s.audit is None else s.audit.rank_correlation for s in steps],
            "Mean within-group rank correlation of the two judges' scores.",
            lower=-1.0,
            upper=1.0,
        ),
        chart(
            "audit_best_disagreement",
            "Best answer disagreement",
            [None if s.audit is None else s.audit.best_disagreement for s in steps],
            "Share of audited groups whose best answer differs between the two judges.",
            lower=0.0,
            upper=1.0,
        ),
    ]


def _by_kind(steps: list[StepFigures]) -> str:
    """Each canary kind's outrank share, the plain mean over the steps shown that had the kind (the
    caption)."""
    outranked: dict[str, float] = {}
    for step in steps:
        for kind, share in step.canary_outrank_by_kind.items():
            outranked[kind] = outranked.get(kind, 0.0) + share
    if not outranked:
        return ""
    shares = {
        kind: total / sum(1 for s in steps if kind in s.canary_outrank_by_kind)
        for kind, total in outranked.items()
    }
    return (
        "By kind, mean over steps: "
        + ", ".join(f"{kind} {share:.0%}" for kind, share in shares.items())
        + "."
    )


def _tokens(step: StepFigures) -> float | None:
    if step.prompt_tokens is None and step.completion_tokens is None:
        return None
    return (step.prompt_tokens or 0) + (step.completion_tokens or 0)


def group_view(stored: StoredJudgement, old: StoredJudgement | None, sort: str) -> dict[str, Any]:
    answers = answer_rows(stored, old=old, by_score=sort == "score")
    return {"judgement": stored, "request": stored.request, "answers": answers, "old": old}


def answer_rows(
    stored: StoredJudgement, *, old: StoredJudgement | None = None, by_score: bool = False
) -> list[dict[str, Any]]:
    """Each answer's result with its text (and its score before a regrade); by score: best first, unscored
    last, where they stand out."""
    sent = {a.id: a for a in stored.request.answers}
    old_scores = {a.id: a.score for a in old.answers} if old is not None else {}
    results = list(stored.answers)
    if by_score:
        results.sort(key=lambda a: (a.score is None, -(a.score or 0.0)))
    return [
        {
            "result": a,
            "text": sent[a.id].text if a.id in sent else "",
            "messages": sent[a.id].messages if a.id in sent else None,  # a trajectory, shown as its turns
            "old_score": old_scores.get(a.id),
        }
        for a in results
    ]


@dataclass
class MatchCell:
    """The comparisons of a row's answer against a column's, as the row's answer fared in them."""

    wins: int = 0
    losses: int = 0
    ties: int = 0
    failed: int = 0
    comparisons: list[ComparisonRecord] = field(default_factory=list)

    @property
    def label(self) -> str:
        text = f"{self.wins}–{self.losses}" + (f" ={self.ties}" if self.ties else "")
        return text + (f" ({self.failed} failed)" if self.failed else "")


@dataclass
class WinMatrix:
    ids: list[str]
    cells: dict[tuple[str, str], MatchCell]


def win_matrix(stored: StoredJudgement) -> WinMatrix | None:
    """Row against column over a comparison grader's comparisons (either shown first); None for other
    graders."""
    if not stored.comparisons:
        return None
    ids = [a.id for a in stored.answers]
    cells: dict[tuple[str, str], MatchCell] = {}
    for c in stored.comparisons:
        for row, col in ((c.first, c.second), (c.second, c.first)):
            cell = cells.setdefault((row, col), MatchCell())
            cell.comparisons.append(c)
            if c.preference is None:
                cell.failed += 1
                continue
            result = outcome(c.preference if row == c.second else 1.0 - c.preference)  # +1: the row won
            if result == 0:
                cell.ties += 1
            elif result > 0:
                cell.wins += 1
            else:
                cell.losses += 1
    return WinMatrix(ids, cells)
