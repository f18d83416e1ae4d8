"""Rubrics per prompt: written once by the judge, stored, versioned by edits, and applied to requests.

- `write` (POST /v1/rubrics, and rubric "generate" in judge requests): the rubric's id is a hash of what
  it is written from (conversation, reference, items, instructions), the writer's prompt version and the
  judge model. Stored: returned without a judge call. Being written by another request on this replica:
  that call is shared. Being written on another replica (the store's claim on `rubric=<id> write`, as
  idempotency keys are claimed, service/idempotency.py): polled until stored, or taken over when its
  writer's lease lapses. So one prompt's rubric costs one judge call across every replica.
- `edit` (PUT /v1/rubrics/{id}) stores the next version; earlier versions stay for the judgements that
  used them. A rubric id alone means its latest version; "rb_...@N" pins one.
- `apply` turns a request's `rubric` into its criteria before grading: the stored request keeps the
  `rubric` it was sent with and the items it was judged on, and the judgement records the rubric's id,
  version and hash (`RubricUse`); a regrade judges on those same items.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import UTC, datetime

from judge_service.errors import ConflictError, InvalidGroupError, NotFoundError
from judge_service.judging.llm.criteria import criterion_config
from judge_service.judging.registry import GraderRegistry
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import (
    CRITERIA_AND_RUBRIC,
    Criterion,
    JudgeRequest,
    Rubric,
    RubricEdit,
    RubricRequest,
    RubricUse,
    canonical_json,
)
from judge_service.service.idempotency import POLL_FIRST_S, POLL_MAX_S, lease_kept, process_owner
from judge_service.store.base import IdempotencyKey, JudgementStore


def rubric_id(request: RubricRequest, *, writer: str, model: str) -> str:
    """rb_ + 24 hex of a hash of what the rubric is written from (`request` with items and instructions
    filled in), the writer's prompt version and the model."""
    made_from = {"request": request.model_dump(mode="json"), "writer": writer, "model": model}
    return "rb_" + hashlib.sha256(canonical_json(made_from).encode()).hexdigest()[:24]


def rubric_hash(criteria: list[Criterion]) -> str:
    return hashlib.sha256(canonical_json([criterion_config(c) for c in criteria]).encode()).hexdigest()


def parse_ref(ref: str) -> tuple[str, int | None]:
    """A rubric reference ("rb_...", "rb_...@N") as (id, version or None for the latest)."""
    rubric, _, version = ref.partition("@")
    return rubric, int(version) if version else None


