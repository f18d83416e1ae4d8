"""`judge-service regrade`: re-score stored judgements through POST /v1/regrade (argument parsing is in
tools/cli.py).

A run is followed page by page (next_cursor) to its end, ids are sent in chunks of --limit. Every request
carries one Idempotency-Key per command, so a retried request re-scores no group twice, and a rerun with
the printed key re-scores only the groups that failed. One JSONL line per group: the new judgement with
each answer's old and new score, or the group's error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from judge_service.client import ApiKeyRefused, AsyncJudgeClient, JudgeClientError
from judge_service.schemas import MAX_BATCH_GROUPS, ErrorBody, RegradeItem, RegradeRequest
from judge_service.tools.judge_file import write_line

_FAILURES_SHOWN = 20  # failures printed; all of them are in the output


async def regrade_command(args: argparse.Namespace, client: AsyncJudgeClient) -> int:
    """Regrade what the arguments select; exit status 1 if any group failed or a run stopped early."""
    requests = regrade_requests(args)
    key = args.idempotency_key or uuid.uuid4().hex
    total = None if args.run_id else sum(len(r.judgement_ids or ()) for r in requests)
    tally = RegradeTally(key=key)
    with (
        _lines_out(args.out) as out,
        tqdm(total=total, unit="group", desc="regrading", disable=args.no_progress or None) as bar,
    ):

        async def emit(items: list[RegradeItem]) -> None:
            for record in await asyncio.gather(*(_regrade_record(client, item) for item in items)):
                write_line(out, record)
                tally.add(record)
            bar.update(len(items))

        async with client:
            if args.run_id:
                tally.stopped = await _regrade_run(client, requests[0], emit, key)
            else:
                await _regrade_ids(client, requests, emit, key)
    sys.stderr.write(tally.summary() + "\n")
    return 1 if tally.failed or tally.stopped else 0


def regrade_requests(args: argparse.Namespace) -> list[RegradeRequest]:
    """What to send, all validated before any work: the run's first page, or one request per chunk of ids."""
    if not 1 <= args.limit <= MAX_BATCH_GROUPS:
        raise ValueError(f"--limit must be 1-{MAX_BATCH_GROUPS}, got {args.limit}")
    overrides = {
        "grader": args.grader,
        "terms": _terms(args.term),
        "criteria": _criteria(args.criteria),
        "orders": args.orders,
        "decoding": args.decoding,
        "score_from": args.score_from,
        "reasons": args.reasons,
        "as_run_id": args.as_run_id,
        "limit": args.limit,
    }
    body = {k: v for k, v in overrides.items() if v is not None}
    if args.run_id:
        selection = {"run_id": args.run_id, "step": args.step, "cursor": args.cursor}
        return [RegradeRequest.model_validate({**body, **selection})]
    if args.step is not None or args.cursor is not None:
        raise ValueError("--step and --cursor go with --run-id")
    ids = _judgement_ids(args)
    chunks = (ids[i : i + args.limit] for i in range(0, len(ids), args.limit))
    return [RegradeRequest.model_validate({**body, "judgement_ids": chunk}) for chunk in chunks]


def _judgement_ids(args: argparse.Namespace) -> list[str]:
    if args.ids is not None:
        raw = args.ids.split(",")
    else:
        raw = args.ids_file.read_text(encoding="utf-8").splitlines()
    ids = [i.strip() for i in raw if i.strip()]
    if not ids:
        raise ValueError("no judgement ids given")
    return ids


def _terms(terms: list[str] | None) -> list[dict[str, Any]] | None:
    if not terms:
        return None
    parsed = []
    for term in terms:
        grader, sep, weight = term.rpartition("=")
        if not sep or not grader:
            raise ValueError(f"--term wants GRADER=WEIGHT, got {term!r}")
        parsed.append({"grader": grader, "weight": float(weight)})
    return parsed


def _criteria(path: Path | None) -> list[Any] | None:
    if path is None:
        return None
    criteria = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(criteria, list):
        raise ValueError(f"{path}: the criteria file must hold a JSON list of criteria")
    return criteria


Emit = Callable[[list[RegradeItem]], Awaitable[None]]


