"""The judge-quality subcommands of `judge-service`: calibrate, agreement, judge-file, regrade.

    judge-service calibrate --input RESULTS.jsonl | --run RUN_ID [--server URL] [--step N] [--fingerprint F]
    judge-service agreement --human LABELS.jsonl (--input RESULTS.jsonl | [--server URL] [--run RUN_ID])
    judge-service judge-file IN.jsonl OUT.jsonl [--server URL] [--concurrency 8]
    judge-service regrade --run-id RUN [--step N] | --ids ID,... | --ids-file FILE [--grader G]
        [--term GRADER=WEIGHT ...] [--criteria FILE] [--orders K] [--as-run-id RUN] [--out FILE]

Every command that talks to the service takes --api-key KEY (default: the JUDGE_CLIENT_API_KEY variable,
which keeps the key out of the process list), sent as `Authorization: Bearer KEY` to a service with
JUDGE_API_KEYS; the key is never printed.

Reports print as text, or as JSON with --json. Exit status: 0 done, 1 some groups failed (judge-file,
regrade), 2 bad input or the service refused the request (a 401: no or a wrong API key).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
from tqdm import tqdm

from judge_service.quality.agreement import (
    AgreementReport,
    JudgementIndex,
    agreement,
    labels_from_jsonl,
)
from judge_service.quality.calibration import CalibrationReport, calibrate, groups_from_jsonl
from judge_service.quality.client import ApiKeyRefused, JudgeClient
from judge_service.quality.judge_file import judge_file, write_line
from judge_service.quality.regrade import RegradeItem, RegradeRequest, RegradeResponse
from judge_service.quality.sources import index_for_labels, run_groups
from judge_service.schemas import MAX_BATCH_GROUPS, ErrorBody

COMMANDS = ("calibrate", "agreement", "judge-file", "regrade")
Transport = httpx.AsyncBaseTransport | None  # tests inject an in-process server
DEFAULT_SERVER = "http://127.0.0.1:8000"
API_KEY_ENV = "JUDGE_CLIENT_API_KEY"  # the client's key; not the server's list, JUDGE_API_KEYS
_FAILURES_SHOWN = 20  # regrade failures printed; all of them are in its output


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cal = commands.add_parser("calibrate", help="pass rates by threshold and a recommended pass threshold")
    source = cal.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", type=Path, help="JSONL of judge results (e.g. judge-file's OUT)")
    source.add_argument("--run", help="a stored run, read from --server")
    _server_options(cal)
    cal.add_argument("--json", action="store_true", help="print the report as JSON")

    agr = commands.add_parser("agreement", help="agreement of the grader with human scores or ranks")
    agr.add_argument("--human", type=Path, required=True, help="JSONL of human labels")
    agr.add_argument("--input", type=Path, help="JSONL of judge results; default: fetch from --server")
    agr.add_argument("--run", help="with --server: the run in which to find labels given by group_key")
    _server_options(agr)
    agr.add_argument("--scale", nargs=2, type=float, metavar=("LOW", "HIGH"), help="human score scale")
    agr.add_argument("--json", action="store_true", help="print the report as JSON")

    jf = commands.add_parser("judge-file", help="judge a JSONL file of groups into a JSONL of results")
    jf.add_argument("input", type=Path, help="JSONL: one judge request per line")
    jf.add_argument("output", type=Path, help="JSONL results; appended to, and resumed from")
    jf.add_argument("--concurrency", type=int, default=8, help="groups in flight (default 8)")
    _client_options(jf)

    rg = commands.add_parser("regrade", help="re-score stored judgements under another grader configuration")
    source = rg.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-id", help="every original judgement of this run, page by page")
    source.add_argument("--ids", help="comma-separated judgement ids")
    source.add_argument("--ids-file", type=Path, help="judgement ids, one per line")
    rg.add_argument("--step", type=int, help="with --run-id: only this step")
    rg.add_argument("--cursor", help="with --run-id: start at this next_cursor (to continue a stopped run)")
    rg.add_argument("--limit", type=int, default=64, help="groups per request (default 64, at most 256)")
    rg.add_argument("--grader", help="the grader to use; clears the stored terms")
    rg.add_argument("--term", action="append", metavar="GRADER=WEIGHT", help="a blend term; repeat")
    rg.add_argument("--criteria", type=Path, help="JSON file holding a list of criteria")
    rg.add_argument("--orders", type=int, help="answer orders judged per group (1-4)")
    rg.add_argument("--as-run-id", help="file the new judgements under this run")
    rg.add_argument("--out", type=Path, help="JSONL, one line per group (default: stdout); replaced")
    rg.add_argument(
        "--idempotency-key",
        help="sent with every request, so a retried request re-scores no group twice (default: a new "
        "random key per command); pass the key a stopped command printed to continue it",
    )
    _client_options(rg)


def _client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server", default=DEFAULT_SERVER, help=f"judge service URL (default {DEFAULT_SERVER})"
    )
    _api_key_option(parser)
    parser.add_argument("--retries", type=int, default=4, help="retries on 429/5xx/connection errors")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server", default=DEFAULT_SERVER, help=f"judge service URL (default {DEFAULT_SERVER})"
    )
    _api_key_option(parser)
    parser.add_argument("--step", type=int, help="only this step of the run")
    parser.add_argument("--fingerprint", help="only judgements of this grader fingerprint")


def _api_key_option(parser: argparse.ArgumentParser) -> None:
    # The default stays None so that --help never shows the key; the variable is read in api_key().
    parser.add_argument(
        "--api-key",
        metavar="KEY",
        help=f"API key for a service with JUDGE_API_KEYS, sent as 'Authorization: Bearer KEY' "
        f"(default: ${API_KEY_ENV}; prefer the variable, a flag shows in the process list)",
    )


def api_key(args: argparse.Namespace) -> str | None:
    """--api-key when given (an empty one sends none), else $JUDGE_CLIENT_API_KEY, else None."""
    flag: str | None = getattr(args, "api_key", None)
    return flag if flag is not None else os.environ.get(API_KEY_ENV)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(run_command(args))


async def run_command(args: argparse.Namespace, transport: Transport = None) -> int:
    """The command's exit status; its errors as one line on stderr (never with the API key in it)."""
    try:
        if args.command == "calibrate":
            return _emit(await calibrate_command(args, transport), args.json, format_calibration)
        if args.command == "agreement":
            return _emit(await agreement_command(args, transport), args.json, format_agreement)
        if args.command == "regrade":
            return await regrade_command(args, transport)
        return await judge_file_command(args, transport)
    except ApiKeyRefused as exc:
        fix = "pass a valid key with --api-key" if exc.key_sent else "pass one with --api-key"
        sys.stderr.write(f"judge-service {args.command}: {exc}; {fix} or set {API_KEY_ENV}\n")
        return 2
    except (ValueError, OSError, RuntimeError) as exc:
        sys.stderr.write(f"judge-service {args.command}: {exc}\n")
        return 2