class RubricService:
    def __init__(
        self, store: JudgementStore, graders: GraderRegistry, metrics: JudgeMetrics, *, lease_s: float = 30.0
    ) -> None:
        self._store = store
        self._graders = graders
        self._metrics = metrics
        self._lease_s = lease_s
        self._owner = process_owner()
        self._writing: dict[str, asyncio.Future[Rubric]] = {}

    def filled(self, request: RubricRequest) -> RubricRequest:
        """The request with the judge's defaults for what it leaves out (JUDGE_RUBRIC_ITEMS, ...)."""
        s = self._graders.rubric_writer().settings
        return request.model_copy(
            update={
                "items": request.items or s.rubric_items,
                "instructions": request.instructions or s.rubric_instructions,
            }
        )

    async def write(self, request: RubricRequest) -> Rubric:
        """The rubric for this content: stored, or written now (once; module docstring)."""
        judge = self._graders.rubric_writer()
        request = self.filled(request)
        writer = judge.rubric_writer_version(referenced=request.reference is not None)
        found_id = rubric_id(request, writer=writer, model=judge.model_name)
        stored = await self._store.rubric(found_id, 1)
        if stored is not None:
            self._metrics.rubrics.labels(source="stored").inc()
            return stored
        running = self._writing.get(found_id)
        if running is None:
            running = asyncio.ensure_future(self._write_once(found_id, request))
            self._writing[found_id] = running
            running.add_done_callback(lambda _: self._writing.pop(found_id, None))
        else:
            self._metrics.rubrics.labels(source="waited").inc()
        return await asyncio.shield(running)

    async def _write_once(self, found_id: str, request: RubricRequest) -> Rubric:
        """Write and store the rubric while holding its claim; wait for another replica that holds it."""
        key = IdempotencyKey(f"rubric={found_id} write", found_id)
        pause = POLL_FIRST_S
        while True:
            claim = await self._store.claim(key, owner=self._owner, lease_s=self._lease_s)
            stored = await self._store.rubric(found_id, 1)
            if stored is not None:  # written elsewhere while this replica waited or claimed
                if claim.owned:
                    await self._store.release(key.key, owner=self._owner)
                self._metrics.rubrics.labels(source="waited").inc()
                return stored
            if claim.owned:
                break
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_MAX_S)
        async with lease_kept(self._store, key.key, owner=self._owner, lease_s=self._lease_s):
            judge = self._graders.rubric_writer()
            started = time.perf_counter()
            written = await judge.write_rubric(
                list(request.conversation),
                request.reference,
                items=request.items or 0,
                instructions=request.instructions,
                request_id=f"{found_id}-write",
            )
            self._metrics.rubric_seconds.observe(time.perf_counter() - started)
            rubric = Rubric(
                id=found_id,
                version=1,
                sha256=rubric_hash(written.criteria),
                criteria=written.criteria,
                source="generated",
                request=request,
                judge_model=judge.model_name,
                prompt_version=written.prompt_version,
                usage=written.usage,
                created_at=datetime.now(UTC),
            )
            kept = await self._store.save_rubric(rubric)
        await self._store.release(key.key, owner=self._owner)
        self._metrics.rubrics.labels(source="written").inc()
        return kept

    async def get(self, rubric_id: str, version: int | None = None) -> Rubric:
        found = await self._store.rubric(rubric_id, version)
        if found is None:
            which = f"version {version} of rubric" if version is not None else "rubric"
            raise NotFoundError(f"no {which} {rubric_id!r}")
        return found

    async def edit(self, rubric_id: str, edit: RubricEdit) -> Rubric:
        """Store the edited items as the rubric's next version; 409 when another edit took that number."""
        latest = await self.get(rubric_id)
        rubric = latest.model_copy(
            update={
                "version": latest.version + 1,
                "sha256": rubric_hash(edit.criteria),
                "criteria": list(edit.criteria),
                "source": "edited",
                "judge_model": None,
                "note": edit.note,
                "usage": type(latest.usage)(),
                "created_at": datetime.now(UTC),
            }
        )
        kept = await self._store.save_rubric(rubric)
        if kept.created_at != rubric.created_at or kept.sha256 != rubric.sha256:
            raise ConflictError(
                f"rubric {rubric_id} got version {rubric.version} from another edit at the same time; "
                "GET it and edit the latest version",
                details={"version": rubric.version},
            )
        return kept

    async def apply(
        self, request: JudgeRequest, known: RubricUse | None
    ) -> tuple[JudgeRequest, RubricUse | None]:
        """The request with its rubric's items as its criteria, and which rubric it was (module docstring).
        `known`: the rubric of the judgement a regrade re-scores, whose items the request already holds."""
        if request.rubric is None:
            return request, None
        if request.criteria is not None:
            if known is None:
                raise InvalidGroupError(CRITERIA_AND_RUBRIC, details={"rubric": request.rubric})
            return request, known  # a regrade replaying the items it was judged on
        if request.rubric == "generate":  # the prompt's rubric, as last edited
            asked = RubricRequest(conversation=request.conversation, reference=request.reference)
            rubric = await self.get((await self.write(asked)).id)
        else:
            found_id, version = parse_ref(request.rubric)
            try:
                rubric = await self.get(found_id, version)
            except NotFoundError as exc:
                raise InvalidGroupError(
                    f"{exc.message}: write it first (POST /v1/rubrics) or send rubric 'generate'",
                    details={"rubric": request.rubric},
                ) from None
        used = RubricUse(id=rubric.id, version=rubric.version, sha256=rubric.sha256)
        return request.model_copy(update={"criteria": list(rubric.criteria)}), used
