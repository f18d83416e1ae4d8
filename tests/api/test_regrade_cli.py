"""`judge-service regrade` and judge-file's concurrency against an in-process service (httpx transport)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from judge_service.backends.base import Generation, GenerationRequest
from judge_service.backends.fake import FakeBackend
from judge_service.cli import main
from judge_service.client import AsyncJudgeClient
from judge_service.tools.cli import add_commands, client_for
from judge_service.tools.judge_file import judge_file
from judge_service.tools.regrade import regrade_command
from tests.api.conftest import group
from tests.api.test_quality_cli import FailsMarkedGroups, results, serving

CRITERION = {"name": "correctness", "description": "right", "mark_1": "wrong", "mark_5": "right"}


class Recording(httpx.ASGITransport):
    """Keeps the bodies of POST /v1/regrade; answers call number `fail_call` with a 503 instead."""

    def __init__(self, app: FastAPI, fail_call: int | None = None) -> None:
        super().__init__(app=app)
        self.regrades: list[dict[str, Any]] = []
        self._fail_call = fail_call

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/regrade":
            self.regrades.append(json.loads(request.content))
            if len(self.regrades) == self._fail_call:
                return httpx.Response(503, json={"error": {"code": "not_ready", "message": "loading"}})
        return await super().handle_async_request(request)


async def regrade(args: argparse.Namespace, transport: httpx.AsyncBaseTransport) -> int:
    return await regrade_command(args, client_for(args, transport))


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args([*argv, "--server", "http://judge", "--retries", "0", "--no-progress"])


async def judge_groups(app: FastAPI, bodies: list[dict[str, Any]]) -> list[str]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://judge") as c:
        return [(await c.post("/v1/judge", json=body)).json()["judgement_id"] for body in bodies]


async def stored(app: FastAPI, judgement_id: str) -> dict[str, Any]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://judge") as c:
        return dict((await c.get(f"/v1/judgements/{judgement_id}")).json())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_regrade_a_run_pages_through_it_all_and_links_the_new_judgements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    criteria, out = tmp_path / "criteria.json", tmp_path / "regraded.jsonl"
    criteria.write_text(json.dumps([CRITERION]))
    async with serving(tmp_path, FakeBackend()) as app:
        olds = await judge_groups(app, [group(2, run_id="r", step=i) for i in range(5)])
        await judge_groups(app, [group(2, run_id="other")])
        transport = Recording(app)
        args = parse(
            "regrade", "--run-id", "r", "--limit", "2", "--criteria", str(criteria), "--out", str(out)
        )
        assert await regrade(args, transport) == 0

        # Page after page from the last cursor; the run gains the new judgements as it goes, so the
        # last pages hold only those, which the service skips.
        cursors = [body.get("cursor") for body in transport.regrades]
        assert cursors[0] is None and None not in cursors[1:] and len(set(cursors)) == len(cursors) > 2
        assert all(
            body["limit"] == 2 and body["criteria"] == [{**CRITERION, "scale": "1-5"}]
            for body in transport.regrades
        )

        records = read_jsonl(out)
        assert [r["regrade_of"] for r in records] == olds
        changes = []
        for record in records:
            new = await stored(app, record["judgement_id"])
            old = await stored(app, record["regrade_of"])
            assert new["regrade_of"] == old["judgement_id"] and new["run_id"] == "r"
            assert [c["name"] for c in new["request"]["criteria"]] == ["correctness"]
            assert record["grader_fingerprint"] == new["grader_fingerprint"] != old["grader_fingerprint"]
            expected = [
                {"id": o["id"], "old": o["score"], "new": n["score"]}
                for o, n in zip(old["answers"], new["answers"], strict=True)
            ]
            assert record["answers"] == expected
            changes += [abs(a["new"] - a["old"]) for a in expected]
    mean = sum(changes) / len(changes)
    assert mean > 0
    err = capsys.readouterr().err
    assert "regraded 5, failed 0" in err
    assert f"mean absolute score change {mean:.3f} over 10 answers" in err


async def test_failed_groups_are_reported_and_fail_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fine = group(2)
    failing = group(2)
    failing["answers"][0]["text"] = "FAIL"
    async with serving(tmp_path, FakeBackend()) as app:
        good, bad = await judge_groups(app, [fine, failing])
    missing = "f" * 32
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{good}\n\n{bad}\n{missing}\n")
    async with serving(tmp_path, FailsMarkedGroups()) as app:
        transport = Recording(app)
        args = parse("regrade", "--ids-file", str(ids), "--limit", "2", "--grader", "judge")
        assert await regrade(args, transport) == 1
        assert [body["judgement_ids"] for body in transport.regrades] == [[good, bad], [missing]]
        out, err = capsys.readouterr()
        records = {r["regrade_of"]: r for r in (json.loads(line) for line in out.splitlines())}
        assert (await stored(app, records[good]["judgement_id"]))["regrade_of"] == good
        assert records[bad]["error"]["code"] == "judge_unavailable"
        assert records[missing]["error"]["code"] == "not_found"
    assert "regraded 1, failed 2 (judge_unavailable 1, not_found 1)" in err
    assert f"failed {bad}: judge_unavailable" in err and f"failed {missing}: not_found" in err


async def test_rerun_with_the_printed_key_rescores_only_the_failed_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = group(2)
    failing["answers"][0]["text"] = "FAIL"
    async with serving(tmp_path, FakeBackend()) as app:
        good, bad = await judge_groups(app, [group(2), failing])
    argv = ("regrade", "--ids", f"{good},{bad}", "--grader", "judge")
    async with serving(tmp_path, FailsMarkedGroups()) as app:
        assert await regrade(parse(*argv), Recording(app)) == 1
    out, err = capsys.readouterr()
    first = {r["regrade_of"]: r for r in (json.loads(line) for line in out.splitlines())}
    assert "error" in first[bad] and "run the command again with --idempotency-key " in err
    key = err.rsplit("--idempotency-key ", 1)[1].split()[0]

    backend = FakeBackend()
    async with serving(tmp_path, backend) as app:
        assert await regrade(parse(*argv, "--idempotency-key", key), Recording(app)) == 0
    again = {r["regrade_of"]: r for r in (json.loads(line) for line in capsys.readouterr().out.splitlines())}
    assert again[good]["judgement_id"] == first[good]["judgement_id"]  # replayed, not re-scored
    assert again[bad]["judgement_id"] and len(backend.requests) == 1  # only the failed one was judged


async def test_a_failed_page_stops_the_run_with_the_cursor_to_continue_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "regraded.jsonl"
    async with serving(tmp_path, FakeBackend()) as app:
        olds = await judge_groups(app, [group(1, run_id="r", step=i) for i in range(3)])
        argv = ("regrade", "--run-id", "r", "--limit", "1", "--grader", "similarity", "--out", str(out))
        assert await regrade(parse(*argv), Recording(app, fail_call=2)) == 1
        assert [r["regrade_of"] for r in read_jsonl(out)] == olds[:1]
        err = capsys.readouterr().err
        assert "stopped by 503 not_ready: loading; continue with --cursor " in err
        cursor = err.rsplit("--cursor ", 1)[1].split()[0]

        assert await regrade(parse(*argv, "--cursor", cursor), Recording(app)) == 0
    assert [r["regrade_of"] for r in read_jsonl(out)] == olds[1:]


@pytest.mark.parametrize(
    "argv",
    [
        ["--ids", "a", "--step", "1"],
        ["--run-id", "r", "--orders", "9"],
        ["--run-id", "r", "--term", "judge"],
        ["--run-id", "r", "--limit", "0"],
        ["--ids", " , "],
    ],
)
def test_bad_regrade_input_is_refused_before_any_request(
    argv: list[str], capsys: pytest.CaptureFixture[str], refused_url: str
) -> None:
    # Nothing answers there: an attempted request would fail as unreachable (1), not as bad input (2).
    assert main(["regrade", *argv, "--server", refused_url, "--no-progress"]) == 2
    assert "judge-service regrade:" in capsys.readouterr().err


class CountsInFlight(FakeBackend):
    """A slow judge that records how many groups it was judging at once."""

    def __init__(self, *, signal_at: int = 0) -> None:
        super().__init__(latency_s=0.05)
        self.in_flight = 0
        self.most_in_flight = 0
        self.signal_at = signal_at  # set `reached` when this many calls have started
        self.reached = asyncio.Event()

    async def generate(self, request: GenerationRequest) -> Generation:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        if len(self.requests) + 1 == self.signal_at:
            self.reached.set()
        try:
            return await super().generate(request)
        finally:
            self.in_flight -= 1


async def test_judge_file_overlaps_groups_and_an_interrupted_run_resumes_complete(tmp_path: Path) -> None:
    source, out = tmp_path / "groups.jsonl", tmp_path / "results.jsonl"
    source.write_text("".join(json.dumps(group(2, step=i)) + "\n" for i in range(12)))

    async def run(app: FastAPI) -> Any:
        transport = httpx.ASGITransport(app=app)
        client = AsyncJudgeClient("http://judge", transport=transport)
        return await judge_file(source, out, client=client, concurrency=4, progress=False)

    # A worker takes its next group only after writing its last result: when the 9th judge call
    # starts, at least 5 lines are written and other groups are in flight.
    first_backend = CountsInFlight(signal_at=9)
    async with serving(tmp_path, first_backend) as app:
        task = asyncio.create_task(run(app))
        await first_backend.reached.wait()
        task.cancel()  # interrupted with groups in flight
        with pytest.raises(asyncio.CancelledError):
            await task
    assert first_backend.most_in_flight == 4
    done_first = {d["index"] for d in results(out)}
    assert 5 <= len(done_first) < 12

    second_backend = CountsInFlight()
    async with serving(tmp_path, second_backend) as app:
        summary = await run(app)
    assert (summary.judged, summary.failed, summary.skipped) == (12 - len(done_first), 0, len(done_first))
    assert len(second_backend.requests) == 12 - len(done_first)  # nothing judged twice
    docs = results(out)
    assert all("judgement" in d for d in docs)  # whole lines only
    assert sorted(d["index"] for d in docs) == list(range(12))
    assert all(d["judgement"]["step"] == d["index"] for d in docs)  # each line names its input line


async def test_regrade_under_another_decoding_and_expected_marks(tmp_path: Path) -> None:
    """--decoding and --score-from reach the replayed request: a per-answer regrade scored from expected
    marks, with a fingerprint of its own."""
    out = tmp_path / "regraded.jsonl"
    async with serving(tmp_path, FakeBackend()) as app:
        (old_id,) = await judge_groups(app, [group(3, run_id="r", step=0)])
        argv = ("regrade", "--ids", old_id, "--decoding", "per_answer", "--score-from", "expected")
        assert await regrade(parse(*argv, "--out", str(out)), Recording(app)) == 0
        (record,) = read_jsonl(out)
        new, old = await stored(app, record["judgement_id"]), await stored(app, old_id)
    assert (new["request"]["decoding"], new["request"]["score_from"]) == ("per_answer", "expected")
    assert new["usage"]["judge_calls"] == 3 and new["grader_fingerprint"] != old["grader_fingerprint"]
    assert all(a["explanation"].endswith("from expected marks") for a in new["answers"])
