"""Group assembly on the real engine: four members of one group, sent at once from this process to the
service process, are judged in one judge call that sees all four answers."""

from __future__ import annotations

import asyncio

import httpx
import pytest

pytestmark = pytest.mark.engine


def test_members_are_judged_together_by_the_real_judge(served: httpx.Client) -> None:
    def member(i: int) -> dict[str, object]:
        return {
            "group_key": "engine-members",
            "group_size": 4,
            "answer": {"id": f"m{i}", "text": ["Paris.", "It is Paris.", "Lyon.", "I do not know."][i]},
            "conversation": [{"role": "user", "content": "What is the capital of France?"}],
            "reference": "Paris.",
            "run_id": "engine-member-run",
        }

    async def send() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=str(served.base_url), timeout=600) as client:
            return list(
                await asyncio.gather(*(client.post("/v1/judge/member", json=member(i)) for i in range(4)))
            )

    replies = asyncio.run(send())
    assert [r.status_code for r in replies] == [200] * 4, [r.text for r in replies]
    (judgement_id,) = {r.json()["judgement_id"] for r in replies}
    stored = served.get(f"/v1/judgements/{judgement_id}").json()
    assert sorted(a["id"] for a in stored["request"]["answers"]) == ["m0", "m1", "m2", "m3"]
    # One judge call per attempt, each over the whole group: no member was judged on its own.
    assert stored["usage"]["judge_calls"] == stored["attempts"] == len(stored["raw_outputs"])
    assert [sorted(order) for order in stored["answer_orders"]] == [["m0", "m1", "m2", "m3"]]
