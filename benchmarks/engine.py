"""The judge in-process: settings for a benchmark, the real engine started once, backends that share or
record it, and the app running on it without HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.report import log
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
