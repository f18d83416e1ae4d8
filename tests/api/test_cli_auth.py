"""The quality commands against an in-process service with API keys: --api-key / $JUDGE_CLIENT_API_KEY.

Without a key (or with a wrong one) each command stops with one line naming the fix and exit status 2;
with the key, from the flag or from the variable, it works; the key never shows in stdout or stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.cli import main
from judge_service.client.errors import bearer_headers
from judge_service.config import Settings
from judge_service.tools.cli import API_KEY_ENV, COMMANDS, add_commands, run_command
from tests.api.conftest import group

KEY = "client-key-0123456789abcdef"
OTHER_KEY = "server-only-key-zyxwvu"  # configured too: the service accepts either


@pytest.fixture(autouse=True)
def no_key_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)


@asynccontextmanager
async def secured(tmp_path: Path, backend: FakeBackend) -> AsyncIterator[FastAPI]:
    """A service with keys, holding run "r" (three groups, the one with group_key "k" among them)."""
    settings = Settings(backend="fake", home_dir=tmp_path / "home", api_keys=f"{KEY},{OTHER_KEY}")
    app = create_app(settings, backend=backend)
    async with app.router.lifespan_context(app):
        headers = bearer_headers(OTHER_KEY)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://judge", headers=headers) as c:
            for _ in range(500):
                if (await c.get("/readyz")).status_code == 200:
                    break
                await asyncio.sleep(0.01)
            for step in range(3):
                body = group(2, run_id="r", step=step, **({"group_key": "k"} if step == 0 else {}))
                assert (await c.post("/v1/judge", json=body)).status_code == 200
        yield app


def command(name: str, tmp_path: Path) -> list[str]:
    """The command's arguments for run "r", without a key."""
    if name == "calibrate":
        return ["calibrate", "--run", "r", "--json"]
    if name == "agreement":
        human = tmp_path / "human.jsonl"
        human.write_text(json.dumps({"group_key": "k", "human": {"a0": 1.0, "a1": 0.0}}) + "\n")
        return ["agreement", "--human", str(human), "--run", "r", "--json"]
    if name == "judge-file":
        source = tmp_path / "groups.jsonl"
        source.write_text("".join(json.dumps(group(2, step=i)) + "\n" for i in range(4)))
        return ["judge-file", str(source), str(tmp_path / "out.jsonl"), "--concurrency", "2"]
    if name == "eval":
        data = tmp_path / "labelled.jsonl"
        answers = [
            {"id": "a0", "text": "Click Share.", "label": True},
            {"id": "a1", "text": "No.", "label": False},
        ]
        data.write_text(json.dumps({**group(2), "answers": answers}) + "\n")
        return ["eval", "--data", str(data), "--run-id", "r-eval"]
    if name == "rubrics":
        data = tmp_path / "prompts.jsonl"
        data.write_text(json.dumps(group(2)) + "\n")
        return ["rubrics", "--data", str(data), "--out", str(tmp_path / "rubrics.jsonl")]
    if name == "prune":
        return ["prune", "--before", "2000-01-01", "--json"]  # older than anything: deletes nothing
    return ["regrade", "--run-id", "r", "--out", str(tmp_path / "regraded.jsonl")]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command", required=True))
    commands = ("judge-file", "regrade", "eval", "rubrics", "prune")
    extra = ["--retries", "0", "--no-progress"] if argv[0] in commands else []
    return parser.parse_args([*argv, "--server", "http://judge", *extra])


async def run(app: FastAPI, argv: list[str]) -> int:
    return await run_command(parse(argv), transport=httpx.ASGITransport(app=app))


def output(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    for key in (KEY, OTHER_KEY, "wrong-key-42"):
        assert key not in captured.out and key not in captured.err
    return captured.out, captured.err


@pytest.mark.parametrize("name", COMMANDS)
async def test_a_command_needs_the_key_and_works_with_it_from_the_flag_or_the_variable(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = FakeBackend()
    async with secured(tmp_path, backend) as app:
        judged_before = len(backend.requests)
        argv = command(name, tmp_path)

        assert await run(app, argv) == 2
        out, err = output(capsys)
        assert err == (
            f"judge-service {name}: the judge service needs an API key (401 unauthorized); "
            f"pass one with --api-key or set {API_KEY_ENV}\n"
        )
        assert out == ""
        assert len(backend.requests) == judged_before  # nothing judged without the key

        assert await run(app, [*argv, "--api-key", "wrong-key-42"]) == 2
        out, err = output(capsys)
        assert err == (
            f"judge-service {name}: the judge service refused the API key (401 unauthorized); "
            f"pass a valid key with --api-key or set {API_KEY_ENV}\n"
        )
        assert out == ""

        assert await run(app, [*argv, "--api-key", KEY]) == 0
        flag_out, flag_err = output(capsys)

        monkeypatch.setenv(API_KEY_ENV, KEY)
        assert await run(app, argv) == 0
        env_out, env_err = output(capsys)

        monkeypatch.setenv(API_KEY_ENV, "wrong-key-42")  # the flag wins over the variable
        assert await run(app, [*argv, "--api-key", f" {KEY}\n"]) == 0
        output(capsys)

    if name in ("calibrate", "agreement"):
        assert json.loads(flag_out) == json.loads(env_out)
        assert json.loads(flag_out)["groups" if name == "calibrate" else "matched_groups"] >= 1
    if name == "rubrics":  # written once with the key; the next runs find it in --out
        assert "rubrics 1, failed 0" in flag_err and "skipped 1 already" in env_err
    if name == "judge-file":
        assert "judged 4, failed 0" in flag_err and "skipped 4 already" in env_err
        lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert len(lines) == 4 and all("judgement" in line for line in lines)  # no 401 error lines
    if name == "regrade":
        assert "regraded 3, failed 0" in flag_err and "regraded" in env_err
    if name == "eval":
        assert "| default | 1 |" in flag_out and flag_out == env_out  # the rerun replays the same scores


async def test_judge_file_without_the_key_stops_at_once_and_leaves_every_group_to_a_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tmp_path / "groups.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(group(2, step=i)) + "\n" for i in range(40)))
    seen: list[httpx.Request] = []

    class Counting(httpx.ASGITransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return await super().handle_async_request(request)

    async with secured(tmp_path, FakeBackend()) as app:
        args = parse(["judge-file", str(source), str(out), "--concurrency", "4"])
        assert await run_command(args, transport=Counting(app=app)) == 2
        assert len(seen) <= 4  # the groups in flight, then no more
        assert out.read_text() == ""
        assert "needs an API key" in output(capsys)[1]


def test_help_never_shows_the_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    for name in COMMANDS:
        with pytest.raises(SystemExit) as exit_:
            main([name, "--help"])
        assert exit_.value.code == 0
        out, _ = output(capsys)
        assert "--api-key KEY" in out and API_KEY_ENV in out


def test_a_key_that_cannot_be_sent_is_refused_without_showing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, refused_url: str
) -> None:
    with pytest.raises(ValueError, match="printable ASCII") as refused:
        bearer_headers("clé-secrète")
    assert "secr" not in str(refused.value)
    assert bearer_headers(None) == bearer_headers("") == bearer_headers("  ") == {}

    monkeypatch.setenv(API_KEY_ENV, "line-one\nline-two")
    assert main(["calibrate", "--run", "r", "--server", refused_url]) == 2
    err = capsys.readouterr().err
    assert "printable ASCII" in err and "line-one" not in err and "line-two" not in err
