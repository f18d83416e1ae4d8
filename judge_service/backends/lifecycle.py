"""The judge engine's sleep and wake, on a trainer's word: POST /v1/engine/sleep, /wake; GET /v1/engine.

A trainer sharing its GPUs with the judge puts it to sleep around the optimizer step and wakes it before
rollouts are judged. States: awake -> draining -> asleep -> waking -> awake, or failed when the engine
could not sleep or wake (it then serves nothing until woken again).

Nothing hangs and nothing is lost:
* Groups in flight when a sleep arrives complete before the engine sleeps (`drain`: the sleep waits
  for the admission's slots to empty, at most JUDGE_SLEEP_DRAIN_TIMEOUT_S, else it is refused with a
  409 and the engine stays awake).
* A group that arrives while the engine is not awake waits at the admission's gate for it to wake, at
  most JUDGE_SLEEP_HOLD_S, then gets a 503 engine_asleep with Retry-After, which the Python client
  retries; with `drain: false` it gets that 503 at once. A group that holds a slot is never
  held: its retries and further orders go on.
* Every call of the engine outside a group's slot (graders' model calls, rubric writing) goes through
  `GatedBackend`: it waits for the engine the same way, and a draining sleep waits for such calls in
  flight too. Only the wake check calls the engine while it is not awake.
* An engine that cannot sleep (vLLM's CPU build, sleep mode not enabled, an endpoint without vLLM's
  sleep routes) answers 409 cannot_sleep saying why, and keeps serving.

The engine's own work is the backend's (`Sleeper`): the in-process vLLM engine uses vLLM's sleep mode
(level 1 offloads the weights to CPU memory and drops the KV cache, level 2 drops both), an endpoint is
slept through vLLM's server routes, the fake judge pretends with a latency.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, runtime_checkable

from judge_service.errors import CannotSleepError, ConflictError, EngineAsleepError, ShuttingDownError
from judge_service.metrics import JudgeMetrics

EngineState = Literal["awake", "draining", "asleep", "waking", "verifying", "failed"]
ENGINE_STATES: tuple[EngineState, ...] = ("awake", "draining", "asleep", "waking", "verifying", "failed")
VERIFY_FAILED = "verify_failed"
DRAIN_POLL_S = 0.01
# Whether the running code holds a group's admission slot (judging/llm/admission.py sets it): its engine
# calls (retries, further orders, a knockout's rounds, a jury's escalation) go on while a sleep drains,
# which waits for the slot; gating them would have each wait for the other.
IN_SLOT: ContextVar[bool] = ContextVar("in_slot", default=False)


@runtime_checkable
class Sleeper(Protocol):
    """A backend whose engine can sleep: what it says when it cannot, and the work itself."""

    def why_no_sleep(self) -> str | None:
        """Why this engine cannot sleep, or None when it can (as far as can be told before trying)."""
        ...

    @property
    def asleep(self) -> bool:
        """Put to sleep and not woken since, as far as this process knows (a service started again over
        a backend object that sleeps starts asleep)."""
        ...

    async def sleep(self, level: int) -> int | None:
        """Sleep at vLLM's `level` (1 or 2); the device memory freed in bytes, when known. Raises
        CannotSleepError when the engine refuses."""
        ...

    async def wake(self) -> None:
        """Wake fully (weights and KV cache back, the prefix cache empty)."""
        ...


class WakeVerifier(Protocol):
    """Whether the judge still judges as before its sleep (judging/llm/wake_check.py)."""

    async def baseline(self) -> None:
        """Judge the probes now, unless done before: called before each sleep, while awake."""
        ...

    async def verify(self) -> tuple[bool, str]:
        """Judge the probes again and compare: (passed, what moved or "marks as before")."""
        ...


@dataclass(frozen=True)
class EngineStatus:
    state: EngineState
    since: datetime
    level: int | None  # the sleep level while draining, asleep or waking
    freed_bytes: int | None  # what the last sleep freed, when the backend knows
    can_sleep: bool
    why_not: str | None
    error: str | None  # why the engine is `failed`
    last_check: str | None  # the last wake check's verdict, None before the first wake


class EngineLifecycle:
    def __init__(
        self,
        backend: object,
        metrics: JudgeMetrics,
        *,
        busy_slots: Callable[[], int],
        hold_s: float,
        drain_timeout_s: float,
        verifier: WakeVerifier | None = None,
    ) -> None:
        self._verifier = verifier
        self._last_check: str | None = None
        self._sleeper = backend if isinstance(backend, Sleeper) else None
        self._metrics = metrics
        self._busy_slots = busy_slots
        self._hold_s = hold_s
        self._drain_timeout_s = drain_timeout_s
        self._state: EngineState = "asleep" if self._sleeper is not None and self._sleeper.asleep else "awake"
        self._since = datetime.now(UTC)
        self._since_monotonic = time.monotonic()
        self._level: int | None = None
        self._freed: int | None = None
        self._error: str | None = None
        self._hold_new = True  # False: a group arriving while not awake is refused at once
        self._stopping = False
        self._awake = asyncio.Event()
        if self._state == "awake":
            self._awake.set()
        self._changing = asyncio.Lock()  # one sleep or wake at a time
        self.calls_in_flight = 0  # engine calls through GatedBackend now (a drain waits for them)
        self._show(self._state)

    @property
    def awake(self) -> bool:
        return self._state == "awake"

    @property
    def state(self) -> EngineState:
        return self._state

    def status(self) -> EngineStatus:
        why = self.why_no_sleep()
        return EngineStatus(
            self._state,
            self._since,
            self._level,
            self._freed,
            why is None,
            why,
            self._error,
            self._last_check,
        )

    def why_no_sleep(self) -> str | None:
        if self._sleeper is None:
            return "this judge backend cannot sleep"
        return self._sleeper.why_no_sleep()

    async def wait_awake(self) -> None:
        """Return once the engine is awake; a 503 engine_asleep after JUDGE_SLEEP_HOLD_S (at once when
        the sleep refused new work). The admission's gate: called before a group takes a slot."""
        if self._state == "awake":
            return
        if not self._hold_new or self._hold_s <= 0:
            self._metrics.engine_requests.labels(outcome="refused").inc()
            raise self._asleep_error()
        if self._stopping:
            raise ShuttingDownError("the service is shutting down; send the request again")
        self._metrics.engine_requests.labels(outcome="held").inc()
        try:
            await asyncio.wait_for(self._awake.wait(), self._hold_s)
        except TimeoutError:
            self._metrics.engine_requests.labels(outcome="refused").inc()
            raise self._asleep_error() from None
        if self._stopping and self._state != "awake":
            raise ShuttingDownError("the service is shutting down; send the request again")

    async def sleep(self, level: int, *, drain: bool = True) -> EngineStatus:
        why = self.why_no_sleep()
        if why is not None or self._sleeper is None:
            raise CannotSleepError(f"the judge's engine cannot sleep: {why}; it keeps serving")
        async with self._changing:
            if self._state != "awake":
                raise ConflictError(f"the engine is {self._state}, not awake: wake it first")
            if self._verifier is not None:
                try:
                    await self._verifier.baseline()  # what the judge gives before its first sleep
                except Exception as exc:
                    raise ConflictError(
                        f"the wake check could not judge its probe groups ({exc}); the engine stays awake. "
                        "JUDGE_WAKE_CHECK=0 lets it sleep without the check"
                    ) from exc
            self._hold_new = drain
            self._level = level
            self._enter("draining")
            deadline = time.monotonic() + self._drain_timeout_s
            try:
                await self._drained(deadline)
            except BaseException:  # timed out, or cancelled: nothing slept, so serve on
                self._enter("awake")
                raise
            try:
                self._freed = await self._sleeper.sleep(level)
            except CannotSleepError:
                self._enter("awake")  # it refused and kept its memory: serve on
                raise
            except Exception as exc:
                self._fail(f"the engine failed to sleep: {exc}")
                raise
            except asyncio.CancelledError:  # the service stopping: say what the engine is
                self._enter("asleep" if self._sleeper.asleep else "awake")
                raise
            self._enter("asleep")
            return self.status()

    async def _drained(self, deadline: float) -> None:
        """Return when no group holds a slot and no engine call is in flight; ConflictError past the
        deadline."""
        while self._busy_slots() > 0 or self.calls_in_flight > 0:
            if time.monotonic() > deadline:
                raise ConflictError(
                    f"groups were still in flight after {self._drain_timeout_s:g} s "
                    "(JUDGE_SLEEP_DRAIN_TIMEOUT_S): the engine stays awake; ask again"
                )
            await asyncio.sleep(DRAIN_POLL_S)

    async def wake(self) -> EngineStatus:
        async with self._changing:
            if self._state == "awake":
                return self.status()
            if self._sleeper is None:  # cannot happen: nothing put it to sleep
                raise CannotSleepError("this judge backend cannot sleep")
            self._enter("waking")
            started = time.monotonic()
            try:
                await self._sleeper.wake()
            except Exception as exc:
                self._fail(f"the engine failed to wake: {exc}")
                raise
            except asyncio.CancelledError:
                self._fail("the wake was cancelled (the service stopping)")
                raise
            self._metrics.engine_wake_seconds.observe(time.monotonic() - started)
            if self._verifier is not None:
                self._enter("verifying")
                try:
                    passed, detail = await self._verifier.verify()
                except Exception as exc:
                    passed, detail = False, f"the probe groups could not be judged: {exc}"
                except asyncio.CancelledError:
                    self._fail("the wake was cancelled during its check (the service stopping)")
                    raise
                self._last_check = detail
                self._metrics.engine_wake_checks.labels(outcome="passed" if passed else "failed").inc()
                if not passed:  # out of service: no group reaches a judge that judges otherwise now
                    self._fail(f"{VERIFY_FAILED}: {detail}")
                    return self.status()
            self._level = None
            self._enter("awake")
            return self.status()

    def stop(self) -> None:
        """The service is shutting down: groups held for a wake are answered now (503 shutting_down)
        instead of at the end of their hold."""
        self._stopping = True
        self._awake.set()  # wakes the held; they see the engine still not awake and leave

    def _enter(self, state: EngineState) -> None:
        now = time.monotonic()
        if self._state == "asleep":
            self._metrics.engine_asleep_seconds.inc(now - self._since_monotonic)
        self._state, self._since, self._since_monotonic = state, datetime.now(UTC), now
        if state == "awake":
            self._error = None
            self._hold_new = True
            self._awake.set()
        elif not self._stopping:
            self._awake.clear()
        self._show(state)

    def _fail(self, error: str) -> None:
        self._enter("failed")
        self._error = error

    def _show(self, state: EngineState) -> None:
        for name in ENGINE_STATES:
            self._metrics.engine_state.labels(state=name).set(1 if name == state else 0)

    def _asleep_error(self) -> EngineAsleepError:
        return EngineAsleepError(
            f"the judge's engine is {self._state} (put to sleep for a trainer sharing its GPUs); send the "
            "request again when it is woken",
            details={"engine": self._state},
        )


class GatedBackend:
    """The judge backend as everything but the wake check calls it: a call waits while the engine is not
    awake (module docstring), and is counted while it runs, so a draining sleep waits for it. Everything
    else is the backend's own."""

    def __init__(self, backend: Any, lifecycle: EngineLifecycle) -> None:
        self._backend = backend
        self._lifecycle = lifecycle

    async def generate(self, request: Any) -> Any:
        lifecycle = self._lifecycle
        if not IN_SLOT.get():  # a group's own calls go on: the drain waits for its slot
            while not lifecycle.awake:  # woken, then put to sleep again before this call ran: wait again
                await lifecycle.wait_awake()
        lifecycle.calls_in_flight += 1  # no await since the check: a sleep cannot slip in between
        try:
            return await self._backend.generate(request)
        finally:
            lifecycle.calls_in_flight -= 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)
