"""`judge-service rubrics --data FILE`: have the judge write the rubric of every prompt of a dataset ahead of
training, so a trainer's first step with rubric "generate" finds them stored instead of waiting.

The prompts are the file's distinct (conversation, reference) pairs: lines that are judge requests, the
labelled lines `eval` reads, or any object with `conversation` and `reference` (format `requests`), or
openai/grade-school-math's model-solutions file (`gsm8k-solutions`). Each one is a POST /v1/rubrics, the
request that rubric "generate" makes, so the rubrics written are the ones judging finds (with --items or
--instructions they are other rubrics: name their ids, from --out, in `rubric`).

Resumable twice over: the service stores every rubric under a hash of its content, so a prompt asked
again costs no judge call; and --out (JSONL, one line per prompt: index, rubric id, version, items) is
appended to line by line and read back first, so a stopped run asks only for the prompts it lacks.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from judge_service.client import ApiKeyRefused, AsyncJudgeClient, JudgeClientError
from judge_service.schemas import RubricRequest, canonical_json
from judge_service.tools.eval_data import read_groups

PROMPT_FORMATS = ("requests", "gsm8k-solutions")


@dataclass(frozen=True)
class Prompt:
    index: int  # the line's place among the file's objects, from 0
    request: RubricRequest


def read_prompts(
    path: Path, data_format: str, *, items: int | None, instructions: str | None
) -> list[Prompt]:
    """The file's distinct prompts, first occurrence first; ValueError naming a line that has none."""
    if data_format == "gsm8k-solutions":
        rows = [(g.index, g.request) for g in read_groups(path, "gsm8k-solutions")]
    else:
        rows = list(enumerate(_objects(path)))
    prompts: list[Prompt] = []
    seen: set[str] = set()
    for index, row in rows:
        try:
            request = RubricRequest(
                conversation=row["conversation"],
                reference=row.get("reference"),
                items=items,
                instructions=instructions,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"{path}: object {index + 1} has no valid conversation and reference: {exc}"
            ) from exc
        key = canonical_json(request.model_dump(mode="json"))
        if key not in seen:
            seen.add(key)
            prompts.append(Prompt(index, request))
    return prompts


def _objects(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: a prompt is a JSON object")
            rows.append(row)
    return rows


def written_already(out: Path | None) -> set[int]:
    """The indices --out holds a rubric for (a cut-off last line does not count)."""
    done: set[int] = set()
    if out is None or not out.exists():
        return done
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("index"), int) and doc.get("rubric"):
            done.add(doc["index"])
    return done


async def write_rubrics(
    prompts: list[Prompt],
    client: AsyncJudgeClient,
    *,
    out: Path | None,
    concurrency: int,
    progress: bool,
) -> tuple[int, int, int]:
    """(rubrics written or found, failed, skipped as already in --out)."""
    done = written_already(out)
    todo = [p for p in prompts if p.index not in done]
    queue: asyncio.Queue[Prompt] = asyncio.Queue()
    for prompt in todo:
        queue.put_nowait(prompt)
    counts = {"ok": 0, "failed": 0}
    sink = out.open("a", encoding="utf-8") if out is not None else None

    async def worker(bar: tqdm[Any]) -> None:
        while not queue.empty():
            prompt = queue.get_nowait()
            try:
                rubric = await client.write_rubric(prompt.request)
            except ApiKeyRefused:
                raise
            except JudgeClientError as exc:
                counts["failed"] += 1
                sys.stderr.write(f"prompt {prompt.index}: {exc}\n")
            else:
                counts["ok"] += 1
                if sink is not None:
                    line = {"index": prompt.index, "rubric": rubric.id, "version": rubric.version}
                    sink.write(json.dumps({**line, "items": len(rubric.criteria)}) + "\n")
                    sink.flush()
            bar.update(1)

    try:
        async with client:
            with tqdm(total=len(todo), unit="prompt", desc="rubrics", disable=not progress or None) as bar:
                await asyncio.gather(*(worker(bar) for _ in range(max(1, concurrency))))
    finally:
        if sink is not None:
            sink.close()
    return counts["ok"], counts["failed"], len(prompts) - len(todo)
