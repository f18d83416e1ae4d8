"""A run's audit figures are read once for many asks (watch/audit_summaries.py): a reader who asks again
and again, or many at once, costs the store one read per run and period."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from judge_service.quality.divergence import GroupDivergence
from judge_service.watch import audit_summaries
from judge_service.watch.audit_summaries import AuditSummaries


class CountingStore:
    def __init__(self) -> None:
        self.reads = 0
        self.fail = False

    async def run_divergence(self, run_id: str, *, limit: int) -> list[GroupDivergence]:
        self.reads += 1
        await asyncio.sleep(0.05)
        if self.fail:
            raise RuntimeError("the store is away")
        return [GroupDivergence(step, 3, 0.9, 0.0, {}, False) for step in range(5)]


async def test_concurrent_and_repeated_asks_share_one_read() -> None:
    store = CountingStore()
    summaries = AuditSummaries(store)  # type: ignore[arg-type]
    results = await asyncio.gather(*(summaries.of("run") for _ in range(20)))
    assert store.reads == 1 and all(r is results[0] for r in results)
    await summaries.of("run")
    assert store.reads == 1
    assert results[0] is not None and results[0][1].audited_groups == 5


async def test_an_audit_stored_here_is_seen_after_a_short_while(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_summaries, "FRESH_S", 0.1)
    store = CountingStore()
    summaries = AuditSummaries(store)  # type: ignore[arg-type]
    await summaries.of("run")
    summaries.changed("run")
    await summaries.of("run")
    assert store.reads == 1  # within FRESH_S: the read stands
    await asyncio.sleep(0.1)
    await summaries.of("run")
    assert store.reads == 2


async def test_a_failed_read_is_not_served_again() -> None:
    store = CountingStore()
    store.fail = True
    summaries = AuditSummaries(store)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        await summaries.of("run")
    store.fail = False
    result: Any = await summaries.of("run")
    assert store.reads == 2 and result is not None
