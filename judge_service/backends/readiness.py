"""Whether the judge can judge: one truth for /readyz, the judge_engine_ready gauge and the LLM judge.

States: `loading` (the backend is starting), `ready`, `unavailable` (a remote endpoint stopped
answering its health check; it may come back, and readiness follows it), `failed` (the backend could
not start, or the in-process engine died: final). Groups are refused (503) while loading or failed; while
unavailable they are still sent, and fail or succeed on their own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Literal

from judge_service.backends.base import JudgeBackend
from judge_service.errors import JudgeBackendError, NotReadyError
from judge_service.metrics import JudgeMetrics

log = logging.getLogger(__name__)

State = Literal["loading", "ready", "unavailable", "failed"]


class Readiness:
    def __init__(self, metrics: JudgeMetrics, *, backend: str, juror: str | None = None) -> None:
        self._metrics = metrics
        self.backend = backend  # which kind of backend readiness follows: "vllm", "openai", "fake"
        # A jury judge's own endpoint (judging/jury/): its gauge is judge_jury_judge_ready{judge}.
        self._gauge = metrics.engine_ready if juror is None else metrics.jury_judge_ready.labels(judge=juror)
        self.state: State = "loading"
        self.error: str | None = None

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @property
    def can_judge(self) -> bool:
        """Groups are sent (check_judging passes): ready, or unavailable but not given up on."""
        return self.state in ("ready", "unavailable")

    def set_ready(self) -> None:
        self._set("ready", None)

    def set_unavailable(self, error: str) -> None:
        self._set("unavailable", error)

    def set_failed(self, error: str) -> None:
        self._set("failed", error)

    def _set(self, state: State, error: str | None) -> None:
        if self.state == "failed":  # final: a dead engine does not come back in this process
            return
        self.state, self.error = state, error
        self._gauge.set(1 if state == "ready" else 0)

    def check_judging(self) -> None:
        """NotReadyError (503) when no group can be judged now."""
        if self.state == "loading":
            raise NotReadyError("the judge model is still loading; retry when /readyz answers 200")
        if self.state == "failed":
            raise NotReadyError(f"the judge backend failed: {self.error}")


async def follow_backend(
    backend: JudgeBackend,
    readiness: Readiness,
    *,
    interval_s: float,
    exit_after_s: float,
    on_fatal: Callable[[], None] | None,
) -> None:
    """Start the backend, then ask its health every `interval_s` for as long as the service runs.

    A remote endpoint that is not up yet (JudgeBackendError: a router still waiting for its engines, an
    engine still loading its model) is asked again every `interval_s`, `unavailable` meanwhile, so replicas
    may start before the judge fleet. Any other failed start is reported (`failed`) and the process stays
    up for diagnosis. A backend that dies
    (`fatal`) is reported at once; `exit_after_s` later, `on_fatal` asks the server to stop: it stops
    accepting, lets the requests in flight get their error, and the process exits non-zero (cli.py), as
    vLLM's own server does, so that a supervisor restarts it. A check that fails without being fatal
    (a remote endpoint not answering) makes the service `unavailable` until a check succeeds again.
    """
    attempts = 0
    while True:
        try:
            await backend.start()
            break
        except JudgeBackendError as exc:
            attempts += 1
            readiness.set_unavailable(f"not started yet: {exc.message}")
            if attempts == 1 or attempts % 30 == 0:
                log.warning("the judge endpoint is not up yet (attempt %d): %s", attempts, exc.message)
            await asyncio.sleep(interval_s)
        except Exception as exc:
            readiness.set_failed(f"failed to start: {type(exc).__name__}: {exc}")
            log.exception("the judge backend failed to start")
            return
    readiness.set_ready()
    while True:
        await asyncio.sleep(interval_s)
        health = await backend.check_health()
        if health.ok:
            if not readiness.ready:
                log.info("the judge backend answers again")
            readiness.set_ready()
        elif health.fatal:
            readiness.set_failed(health.error or "the judge backend died")
            log.error(
                "%s; exiting in %g s so that a supervisor restarts the service", readiness.error, exit_after_s
            )
            await asyncio.sleep(exit_after_s)
            if on_fatal is not None:
                on_fatal()
            return
        else:
            if readiness.ready:
                log.warning("the judge backend does not answer: %s", health.error)
            readiness.set_unavailable(health.error or "the judge backend does not answer")
