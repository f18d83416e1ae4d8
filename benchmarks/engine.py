"""The judge in-process: settings for a benchmark, the real engine started once, backends that share or
record it, the app running on it without HTTP, and groups graded through it with what they cost."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.experiment import Column, arm_col, col, level_col, seconds_col
from benchmarks.load import LoadResult, run_load
from benchmarks.report import latency_summary, log
from benchmarks.servers import workdir
from judge_service.backends.base import (
    THINKING_OFF,
    BackendHealth,
    Generation,
    GenerationRequest,
    JudgeBackend,
    ThinkingCall,
)
from judge_service.backends.thinking_profile import ThinkingProfile
from judge_service.config import Settings
from judge_service.metrics import JudgeMetrics


def bench_settings(workdir: Path, **overrides: Any) -> Settings:
    """Service settings for a benchmark: defaults (or JUDGE_* env) plus overrides, store in `workdir`."""
    return Settings(db_path=workdir / "judgements.sqlite3", **overrides)


async def start_engine(settings: Settings, metrics: JudgeMetrics | None = None) -> JudgeBackend:
    """Build and start the configured backend (the in-process vLLM engine for backend='vllm'); the
    engine's own statistics (prefix cache hits, ...) go to `metrics` when given."""
    from judge_service.backends.factory import build_backend

    backend = build_backend(settings, metrics or JudgeMetrics())
    started = time.perf_counter()
    log(f"starting the {settings.backend} backend (prefix caching {settings.enable_prefix_caching}) ...")
    await backend.start()
    log(f"backend ready in {time.perf_counter() - started:.1f} s: {backend.model_name}")
    return backend


class SharedBackend:
    """Lends an already started backend to create_app: start() and close() do nothing, so the app's
    lifespan neither loads a second engine nor shuts the shared one down."""

    def __init__(self, inner: JudgeBackend) -> None:
        self._inner = inner

    @property
    def inner(self) -> JudgeBackend:
        return self._inner

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def max_context_tokens(self) -> int | None:
        return self._inner.max_context_tokens

    async def check_health(self) -> BackendHealth:
        return await self._inner.check_health()

    async def start(self) -> None:
        return None

    @property
    def thinking_profile(self) -> ThinkingProfile | None:
        return self._inner.thinking_profile

    async def count_prompt_tokens(
        self, messages: list[dict[str, str]], thinking: ThinkingCall = THINKING_OFF
    ) -> int | None:
        return await self._inner.count_prompt_tokens(messages, thinking)

    async def generate(self, request: GenerationRequest) -> Generation:
        return await self._inner.generate(request)

    async def close(self) -> None:
        return None


class RecordingBackend(SharedBackend):
    """A SharedBackend that keeps every GenerationRequest the service sends while `recording` is on:
    the exact prompts and sampling settings to replay straight into the engine."""

    def __init__(self, inner: JudgeBackend) -> None:
        super().__init__(inner)
        self.recording = False
        self.requests: list[GenerationRequest] = []

    async def generate(self, request: GenerationRequest) -> Generation:
        if self.recording:
            self.requests.append(request)
        return await super().generate(request)


@contextlib.asynccontextmanager
async def running_app(settings: Settings, backend: JudgeBackend) -> AsyncIterator[Any]:
    """create_app(settings, backend=...) with its lifespan entered and the judge ready; yields the app
    (app.state.service is the JudgeService every route uses)."""
    from judge_service.app import create_app

    app = create_app(settings, backend=backend)
    async with app.router.lifespan_context(app):
        deadline = time.monotonic() + 600
        while not app.state.readiness.ready:
            if app.state.readiness.state == "failed":
                raise RuntimeError(app.state.readiness.error)
            if time.monotonic() > deadline:
                raise TimeoutError("the judge never became ready")
            await asyncio.sleep(0.02)
        yield app


