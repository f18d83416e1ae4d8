"""The audit judge's re-judged groups (watch/auditor.py): a table of their own (migration m011_audits),
one row per audited judgement. The figures the run views read (quality/divergence.py: the answers both
judges scored, the rank correlation, the gap overall and per criterion, whether the best answers differ)
are columns, so a run's figures are read in step order without decoding a document per group; the
document keeps both judges' scores per answer (GET /v1/judgements/{id}/audit). A judgement is audited at
most once: a second record for it (another replica that drew it too) is dropped, the first kept.
Retention deletes a judgement's audit with it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from judge_service.quality.divergence import GroupDivergence
from judge_service.schemas import AuditRecord

# The most audited groups of one run read for its figures, in step order: 5% of 64 groups a step for
# 6,000 steps. Reading and summing them takes about a quarter of a second, off the event loop.
MAX_AUDITS_READ = 20_000

_COLUMNS = (
    "judgement_id, run_id, step, answers, rank_correlation, gap, best_differs, criterion_gaps, doc,"
    " created_at"
)


def insert_sql(p: str) -> str:
    """Store an audit unless its judgement has one, or is gone: pruned while its audit waited, which
    would leave a row that no prune finds (params: insert_row's values, then the judgement id again)."""
    marks = ", ".join([p] * (_COLUMNS.count(",") + 1))
    return (
        f"INSERT INTO audits ({_COLUMNS}) SELECT {marks}"
        f" WHERE EXISTS (SELECT 1 FROM judgements WHERE judgement_id = {p})"
        " ON CONFLICT (judgement_id) DO NOTHING"
    )


def insert_row(record: AuditRecord) -> tuple[object, ...]:
    both = sum(1 for a in record.answers if a.training is not None and a.audit is not None)
    return (
        record.judgement_id,
        record.run_id,
        record.step,
        both,
        record.rank_correlation,
        record.gap,
        record.best_differs,
        json.dumps(record.criterion_gaps),
        record.model_dump_json(),
        record.created_at.isoformat(),
        record.judgement_id,
    )


def figures_sql(p: str) -> str:
    """A run's audited groups' figures in step order (params: run_id, limit)."""
    return (
        "SELECT step, answers, rank_correlation, gap, best_differs, criterion_gaps FROM audits"
        f" WHERE run_id = {p} ORDER BY step, created_at, judgement_id LIMIT {p}"
    )


def figures_of(rows: Iterable[Sequence[Any]]) -> list[GroupDivergence]:
    return [
        GroupDivergence(
            step=step,
            answers=answers,
            rank_correlation=rho,
            gap=gap,
            criterion_gaps=json.loads(gaps),
            best_differs=None if best is None else bool(best),  # SQLite keeps a boolean as 0 or 1
        )
        for step, answers, rho, gap, best, gaps in rows
    ]


def record_sql(p: str) -> str:
    return f"SELECT doc FROM audits WHERE judgement_id = {p}"


def load(doc: str | bytes) -> AuditRecord:
    return AuditRecord.model_validate_json(doc)
