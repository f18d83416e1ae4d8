"""The quality command-line tools against an in-process service (httpx transport): judge-file resumes."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from judge_service.app import create_app
from judge_service.backends.base import Generation, GenerationRequest
from judge_service.backends.fake import FakeBackend
from judge_service.cli import main
from judge_service.client import AsyncJudgeClient, RetryPolicy
from judge_service.config import Settings
from judge_service.errors import JudgeBackendError
from judge_service.tools.cli import agreement_command, calibrate_command
from judge_service.tools.judge_file import judge_file
from tests.api.conftest import group


class FailsMarkedGroups(FakeBackend):
    """The judge is down for any group whose answers say FAIL."""

    async def generate(self, request: GenerationRequest) -> Generation:
        if "FAIL" in request.messages[-1]["content"]:
            raise JudgeBackendError("judge down for this group")
        return await super().generate(request)


@asynccontextmanager
async def serving(tmp_path: Path, backend: FakeBackend) -> AsyncIterator[FastAPI]:
    app = create_app(Settings(backend="fake", home_dir=tmp_path), backend=backend)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://judge") as c:
            for _ in range(500):
                if (await c.get("/readyz")).status_code == 200:
                    break
                await asyncio.sleep(0.01)
        yield app


def write_groups(path: Path) -> None:
    lines = []
    for i in range(6):
        body = group(2, run_id="file-run", step=i)
        if i < 4:
            body["group_key"] = f"g{i}"
        if i in (1, 4):
            body["answers"][0]["text"] = "FAIL"
        lines.append(json.dumps(body))
    lines.insert(3, "")  # blank lines do not count as groups
    lines.append("not json")
    path.write_text("\n".join(lines) + "\n")


def results(path: Path) -> list[dict[str, Any]]:
    docs = []
    for line in path.read_text().splitlines():
        try:
            docs.append(json.loads(line))
        except json.JSONDecodeError:
            docs.append({"junk": line})
    return docs


async def run_file(app: FastAPI, source: Path, out: Path) -> Any:
    client = AsyncJudgeClient(
        "http://judge", retry=RetryPolicy(retries=0), transport=httpx.ASGITransport(app=app)
    )
    return await judge_file(source, out, client=client, concurrency=3, progress=False)


async def test_judge_file_writes_results_and_resumes_only_what_is_missing(tmp_path: Path) -> None:
    source, out = tmp_path / "groups.jsonl", tmp_path / "results.jsonl"
    write_groups(source)
    async with serving(tmp_path, FailsMarkedGroups()) as app:
        first = await run_file(app, source, out)
    assert (first.judged, first.failed, first.skipped) == (4, 3, 0)
    assert first.errors == {"judge_unavailable": 2, "invalid_line": 1}
    docs = results(out)
    assert sorted(d["index"] for d in docs if "judgement" in d) == [0, 2, 3, 5]
    assert {d["index"]: d["group_key"] for d in docs if "error" in d} == {1: "g1", 4: None, 6: None}

    with out.open("a") as cut:  # a job killed mid-line
        cut.write('{"index": 1, "group_key": "g1", "judgem')
    healthy = FakeBackend()
    async with serving(tmp_path, healthy) as app:
        second = await run_file(app, source, out)
        assert (second.judged, second.failed, second.skipped) == (2, 1, 4)
        assert len(healthy.requests) == 2  # only groups 1 and 4 went to the judge
        third = await run_file(app, source, out)
        assert (third.judged, third.failed, third.skipped) == (0, 1, 6)

        docs = results(out)
        judged = sorted(d["index"] for d in docs if "judgement" in d)
        assert judged == [0, 1, 2, 3, 4, 5]
        assert sum(1 for d in docs if "junk" in d) == 1

        # The same results, read back through the server, calibrate the same way as from the file.
        by_run = await calibrate_command(
            argparse.Namespace(
                input=None, run="file-run", server="http://judge", step=None, fingerprint=None
            ),
            transport=httpx.ASGITransport(app=app),
        )
    from_file = await calibrate_command(argparse.Namespace(input=out))
    assert from_file.groups == by_run.groups == 6
    assert from_file.thresholds == by_run.thresholds


async def test_agreement_command_reads_labels_and_fetches_judgements(tmp_path: Path) -> None:
    async with serving(tmp_path, FakeBackend()) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://judge") as c:
            made = (await c.post("/v1/judge", json=group(3, run_id="r", group_key="k"))).json()
        scores = {a["id"]: a["score"] for a in made["answers"]}
        human = tmp_path / "human.jsonl"
        human.write_text(
            json.dumps({"judgement_id": made["judgement_id"], "human": scores})
            + "\n"
            + json.dumps(
                {"group_key": "k", "human": {k: 4 * v + 1 for k, v in scores.items()}, "scale": [1, 5]}
            )
            + "\n"
        )
        args = argparse.Namespace(
            human=human, input=None, run="r", server="http://judge", step=None, fingerprint=None, scale=None
        )
        report = await agreement_command(args, transport=httpx.ASGITransport(app=app))
    assert report.matched_groups == 2 and report.mean_absolute_error == pytest.approx(0.0)


def test_calibrate_and_agreement_commands_on_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = [{"id": "a", "status": "scored", "score": s} for s in (1.0, 0.5)]
    out = tmp_path / "results.jsonl"
    out.write_text(
        json.dumps({"index": 0, "group_key": "k", "judgement": {"group_key": "k", "answers": answers}}) + "\n"
    )
    assert main(["calibrate", "--input", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scored_answers"] == 2
    assert main(["calibrate", "--input", str(out)]) == 0
    text = capsys.readouterr().out
    assert "recommended threshold" in text and "0.50" in text

    human = tmp_path / "human.jsonl"
    human.write_text(json.dumps({"group_key": "k", "human": {"a": 3}}) + "\n")
    assert main(["agreement", "--human", str(human), "--input", str(out), "--scale", "1", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["matched_groups"] == 1


def test_bad_input_and_an_unreachable_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], refused_url: str
) -> None:
    assert main(["calibrate", "--input", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    source, out = tmp_path / "groups.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(group(1)) + "\n")
    argv = ["judge-file", str(source), str(out), "--server", refused_url, "--retries", "0"]
    assert main([*argv, "--no-progress"]) == 1
    assert json.loads(out.read_text())["error"]["code"] == "unreachable"
    assert "failed 1 (unreachable 1)" in capsys.readouterr().err
