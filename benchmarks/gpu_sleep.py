"""Sleep and wake on a real vLLM engine: memory freed per level, wake plus check time, probe drift.

    .venv/bin/python -m benchmarks gpu_sleep               # on a GPU machine with vLLM: a few minutes
    .venv/bin/python -m benchmarks gpu_sleep --model NAME  # a model of your own (default: the embedded one)
    .venv/bin/python -m benchmarks gpu_sleep --check-only  # anywhere: can this machine's engine sleep?

The service runs in this process on the in-process engine with JUDGE_SLEEP_MODE=1, driven through its
HTTP routes (ASGI, no socket): a few groups are judged, then for each level the engine is put to sleep
(POST /v1/engine/sleep) and woken (POST /v1/engine/wake, which judges the wake check's probe groups and
compares them with before the first sleep); the device memory free before and after each is read from
CUDA. Reported per level: memory freed, sleep seconds, wake-plus-check seconds, the check's verdict, and
that groups judged after the wake get the same marks as before the sleep.

vLLM's CPU build has no sleep mode: there the script says so (the service's own 409) and measures nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.experiment import Experiment, Outcome, option
from benchmarks.report import log, markdown_table


def _group(i: int) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": f"What is {i + 2} times 3?"}],
        "reference": f"{(i + 2) * 3}.",
        "answers": [
            {"id": "right", "text": f"It is {(i + 2) * 3}."},
            {"id": "wrong", "text": f"It is {(i + 2) * 3 + 1}."},
            {"id": "off", "text": "Multiplication is repeated addition."},
        ],
        "seed": 0,
    }


def _free_bytes() -> int | None:
    import torch

    return int(torch.cuda.mem_get_info()[0]) if torch.cuda.is_available() else None


def _marks(reply: dict[str, Any]) -> list[Any]:
    return [(a["id"], {k: c["mark"] for k, c in (a["criteria"] or {}).items()}) for a in reply["answers"]]


async def _measure(args: argparse.Namespace) -> Outcome:
    import httpx

    from judge_service.app import create_app
    from judge_service.backends.vllm_engine import why_no_sleep_mode
    from judge_service.config import Settings

    why = why_no_sleep_mode()
    if why is not None:
        log(f"this machine's engine cannot sleep: {why}")
        return Outcome({"can_sleep": False, "why": why}, f"No measurement: {why}.")
    if args.check_only:
        return Outcome({"can_sleep": True}, "This machine's vLLM has a sleep mode.")
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(model=args.model, sleep_mode=True, home_dir=Path(home), wake_check=True)
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8000", timeout=600
            ) as c:
                while (await c.get("/readyz")).status_code != 200:  # noqa: ASYNC110 (a readiness poll)
                    await asyncio.sleep(0.5)
                before = [
                    _marks((await c.post("/v1/judge", json=_group(i))).json()) for i in range(args.groups)
                ]
                rows, entries = [], []
                for level in (1, 2):
                    free_awake = _free_bytes()
                    started = time.perf_counter()
                    slept = (await c.post("/v1/engine/sleep", json={"level": level})).json()
                    sleep_s = time.perf_counter() - started
                    free_asleep = _free_bytes()
                    started = time.perf_counter()
                    woken = (await c.post("/v1/engine/wake")).json()
                    wake_s = time.perf_counter() - started
                    after = [
                        _marks((await c.post("/v1/judge", json=_group(i))).json()) for i in range(args.groups)
                    ]
                    freed = None if free_awake is None or free_asleep is None else free_asleep - free_awake
                    entry = {
                        "level": level,
                        "freed_gib": None if freed is None else round(freed / 2**30, 2),
                        "engine_says_freed_gib": None
                        if slept.get("freed_bytes") is None
                        else round(slept["freed_bytes"] / 2**30, 2),
                        "sleep_s": round(sleep_s, 2),
                        "wake_and_check_s": round(wake_s, 2),
                        "check": woken.get("last_check"),
                        "state": woken["state"],
                        "same_marks_after": after == before,
                    }
                    entries.append(entry)
                    rows.append([level, *(entry[k] for k in list(entry)[1:])])
    table = markdown_table(
        ["level", "freed GiB", "engine says", "sleep s", "wake + check s", "check", "state", "same marks"],
        rows,
    )
    return Outcome({"can_sleep": True, "levels": entries}, table)


def run(args: argparse.Namespace) -> Outcome:
    return asyncio.run(_measure(args))


EXPERIMENT = Experiment(
    options=[
        option("--model", help="the judge model (default: the embedded one)"),
        option("--groups", 4, help="groups judged before and after each sleep"),
        option("--check-only", action="store_true", help="say whether this machine's engine can sleep"),
    ],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
