"""The judge-quality subcommands of `judge-service`: calibrate, agreement, judge-file.

    judge-service calibrate --input RESULTS.jsonl | --run RUN_ID [--server URL] [--step N] [--fingerprint F]
    judge-service agreement --human LABELS.jsonl (--input RESULTS.jsonl | [--server URL] [--run RUN_ID])
    judge-service judge-file IN.jsonl OUT.jsonl [--server URL] [--concurrency 8]

Reports print as text, or as JSON with --json. Exit status: 0 done, 1 some groups failed (judge-file),
2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx

from judge_service.quality.agreement import (
    AgreementReport,
    JudgementIndex,
    agreement,
    labels_from_jsonl,
)
from judge_service.quality.calibration import CalibrationReport, calibrate, groups_from_jsonl
from judge_service.quality.client import JudgeClient
from judge_service.quality.judge_file import judge_file
from judge_service.quality.sources import index_for_labels, run_groups

COMMANDS = ("calibrate", "agreement", "judge-file")
Transport = httpx.AsyncBaseTransport | None  # tests inject an in-process server
DEFAULT_SERVER = "http://127.0.0.1:8000"


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
    jf.add_argument("--server", default=DEFAULT_SERVER, help=f"judge service URL (default {DEFAULT_SERVER})")
    jf.add_argument("--concurrency", type=int, default=8, help="groups in flight (default 8)")
    jf.add_argument("--retries", type=int, default=4, help="retries on 429/5xx/connection errors")
    jf.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    jf.add_argument("--no-progress", action="store_true", help="no progress bar")


def _server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server", default=DEFAULT_SERVER, help=f"judge service URL (default {DEFAULT_SERVER})"
    )
    parser.add_argument("--step", type=int, help="only this step of the run")
    parser.add_argument("--fingerprint", help="only judgements of this grader fingerprint")


def run(args: argparse.Namespace) -> int:
    try:
        if args.command == "calibrate":
            return _emit(asyncio.run(calibrate_command(args)), args.json, format_calibration)
        if args.command == "agreement":
            return _emit(asyncio.run(agreement_command(args)), args.json, format_agreement)
        return asyncio.run(judge_file_command(args))
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
    async with JudgeClient(args.server, transport=transport) as client:
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
        async with JudgeClient(args.server, transport=transport) as client:
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
        transport=transport,
    )
    errors = ", ".join(f"{code} {n}" for code, n in sorted(summary.errors.items()))
    sys.stderr.write(
        f"judged {summary.judged}, failed {summary.failed}{f' ({errors})' if errors else ''}, "
        f"skipped {summary.skipped} already in {args.output}\n"
    )
    return 1 if summary.failed else 0


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
