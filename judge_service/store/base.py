"""Where judgements live. A judgement acknowledged to a caller has been saved here first."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from judge_service.quality.divergence import GroupDivergence
from judge_service.schemas import (
    AuditRecord,
    ExplainedReasons,
    HumanLabels,
    JudgementPage,
    Rubric,
    RunPage,
    RunSteps,
    RunSummary,
    StoredJudgement,
)
from judge_service.store.retention import PrunedBatch


@dataclass(frozen=True)
class IdempotencyKey:
    """A caller's Idempotency-Key and the hash of the request it came with (judge_service/idempotency.py)."""

    key: str
    request_hash: str


@dataclass(frozen=True)
class KeyedJudgement:
    """A judgement stored under an idempotency key, with the hash of the request that produced it."""

    judgement: StoredJudgement
    request_hash: str


class IdempotencyKeyTaken(Exception):
    """save(): a judgement is already stored under this idempotency key (a concurrent duplicate won)."""


@dataclass(frozen=True)
class Claim:
    """What claim() found. `owned`: this owner holds the key now and should judge the request. Otherwise
    another process holds it (a live lease) for the request with `request_hash`."""

    owned: bool
    request_hash: str


@dataclass(frozen=True)
class MemberGroup:
    """A group assembled from member requests, as the store holds it (assembly/shared.py)."""

    fields: str  # canonical JSON of the group fields its first member fixed
    size: int
    min_members: int
    seconds_left: float  # until its deadline, on the database's clock; negative once passed
    closed: bool  # no member joins any more: judged (or answered incomplete) with `members`
    members: dict[str, str]  # answer id -> the answer as held (assembly.common.held)
    closed_now: bool = False  # join_group / close_group: this call closed it


@dataclass(frozen=True)
class MemberJoin:
    """One member asking to join a group: the group's terms (used when it opens the group) and its answer."""

    group_key: str
    fields: str
    size: int
    min_members: int
    deadline_s: float
    answer_id: str
    text: str


class JudgementStore(Protocol):
    async def open(self) -> None:
        """Create or migrate the storage; idempotent."""
        ...

    async def save(self, judgement: StoredJudgement, *, idempotency: IdempotencyKey | None = None) -> None:
        """Durably write one judgement (committed before returning); at most one per idempotency key,
        else IdempotencyKeyTaken."""
        ...

    async def get_by_idempotency_key(self, key: str) -> KeyedJudgement | None: ...

    async def ping(self) -> None:
        """Answer one trivial query; StoreUnavailableError when the database cannot be used (readiness
        with JUDGE_READY_REQUIRES_STORE)."""
        ...

    async def claim(self, idempotency: IdempotencyKey, *, owner: str, lease_s: float) -> Claim:
        """Claim a key about to be judged, for `lease_s` seconds on the database's clock: owned when no
        one holds it, when `owner` already does, or when the holder's lease has lapsed (it crashed).
        save() with the key ends the claim in the transaction that stores the judgement."""
        ...

    async def renew(self, key: str, *, owner: str, lease_s: float) -> bool:
        """Extend `owner`'s lease on `key` to `lease_s` from now; False when it no longer holds it."""
        ...

    async def release(self, key: str, *, owner: str) -> None:
        """End `owner`'s claim on `key` without a judgement (judging failed), so a waiter may take it."""
        ...

    async def get(self, judgement_id: str) -> StoredJudgement | None: ...

    async def join_group(self, join: MemberJoin) -> MemberGroup:
        """In one transaction: open the group if new; add the member if the group is open, has the same
        fields and does not hold the answer id; close it when it has `size` members. The group after."""
        ...

    async def member_group(self, group_key: str) -> MemberGroup | None: ...

    async def close_group(self, group_key: str) -> MemberGroup | None:
        """Close the group (no member joins after) if open; the group as closed, None if unknown."""
        ...

    def prune_lock(self) -> AbstractAsyncContextManager[bool]:
        """Held while pruning, by one process at a time across replicas: yields False, at once, when
        another holds it (PostgreSQL: a session advisory lock; SQLite: a lock file beside the database)."""
        ...

    async def prune_judgements(
        self,
        before: datetime,
        *,
        run_id: str | None = None,
        include_labelled: bool = False,
        limit: int = 1000,
    ) -> PrunedBatch:
        """Delete, in one transaction, at most `limit` of the oldest judgements created before `before`
        (of one run), with their explained reasons; what is kept and why: store/retention.py."""
        ...

    async def prune_claims(self, before: datetime) -> int:
        """Delete idempotency claims whose lease lapsed before `before`; how many."""
        ...

    async def prune_groups(self, closed_for_s: float) -> int:
        """Forget groups closed at least `closed_for_s` ago (their judgements stay); how many."""
        ...

    async def list_run(
        self, run_id: str, *, step: int | None = None, limit: int = 100, cursor: str | None = None
    ) -> JudgementPage:
        """A run's judgements, oldest first, in pages; `cursor` is the previous page's next_cursor."""
        ...

    async def list_runs(self, *, limit: int = 50, cursor: str | None = None) -> RunPage:
        """Every run with its totals (store/run_views.py), by run id, in pages; `cursor` is the previous
        page's next_cursor."""
        ...

    async def run_summary(self, run_id: str) -> RunSummary | None:
        """One run's totals, as list_runs gives them; None for a run without judgements."""
        ...

    async def run_steps(
        self,
        run_id: str,
        *,
        after: int = -1,
        until: int | None = None,
        fingerprint: str | None = None,
        limit: int = 1000,
    ) -> RunSteps:
        """A run's figures per step for steps in (after, until], of one grader fingerprint when given."""
        ...

    async def save_labels(self, labels: HumanLabels, *, run_id: str | None) -> None:
        """Store a person's labels for a judgement (`labels.judgement_id`), replacing that labeler's
        earlier ones for it."""
        ...

    async def labels_of(self, judgement_id: str) -> list[HumanLabels]:
        """Every labeler's labels for one judgement, by labeler."""
        ...

    async def run_labels(self, run_id: str, *, limit: int = 10_000) -> list[HumanLabels]:
        """The labels of a run's judgements, oldest judgement first, at most `limit`."""
        ...

    async def save_explained(self, judgement_id: str, reasons: ExplainedReasons) -> ExplainedReasons:
        """Store reasons written afterwards for a judgement unless it has some; the ones stored (the
        first written win)."""
        ...

    async def explained_of(self, judgement_id: str) -> ExplainedReasons | None:
        """The reasons written afterwards for a judgement, if any."""
        ...

    async def save_audit(self, record: AuditRecord) -> None:
        """Store the audit judge's record of a judgement unless it has one (the first stored wins)."""
        ...

    async def run_divergence(self, run_id: str, *, limit: int = ...) -> list[GroupDivergence]:
        """A run's audited groups' figures in step order, at most `limit` (store/audits.py)."""
        ...

    async def audit_of(self, judgement_id: str) -> AuditRecord | None:
        """The audit judge's record of a judgement, if it was audited."""
        ...

    async def save_rubric(self, rubric: Rubric) -> Rubric:
        """Store a rubric version unless that (id, version) exists; the version stored (the first wins)."""
        ...

    async def rubric(self, rubric_id: str, version: int | None = None) -> Rubric | None:
        """A rubric's version, or its latest (None), if stored."""
        ...

    async def regrades_of(self, judgement_ids: list[str]) -> list[StoredJudgement]:
        """The judgements that regrade any of these (their `regrade_of`), oldest first."""
        ...

    async def close(self) -> None: ...
