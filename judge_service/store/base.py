"""Where judgements live. A judgement acknowledged to a caller has been saved here first."""

from __future__ import annotations

from typing import Protocol

from judge_service.schemas import JudgementPage, StoredJudgement


class JudgementStore(Protocol):
    async def open(self) -> None:
        """Create or migrate the storage; idempotent."""
        ...

    async def save(self, judgement: StoredJudgement) -> None:
        """Durably write one judgement (committed before returning)."""
        ...

    async def get(self, judgement_id: str) -> StoredJudgement | None: ...

    async def list_run(
        self, run_id: str, *, step: int | None = None, limit: int = 100, cursor: str | None = None
    ) -> JudgementPage:
        """A run's judgements, oldest first, in pages; `cursor` is the previous page's next_cursor."""
        ...

    async def close(self) -> None: ...
