"""A pool of worker processes (worker.py) that run graders written as code, never on the event loop.

Isolation, per answer: every call has a timeout and a memory cap; a call that raises, hangs past its
timeout, exhausts its memory or kills its worker (os.abort, a segfault) fails that call alone, with an
error that says which (`grader_error`, `grader_timeout`, `grader_memory`, `grader_crashed`). A worker that
hung or died is killed with its whole process group (a grader may start processes of its own) and
replaced at once; the calls after the failed one go to a fresh worker. The pool reads replies on the event
loop through pipes, so a busy or hung worker costs other requests nothing but its own slot.

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
import signal
import struct
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
_MAX_REPLY_BYTES = 64 * 2**20
STALL_S = 1.0
WORKER_MODULE = "judge_service.judging.code.worker"
POOL_PID_ENV = "JUDGE_CODE_POOL_PID"


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


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self._inbox = process.stdin
        self._outbox = process.stdout

    @classmethod
    async def start(cls) -> _Worker:
        env = dict(os.environ)
        # The worker imports graders from where the service does (a module beside the service's cwd too).
        env["PYTHONPATH"] = os.pathsep.join(path or os.getcwd() for path in sys.path)
        env[POOL_PID_ENV] = str(os.getpid())  # the worker stops with its whole group once this is gone
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER_MODULE,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group: killed whole, with what the grader started
            limit=_MAX_REPLY_BYTES,
        )
        return cls(process)

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
                body = await self._outbox.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            raise WorkerLost(await self._death()) from exc
        return json.loads(body)

    async def _death(self) -> str:
        code = await self.process.wait()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the grader's worker process died ({name})"
        return f"the grader's worker process exited with status {code}"

    async def kill(self) -> None:
        if self.alive:
            with contextlib.suppress(ProcessLookupError):  # it died between the check and the kill
                os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()


class WorkerPool:
    """At most `size` workers, started on first use and replaced when one is lost."""

    def __init__(self, size: int, on_replace: Callable[[], None] | None = None) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._size = size
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

    async def describe(self, target: dict[str, str], timeout_s: float = 60.0) -> dict[str, Any]:
        """Import the grader in a worker: its source hash, version and whether it is async. LookupError
        with the worker's message when it cannot be loaded."""
        worker = await self._acquire()
        try:
            await worker.send({"op": "describe", "target": target})
            reply = await worker.receive(timeout_s)
        except (TimeoutError, WorkerLost) as exc:
            await self._lose(worker)
            raise LookupError(f"loading the grader failed: {exc or 'timed out'}") from exc
        self._release(worker)
        if not reply["ok"]:
            raise LookupError(reply["message"])
        return reply

    async def call(
        self,
        target: dict[str, str],
        sha256: str | None,
        calls: Sequence[list[Any]],
        *,
        timeout_s: float,
        memory_mb: int,
    ) -> list[CallResult]:
        """Run `calls` (each a list of positional arguments) in order; one result per call."""
        results: list[CallResult] = []
        while len(results) < len(calls):
            pending = list(calls[len(results) :])
            worker = await self._acquire()
            message = {
                "op": "call",
                "target": target,
                "sha256": sha256,
                "calls": pending,
                "memory_mb": memory_mb,
            }
            try:
                await worker.send(message)
                for _ in pending:
                    results.append(_result(await self._reply(worker, timeout_s)))
            except (
                asyncio.CancelledError
            ):  # the request went away mid-call: its worker is in an unknown state
                await asyncio.shield(self._lose(worker))
                raise
            except TimeoutError:
                await self._lose(worker)
                results.append(
                    CallResult.failed("grader_timeout", f"the grader took longer than {timeout_s:g} s")
                )
                continue
            except WorkerLost as exc:
                await self._lose(worker)
                results.append(CallResult.failed("grader_crashed", str(exc)))
                continue
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

    async def _acquire(self) -> _Worker:
        async with self._available:
            while True:
                if self._closed:
                    raise RuntimeError("the code grader pool is closed")
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive:
                        return worker
                    self._live -= 1  # died while idle
                if self._live < self._size + min(self._stalled, self._size):
                    self._live += 1
                    break
                await self._available.wait()
        try:
            return await _Worker.start()
        except BaseException:
            async with self._available:
                self._live -= 1
                self._available.notify()
            raise

    def _over_capacity(self) -> bool:
        """More workers than the size allows now that the stalled calls that made room have ended."""
        return self._live > self._size + min(self._stalled, self._size)

    def _release(self, worker: _Worker) -> None:
        if self._closed or self._over_capacity():
            self._live -= 1
            self._spawn(worker.kill())
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
        """Kill a worker that hung or died and start its replacement in its slot."""
        await worker.kill()
        self.replaced += 1
        if self._on_replace is not None:
            self._on_replace()
        log.warning("a code grader worker was lost and is replaced (%d so far)", self.replaced)
        if self._closed or self._over_capacity():  # its slot was an extra one, made while calls stalled
            async with self._available:
                self._live -= 1
                self._available.notify()
            return
        try:
            fresh = await _Worker.start()
        except Exception:
            log.exception("starting a code grader worker failed")
            async with self._available:
                self._live -= 1
                self._available.notify()
            return
        self._release(fresh)

    async def fill(self) -> None:
        """Start every worker now (the service's start), instead of on first use."""
        started = []
        for _ in range(self._size):
            started.append(await self._acquire())
        for worker in started:
            self._release(worker)

    def alive_workers(self) -> int:
        """Workers started and not lost (idle or busy)."""
        return self._live

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        await asyncio.gather(*(worker.kill() for worker in idle))
        async with self._available:
            self._available.notify_all()


def _result(reply: dict[str, Any]) -> CallResult:
    if reply["ok"]:
        return CallResult(reply["value"])
    return CallResult.failed(reply["error"], reply["message"])
