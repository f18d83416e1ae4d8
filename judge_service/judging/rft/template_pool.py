"""A few render processes (template_worker.py) for the templates that are not plain, so that no template
runs on the event loop: each request has a wall-clock timeout, after which its process is killed (and
its slot starts a fresh one on the next request); its memory is capped inside the process; its reply is
read only when its length is within the output cap.

Processes start on first use, at most `workers` at once; a request waits for a free one (the wait is not
part of its timeout). Waiting requests are served in turns by caller (the API key's name, `caller`), not
first come first served: a freed process goes to the next caller in turn, so a caller with one template
waiting behind another's hundred waits for about one render, not a hundred. Every failure is a reply like
the worker's own, `{"ok": false, "message": ...}`, with `"timed_out": true` for a timeout; every reply
says how long it held its process, `seconds` (what a grader's render budget counts, templates.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from judge_service.judging.rft.template_worker import HEADER

log = logging.getLogger(__name__)

WORKER_MODULE = "judge_service.judging.rft.template_worker"


@dataclass(frozen=True)
class TemplateLimits:
    timeout_s: float = 1.0
    max_output_chars: int = 1_000_000
    memory_mb: int = 256
    workers: int = 2

    @property
    def max_reply_bytes(self) -> int:
        return 12 * self.max_output_chars + 2**16  # JSON escapes a character in at most 12 bytes


class _Lost(Exception):
    pass


class _Process:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._inbox = process.stdin
        self._outbox = process.stdout

    @classmethod
    async def start(cls, limits: TemplateLimits) -> _Process:
        # Nothing of the service's environment: a template that escaped the sandbox would find no secret.
        env = {"PYTHONPATH": os.pathsep.join(path or os.getcwd() for path in sys.path)}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER_MODULE,
            str(limits.max_output_chars),
            str(limits.memory_mb),
            str(limits.timeout_s),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,  # and in the service's process group: whatever stops the group stops these too
        )
        return cls(process)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def ask(self, message: dict[str, Any], max_reply_bytes: int) -> dict[str, Any]:
        body = json.dumps(message).encode()
        try:
            self._inbox.write(HEADER.pack(len(body)) + body)
            await self._inbox.drain()
            (size,) = HEADER.unpack(await self._outbox.readexactly(HEADER.size))
            if size > max_reply_bytes:
                raise _Lost(f"its reply of {size} bytes is longer than allowed")
            reply: dict[str, Any] = json.loads(await self._outbox.readexactly(size))
        except (BrokenPipeError, ConnectionResetError, asyncio.IncompleteReadError) as exc:
            code = await self.process.wait()
            raise _Lost(f"its render process ended (status {code})") from exc
        return reply

    async def kill(self) -> None:
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.process.wait()


class RenderPool:
    def __init__(self, limits: TemplateLimits) -> None:
        if limits.workers < 1:
            raise ValueError("a render pool needs at least one process")
        self._limits = limits
        self._slots = FairSlots(limits.workers)
        self._idle: list[_Process] = []
        self._busy: set[_Process] = set()
        self._closed = False
        self.killed = 0  # processes killed after a timeout or a failure

    async def ask(
        self, message: dict[str, Any], *, caller: str = "", timeout_s: float | None = None
    ) -> dict[str, Any]:
        """The reply to `message`, asked in `caller`'s turn, within `timeout_s` (at most the limits')."""
        timeout_s = self._limits.timeout_s if timeout_s is None else min(timeout_s, self._limits.timeout_s)
        async with self._slots.slot(caller):
            process = await self._take()
            self._busy.add(process)
            started = time.perf_counter()
            try:
                async with asyncio.timeout(timeout_s):
                    reply = await process.ask(message, self._limits.max_reply_bytes)
            except TimeoutError:
                await self._lose(process)
                reply = _failed(f"it took longer than {timeout_s:g} s to render") | {"timed_out": True}
            except _Lost as exc:
                await self._lose(process)
                reply = _failed(str(exc))
            except BaseException:  # cancelled mid-request: the process is in an unknown state
                await asyncio.shield(self._lose(process))
                raise
            else:
                self._busy.discard(process)
                if self._closed:
                    await process.kill()
                else:
                    self._idle.append(process)
            reply["seconds"] = time.perf_counter() - started
            return reply

    async def _take(self) -> _Process:
        if self._closed:
            raise RuntimeError("the template render pool is closed")
        while self._idle:
            process = self._idle.pop()
            if process.alive:
                return process
            await process.kill()  # reaps it
        return await _Process.start(self._limits)

    async def _lose(self, process: _Process) -> None:
        self._busy.discard(process)
        self.killed += 1
        await process.kill()
        log.warning("a template render process was killed (%d so far)", self.killed)

    def processes(self) -> int:
        """Render processes started and not ended (idle or busy)."""
        return sum(process.alive for process in (*self._idle, *self._busy))

    async def close(self) -> None:
        self._closed = True
        every, self._idle = [*self._idle, *self._busy], []
        await asyncio.gather(*(process.kill() for process in every))


class FairSlots:
    """`size` slots, handed out in turns by caller: each caller with requests waiting has its own queue,
    and a freed slot goes to the next caller in turn (round robin)."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._queues: dict[str, deque[asyncio.Future[None]]] = {}
        self._turns: deque[str] = deque()  # callers with requests waiting, in the order they are served

    @contextlib.asynccontextmanager
    async def slot(self, caller: str) -> AsyncIterator[None]:
        if self._free > 0:  # a free slot means nobody is waiting: freed slots go to waiters first
            self._free -= 1
        else:
            await self._wait(caller)
        try:
            yield
        finally:
            self._release()

    def waiting(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    async def _wait(self, caller: str) -> None:
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._queues.get(caller)
        if queue is None:
            queue = self._queues[caller] = deque()
            self._turns.append(caller)
        queue.append(granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release()  # handed a slot just as it was cancelled: pass it on
            elif granted in queue:
                queue.remove(granted)
                if not queue:
                    del self._queues[caller]
                    self._turns.remove(caller)
            raise

    def _release(self) -> None:
        """Hand the slot to the next caller in turn, else free it."""
        while self._turns:
            caller = self._turns.popleft()
            queue = self._queues[caller]
            granted = queue.popleft()
            if queue:
                self._turns.append(caller)  # its next request waits for the others' turns
            else:
                del self._queues[caller]
            if not granted.done():  # not cancelled while waiting
                granted.set_result(None)
                return
        self._free += 1


def _failed(message: str) -> dict[str, Any]:
    return {"ok": False, "message": message}
