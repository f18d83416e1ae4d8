"""The judge-quality subcommands of `judge-service`: calibrate, agreement, judge-file, regrade, eval.

    judge-service calibrate --input RESULTS.jsonl | --run RUN_ID [--server URL] [--step N] [--fingerprint F]
    judge-service agreement --human LABELS.jsonl (--input RESULTS.jsonl | [--server URL] [--run RUN_ID])
    judge-service judge-file IN.jsonl OUT.jsonl [--server URL] [--concurrency 8]
    judge-service regrade --run-id RUN [--step N] | --ids ID,... | --ids-file FILE [--grader G]
        [--term GRADER=WEIGHT ...] [--criteria FILE] [--orders K] [--decoding D] [--score-from S]
        [--as-run-id RUN] [--out FILE]
    judge-service rubrics --data FILE [--format requests|gsm8k-solutions] [--out IDS.jsonl] [--items N]
        [--instructions TEXT] [--concurrency C]
    judge-service prune --before DATE [--run RUN] [--include-labelled] [--per-call N]
    judge-service eval --data FILE [--format labelled|gsm8k-solutions] [--compare FILE | --grader G ...]
        [--limit N] [--concurrency C] [--run-id RUN] [--out REPORT.json] [--url URL]

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
from pathlib import Path
from typing import Any

import httpx

from judge_service.client import ApiKeyRefused, AsyncJudgeClient, JudgeClientError, RetryPolicy
from judge_service.quality.agreement import JudgementIndex, agreement, labels_from_jsonl
from judge_service.quality.calibration import calibrate, groups_from_jsonl
from judge_service.schemas import (
    CANARY_KINDS,
    AgreementReport,
    AgreementRequest,
    CalibrationReport,
    CalibrationRequest,
    parse_canary_kinds,
)
from judge_service.tools import eval as eval_tool
from judge_service.tools import prune as prune_tool
from judge_service.tools import rubrics as rubrics_tool
from judge_service.tools.eval_data import FORMATS, read_groups
from judge_service.tools.judge_file import judge_file
from judge_service.tools.regrade import regrade_command

Transport = httpx.AsyncBaseTransport | None  # tests inject an in-process server

COMMANDS = ("calibrate", "agreement", "judge-file", "regrade", "eval", "rubrics", "prune")
DEFAULT_SERVER = "http://127.0.0.1:8000"
API_KEY_ENV = "JUDGE_CLIENT_API_KEY"  # the client's key; not the server's list, JUDGE_API_KEYS


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
    rg.add_argument("--decoding", choices=["group", "per_answer"], help="how the judge decodes each group")
    rg.add_argument("--score-from", choices=["mark", "expected"], help="integer or expected marks")
    rg.add_argument(
        "--reasons", choices=["inline", "none", "sample"], help="reasons with the marks, or marks only"
    )
    rg.add_argument("--as-run-id", help="file the new judgements under this run")
    rg.add_argument("--out", type=Path, help="JSONL, one line per group (default: stdout); replaced")
    rg.add_argument(
        "--idempotency-key",
        help="sent with every request, so a retried request re-scores no group twice (default: a new "
        "random key per command); pass the key a stopped command printed to continue it",
    )
    _client_options(rg)
    _add_eval(commands)

    pr = commands.add_parser(
        "prune", help="delete stored judgements created before a date", description=prune_tool.__doc__
    )
    pr.add_argument("--before", required=True, help="YYYY-MM-DD (midnight UTC) or an ISO 8601 time")
    pr.add_argument("--run", help="only this run's judgements")
    pr.add_argument(
        "--include-labelled", action="store_true", help="also judgements a person labelled, with the labels"
    )
    pr.add_argument("--per-call", type=int, default=100_000, help="judgements per request (default 100000)")
    pr.add_argument("--json", action="store_true", help="print the report as JSON")
    _client_options(pr)

    rb = commands.add_parser(
        "rubrics",
        help="have the judge write the rubric of every prompt of a dataset ahead of training",
        description=rubrics_tool.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rb.add_argument("--data", type=Path, required=True, help="prompts, one JSON object per line")
    rb.add_argument(
        "--format",
        choices=rubrics_tool.PROMPT_FORMATS,
        default="requests",
        help="requests: objects with conversation and reference (judge requests, eval's labelled lines); "
        "gsm8k-solutions: openai/grade-school-math's model solutions (default requests)",
    )
    rb.add_argument(
        "--out", type=Path, help="JSONL of index, rubric id and version; appended to, resumed from"
    )
    rb.add_argument("--items", type=int, help="items per rubric (default: the service's JUDGE_RUBRIC_ITEMS)")
    rb.add_argument("--instructions", help="extra instructions to the rubric writer")
    rb.add_argument("--concurrency", type=int, default=4, help="rubrics in flight (default 4)")
    _client_options(rb)


def _add_eval(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = commands.add_parser(
        "eval",
        help="how well grader configurations follow labelled data (AUROC, pairwise accuracy, ...)",
        description=eval_tool.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument("--data", type=Path, required=True, help="labelled groups, one JSON object per line")
    ev.add_argument(
        "--format",
        choices=FORMATS,
        default="labelled",
        help="labelled: requests whose answers carry `label` (true/false or a number); gsm8k-solutions: "
        "openai/grade-school-math's example_model_solutions.jsonl (default labelled)",
    )
    ev.add_argument("--limit", type=int, help="only the first N groups of the file (after --only-mixed)")
    ev.add_argument(
        "--only-mixed", action="store_true", help="only groups whose answers' labels differ (rankable)"
    )
    ev.add_argument("--concurrency", type=int, default=4, help="judge calls in flight (default 4)")
    ev.add_argument(
        "--run-id", default=None, help="run the judgements are stored under (default eval-<file>)"
    )
    ev.add_argument("--out", type=Path, help="write the report as JSON here (figures, intervals, items)")
    ev.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals (default 0)")
    ev.add_argument(
        "--compare",
        type=Path,
        help='JSON list of configurations judged side by side: [{"name": "...", "request": {...}, '
        '"pointwise": false}, ...]; request fields lie over each group\'s own',
    )
    ev.add_argument("--name", default="default", help="name of the one configuration given by the flags")
    ev.add_argument("--grader", help="grader or blend, e.g. judge, numbers, judge+numbers")
    ev.add_argument("--criteria", type=Path, help="JSON file holding a list of criteria")
    ev.add_argument("--decoding", choices=["group", "per_answer"], help="how the judge decodes a group")
    ev.add_argument("--score-from", choices=["mark", "expected"], help="integer or expected marks")
    ev.add_argument(
        "--reasons", choices=["inline", "none", "sample"], help="reasons with the marks, or marks only"
    )
    ev.add_argument("--orders", type=int, help="answer orders judged per group (1-4)")
    ev.add_argument("--reason-language", help="language of the judge's reasons (a code or auto)")
    ev.add_argument("--pointwise", action="store_true", help="judge each answer alone (a group of one)")
    ev.add_argument(
        "--canaries",
        nargs="?",
        const="all",
        metavar="KINDS",
        help="also judge every group once per canary kind (all, or kinds separated by commas: "
        f"{', '.join(CANARY_KINDS)}) and print the robustness table",
    )
    ev.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=JSON",
        help='any other request field, its value as JSON (e.g. --set \'options={"number_locale": "de"}\'); '
        "repeat",
    )
    ev.add_argument(
        "--url",
        "--server",
        dest="server",
        default=DEFAULT_SERVER,
        help=f"judge service URL (default {DEFAULT_SERVER})",
    )
    _api_key_option(ev)
    ev.add_argument("--retries", type=int, default=4, help="retries on 429/5xx/connection errors")
    ev.add_argument("--timeout", type=float, default=900.0, help="seconds per request")
    ev.add_argument("--no-progress", action="store_true", help="no progress bar")


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
            return await regrade_command(args, client_for(args, transport))
        if args.command == "eval":
            return await eval_command(args, transport)
        if args.command == "rubrics":
            return await rubrics_command(args, transport)
        if args.command == "prune":
            return await prune_command(args, transport)
        return await judge_file_command(args, transport)
    except ApiKeyRefused as exc:
        fix = "pass a valid key with --api-key" if exc.key_sent else "pass one with --api-key"
        sys.stderr.write(f"judge-service {args.command}: {exc}; {fix} or set {API_KEY_ENV}\n")
        return 2
    except (ValueError, OSError, JudgeClientError) as exc:
        sys.stderr.write(f"judge-service {args.command}: {exc}\n")
        return 2


def client_for(args: argparse.Namespace, transport: Transport = None) -> AsyncJudgeClient:
    retry = RetryPolicy(retries=getattr(args, "retries", 4), timeout_s=getattr(args, "timeout", 600.0))
    return AsyncJudgeClient(args.server, api_key=api_key(args), retry=retry, transport=transport)


async def calibrate_command(args: argparse.Namespace, transport: Transport = None) -> CalibrationReport:
    if args.input is not None:
        with args.input.open(encoding="utf-8") as lines:
            groups, skipped = groups_from_jsonl(lines)
        if skipped:
            sys.stderr.write(f"skipped {skipped} line(s) without a judgement (errors or unreadable)\n")
        return calibrate(groups)
    request = CalibrationRequest(run_id=args.run, step=args.step, fingerprint=args.fingerprint)
    async with client_for(args, transport) as client:
        return await client.calibration(request)


async def agreement_command(args: argparse.Namespace, transport: Transport = None) -> AgreementReport:
    with args.human.open(encoding="utf-8") as lines:
        labels = labels_from_jsonl(lines)
    scale = (args.scale[0], args.scale[1]) if args.scale else None
    if args.input is None:  # the service reads its stored judgements and reports
        request = AgreementRequest(
            human=labels, run_id=args.run, step=args.step, fingerprint=args.fingerprint, scale=scale
        )
        async with client_for(args, transport) as client:
            return await client.agreement(request)
    index = JudgementIndex()
    with args.input.open(encoding="utf-8") as lines:
        index.add_jsonl(lines)
    return agreement(((label, index.find(label)) for label in labels), default_scale=scale or (0.0, 1.0))


async def judge_file_command(args: argparse.Namespace, transport: Transport = None) -> int:
    summary = await judge_file(
        args.input,
        args.output,
        concurrency=args.concurrency,
        progress=not args.no_progress,
        client=client_for(args, transport),
    )
    errors = ", ".join(f"{code} {n}" for code, n in sorted(summary.errors.items()))
    sys.stderr.write(
        f"judged {summary.judged}, failed {summary.failed}{f' ({errors})' if errors else ''}, "
        f"skipped {summary.skipped} already in {args.output}\n"
    )
    return 1 if summary.failed else 0


async def rubrics_command(args: argparse.Namespace, transport: Transport = None) -> int:
    prompts = rubrics_tool.read_prompts(
        args.data, args.format, items=args.items, instructions=args.instructions
    )
    written, failed, skipped = await rubrics_tool.write_rubrics(
        prompts,
        client_for(args, transport),
        out=args.out,
        concurrency=args.concurrency,
        progress=not args.no_progress,
    )
    where = f" already in {args.out}" if args.out is not None else ""
    sys.stderr.write(
        f"rubrics {written}, failed {failed}, skipped {skipped}{where}, prompts {len(prompts)}\n"
    )
    return 1 if failed else 0


async def prune_command(args: argparse.Namespace, transport: Transport = None) -> int:
    report = await prune_tool.prune(
        client_for(args, transport),
        prune_tool.parse_before(args.before),
        run_id=args.run,
        include_labelled=args.include_labelled,
        per_call=args.per_call,
        progress=not args.no_progress and not args.json,
    )
    return _emit(report, args.json, prune_tool.describe)


def eval_configurations(args: argparse.Namespace) -> list[eval_tool.Configuration]:
    if args.compare is not None:
        return eval_tool.read_configurations(args.compare)
    request: dict[str, Any] = {}
    for flag, field in (
        ("grader", "grader"),
        ("decoding", "decoding"),
        ("score_from", "score_from"),
        ("reasons", "reasons"),
        ("orders", "orders"),
        ("reason_language", "reason_language"),
    ):
        if getattr(args, flag) is not None:
            request[field] = getattr(args, flag)
    if args.criteria is not None:
        request["criteria"] = json.loads(args.criteria.read_text(encoding="utf-8"))
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--set {item!r}: expected FIELD=JSON")
        try:
            request[name] = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"--set {name}: the value is not JSON ({exc}); quote strings: '\"text\"'"
            ) from exc
    return [eval_tool.Configuration(args.name, request, args.pointwise)]


def canary_kinds(value: str | None) -> list[str]:
    """--canaries: none, "all", or kinds separated by commas."""
    if value is None:
        return []
    if value == "all":
        return list(CANARY_KINDS)
    try:
        return list(parse_canary_kinds(value))
    except ValueError as exc:
        raise ValueError(f"--canaries: {exc}, or all") from None


async def eval_command(args: argparse.Namespace, transport: Transport = None) -> int:
    configurations = eval_configurations(args)
    groups = read_groups(args.data, args.format, limit=args.limit, only_mixed=args.only_mixed)
    if not groups:
        raise ValueError(f"{args.data}: no groups")
    run_id = args.run_id or f"eval-{args.data.stem}"[:64]
    kinds = canary_kinds(args.canaries)
    async with client_for(args, transport) as client:
        runs = await eval_tool.run_eval(
            client,
            groups,
            configurations,
            run_id=run_id,
            concurrency=args.concurrency,
            progress=not args.no_progress,
            canary_kinds=kinds,
        )
    reports = eval_tool.evaluate_runs(runs, seed=args.seed)
    sys.stdout.write(eval_tool.format_table(runs, reports) + "\n")
    if kinds:
        sys.stdout.write("\n" + eval_tool.format_robustness_table(runs) + "\n")
    failed = sum(len(run.failed) for run in runs)
    if failed:
        sys.stderr.write(f"{failed} group judgement(s) failed; their answers count as unscored\n")
    if args.out is not None:
        document = eval_tool.report_document(
            runs, reports, data=args.data, data_format=args.format, run_id=run_id
        )
        args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 1 if failed else 0


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
