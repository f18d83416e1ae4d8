"""`judge-service rubrics --data FILE`: every distinct prompt's rubric written once, ahead of training;
resumed from --out, and free to repeat (the service keeps what it wrote)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from judge_service.backends.fake import FakeBackend
from judge_service.tools.cli import run_command
from tests.api.test_quality_cli import serving
from tests.api.test_regrade_cli import parse
from tests.api.test_rubrics import rubric_calls


def write_prompts(path: Path) -> None:
    lines = []
    for i in range(5):
        question = f"Tom has {i} apples and buys 13 more. How many has he?"
        row = {"conversation": [{"role": "user", "content": question}], "reference": f"{i + 13} apples."}
        lines += [json.dumps({**row, "answers": [{"id": "a", "text": "x"}]}), json.dumps(row)]  # each twice
    path.write_text("\n".join(lines) + "\n\n")


async def test_rubrics_for_a_dataset_are_written_once_and_judging_finds_them(tmp_path: Path) -> None:
    data, out = tmp_path / "prompts.jsonl", tmp_path / "rubrics.jsonl"
    write_prompts(data)
    backend = FakeBackend()
    async with serving(tmp_path, backend) as app:
        transport = httpx.ASGITransport(app=app)
        args = parse("rubrics", "--data", str(data), "--out", str(out), "--concurrency", "3")
        assert await run_command(args, transport) == 0
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert sorted(line["index"] for line in lines) == [0, 2, 4, 6, 8]  # distinct prompts only
        assert {line["items"] for line in lines} == {12} and len(rubric_calls(backend)) == 5
        # Resumed: nothing left to ask; without --out every prompt is asked again, none written again.
        assert await run_command(args, transport) == 0
        assert len(out.read_text().splitlines()) == 5
        assert await run_command(parse("rubrics", "--data", str(data)), transport) == 0
        assert len(rubric_calls(backend)) == 5
        # A trainer's rubric "generate" finds the stored rubric: no judge call for it.
        row = json.loads(data.read_text().splitlines()[0])
        async with httpx.AsyncClient(transport=transport, base_url="http://judge") as client:
            judged = (await client.post("/v1/judge", json={**row, "rubric": "generate"})).json()
        first = next(line for line in lines if line["index"] == 0)
        assert judged["rubric"] == {**judged["rubric"], "id": first["rubric"], "version": 1}
        assert len(rubric_calls(backend)) == 5


async def test_a_line_without_a_prompt_is_named_and_nothing_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text(
        '{"conversation": [{"role": "user", "content": "q"}], "reference": "r"}\n{"answers": []}\n'
    )
    backend = FakeBackend()
    async with serving(tmp_path, backend) as app:
        args = parse("rubrics", "--data", str(data))
        assert await run_command(args, httpx.ASGITransport(app=app)) == 2
    assert "object 2 has no valid conversation and reference" in capsys.readouterr().err
    assert rubric_calls(backend) == []