async def calibrate_command(args: argparse.Namespace, transport: Transport = None) -> CalibrationReport:
    if args.input is not None:
        with args.input.open(encoding="utf-8") as lines:
            groups, skipped = groups_from_jsonl(lines)
        if skipped:
            sys.stderr.write(f"skipped {skipped} line(s) without a judgement (errors or unreadable)\n")
        return calibrate(groups)
    async with JudgeClient(args.server, api_key=api_key(args), transport=transport) as client:
        return calibrate(await run_groups(client, args.run, step=args.step, fingerprint=args.fingerprint))


async def agreement_command(args: argparse.Namespace, transport: Transport = None) -> AgreementReport:
    with args.human.open(encoding="utf-8") as lines:
        labels = labels_from_jsonl(lines)
    scale = tuple(args.scale) if args.scale else (0.0, 1.0)
    if args.input is not None:
        index = JudgementIndex()
        with args.input.open(encoding="utf-8") as lines:
            index.add_jsonl(lines)
    else:
        async with JudgeClient(args.server, api_key=api_key(args), transport=transport) as client:
            index = await index_for_labels(
                labels,
                get=client.get,
                lister=client,
                run_id=args.run,
                step=args.step,
                fingerprint=args.fingerprint,
            )
    return agreement(((label, index.find(label)) for label in labels), default_scale=(scale[0], scale[1]))


async def judge_file_command(args: argparse.Namespace, transport: Transport = None) -> int:
    summary = await judge_file(
        args.input,
        args.output,
        server=args.server,
        concurrency=args.concurrency,
        retries=args.retries,
        timeout_s=args.timeout,
        progress=not args.no_progress,
        api_key=api_key(args),
        transport=transport,
    )
    errors = ", ".join(f"{code} {n}" for code, n in sorted(summary.errors.items()))
    sys.stderr.write(
        f"judged {summary.judged}, failed {summary.failed}{f' ({errors})' if errors else ''}, "
        f"skipped {summary.skipped} already in {args.output}\n"
    )
    return 1 if summary.failed else 0


