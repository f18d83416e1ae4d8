"""A pool of worker processes (worker.py) that run graders written as code, never on the event loop, each
worker in the sandbox (sandbox.py).

A worker serves one grader with that grader's limits (a `Binding`): it is started for it, reused only for
it, and when the pool is full an idle worker of another grader makes way. So one grader's code never runs
in a process another grader's calls pass through, and each grader's hard limits are its own. A pool made
with `reuse=False` (inline python) runs every call in a fresh worker.

Isolation, per answer: every call has a timeout, and the worker's hard limits; a call that raises, hangs
past its timeout, exhausts its memory or kills its worker (os.abort, a segfault) fails that call alone,
with an error that says which (`grader_error`, `grader_timeout`, `grader_memory`, `grader_crashed`). A
worker that hung, died, or sent a reply over MAX_REPLY_BYTES (refused before it is read) is killed with
everything it started and replaced at once; the calls after the failed one go to a fresh worker. The pool
reads replies on the event loop through pipes, so a busy or hung worker costs other requests nothing but
its own slot.

One group's calls go to one worker in one message (a round trip per group, not per answer); each reply is
awaited with the call's own timeout. A call still running after min(STALL_S, timeout / 4) stops counting
against the pool's size until it ends (the pool then runs up to twice its size), so one hanging grader
delays only its own answers (benchmarks/code_graders.py measures it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import struct
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from judge_service.judging.code.sandbox import Launch, Sandbox, WorkerLimits
from judge_service.judging.code.worker import MAX_REPLY_BYTES

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
STALL_S = 1.0
OUTPUT_LINES_PER_S = 20
OUTPUT_BURST = 200
OUTPUT_LINE_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# The failures a worker reports itself (worker.py); the pool adds grader_timeout and grader_crashed.
WORKER_ERRORS = frozenset(
    {"grader_error", "grader_memory", "grader_changed", "grader_load", "grader_invalid_result"}
)


@dataclass(frozen=True)
class Binding:
    """The one grader a worker serves, and its limits."""

    target: tuple[tuple[str, str], ...]
    limits: WorkerLimits

    @classmethod
    def of(cls, target: dict[str, str], limits: WorkerLimits) -> Binding:
        return cls(tuple(sorted(target.items())), limits)

    @property
    def name(self) -> str:
        """How its output is marked in the service's log."""
        target = dict(self.target)
        return f"{target['module']}:{target['function']}" if "module" in target else "inline python"

    @property
    def modules(self) -> tuple[str, ...]:
        module = dict(self.target).get("module")
        return (module,) if module else ()


@dataclass(frozen=True)
class CallResult:
    """One call's outcome: `value`, or `error` (a code) and `message`."""

    value: Any = None
    error: str | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failed(cls, error: str, message: str) -> CallResult:
        return cls(None, error, message)


class WorkerLost(Exception):
    """The worker stopped answering: it died, or was killed after a timeout."""


