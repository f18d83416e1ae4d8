"""Rubrics (POST /v1/rubrics; judging/llm/rubric_writer.py): their own table (migration m009_rubrics), one
row per version. A version is never rewritten: the first one stored under an (id, version) wins, so two
replicas that wrote the same rubric at once keep one, and an edit that lost a race to another edit is
told so (it finds the version taken)."""

from __future__ import annotations

from judge_service.schemas import Rubric


def insert_sql(p: str) -> str:
    """Store a version unless it exists (params: insert_row's values)."""
    return (
        f"INSERT INTO rubrics (id, version, doc, created_at) VALUES ({p}, {p}, {p}, {p})"
        " ON CONFLICT (id, version) DO NOTHING"
    )


def insert_row(rubric: Rubric) -> tuple[object, ...]:
    return (rubric.id, rubric.version, rubric.model_dump_json(), rubric.created_at.isoformat())


def select_version_sql(p: str) -> str:
    return f"SELECT doc FROM rubrics WHERE id = {p} AND version = {p}"


def select_latest_sql(p: str) -> str:
    return f"SELECT doc FROM rubrics WHERE id = {p} ORDER BY version DESC LIMIT 1"


def load(doc: str | bytes) -> Rubric:
    return Rubric.model_validate_json(doc)
