"""At most one judgement per Idempotency-Key, so a trainer can retry POST /v1/judge without paying twice.

A trainer that timed out or lost its connection cannot know whether its group was judged. With a key:
- the first request is judged and stored under the key, with a hash of the request;
- a retry with the same key and the same request gets the stored judgement (same judgement_id), and
  the judge is not called again;
- the same key with a different request is refused with 409 `conflict`: a key names one request;
- concurrent duplicates in this process wait for the first one and then get its judgement (or, if it
  failed, are judged themselves: failures are not stored, so they are not replayed);
- across processes sharing the database, the unique index on the key lets only one insert win; the
  loser returns the winner's judgement (its own judge work is dropped, never stored twice).

The hash is of the validated request in canonical JSON, so key order and whitespace do not matter.

POST /v1/judge/batch takes a key too, one per group: group i is a request of its own under the key
qualified by `group=i`. A retry of the batch replays the groups stored and judges the rest (those that
failed); a different group at an index is a 409 for that group alone. With API keys on, every key is
also qualified by the caller (`caller=<first 16 hex of sha256(API key)>`, never the key itself), so
tenants cannot see or block each other's judgements. POST /v1/regrade qualifies the key by the judgement
each new one re-scores (`regrade=<id>`), so a retried regrade replays the groups already re-scored.
As stored: `[caller=<hex> ][group=<i> ][regrade=<id>]<key>`.
A header key is visible ASCII without spaces, so the part after the last space is the caller's key and
the qualifiers before it are ours: no two (caller, group, key) share a stored key, and a key without
qualifiers (no auth, single request) is stored as it was before qualifiers existed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from judge_service.errors import ConflictError
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import JudgeRequest, JudgeResponse
from judge_service.store.base import IdempotencyKey, IdempotencyKeyTaken, JudgementStore

GradeFn = Callable[..., Awaitable[JudgeResponse]]  # JudgeService._grade(request, idempotency=...)


def request_hash(request: JudgeRequest) -> str:
    canonical = json.dumps(request.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class _Running:
    request_hash: str
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class ScopedKey:
    """A caller's Idempotency-Key with what scopes it: the caller's identity, the group's index in a batch,
    the judgement a regrade re-scores."""

    key: str
    caller: str | None = None  # api.auth identity of the request's API key; None without API keys
    group: int | None = None  # index in a batch; None for POST /v1/judge
    regrade_of: str | None = None  # POST /v1/regrade: the judgement re-scored (a stored 32-hex id)

    @property
    def stored(self) -> str:
        qualifiers = (("caller", self.caller), ("group", self.group), ("regrade", self.regrade_of))
        return " ".join([f"{name}={value}" for name, value in qualifiers if value is not None] + [self.key])

    def __str__(self) -> str:
        where = f" (batch group {self.group})" if self.group is not None else ""
        if self.regrade_of is not None:
            where = f" (regrade of {self.regrade_of})"
        return f"Idempotency-Key {self.key[:64]!r}{where}"


class IdempotencyGuard:
    def __init__(self, store: JudgementStore, metrics: JudgeMetrics) -> None:
        self._store = store
        self._metrics = metrics
        self._running: dict[str, _Running] = {}

    async def once(self, scoped: ScopedKey, request: JudgeRequest, grade: GradeFn) -> JudgeResponse:
        key = scoped.stored
        digest = request_hash(request)
        while (running := self._running.get(key)) is not None:
            if running.request_hash != digest:
                raise _conflict(scoped, None)
            await running.done.wait()  # then the loop: its judgement is stored now, or it failed
        # Claimed before the first await, so no other request with this key can slip in meanwhile.
        mine = _Running(digest)
        self._running[key] = mine
        try:
            replay = await self._replay(scoped, digest)
            if replay is not None:
                return replay
            try:
                return await grade(request, idempotency=IdempotencyKey(key, digest))
            except IdempotencyKeyTaken:
                replay = await self._replay(scoped, digest)  # another process stored it first
                if replay is None:
                    raise
                return replay
        finally:
            del self._running[key]
            mine.done.set()

    async def _replay(self, scoped: ScopedKey, digest: str) -> JudgeResponse | None:
        found = await self._store.get_by_idempotency_key(scoped.stored)
        if found is None:
            return None
        if found.request_hash != digest:
            raise _conflict(scoped, found.judgement.judgement_id)
        self._metrics.idempotent_replays.inc()
        return found.judgement.response()


def _conflict(scoped: ScopedKey, judgement_id: str | None) -> ConflictError:
    where = f"judgement {judgement_id}" if judgement_id else "a request still being judged"
    return ConflictError(
        f"{scoped} was already used for a different request ({where}); send the "
        "identical request to get that judgement, or use a new key for a new request",
        details={"judgement_id": judgement_id} if judgement_id else None,
    )
