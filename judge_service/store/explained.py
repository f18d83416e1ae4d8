"""Reasons written afterwards for a judgement (POST /v1/judgements/{id}/reasons): their own table
(migration m008_explained_reasons), one row per judgement, so the judgement's document, the judge's
reply, is never rewritten. The first reasons stored for a judgement are kept: a second writer (another
replica that asked the judge at the same moment) gets the stored ones back."""

from __future__ import annotations

from judge_service.schemas import ExplainedReasons


def insert_sql(p: str) -> str:
    """Store reasons unless the judgement has some (params: insert_row's values)."""
    return (
        f"INSERT INTO explained_reasons (judgement_id, doc, created_at) VALUES ({p}, {p}, {p})"
        " ON CONFLICT (judgement_id) DO NOTHING"
    )


def insert_row(judgement_id: str, reasons: ExplainedReasons) -> tuple[object, ...]:
    return (judgement_id, reasons.model_dump_json(), reasons.created_at.isoformat())


def select_sql(p: str) -> str:
    return f"SELECT doc FROM explained_reasons WHERE judgement_id = {p}"


def load(doc: str | bytes) -> ExplainedReasons:
    return ExplainedReasons.model_validate_json(doc)
