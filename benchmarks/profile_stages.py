"""Where the server's samples go, by stage of the request path, from py-spy's folded stacks.

    .venv/bin/python -m benchmarks profile_stages benchmarks/out/fake_capacity.folded.txt

fake_capacity --profile writes the folded stacks and puts this breakdown into its JSON. Each sample of the
busiest thread (the event loop, where requests are handled) goes to one stage: the first frame, from the
leaf up, that belongs to a stage decides. A library frame (pydantic, json, re, ...) belongs to no stage,
so its time counts for the code that called it: a `model_dump_json` called by the store is storing, one
called by FastAPI's response serialization is the response. Samples of the other threads (the store's
writer) are reported per thread.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.experiment import Experiment, Outcome, option

# (stage, markers): a frame belongs to the first stage one of whose markers it contains. Order matters
# only where markers overlap (judging/llm/expected.py before judging/).
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "expected marks",
        ("judging/llm/expected.py", "judging/llm/mark_locations.py", "judging/llm/mark_lexer.py"),
    ),
    ("fake judge (the model's work)", ("backends/fake.py",)),
    ("storing", ("judge_service/store/",)),
    ("metrics", ("prometheus_client/", "judge_service/metrics.py", "JudgeService._observe ")),
    ("canary and length bias", ("judge_service/watch/",)),
    ("idempotency", ("service/idempotency.py",)),
    ("prompt rendering", ("judging/llm/prompt.py", "jinja2/")),
    ("reply parsing", ("judging/llm/parser.py", "judging/json_text.py")),
    ("grading (the rest)", ("judge_service/judging/",)),
    (
        "service and stored record",
        ("judge_service/service/", "judge_service/schemas/", "judge_service/hashing.py"),
    ),
    ("response JSON", ("serialize_response ", "fastapi/encoders.py")),
    ("body, validation, dependencies", ("fastapi/dependencies/", "starlette/requests.py", "api/deps.py")),
    ("route handlers", ("judge_service/api/routes.py",)),
)
# The layers every request passes through: a sample goes to one only where no stage above claims it
# (the route's work runs inside every middleware), and then to the layer nearest the leaf (a response
# written to the socket through a middleware's send wrapper is uvicorn's work).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("middleware (ours)", ("judge_service/api/middleware/", "judge_service/api/scopes.py")),
    ("FastAPI and Starlette (routing, wrappers)", ("fastapi/", "starlette/")),
    ("uvicorn (HTTP parsing and writing)", ("uvicorn/", "httptools")),
)
OTHER = "event loop and the rest"


def stage_of(frames: list[str]) -> str:
    for rules in (STAGES, LAYERS):
        for frame in reversed(frames):  # leaf first
            for stage, markers in rules:
                if any(marker in frame for marker in markers):
                    return stage
    return OTHER


def threads(folded: str) -> tuple[Counter[str], list[tuple[str, list[str], int]]]:
    """Samples per thread, and every stack as (thread, frames from the root, samples), from py-spy's
    folded stacks (recorded with --threads: a stack's first frame names its thread)."""
    by_thread: Counter[str] = Counter()
    stacks: list[tuple[str, list[str], int]] = []
    for line in folded.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        frames = stack.split(";")
        thread = frames[0] if frames[0].startswith("thread ") else "all"
        if thread != "all":
            frames = frames[1:]
        by_thread[thread] += int(count_text)
        stacks.append((thread, frames, int(count_text)))
    return by_thread, stacks


def stage_shares(folded: str) -> dict[str, object]:
    """Shares of the busiest thread's samples per stage, and every thread's share of all samples."""
    by_thread, stacks = threads(folded)
    if not by_thread:
        return {"samples": 0}
    main, total = by_thread.most_common(1)[0]
    stages: Counter[str] = Counter()
    for thread, frames, count in stacks:
        if thread == main:
            stages[stage_of(frames)] += count
    everything = sum(by_thread.values())
    return {
        "samples": everything,
        "thread_shares": {t: round(n / everything, 3) for t, n in by_thread.most_common()},
        "main_thread": main,
        "main_thread_stage_shares": {s: round(n / total, 4) for s, n in stages.most_common()},
    }


def table(shares: dict[str, object]) -> str:
    stages = shares.get("main_thread_stage_shares") or {}
    assert isinstance(stages, dict)
    lines = ["| stage (event-loop thread) | share of its samples |", "|---|---|"]
    lines += [f"| {stage} | {share:.1%} |" for stage, share in stages.items()]
    threads = shares.get("thread_shares") or {}
    assert isinstance(threads, dict)
    lines += ["", "| thread | share of all samples |", "|---|---|"]
    lines += [f"| {thread} | {share:.1%} |" for thread, share in threads.items()]
    return "\n".join(lines)


def run(args: Any) -> Outcome:
    shares = stage_shares(args.folded.read_text())
    return Outcome({"folded": str(args.folded), "shares": shares}, table(shares))


EXPERIMENT = Experiment(
    options=[option("folded", help="py-spy folded stacks (raw format, --threads)", type=Path)],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