async def reset_prefix_cache(backend: JudgeBackend) -> bool:
    """Empty vLLM's prefix cache (so rounds start equal); False when the backend has none to reset."""
    inner = backend.inner if isinstance(backend, SharedBackend) else backend
    engine = getattr(inner, "_engine", None)
    reset = getattr(engine, "reset_prefix_cache", None)
    if reset is None:
        return False
    outcome = reset()
    if asyncio.iscoroutine(outcome):
        outcome = await outcome
    return outcome is not False


@dataclass
class Judge:
    """The engine, the backend lent to the app (sharing or recording the engine), and the app and
    service running on it."""

    engine: JudgeBackend
    lent: JudgeBackend
    app: Any
    settings: Settings

    @property
    def service(self) -> Any:
        return self.app.state.service


@contextlib.asynccontextmanager
async def judge_on_engine(
    name: str,
    metrics: JudgeMetrics | None = None,
    lend: Callable[[JudgeBackend], JudgeBackend] = SharedBackend,
    **overrides: Any,
) -> AsyncIterator[Judge]:
    """The configured engine started once (settings: the benchmark's overrides, the store in a temporary
    folder) and the app running on it, lent through `lend`; the engine closed afterwards."""
    with workdir(name) as tmp:
        settings = bench_settings(tmp, **overrides)
        engine = await start_engine(settings, metrics)
        try:
            lent = lend(engine)
            async with running_app(settings, lent) as app:
                yield Judge(engine, lent, app, settings)
        finally:
            await engine.close()


async def grade_groups(
    service: Any,
    groups: list[dict[str, Any]],
    concurrency: int,
    bodies: Callable[[dict[str, Any]], list[dict[str, Any]]] = lambda body: [body],
) -> tuple[LoadResult, list[Any]]:
    """Every group through JudgeService.grade, `concurrency` groups in flight (closed loop); a group may
    be sent as several requests (`bodies`), its latency until the last returns. Returns the load and
    every response."""
    from judge_service.schemas import JudgeRequest

    async def grade(body: dict[str, Any]) -> list[Any]:
        requests = [JudgeRequest.model_validate(b) for b in bodies(body)]
        return list(await asyncio.gather(*(service.grade(r) for r in requests)))

    load = await run_load(groups, grade, concurrency=concurrency)
    return load, [r for group in load.results for r in group]


def judged(load: LoadResult, responses: list[Any]) -> dict[str, Any]:
    """What a round of judged groups cost: groups/s, latency, and per group the judge calls and tokens,
    and the share of answers scored."""
    answers = [a for r in responses for a in r.answers]
    n = max(1, load.ok)
    return {
        "groups": load.ok,
        "errors": load.errors[:3],
        "wall_s": round(load.wall_s, 3),
        "groups_per_s": round(load.per_second(), 4),
        "latency": latency_summary(load.latencies_s),
        "judge_calls_per_group": round(sum(r.usage.judge_calls for r in responses) / n, 2),
        "prompt_tokens_per_group": round(sum(r.usage.prompt_tokens for r in responses) / n, 1),
        "completion_tokens_per_group": round(sum(r.usage.completion_tokens for r in responses) / n, 1),
        "scored_share": round(sum(a.status == "scored" for a in answers) / max(1, len(answers)), 4),
    }


def judged_table(arm_header: str, *more: Column) -> list[Column]:
    """The table of `judged` entries by arm and groups in flight: latency, groups/s, calls and tokens per
    group, then `more` columns, then the share of answers scored."""
    return [
        arm_col(arm_header),
        level_col("groups in flight"),
        col("groups", "groups"),
        seconds_col("p50 s", "latency.p50_ms"),
        seconds_col("p99 s", "latency.p99_ms"),
        col("groups/s", "groups_per_s"),
        col("calls/group", "judge_calls_per_group"),
        col("prompt tokens/group", "prompt_tokens_per_group"),
        col("completion tokens/group", "completion_tokens_per_group"),
        *more,
        col("scored", "scored_share"),
    ]