async def regrade_command(args: argparse.Namespace, transport: Transport = None) -> int:
    requests = regrade_requests(args)
    key = args.idempotency_key or uuid.uuid4().hex
    total = None if args.run_id else sum(len(r.judgement_ids or ()) for r in requests)
    tally = RegradeTally(key=key)
    client = JudgeClient(
        args.server,
        timeout_s=args.timeout,
        retries=args.retries,
        api_key=api_key(args),
        transport=transport,
    )
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


async def _regrade_run(client: JudgeClient, first: RegradeRequest, emit: Emit, key: str) -> str | None:
    """Every page of the run, following next_cursor; why it stopped early, or None when it got through."""
    cursor = first.cursor
    while True:
        body = first.model_copy(update={"cursor": cursor}).model_dump(exclude_none=True)
        reply = await client.regrade(body, idempotency_key=key)
        if not reply.ok:
            error = reply.error()
            resume = f"continue with --cursor {cursor}" if cursor else "run the command again"
            resume += f" --idempotency-key {key}"
            return f"stopped by {reply.status} {error['code']}: {error['message']}; {resume}"
        page = RegradeResponse.model_validate(reply.body)
        await emit(page.results)
        if page.next_cursor is None:
            return None
        cursor = page.next_cursor


async def _regrade_ids(client: JudgeClient, requests: list[RegradeRequest], emit: Emit, key: str) -> None:
    for request in requests:
        reply = await client.regrade(request.model_dump(exclude_none=True), idempotency_key=key)
        if reply.ok:
            await emit(RegradeResponse.model_validate(reply.body).results)
        else:  # the whole request failed: so did each of its groups
            error = ErrorBody.model_validate(reply.error())
            await emit([RegradeItem(regrade_of=i, error=error) for i in request.judgement_ids or ()])


async def _regrade_record(client: JudgeClient, item: RegradeItem) -> dict[str, Any]:
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


async def _old_scores(client: JudgeClient, judgement_id: str) -> dict[str, float | None]:
    """The old judgement's scores by answer id; none when it cannot be read (then nothing is compared)."""
    reply = await client.request("GET", f"/v1/judgements/{judgement_id}")
    answers = reply.body.get("answers") if reply.ok else None
    return {a["id"]: a.get("score") for a in answers} if isinstance(answers, list) else {}


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


def _emit(report: Any, as_json: bool, text: Any) -> int:
    sys.stdout.write((report.model_dump_json(indent=2) if as_json else text(report)) + "\n")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def format_calibration(r: CalibrationReport) -> str:
    best = r.recommendation.threshold
    lines = [
        f"groups {r.groups}, scored answers {r.scored_answers}, unscored {r.unscored_answers}, "
        f"mean score {_num(r.mean_score)}",
        "threshold  pass    fail",
        *(f"{t.threshold:<9.2f}  {_pct(t.pass_rate):>6}  {_pct(t.fail_rate):>6}" for t in r.thresholds),
        f"recommended threshold: {'none' if best is None else f'{best:.2f}'} ({r.recommendation.reason})",
        f"flat groups (all answers the same score, no learning signal): {r.flat_groups} "
        f"({_pct(r.flat_group_share)})",
        f"groups with fewer than 2 scored answers: {r.too_few_scored_groups} "
        f"({_pct(r.too_few_scored_share)})",
        *(f"note: {n}" for n in r.notes),
    ]
    return "\n".join(lines)


def format_agreement(r: AgreementReport) -> str:
    lines = [
        f"labelled groups {r.groups}, matched {r.matched_groups}, unmatched {len(r.unmatched)}",
        f"Kendall tau-b (mean of {r.tau_groups} groups): {_num(r.mean_kendall_tau_b)}",
        f"Spearman rho (mean of {r.rho_groups} groups): {_num(r.mean_spearman_rho)}",
        f"pairwise accuracy ({r.pairs} pairs): {_pct(r.pairwise_accuracy)}",
        f"mean absolute error ({r.mae_answers} answers, 0-1): {_num(r.mean_absolute_error)}",
    ]
    if r.unmatched:
        lines.append(
            f"no judgement found for: {', '.join(r.unmatched[:10])}{' ...' if len(r.unmatched) > 10 else ''}"
        )
    return "\n".join(lines)
