"""Deleting old judgements (service/retention.py runs it), the SQL both stores share.

One call deletes one batch in one short transaction: the oldest judgements before the cut-off (by
`created_at`, on the index migration m010 adds), at most `limit` of them, with what belongs to them
alone:
- the reasons written for them afterwards (explained_reasons) go with them;
- their idempotency keys are columns of their rows, so they go too: a request repeated with a pruned
  key is judged again, as a new request;
- judgements a person labelled are kept, with their labels, unless `include_labelled` (labels are the
  human work agreement and evaluation are measured against, and they need their judgement's answers);
- a regrade is a judgement of its own, pruned by its own age: one whose original was pruned keeps its
  `regrade_of`, and the pages say the original is gone;
- rubrics are not pruned (one per prompt, referenced by id from requests to come), nor member groups
  (the group assembly forgets those itself, minutes after they close).
Claims on idempotency keys whose lease lapsed before the cut-off (left by a process that died while
judging) are deleted in their own statement.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

_LABELLED = "EXISTS (SELECT 1 FROM human_labels l WHERE l.judgement_id = judgements.judgement_id)"


@dataclass(frozen=True)
class PrunedBatch:
    """What one batch deleted, by table."""

    judgements: int = 0
    explained_reasons: int = 0
    labels: int = 0
    audits: int = 0


def cutoff_text(before: datetime) -> str:
    """The cut-off as stores keep `created_at` (ISO 8601 in UTC), so text order is time order."""
    if before.tzinfo is None:
        raise ValueError("a prune cut-off needs a time zone")
    return before.astimezone(UTC).isoformat()


def oldest_sql(p: str, *, run: bool, include_labelled: bool) -> str:
    """Ids of the oldest judgements to prune (params: cut-off, [run id,] limit)."""
    where = [f"created_at < {p}"]
    if run:
        where.append(f"run_id = {p}")  # a run's rows by its index; a run is small beside the table
    if not include_labelled:
        where.append(f"NOT {_LABELLED}")
    order = "" if run else " ORDER BY created_at"
    return f"SELECT id, judgement_id FROM judgements WHERE {' AND '.join(where)}{order} LIMIT {p}"


def oldest_params(before: datetime, run_id: str | None, limit: int) -> tuple[object, ...]:
    cutoff = cutoff_text(before)
    return (cutoff, run_id, limit) if run_id is not None else (cutoff, limit)


def claims_sql(p: str) -> str:
    """Delete claims whose lease lapsed before the cut-off (params: the cut-off in epoch seconds)."""
    return f"DELETE FROM idempotency_claims WHERE lease_until < {p}"
