"""Admission to the judge (judging/llm/admission.py): N in flight, M waiting, the rest 429; waiting groups
served in turns by API key, so a key with a few groups is not queued behind another's many."""

from __future__ import annotations

import asyncio

import pytest

from judge_service.errors import OverloadedError
from judge_service.judging.llm.admission import ADMISSION_KEY, GroupAdmission
from judge_service.metrics import JudgeMetrics


async def _group(admission: GroupAdmission, key: str, served: list[str], release: asyncio.Event) -> None:
    ADMISSION_KEY.set(key)
    async with admission.slot():
        served.append(key)
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def _served_group(admission: GroupAdmission, key: str, served: list[tuple[str, asyncio.Event]]) -> None:
    ADMISSION_KEY.set(key)
    async with admission.slot():
        done = asyncio.Event()
        served.append((key, done))
        await done.wait()


async def test_freed_slots_go_to_each_waiting_key_in_turn() -> None:
    admission = GroupAdmission(1, 100, JudgeMetrics())
    served: list[tuple[str, asyncio.Event]] = []
    tasks = [asyncio.create_task(_served_group(admission, "flood", served)) for _ in range(6)]
    await _settle()
    tasks += [asyncio.create_task(_served_group(admission, "steady", served)) for _ in range(2)]
    await _settle()
    assert [key for key, _ in served] == ["flood"]  # one slot: a flood group holds it, seven wait
    for step in range(7):
        served[-1][1].set()  # the group being judged ends; its slot goes to the next in turn
        await _settle()
        assert len(served) == step + 2
    # Round robin: steady's two groups were served after one flood group each, not after all five.
    order = [key for key, _ in served]
    assert order == ["flood", "flood", "steady", "flood", "steady", "flood", "flood", "flood"]
    served[-1][1].set()
    await asyncio.gather(*tasks)


async def test_without_keys_it_is_first_come_first_served_and_full_queues_refuse() -> None:
    admission = GroupAdmission(1, 2, JudgeMetrics())
    served: list[str] = []
    release = asyncio.Event()
    tasks = [asyncio.create_task(_group(admission, "", served, release)) for _ in range(3)]
    await _settle()
    with pytest.raises(OverloadedError, match="queue is full"):
        async with admission.slot():
            pass
    release.set()
    await asyncio.gather(*tasks)
    assert served == ["", "", ""]
    async with admission.slot():  # every slot came back
        pass


async def test_a_cancelled_waiter_gives_up_its_place_and_a_slot_is_never_lost() -> None:
    admission = GroupAdmission(1, 10, JudgeMetrics())
    served: list[str] = []
    release = asyncio.Event()
    holder = asyncio.create_task(_group(admission, "a", served, release))
    await _settle()
    waiting = asyncio.create_task(_group(admission, "b", served, release))
    later = asyncio.create_task(_group(admission, "c", served, release))
    await _settle()
    waiting.cancel()
    await _settle()
    release.set()
    await asyncio.gather(holder, later)
    assert served == ["a", "c"] and waiting.cancelled()
    await asyncio.wait_for(_group(admission, "d", served, release), 1)  # the one slot is free again
