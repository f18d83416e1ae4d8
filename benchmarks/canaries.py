"""What canaries cost: JUDGE_CANARY_RATE 0 vs 0.1 vs 1.0, on the fake judge and on the embedded judge.

    .venv/bin/python -m benchmarks canaries [--judges fake,embedded] [--rates 0,0.1,1] [--levels 1,8]

Each judge serves every rate from one service built per rate (on the embedded judge, over one shared
engine); every group goes through JudgeService.grade in this process, closed loop at each level of groups
in flight. At each level every rate judges the same groups, in an order that rotates per level (the
engine's prefix cache emptied before each). The fake judge measures the service's own cost (building the
canary, the extra answer in the prompt, storing it apart); the embedded judge what a real engine pays
for one more answer per chosen group (in its default per-answer decoding: one more judge call, sharing
the group's prefix). Reported: groups/s, latency p50/p99, judge calls, prompt and completion tokens per
group, the share of groups that got a canary, and each rate's p50 and groups/s over rate 0.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks.engine import (
    SharedBackend,
    bench_settings,
    grade_groups,
    judged,
    reset_prefix_cache,
    running_app,
    start_engine,
)
from benchmarks.experiment import (
    Column,
    Experiment,
    Run,
    col,
    floats,
    option,
    ratio_col,
    shared,
    words,
)
from benchmarks.groups import make_groups
from benchmarks.report import log
from benchmarks.servers import workdir
from judge_service.backends.base import JudgeBackend
from judge_service.backends.fake import FakeBackend

NAME = "canaries"


async def judge_groups(
    backend: JudgeBackend, settings: Any, groups: list[dict[str, Any]], concurrency: int
) -> dict[str, Any]:
    """The groups through a service of these settings on the backend; the share that got a canary."""
    async with running_app(settings, backend) as app:
        service = app.state.service
        load, responses = await grade_groups(service, groups, concurrency)
        with_canary = sum([bool((await service.get(r.judgement_id)).canaries) for r in responses])
    return {**judged(load, responses), "canary_share": round(with_canary / max(1, load.ok), 4)}


class Judges:
    """The judge of the current level: started (and warmed up, one group per rate) when a level first
    needs it; the previous judge closed then."""

    def __init__(self, args: Any) -> None:
        self.args = args
        self.name: str | None = None
        self.shared: SharedBackend | None = None
        self._stack = contextlib.AsyncExitStack()

    def overrides(self) -> dict[str, Any]:
        return {"backend": "fake"} if self.name == "fake" else {}

    async def get(self, judge: str) -> tuple[SharedBackend, Path]:
        if judge != self.name:
            await self._stack.aclose()
            self.name = judge
            tmp = self._stack.enter_context(workdir(f"{NAME}-{judge}"))
            inner: JudgeBackend = (
                FakeBackend(record=False)
                if judge == "fake"
                else await start_engine(bench_settings(tmp, **self.overrides()))
            )
            self._stack.push_async_callback(inner.close)
            self.shared, self.tmp = SharedBackend(inner), tmp
            log(f"{judge}: warm-up, one group per rate (not measured)")
            warm = make_groups(1, self.args.answers, seed=self.args.seed + 99, run_id=NAME, fixed_order=True)
            for rate in self.args.rates:
                settings = bench_settings(tmp / f"warm-{rate}", canary_rate=rate, **self.overrides())
                await judge_groups(self.shared, settings, warm, 1)
        assert self.shared is not None
        return self.shared, self.tmp

    async def close(self) -> None:
        await self._stack.aclose()


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[Judges]:
    found = Judges(run.args)
    try:
        yield found
    finally:
        await found.close()


class Level(NamedTuple):
    judge: str
    concurrency: int
    turn: int  # among the judge's levels: the rotation of the rates starts again for each judge

    def __str__(self) -> str:
        return f"{self.judge} c={self.concurrency}"


def levels(run: Run) -> list[Level]:
    return [Level(j, c, i) for j in run.args.judges for i, c in enumerate(run.args.levels)]


def rates(run: Run) -> list[str]:
    return [f"{rate:g}" for rate in run.args.rates]


async def measure(run: Run, rate_text: str, level: Level) -> dict[str, Any]:
    """One rate on the level's groups, in a service of its own over the judge's shared backend."""
    shared, tmp = await run.state.get(level.judge)
    args, rate, concurrency = run.args, float(rate_text), level.concurrency
    count = max(concurrency, args.fake_groups if level.judge == "fake" else args.groups)
    groups = make_groups(count, args.answers, seed=args.seed + concurrency, run_id=NAME, fixed_order=True)
    await reset_prefix_cache(shared)
    settings = bench_settings(tmp / f"{concurrency}-{rate}", canary_rate=rate, **run.state.overrides())
    entry = await judge_groups(shared, settings, groups, concurrency)
    return entry | {
        "judge": level.judge,
        "rate": rate,
        "concurrency": concurrency,
        "decoding": settings.resolved_decoding(),
    }


def columns(run: Run) -> list[Column]:
    first = rates(run)[0]
    return [
        col("judge", "judge"),
        col("decoding", "decoding"),
        col("groups in flight", "concurrency"),
        col("canary rate", "rate"),
        col("groups", "groups"),
        col("with a canary", "canary_share"),
        col("groups/s", "groups_per_s"),
        col("p50 ms", "latency.p50_ms", digits=1),
        col("p99 ms", "latency.p99_ms", digits=1),
        col("calls/group", "judge_calls_per_group"),
        col("prompt tokens/group", "prompt_tokens_per_group"),
        col("completion tokens/group", "completion_tokens_per_group"),
        ratio_col(f"p50 / rate {first}", "latency.p50_ms", over=first),
        ratio_col(f"groups/s / rate {first}", "groups_per_s", over=first),
    ]


EXPERIMENT = Experiment(
    options=[
        option("--judges", "fake,embedded", "fake, embedded, comma-separated", type=words),
        option("--rates", "0,0.1,1", "canary rates, comma-separated; the first is the base", type=floats),
        *shared(levels="1,8", groups=(10, "embedded judge: groups per level at least"), answers=4, seed=31),
        option("--fake-groups", 400, "fake judge: groups per level at least"),
    ],
    arms=rates,
    levels=levels,
    level_label="",
    order=lambda arms, level, *_: arms[level.turn % len(arms) :] + arms[: level.turn % len(arms)],
    columns=columns,
)

EXPERIMENT.run_if_main(__name__)
