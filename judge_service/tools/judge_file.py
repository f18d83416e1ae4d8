"""Offline batch judging: a JSONL file of groups (judge requests) into a JSONL file of results.

Each output line is `{"index": i, "group_key": ..., "judgement": {...}}` or, when the group could not be
judged, `{"index": i, "group_key": ..., "error": {"code", "message"}}`; `index` is the 0-based number of
the input's non-blank line. Results are appended in completion order and flushed line by line, so an
interrupted job loses at most the groups in flight.

Resuming: run the same command again. A group already judged in OUT is skipped: matched by group_key
when the input line has one (robust to edits of the input), otherwise by index. Groups with an error line
are tried again; their new result is appended after the old error line, so readers take the last line
per group (calibration and agreement skip error lines anyway).

A 401 (no or a wrong API key) stops the job: the workers take no further groups, write no line for the
refused ones, and judge_file raises ApiKeyRefused once those in flight are back.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from judge_service.client import ApiKeyRefused, AsyncJudgeClient, JudgeClientError


@dataclass
class JudgeFileSummary:
    judged: int = 0
    failed: int = 0
    skipped: int = 0  # already judged in OUT
    errors: dict[str, int] = field(default_factory=dict)  # error code -> count


@dataclass(frozen=True)
class _Done:
    indices: frozenset[int]
    group_keys: frozenset[str]


def judged_already(out_path: Path) -> _Done:
    """What OUT already holds results for (error lines and a cut-off last line do not count)."""
    indices: set[int] = set()
    keys: set[str] = set()
    if out_path.exists():
        with out_path.open(encoding="utf-8") as out:
            for line in out:
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(doc, dict) or not isinstance(doc.get("judgement"), dict):
                    continue
                if isinstance(doc.get("index"), int):
                    indices.add(doc["index"])
                if isinstance(doc.get("group_key"), str):
                    keys.add(doc["group_key"])
    return _Done(frozenset(indices), frozenset(keys))


def _pending(in_path: Path, done: _Done) -> Iterator[tuple[int, str, str | None]]:
    """(index, line, group_key) of each input group OUT does not hold yet."""
    with in_path.open(encoding="utf-8") as source:
        index = -1
        for line in source:
            if not line.strip():
                continue
            index += 1
            key = _group_key(line)
            if (key is not None and key in done.group_keys) or (key is None and index in done.indices):
                continue
            yield index, line, key


def _group_key(line: str) -> str | None:
    try:
        doc = json.loads(line)
    except json.JSONDecodeError:
        return None
    key = doc.get("group_key") if isinstance(doc, dict) else None
    return key if isinstance(key, str) else None


async def judge_file(
    in_path: Path,
    out_path: Path,
    *,
    client: AsyncJudgeClient,
    concurrency: int = 8,
    progress: bool = True,
) -> JudgeFileSummary:
    """Judge every group of IN not yet in OUT through `client` (closed when done)."""
    done = judged_already(out_path)
    total = sum(1 for _ in _pending(in_path, done))
    summary = JudgeFileSummary(skipped=sum(1 for _ in _nonblank(in_path)) - total)
    pending = _pending(in_path, done)  # shared by the workers: next() never awaits, so no race
    refused: list[ApiKeyRefused] = []  # a 401: every worker stops
    with (
        out_path.open("a", encoding="utf-8") as out,
        tqdm(total=total, unit="group", desc="judging", disable=not progress or None) as bar,
    ):
        _end_cut_off_line(out_path, out)
        async with client:

            async def worker() -> None:
                for index, line, key in pending:
                    if refused:
                        return  # this group stays pending: a rerun judges it
                    try:
                        result = await _judge_line(client, line)
                    except ApiKeyRefused as exc:
                        refused.append(exc)
                        return
                    write_line(out, {"index": index, "group_key": key, **result})
                    if "judgement" in result:
                        summary.judged += 1
                    else:
                        summary.failed += 1
                        code = result["error"]["code"]
                        summary.errors[code] = summary.errors.get(code, 0) + 1
                    bar.update(1)

            await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    if refused:
        raise refused[0]
    return summary


def _nonblank(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as source:
        yield from (line for line in source if line.strip())


async def _judge_line(client: AsyncJudgeClient, line: str) -> dict[str, Any]:
    try:
        group = json.loads(line)
    except json.JSONDecodeError as exc:
        return {"error": {"code": "invalid_line", "message": f"not JSON: {exc}"}}
    if not isinstance(group, dict):
        message = "a line must be a JSON object (a judge request)"
        return {"error": {"code": "invalid_line", "message": message}}
    try:
        reply = await client.judge(group)
    except ApiKeyRefused:
        raise
    except JudgeClientError as exc:
        return {"error": {"code": exc.error.code, "message": exc.error.message}}
    return {"judgement": reply.model_dump(mode="json")}


def _end_cut_off_line(out_path: Path, out: IO[str]) -> None:
    """A job killed mid-write leaves a partial last line: start ours on a fresh line."""
    if out_path.stat().st_size == 0:
        return
    with out_path.open("rb") as raw:
        raw.seek(-1, 2)
        if raw.read(1) != b"\n":
            out.write("\n")
            out.flush()


def write_line(out: IO[str], doc: dict[str, Any]) -> None:
    """One whole JSON line, flushed: readers never wait on a buffer, and a crash cuts at most this line."""
    out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    out.flush()
