"""Group assembly (POST /v1/judge/member) in process: complete groups judged once, deadlines with and
without enough members, retries and late members, conflicts, caps, shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings
from tests.service_process import ServiceProcess, metric_value


@pytest.fixture(params=["local", "shared"])
def assembly(request: pytest.FixtureRequest) -> str:
    """Every in-process test runs on both assemblies (the shared one on the SQLite store here; on
    PostgreSQL across replicas in tests/scaleout)."""
    return str(request.param)


@asynccontextmanager
async def serving(
    tmp_path: Path, backend: FakeBackend | None = None, **settings: Any
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    app = create_app(
        Settings(backend="fake", home_dir=tmp_path, **settings), backend=backend or FakeBackend()
    )
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://judge", timeout=30) as c,
    ):
        for _ in range(500):
            if (await c.get("/readyz")).status_code == 200:
                break
            await asyncio.sleep(0.01)
        yield app, c


def member(answer_id: str, size: int = 4, key: str = "prompt-1", **extra: Any) -> dict[str, Any]:
    return {
        "group_key": key,
        "group_size": size,
        "answer": {"id": answer_id, "text": f"Answer {answer_id}: click Share."},
        "conversation": [{"role": "user", "content": "How do I share the report?"}],
        "reference": "Click Share and pick the client.",
        "run_id": "member-run",
        "step": 2,
        **extra,
    }


async def post_all(client: httpx.AsyncClient, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    return list(await asyncio.gather(*(client.post("/v1/judge/member", json=b) for b in bodies)))


async def test_a_complete_group_is_judged_once_and_every_member_gets_its_answer(
    tmp_path: Path, assembly: str
) -> None:
    backend = FakeBackend()
    async with serving(tmp_path, backend, member_assembly=assembly) as (_, client):
        replies = await post_all(client, [member(f"a{i}") for i in range(4)])
        assert [r.status_code for r in replies] == [200] * 4
        bodies = [r.json() for r in replies]
        assert len({b["judgement_id"] for b in bodies}) == 1 and len(backend.requests) == 1
        assert [b["answer"]["id"] for b in bodies] == ["a0", "a1", "a2", "a3"]
        assert all(
            b["closed_by"] == "size" and b["members"] == 4 and b["group_status"] == "ok" for b in bodies
        )
        stored = (await client.get(f"/v1/judgements/{bodies[0]['judgement_id']}")).json()
        assert (stored["run_id"], stored["step"], stored["group_key"]) == ("member-run", 2, "prompt-1")
        assert {a["id"]: a["score"] for a in stored["answers"]} == {
            b["answer"]["id"]: b["answer"]["score"] for b in bodies
        }
        # A retry of a member after the group was judged gets the stored result, judged no more.
        again = await client.post("/v1/judge/member", json=member("a2"))
        assert again.status_code == 200 and again.json()["closed_by"] == "stored"
        assert again.json()["answer"] == bodies[2]["answer"] and len(backend.requests) == 1
        # A member the group was judged without is told so, with the judgement, not judged alone.
        late = await client.post("/v1/judge/member", json=member("a9"))
        assert (
            late.status_code == 409
            and late.json()["error"]["details"]["judgement_id"] == bodies[0]["judgement_id"]
        )
        metrics = (await client.get("/metrics")).text
        assert metric_value(metrics, "judge_member_open_groups") == 0
        assert 'judge_member_groups_closed_total{reason="size"} 1.0' in metrics


async def test_a_retry_while_the_group_is_open_waits_with_the_first(tmp_path: Path, assembly: str) -> None:
    async with serving(tmp_path, member_assembly=assembly) as (_, client):
        first = asyncio.ensure_future(client.post("/v1/judge/member", json=member("a0", size=2)))
        retry = asyncio.ensure_future(client.post("/v1/judge/member", json=member("a0", size=2)))
        await asyncio.sleep(0.05)
        assert not first.done() and not retry.done()
        other = await client.post("/v1/judge/member", json=member("a1", size=2))
        assert other.status_code == 200
        assert (await first).json() == (await retry).json()


async def test_a_member_retried_with_other_group_fields_after_its_group_was_judged_is_409(
    tmp_path: Path, assembly: str
) -> None:
    async with serving(tmp_path, member_assembly=assembly) as (_, client):
        replies = await post_all(client, [member(f"a{i}", size=2) for i in range(2)])
        judgement_id = replies[0].json()["judgement_id"]
        changed = await client.post(
            "/v1/judge/member", json=member("a1", size=2, reference="Something else.")
        )
        assert changed.status_code == 409
        assert changed.json()["error"]["details"] == {
            "judgement_id": judgement_id,
            "group_key": "prompt-1",
            "differing": ["reference"],
        }
        again = await client.post("/v1/judge/member", json=member("a1", size=2, deadline_s=5))
        assert again.status_code == 200 and again.json()["judgement_id"] == judgement_id


async def test_at_the_deadline_enough_members_are_judged_together(tmp_path: Path, assembly: str) -> None:
    async with serving(tmp_path, member_assembly=assembly) as (_, client):
        replies = await post_all(client, [member(f"a{i}", deadline_s=0.2) for i in range(3)])  # of 4
        bodies = [r.json() for r in replies]
        assert all(b["closed_by"] == "deadline" and b["members"] == 3 for b in bodies)
        assert len({b["judgement_id"] for b in bodies}) == 1 and all(
            b["answer"]["status"] == "scored" for b in bodies
        )


async def test_at_the_deadline_too_few_members_are_incomplete_never_zero(
    tmp_path: Path, assembly: str
) -> None:
    async with serving(tmp_path, member_min_members=2, member_assembly=assembly) as (_, client):
        (reply,) = await post_all(client, [member("a0", deadline_s=0.1)])
        body = reply.json()
        assert body["group_status"] == "incomplete" and body["judgement_id"] is None
        assert body["answer"]["score"] is None and "1 of 4 members arrived" in body["answer"]["error"]
        late = await client.post("/v1/judge/member", json=member("a1"))
        assert late.status_code == 409 and "closed incomplete" in late.json()["error"]["message"]
        metrics = (await client.get("/metrics")).text
        assert metric_value(metrics, "judge_member_incomplete_groups_total") == 1


async def test_members_that_disagree_are_refused_saying_what_differs(tmp_path: Path, assembly: str) -> None:
    async with serving(tmp_path, member_assembly=assembly) as (_, client):
        first = asyncio.ensure_future(client.post("/v1/judge/member", json=member("a0", size=2)))
        await asyncio.sleep(0.05)
        other = await client.post("/v1/judge/member", json=member("a1", size=2, reference="Something else."))
        assert other.status_code == 409 and other.json()["error"]["details"]["differing"] == ["reference"]
        changed = member("a0", size=2)
        changed["answer"]["text"] = "another text"
        assert (await client.post("/v1/judge/member", json=changed)).status_code == 409
        assert (await client.post("/v1/judge/member", json=member("a1", size=2))).status_code == 200
        assert (await first).status_code == 200


async def test_caps_answer_429_with_retry_after(tmp_path: Path, assembly: str) -> None:
    async with serving(
        tmp_path, member_max_open_groups=1, member_max_waiting=2, member_assembly=assembly
    ) as (_, client):
        held = [asyncio.ensure_future(client.post("/v1/judge/member", json=member("a0", key="g1")))]
        await asyncio.sleep(0.05)
        refused = await client.post("/v1/judge/member", json=member("a0", key="g2"))
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        held.append(asyncio.ensure_future(client.post("/v1/judge/member", json=member("a1", key="g1"))))
        await asyncio.sleep(0.05)
        full = await client.post("/v1/judge/member", json=member("a2", key="g1"))
        assert full.status_code == 429 and "JUDGE_MEMBER_MAX_WAITING" in full.json()["error"]["message"]
        for task in held:
            task.cancel()


async def test_shutdown_answers_waiting_members_503(tmp_path: Path, assembly: str) -> None:
    async with serving(tmp_path, member_assembly=assembly) as (app, client):
        waiting = asyncio.ensure_future(client.post("/v1/judge/member", json=member("a0")))
        await asyncio.sleep(0.05)
        await app.state.assembly.shut_down()
        reply = await waiting
        assert reply.status_code == 503 and reply.json()["error"]["code"] == "shutting_down"
        assert reply.headers["retry-after"] == "1"
        again = await client.post("/v1/judge/member", json=member("a1"))
        assert again.status_code == 503


def test_members_from_many_connections_to_a_real_process_are_judged_once(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path).start()
    try:

        async def send() -> list[httpx.Response]:
            limits = httpx.Limits(max_connections=16)
            async with httpx.AsyncClient(base_url=service.url, timeout=30, limits=limits) as client:
                return await post_all(client, [member(f"a{i}", size=8, key="many") for i in range(8)])

        replies = asyncio.run(send())
        assert [r.status_code for r in replies] == [200] * 8
        assert len({r.json()["judgement_id"] for r in replies}) == 1
        stored = httpx.get(f"{service.url}/v1/runs/member-run/judgements").json()["items"]
        assert [(j["group_key"], len(j["answers"]), j["attempts"]) for j in stored] == [("many", 8, 1)]
    finally:
        service.stop()


async def test_members_without_a_reference_make_a_group_without_one(tmp_path: Path, assembly: str) -> None:
    async with serving(tmp_path, member_assembly=assembly) as (_, client):
        bodies = [member(f"a{i}", size=2, key="free") for i in range(2)]
        for body in bodies:
            del body["reference"]
        replies = await post_all(client, bodies)
        assert [r.status_code for r in replies] == [200, 200], replies[0].text
        stored = (await client.get(f"/v1/judgements/{replies[0].json()['judgement_id']}")).json()
        assert stored["request"]["reference"] is None
        assert stored["prompt_version"].startswith("judge_group/no_reference@")
        # A member of that group sent with a reference is another group's member: 409, not judged.
        late = await client.post("/v1/judge/member", json=member("a0", size=2, key="free"))
        assert late.status_code == 409, late.text


async def test_trajectory_members_make_a_group_judged_as_trajectories(tmp_path: Path, assembly: str) -> None:
    """Members may carry turns and tools (the trainers that score one rollout at a time run agents too):
    the group is judged with them as structure, and a member's id names its whole trajectory."""
    backend = FakeBackend()
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]

    def rollout(answer_id: str, query: str) -> dict[str, Any]:
        calls = [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": {"q": query}}}]
        turns = [
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c1", "content": f"found {query}"},
            {"role": "assistant", "content": f"It is {query}."},
        ]
        body = member(answer_id, size=2, key="agents", tools=tools)
        body["answer"] = {"id": answer_id, "messages": turns}
        return body

    async with serving(tmp_path, backend, member_assembly=assembly) as (_, client):
        replies = await post_all(client, [rollout("a0", "share"), rollout("a1", "export")])
        assert [r.status_code for r in replies] == [200, 200], replies[0].text
        prompt = backend.requests[-1].messages[-1]["content"]
        assert '<call id="c1" tool="search">{"q": "export"}</call>' in prompt
        assert '<tool name="search">' in prompt
        stored = (await client.get(f"/v1/judgements/{replies[0].json()['judgement_id']}")).json()
        assert [a["text"] for a in stored["request"]["answers"]] == ["It is share.", "It is export."]
        assert stored["request"]["answers"][1]["messages"][1]["content"] == "found export"
        # The same member again is answered from the judgement; the same id with another turn is a 409.
        again = await client.post("/v1/judge/member", json=rollout("a1", "export"))
        assert again.status_code == 200 and again.json()["judgement_id"] == replies[0].json()["judgement_id"]
        changed = await client.post("/v1/judge/member", json=rollout("a1", "exports"))
        assert changed.status_code == 409 and "another answer" in changed.text, changed.text
