"""The run views' queries, shared by both stores: a run's judgements page by page, runs with their totals, a
run's figures by step, and the human labels and regrades the run pages compare graders with.

Everything is aggregated in SQL from the per-judgement summary columns (migration m005, codec.summary),
so a run of 1,000 steps x 512 groups is summed by the database, never parsed document by document.
Both are keyset-paged: runs on run_id, steps on step. Written once with `{p}` for the placeholder
(`?` in SQLite, `%s` in psycopg); the SQL itself is standard in both dialects.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError

from judge_service.schemas import (
    CANARY_KINDS,
    FingerprintCount,
    HumanLabels,
    JudgementPage,
    RunPage,
    RunSteps,
    RunSummary,
    StepFigures,
)
from judge_service.store import codec
from judge_service.store.codec import now_text

log = logging.getLogger(__name__)


def run_judgements_query(
    p: str, run_id: str, *, step: int | None, limit: int, cursor: str | None
) -> tuple[str, list[object]]:
    """A run's judgements oldest first, keyset-paginated on the row id (`cursor`: the last page's), with one
    row more than `limit`, which tells whether another page exists (judgement_page)."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    after = 0 if cursor is None else codec.decode_cursor(cursor)
    sql = f"SELECT id, doc FROM judgements WHERE run_id = {p} AND id > {p}"
    params: list[object] = [run_id, after]
    if step is not None:
        sql += f" AND step = {p}"
        params.append(step)
    return sql + f" ORDER BY id LIMIT {p}", [*params, limit + 1]


def judgement_page(rows: Sequence[Sequence[Any]], limit: int) -> JudgementPage:
    page, more = rows[:limit], len(rows) > limit
    items = [codec.page_item(doc) for _, doc in page]
    return JudgementPage(items=items, next_cursor=codec.encode_cursor(page[-1][0]) if more else None)


def runs_sql(p: str, *, one: bool = False) -> str:
    """Runs after the cursor (`run_id > p`), or the one run named (`one`), with their totals."""
    return (
        "SELECT run_id, COUNT(DISTINCT step), COUNT(*), MAX(created_at), MAX(step),"
        " SUM(answers), SUM(scored)"
        f" FROM judgements WHERE run_id IS NOT NULL AND run_id {'=' if one else '>'} {p}"
        f" GROUP BY run_id ORDER BY run_id LIMIT {p}"
    )


def run_details_sql(p: str, runs: int) -> tuple[str, str]:
    """(fingerprints per run, mean score of each run's last step) for `runs` run ids."""
    marks = ", ".join([p] * runs)
    fingerprints = (
        "SELECT run_id, grader_fingerprint, COUNT(*) FROM judgements"
        f" WHERE run_id IN ({marks}) GROUP BY run_id, grader_fingerprint ORDER BY run_id, COUNT(*) DESC"
    )
    last_step = (
        "SELECT j.run_id, SUM(j.score_sum), SUM(j.scored) FROM judgements j"
        f" WHERE j.run_id IN ({marks})"
        " AND j.step = (SELECT MAX(k.step) FROM judgements k WHERE k.run_id = j.run_id)"
        " GROUP BY j.run_id"
    )
    return fingerprints, last_step


# Per canary kind: canaries with an outcome, and those that outranked their group (the kinds are the
# schema's own literals, never caller text).
_CANARY_KIND_SUMS = "".join(
    f", SUM(CASE WHEN canary_kind = '{kind}' AND canary_outranked IS NOT NULL THEN 1 ELSE 0 END)"
    f", SUM(CASE WHEN canary_kind = '{kind}' AND canary_outranked THEN 1 ELSE 0 END)"
    for kind in CANARY_KINDS
)


def steps_sql(p: str, *, fingerprint: bool, until: bool) -> str:
    return (
        "SELECT step, COUNT(*), SUM(answers), SUM(scored), SUM(score_sum), SUM(score_sq),"
        " SUM(CASE WHEN flat THEN 1 ELSE 0 END), COUNT(flat),"
        " AVG(order_sensitivity), COUNT(order_sensitivity),"
        " AVG(prompt_tokens), AVG(completion_tokens), AVG(judge_ms), MAX(created_at),"
        " AVG(length_bias), COUNT(canary_outranked), SUM(CASE WHEN canary_outranked THEN 1 ELSE 0 END)"
        + _CANARY_KIND_SUMS
        + f" FROM judgements WHERE run_id = {p} AND step IS NOT NULL AND step > {p}"
        + (f" AND step <= {p}" if until else "")
        + (f" AND grader_fingerprint = {p}" if fingerprint else "")
        + f" GROUP BY step ORDER BY step LIMIT {p}"
    )


def steps_params(
    run_id: str, after: int, until: int | None, fingerprint: str | None, limit: int
) -> list[object]:
    params: list[object] = [run_id, after]
    if until is not None:
        params.append(until)
    if fingerprint is not None:
        params.append(fingerprint)
    params.append(limit + 1)
    return params