async def _regrade_run(client: AsyncJudgeClient, first: RegradeRequest, emit: Emit, key: str) -> str | None:
    """Every page of the run, following next_cursor; why it stopped early, or None when it got through."""
    cursor = first.cursor
    while True:
        try:
            page = await client.regrade(first.model_copy(update={"cursor": cursor}), idempotency_key=key)
        except ApiKeyRefused:
            raise
        except JudgeClientError as exc:
            resume = f"continue with --cursor {cursor}" if cursor else "run the command again"
            resume += f" --idempotency-key {key}"
            return f"stopped by {exc.status} {exc.code}: {exc.error.message}; {resume}"
        await emit(page.results)
        if page.next_cursor is None:
            return None
        cursor = page.next_cursor


async def _regrade_ids(
    client: AsyncJudgeClient, requests: list[RegradeRequest], emit: Emit, key: str
) -> None:
    for request in requests:
        try:
            page = await client.regrade(request, idempotency_key=key)
        except ApiKeyRefused:
            raise
        except JudgeClientError as exc:  # the whole request failed: so did each of its groups
            error = ErrorBody(code=exc.code, message=exc.error.message)
            await emit([RegradeItem(regrade_of=i, error=error) for i in request.judgement_ids or ()])
            continue
        await emit(page.results)


async def _regrade_record(client: AsyncJudgeClient, item: RegradeItem) -> dict[str, Any]:
    """One output line: the new judgement with each answer's old and new score, or the group's error."""
    new = item.judgement
    if new is None:
        error = item.error or ErrorBody(code="invalid_reply", message="neither a judgement nor an error")
        return {"regrade_of": item.regrade_of, "error": error.model_dump(exclude_none=True)}
    old = await _old_scores(client, item.regrade_of)
    answers = [{"id": a.id, "old": old.get(a.id), "new": a.score} for a in new.answers]
    changes = _abs_changes(answers)
    return {
        "regrade_of": item.regrade_of,
        "judgement_id": new.judgement_id,
        "status": new.status,
        "grader_fingerprint": new.grader_fingerprint,
        "answers": answers,
        "mean_abs_change": sum(changes) / len(changes) if changes else None,
    }


async def _old_scores(client: AsyncJudgeClient, judgement_id: str) -> dict[str, float | None]:
    """The old judgement's scores by answer id; none when it cannot be read (then nothing is compared)."""
    try:
        old = await client.judgement(judgement_id)
    except ApiKeyRefused:
        raise
    except JudgeClientError:
        return {}
    return {a.id: a.score for a in old.answers}


def _abs_changes(answers: list[dict[str, Any]]) -> list[float]:
    """|new - old| of each answer scored both times (an unscored answer has no score to compare)."""
    return [abs(a["new"] - a["old"]) for a in answers if a["new"] is not None and a["old"] is not None]


@dataclass
class RegradeTally:
    ok: int = 0
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # error code -> groups
    failures: list[str] = field(default_factory=list)  # the first few, to print
    change_sum: float = 0.0
    changed_answers: int = 0
    stopped: str | None = None  # why a run was not regraded to its end
    key: str = ""  # the Idempotency-Key the command sent

    def add(self, record: dict[str, Any]) -> None:
        if "error" in record:
            self.failed += 1
            code = record["error"]["code"]
            self.errors[code] = self.errors.get(code, 0) + 1
            if len(self.failures) < _FAILURES_SHOWN:
                self.failures.append(f"{record['regrade_of']}: {code}: {record['error']['message']}")
            return
        self.ok += 1
        changes = _abs_changes(record["answers"])
        self.change_sum += sum(changes)
        self.changed_answers += len(changes)

    def summary(self) -> str:
        errors = ", ".join(f"{code} {n}" for code, n in sorted(self.errors.items()))
        mean = self.change_sum / self.changed_answers if self.changed_answers else None
        lines = [
            f"regraded {self.ok}, failed {self.failed}{f' ({errors})' if errors else ''}",
            f"mean absolute score change {_num(mean)} over {self.changed_answers} answers scored both times",
            *(f"failed {failure}" for failure in self.failures),
        ]
        if self.failed > len(self.failures):
            lines.append(f"... and {self.failed - len(self.failures)} more failures in the output")
        if self.stopped:
            lines.append(self.stopped)
        elif self.failed:
            lines.append(
                f"to retry the failed groups only, run the command again with --idempotency-key {self.key}"
            )
        return "\n".join(lines)


@contextmanager
def _lines_out(path: Path | None) -> Iterator[IO[str]]:
    if path is None:
        yield sys.stdout
        return
    with path.open("w", encoding="utf-8") as out:
        yield out


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