class GraderOutput:
    """What a grader prints, into the service's log: each line as its own record, marked with the grader's
    name and with control characters shown escaped, so grader code cannot write lines that pass for the
    service's. At most OUTPUT_LINES_PER_S lines a second (bursts of OUTPUT_BURST), each cut to
    OUTPUT_LINE_CHARS; the rest is read and counted, not logged."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._allowance = float(OUTPUT_BURST)
        self._last = time.monotonic()
        self._dropped = 0

    async def relay(self, stream: asyncio.StreamReader) -> None:
        pending = b""
        while chunk := await stream.read(2**16):
            *lines, pending = (pending + chunk).split(b"\n")
            if len(pending) > OUTPUT_LINE_CHARS:  # a line without an end: logged in pieces
                lines.append(pending)
                pending = b""
            self._log(lines)
        self._log([pending] if pending else [])
        self._log_dropped()

    def _log(self, lines: list[bytes]) -> None:
        now = time.monotonic()
        self._allowance = min(OUTPUT_BURST, self._allowance + (now - self._last) * OUTPUT_LINES_PER_S)
        self._last = now
        for line in lines:
            if self._allowance < 1:
                self._dropped += 1
                continue
            self._allowance -= 1
            text = line[:OUTPUT_LINE_CHARS].decode(errors="replace")
            log.info("grader %s printed: %s", self._name, _CONTROL.sub(_escaped, text))
        if self._dropped and self._allowance >= 1:
            self._log_dropped()

    def _log_dropped(self) -> None:
        if self._dropped:
            log.warning(
                "grader %s printed %d lines more than its %d a second; they were not logged",
                self._name,
                self._dropped,
                OUTPUT_LINES_PER_S,
            )
            self._dropped = 0


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


class _Refused(Exception):
    """A describe or check the worker could not answer (`lost`: the worker is gone) or said no to."""

    def __init__(self, message: str, *, lost: bool) -> None:
        super().__init__(message)
        self.lost = lost


class ReplyTooLarge(Exception):
    """The worker announced a reply over MAX_REPLY_BYTES; it is not read, and the worker is lost."""


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process, binding: Binding, launch: Launch) -> None:
        self.process = process
        self.binding = binding
        self.launch = launch
        self.retiring = False  # it asked for a fresh worker to take its place (worker.py)
        self.output: asyncio.Task[None] | None = None
        assert process.stdin is not None and process.stdout is not None
        self._inbox = process.stdin
        self._outbox = process.stdout

    @classmethod
    async def start(cls, sandbox: Sandbox, binding: Binding) -> _Worker:
        launch = sandbox.launch(binding.limits, binding.modules)
        try:
            process = await asyncio.create_subprocess_exec(
                *launch.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,  # relayed line by line, marked as the grader's (GraderOutput)
                env=launch.env,
                start_new_session=True,  # its own process group: killed whole, with what the grader started
            )
        except BaseException:
            sandbox.release(launch)
            raise
        worker = cls(process, binding, launch)
        assert process.stderr is not None
        worker.output = asyncio.get_running_loop().create_task(
            GraderOutput(binding.name).relay(process.stderr)
        )
        return worker

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self._inbox.write(_HEADER.pack(len(body)) + body)
        try:
            await self._inbox.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise WorkerLost(await self._death()) from exc

    async def receive(self, timeout_s: float | None) -> dict[str, Any]:
        try:
            async with asyncio.timeout(timeout_s):
                header = await self._outbox.readexactly(_HEADER.size)
                (size,) = _HEADER.unpack(header)
                if size > MAX_REPLY_BYTES:
                    raise ReplyTooLarge(
                        f"the grader's reply was {size} bytes; a reply may be at most {MAX_REPLY_BYTES}"
                    )
                body = await self._outbox.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            raise WorkerLost(await self._death()) from exc
        reply = _decoded(body)
        self.retiring = self.retiring or reply.get("retire") is True
        return reply

    async def _death(self) -> str:
        code = await self.process.wait()
        # A signal ends a plain worker with -N; bwrap reports its command's death by signal N as 128 + N.
        signalled = -code if code < 0 else code - 128 if code > 128 else None
        if signalled is not None:
            try:
                name = signal.Signals(signalled).name
            except ValueError:
                name = f"signal {signalled}"
            return f"the grader's worker process died ({name})"
        return f"the grader's worker process exited with status {code}"

    async def kill(self, sandbox: Sandbox) -> None:
        if self.alive:
            with contextlib.suppress(ProcessLookupError):  # it died between the check and the kill
                os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        sandbox.release(self.launch)
        if self.output is not None:  # ends at the pipe's end, unless a descendant still holds it
            self.output.cancel()


class WorkerPool:
    """At most `size` workers, each started for one grader on first use and replaced when one is lost."""

    def __init__(
        self,
        size: int,
        sandbox: Sandbox | None = None,
        *,
        reuse: bool = True,
        on_replace: Callable[[], None] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._size = size
        self._sandbox = sandbox or Sandbox()
        self._reuse = reuse
        self._idle: list[_Worker] = []
        self._live = 0
        self._stalled = 0  # workers whose call has run past its stall time (_reply)
        self._background: set[asyncio.Task[None]] = set()
        self._available = asyncio.Condition()
        self._closed = False
        self.replaced = 0  # workers lost and replaced
        self._on_replace = on_replace

    @property
    def size(self) -> int:
        return self._size

    async def describe(
        self, target: dict[str, str], limits: WorkerLimits, timeout_s: float = 60.0
    ) -> dict[str, Any]:
        """Import the grader in a worker of its own: its source hash, version and whether it is async.
        LookupError with the worker's message when it cannot be loaded. The worker stays, warm."""
        try:
            return await self._ask("describe", target, limits, timeout_s)
        except _Refused as exc:
            raise LookupError(f"loading the grader failed: {exc}" if exc.lost else str(exc)) from exc

    async def check(self, source: str, limits: WorkerLimits, timeout_s: float = 10.0) -> None:
        """Compile inline source in a worker, never running it (the compiler is slow and deep-recursive
        on hostile source: not on the event loop). SyntaxError saying what and where when it does not
        compile."""
        try:
            await self._ask("check", {"source": source}, limits, timeout_s)
        except _Refused as exc:
            raise SyntaxError(f"checking the source failed: {exc}" if exc.lost else str(exc)) from exc

    async def _ask(
        self, op: str, target: dict[str, str], limits: WorkerLimits, timeout_s: float
    ) -> dict[str, Any]:
        """One request and its reply on a worker of the target's; _Refused when the worker says no, or
        was lost (timed out, died, or answered outside the protocol)."""
        worker = await self._acquire(Binding.of(target, limits))
        try:
            await worker.send({"op": op, "target": target})
            reply = await worker.receive(timeout_s)
        except BaseException as exc:  # its state is unknown: never back in the pool
            await asyncio.shield(self._lose(worker))
            if isinstance(exc, TimeoutError | WorkerLost | ReplyTooLarge):
                raise _Refused(str(exc) or "timed out", lost=True) from exc
            raise
        self._release(worker)
        if not reply["ok"]:
            raise _Refused(reply["message"], lost=False)
        return reply

    async def call(
        self,
        target: dict[str, str],
        sha256: str | None,
        calls: Sequence[list[Any]],
        *,
        timeout_s: float,
        limits: WorkerLimits,
    ) -> list[CallResult]:
        """Run `calls` (each a list of positional arguments) in order; one result per call."""
        binding = Binding.of(target, limits)
        results: list[CallResult] = []
        while len(results) < len(calls):
            pending = list(calls[len(results) :])
            worker = await self._acquire(binding)
            message = {"op": "call", "target": target, "sha256": sha256, "calls": pending}
            try:
                await worker.send(message)
                for _ in pending:
                    results.append(_result(await self._reply(worker, timeout_s)))
            except TimeoutError:
                await self._lose(worker)
                results.append(
                    CallResult.failed("grader_timeout", f"the grader took longer than {timeout_s:g} s")
                )
                continue
            except ReplyTooLarge as exc:
                await self._lose(worker)
                results.append(CallResult.failed("grader_invalid_result", str(exc)))
                continue
            except WorkerLost as exc:
                await self._lose(worker)
                results.append(CallResult.failed("grader_crashed", str(exc)))
                continue
            except BaseException:  # cancelled (the request went away) or worse: the worker's state is unknown
                await asyncio.shield(self._lose(worker))
                raise
            self._release(worker)
        return results

    async def _reply(self, worker: _Worker, timeout_s: float) -> dict[str, Any]:
        """The worker's next reply within `timeout_s`. A call still running after STALL_S (or a quarter of
        its timeout) stops counting against the pool's size, so a grader that hangs delays only its own
        answers, not every other grader's: the pool may then run up to twice its size."""
        stall_s = min(STALL_S, timeout_s / 4)
        receiving = asyncio.ensure_future(worker.receive(None))
        try:
            done, _ = await asyncio.wait({receiving}, timeout=stall_s)
            if not done:
                await self._count_stalled(+1)
                try:
                    done, _ = await asyncio.wait({receiving}, timeout=timeout_s - stall_s)
                finally:
                    await self._count_stalled(-1)
                if not done:
                    raise TimeoutError
            return receiving.result()
        finally:
            if not receiving.done():
                receiving.cancel()

    async def _count_stalled(self, change: int) -> None:
        async with self._available:
            self._stalled += change
            if change > 0:
                self._available.notify()

    async def _acquire(self, binding: Binding) -> _Worker:
        async with self._available:
            while True:
                if self._closed:
                    raise RuntimeError("the code grader pool is closed")
                self._drop_dead()
                mine = next((w for w in self._idle if w.binding == binding), None)
                if mine is not None:
                    self._idle.remove(mine)
                    return mine
                if self._live < self._size + min(self._stalled, self._size):
                    self._live += 1
                    break
                if self._idle:  # full of other graders' idle workers: the oldest makes way
                    self._spawn(self._idle.pop(0).kill(self._sandbox))
                    break  # its slot passes to the new worker
                await self._available.wait()
        try:
            return await _Worker.start(self._sandbox, binding)
        except BaseException:
            async with self._available:
                self._live -= 1
                self._available.notify()
            raise

    def _drop_dead(self) -> None:
        for worker in [w for w in self._idle if not w.alive]:
            self._idle.remove(worker)
            self._live -= 1
            self._spawn(worker.kill(self._sandbox))  # reaped, its user released

    def _over_capacity(self) -> bool:
        """More workers than the size allows now that the stalled calls that made room have ended."""
        return self._live > self._size + min(self._stalled, self._size)

    def _release(self, worker: _Worker) -> None:
        if self._closed or self._over_capacity() or not self._reuse or worker.retiring:
            self._live -= 1
            self._spawn(worker.kill(self._sandbox))
        else:
            self._idle.append(worker)
        self._spawn(self._notify())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._background.discard)

    async def _notify(self) -> None:
        async with self._available:
            self._available.notify()

    async def _lose(self, worker: _Worker) -> None:
        """Kill a worker that hung or died and start its replacement in its slot (a reusing pool)."""
        await worker.kill(self._sandbox)
        self.replaced += 1
        if self._on_replace is not None:
            self._on_replace()
        log.warning("a code grader worker was lost and is replaced (%d so far)", self.replaced)
        if self._closed or self._over_capacity() or not self._reuse:
            async with self._available:
                self._live -= 1
                self._available.notify()
            return
        try:
            fresh = await _Worker.start(self._sandbox, worker.binding)
        except Exception:
            log.exception("starting a code grader worker failed")
            async with self._available:
                self._live -= 1
                self._available.notify()
            return
        self._release(fresh)

    def alive_workers(self) -> int:
        """Workers started and not lost (idle or busy)."""
        return self._live

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        await asyncio.gather(*(worker.kill(self._sandbox) for worker in idle))
        await asyncio.gather(*list(self._background), return_exceptions=True)
        async with self._available:
            self._available.notify_all()


def _decoded(body: bytes) -> dict[str, Any]:
    """A reply as the protocol has it (worker.py), or WorkerLost: grader code can write to the protocol's
    pipe itself, so what comes back is checked like any other input (JSON without NaN or Infinity,
    nested no deeper than Python reads, an object with a boolean `ok`, an error with its code and
    message)."""
    try:
        reply = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise WorkerLost(f"the worker's reply is not the protocol's JSON ({exc})") from exc
    well_formed = isinstance(reply, dict) and isinstance(reply.get("ok"), bool)
    if well_formed and not reply["ok"]:  # a code from a fixed set: codes become metric labels
        well_formed = reply.get("error") in WORKER_ERRORS and isinstance(reply.get("message"), str)
    if not well_formed:
        raise WorkerLost("the grader's worker sent a reply that is not one of the protocol's")
    return reply


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON holds")


def _result(reply: dict[str, Any]) -> CallResult:
    if reply["ok"]:
        return CallResult(reply.get("value"))
    return CallResult.failed(reply["error"], reply["message"][:2000])