def upsert_labels_sql(p: str) -> str:
    """One labeler's labels for a judgement, replacing that labeler's earlier ones (labels_row's values)."""
    return (
        "INSERT INTO human_labels (judgement_id, labeler, run_id, doc, updated_at)"
        f" VALUES ({p}, {p}, {p}, {p}, {p}) ON CONFLICT (judgement_id, labeler)"
        " DO UPDATE SET doc = excluded.doc, updated_at = excluded.updated_at"
    )


def labels_row(labels: HumanLabels, run_id: str | None) -> tuple[object, ...]:
    return (labels.judgement_id, labels.labeler or "", run_id, labels.model_dump_json(), now_text())


def labels_from(docs: Iterable[str]) -> list[HumanLabels]:
    """Stored labels as read: one that no longer validates (an infinite scale stored as null by a
    release that accepted it) is left out with a warning, never a 500 for every page that lists it; the
    person's next PUT replaces it."""
    labels = []
    for doc in docs:
        try:
            labels.append(HumanLabels.model_validate_json(doc))
        except ValidationError as exc:
            log.warning(
                "stored labels left out, they do not read back (%s): %.200s", exc.errors()[0]["msg"], doc
            )
    return labels


def labels_of_sql(p: str) -> str:
    return f"SELECT doc FROM human_labels WHERE judgement_id = {p} ORDER BY labeler"


def run_labels_sql(p: str) -> str:
    """A run's labels, oldest judgement first (params: run id, limit)."""
    return (
        "SELECT l.doc FROM human_labels l JOIN judgements j ON j.judgement_id = l.judgement_id"
        f" WHERE l.run_id = {p} ORDER BY j.id, l.labeler LIMIT {p}"
    )


def regrades_of_sql(p: str, ids: int) -> str:
    marks = ", ".join([p] * ids)
    return f"SELECT doc FROM judgements WHERE regrade_of IN ({marks}) ORDER BY id"


def run_page(
    rows: Sequence[Sequence[Any]],
    fingerprints: Sequence[Sequence[Any]],
    last_steps: Sequence[Sequence[Any]],
    limit: int,
) -> RunPage:
    by_run: dict[str, list[FingerprintCount]] = {}
    for run_id, fingerprint, count in fingerprints:
        by_run.setdefault(run_id, []).append(FingerprintCount(fingerprint=fingerprint, judgements=int(count)))
    last = {run_id: _ratio(total, scored) for run_id, total, scored in last_steps}
    items = [
        RunSummary(
            run_id=run_id,
            steps=int(steps),
            judgements=int(judgements),
            last_activity=last_activity,
            last_step=None if last_step is None else int(last_step),
            last_step_mean_score=last.get(run_id),
            unscored_share=_unscored(answers, scored),
            fingerprints=by_run.get(run_id, []),
        )
        for run_id, steps, judgements, last_activity, last_step, answers, scored in rows[:limit]
    ]
    more = len(rows) > limit
    return RunPage(items=items, next_cursor=items[-1].run_id if more and items else None)


def run_steps(run_id: str, rows: Sequence[Sequence[Any]], limit: int) -> RunSteps:
    items = []
    for row in rows[:limit]:
        (step, groups, answers, scored, total, squares, flats, flat_known) = row[:8]
        (sensitivity, sensitivity_n, prompt_tokens, completion_tokens, judge_ms, last_activity) = row[8:14]
        (bias, canaries, outranked), by_kind = row[14:17], row[17:]
        mean = _ratio(total, scored)
        spread = None
        if mean is not None and squares is not None:
            spread = math.sqrt(max(0.0, float(squares) / float(scored) - mean * mean))
        items.append(
            StepFigures(
                step=int(step),
                groups=int(groups),
                answers=int(answers or 0),
                mean_score=_round(mean),
                score_sd=_round(spread),
                flat_share=_round(_ratio(flats, flat_known)),
                unscored_share=_unscored(answers, scored),
                order_sensitivity=_round(sensitivity) if sensitivity_n else None,
                prompt_tokens=_round(prompt_tokens),
                completion_tokens=_round(completion_tokens),
                judge_ms=_round(judge_ms),
                canary_groups=int(canaries or 0),
                canary_outrank_share=_round(_ratio(outranked, canaries)),
                canary_outrank_by_kind={
                    kind: round(float(by_kind[2 * i + 1]) / float(by_kind[2 * i]), 6)
                    for i, kind in enumerate(CANARY_KINDS)
                    if by_kind[2 * i]
                },
                length_bias=_round(bias),
                last_activity=last_activity,
            )
        )
    more = len(rows) > limit
    return RunSteps(run_id=run_id, items=items, next_cursor=str(items[-1].step) if more and items else None)


def _ratio(numerator: Any, denominator: Any) -> float | None:
    if numerator is None or not denominator:
        return None
    return float(numerator) / float(denominator)


def _unscored(answers: Any, scored: Any) -> float | None:
    if not answers:
        return None
    return _round(1 - float(scored or 0) / float(answers))


def _round(value: Any) -> float | None:
    return None if value is None else round(float(value), 6)
