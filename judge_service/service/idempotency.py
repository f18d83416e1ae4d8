"""At most one judgement per Idempotency-Key, so a trainer can retry POST /v1/judge without paying twice.

A trainer that timed out or lost its connection cannot know whether its group was judged. With a key:
- the first request is judged and stored under the key, with a hash of the request;
- a retry with the same key and the same request gets the stored judgement (same judgement_id), and
  the judge is not called again;
- the same key with a different request is refused with 409 `conflict`: a key names one request;
- concurrent duplicates wait for the first one and then get its judgement (or, if it failed, are judged
  themselves: failures are not stored, so they are not replayed). In one process they wait on the first
  one's task. Across processes sharing the database (replicas on PostgreSQL, workers on one SQLite
  file), the first claims the key in the store (store/base.py `claim`) and renews the claim's lease
  while it judges; a duplicate elsewhere finds the claim and polls until the judgement is stored or the
  claim is released. If the holder crashed, its lease lapses (JUDGE_IDEMPOTENCY_LEASE_S) and a waiting
  duplicate takes the key over and judges. So a key is judged once while its holder lives, and stored
  once always (the unique index on the key: a holder that lost its lease and saved second replays the
  winner's judgement).

The hash is of the validated request in canonical JSON, so key order and whitespace do not matter, and
without the fields at their defaults, so a field sent at its default is the same request as one left out,
and a release that learns a new request field hashes the requests it knew as before. A judgement stored
under another hash (by a release that hashed differently) still replays when its stored request is the
same request by today's hash: a trainer retrying across an upgrade gets its judgement, not a 409.

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
import contextlib
import hashlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from judge_service.errors import ConflictError
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import JudgeRequest, JudgeResponse, canonical_json
from judge_service.store.base import IdempotencyKey, IdempotencyKeyTaken, JudgementStore

log = logging.getLogger(__name__)

# Polling a key another process holds: from the first to the last interval, doubling.
POLL_FIRST_S = 0.02
POLL_MAX_S = 0.5

GradeFn = Callable[..., Awaitable[JudgeResponse]]  # JudgeService._grade(request, idempotency=...)


def request_hash(request: JudgeRequest) -> str:
    canonical = canonical_json(request.model_dump(mode="json", exclude_defaults=True))
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


def process_owner() -> str:
    """Names this process in the claims it holds (host, pid and a random part: pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class IdempotencyGuard:
    def __init__(self, store: JudgementStore, metrics: JudgeMetrics, *, lease_s: float = 30.0) -> None:
        self._store = store
        self._metrics = metrics
        self._lease_s = lease_s
        self._owner = process_owner()
        self._running: dict[str, _Running] = {}

    async def once(self, scoped: ScopedKey, request: JudgeRequest, grade: GradeFn) -> JudgeResponse:
        key = scoped.stored
        digest = request_hash(request)
        while (running := self._running.get(key)) is not None:
            if running.request_hash != digest:
                raise _conflict(scoped, None)
            await running.done.wait()  # then the loop: its judgement is stored now, or it failed
        # Taken before the first await, so no other request with this key in this process slips in.
        mine = _Running(digest)
        self._running[key] = mine
        try:
            replay = await self._claim_or_replay(scoped, digest)
            if replay is not None:
                return replay
            try:
                async with lease_kept(self._store, key, owner=self._owner, lease_s=self._lease_s):
                    return await grade(request, idempotency=IdempotencyKey(key, digest))
            except IdempotencyKeyTaken:
                replay = await self._replay(scoped, digest)  # another process stored it first
                if replay is None:
                    raise
                return replay
        finally:
            del self._running[key]
            mine.done.set()

    async def _claim_or_replay(self, scoped: ScopedKey, digest: str) -> JudgeResponse | None:
        """The stored judgement, else None once this process holds the key's claim (it judges then).
        While another process holds it for the same request, wait; for another request, 409."""
        key = IdempotencyKey(scoped.stored, digest)
        pause = POLL_FIRST_S
        while True:
            replay = await self._replay(scoped, digest)
            if replay is not None:
                return replay
            claim = await self._store.claim(key, owner=self._owner, lease_s=self._lease_s)
            if claim.owned:
                # The holder may have stored it and ended its claim between the two calls above.
                replay = await self._replay(scoped, digest)
                if replay is not None:
                    await self._store.release(key.key, owner=self._owner)
                return replay
            if claim.request_hash != digest:
                raise _conflict(scoped, None)
            self._metrics.idempotent_waits.inc()
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_MAX_S)

    async def _replay(self, scoped: ScopedKey, digest: str) -> JudgeResponse | None:
        found = await self._store.get_by_idempotency_key(scoped.stored)
        if found is None:
            return None
        if found.request_hash != digest and request_hash(found.judgement.request) != digest:
            raise _conflict(scoped, found.judgement.judgement_id)
        self._metrics.idempotent_replays.inc()
        return found.judgement.response()


@contextlib.asynccontextmanager
async def lease_kept(store: JudgementStore, key: str, *, owner: str, lease_s: float) -> AsyncIterator[None]:
    """Renew `owner`'s claim on `key` while the body runs; release it if the body fails (a stored judgement
    ends the claim itself, in the same transaction; other holders release it when done)."""

    async def renew() -> None:
        while True:
            await asyncio.sleep(lease_s / 3)
            try:
                if not await store.renew(key, owner=owner, lease_s=lease_s):
                    log.warning("lost the claim on %r (its lease lapsed)", key[:80])
                    return
            except Exception as exc:  # the store is away: keep trying while the work goes on
                log.warning("could not renew the claim on %r: %s", key[:80], exc)

    renewing = asyncio.create_task(renew())
    try:
        yield
    except BaseException:
        renewing.cancel()
        with contextlib.suppress(Exception):  # unreleased, the claim lapses on its own
            await asyncio.shield(store.release(key, owner=owner))
        raise
    finally:
        renewing.cancel()


def _conflict(scoped: ScopedKey, judgement_id: str | None) -> ConflictError:
    where = f"judgement {judgement_id}" if judgement_id else "a request still being judged"
    return ConflictError(
        f"{scoped} was already used for a different request ({where}); send the "
        "identical request to get that judgement, or use a new key for a new request",
        details={"judgement_id": judgement_id} if judgement_id else None,
    )
