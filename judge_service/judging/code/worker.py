"""The worker process that runs graders written as code: `python -m judge_service.judging.code.worker`.

It imports only the standard library (and the graders' own modules), so a worker starts in a few tens of
milliseconds and user code never runs in the service's process. The protocol, on the pipes the pool
holds: each message is a 4-byte big-endian length and a JSON object. The pool sends one request at a time
and reads every reply before the next:

  {"op": "describe", "target": T}        -> {"ok": true, "source_sha256", "version", "is_async"} | error
  {"op": "check", "target": {"source": S}} -> {"ok": true} | error (compiled, never run)
  {"op": "call", "target": T, "sha256": H, "calls": [args, ...]}
                                         -> one reply per call, in order: {"ok": true, "value": V} | error
  error: {"ok": false, "error": "grader_error" | "grader_memory" | "grader_changed" | "grader_load",
          "message": "..."}

T is {"module": "pkg.mod", "function": "name"} (a function in an importable module) or {"source": "..."}
(inline source defining `grade`). A worker serves one grader: the pool starts it for that grader, in the
sandbox (sandbox.py), with its limits as the one argument `memory_mb,processes,file_mb,cpu_s`. They are
set as hard limits before the first message is read, so before any grader code runs: the address space may
grow by `memory_mb` (a grader that allocates more gets MemoryError, reported as `grader_memory`), at most
`processes` processes and threads, no file over `file_mb`, `cpu_s` CPU seconds in all, OPEN_FILES open
files; and a seccomp filter (seccomp.py) refuses the system calls that would take memory those limits
do not count, or reach the kernel further than a grader needs. A reply over
MAX_REPLY_BYTES is not sent (`grader_invalid_result`); a reply may carry `"retire": true`, asking the pool
for a fresh worker (past half its CPU time, or after running out of memory). What user code prints goes to
stderr: stdout carries the protocol. A worker whose service is gone (its request pipe closed) ends itself
and its process group at once, busy or not (watch_service).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import resource
import select
import signal
import struct
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, BinaryIO

from judge_service.judging.code import seccomp

_HEADER = struct.Struct(">I")
_PAGE = os.sysconf("SC_PAGE_SIZE")
MAX_REPLY_BYTES = 2**20  # a score and its explanation fields; the pool refuses to read more
OPEN_FILES = 256


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    return json.loads(stream.read(size))


def write_message(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message, default=_jsonable, allow_nan=False).encode()
    if len(body) > MAX_REPLY_BYTES:
        raise ValueError(f"it is {len(body)} bytes as JSON; a reply may be at most {MAX_REPLY_BYTES}")
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _jsonable(value: Any) -> Any:
    """What a grader returned that JSON has no type for: shown as text, never an error of its own."""
    return repr(value)


class Loaded:
    """An imported grader function and the hash of the source it came from."""

    def __init__(self, function: Callable[..., Any], source_sha256: str, module: ModuleType | None) -> None:
        self.function = function
        self.source_sha256 = source_sha256
        self.module = module


class Loader:
    def __init__(self) -> None:
        self._loaded: dict[str, Loaded] = {}

    def load(self, target: dict[str, str]) -> Loaded:
        key = json.dumps(target, sort_keys=True)
        found = self._loaded.get(key)
        if found is None:
            found = self._loaded[key] = _load(target)
        return found


def _load(target: dict[str, str]) -> Loaded:
    if "source" in target:
        source = target["source"]
        namespace: dict[str, Any] = {"__name__": "inline_grader"}
        exec(compile(source, "<inline grader>", "exec"), namespace)  # the operator allowed inline python
        function = namespace.get("grade")
        if not callable(function):
            raise LookupError("the source defines no function `grade(sample, item)`")
        return Loaded(function, hashlib.sha256(source.encode()).hexdigest(), None)
    module = importlib.import_module(target["module"])
    function = getattr(module, target["function"], None)
    if not callable(function):
        raise LookupError(f"module {target['module']!r} has no function {target['function']!r}")
    return Loaded(function, _module_sha256(module), module)


def _module_sha256(module: ModuleType) -> str:
    path = getattr(module, "__file__", None)
    if path is None:
        raise LookupError(f"module {module.__name__!r} has no source file to pin")
    with open(path, "rb") as source:
        return hashlib.sha256(source.read()).hexdigest()


def distribution_version(module: ModuleType | None) -> str | None:
    """The installed distribution's name and version, when the module comes from one (asked when a
    grader is described, not at every call: the lookup scans every installed distribution)."""
    if module is None:
        return None
    import importlib.metadata

    top = module.__name__.partition(".")[0]
    names = importlib.metadata.packages_distributions().get(top) or []
    for name in names:
        try:
            return f"{name}=={importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _is_async(function: Callable[..., Any]) -> bool:
    import inspect

    return inspect.iscoroutinefunction(function)


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * _PAGE


def apply_limits(argument: str) -> None:
    """The worker's hard limits (module docstring), lowered for good: no process of this worker's user
    may raise a hard limit again."""
    memory_mb, processes, file_mb, cpu_s = (int(part) for part in argument.split(","))
    hard = {
        resource.RLIMIT_AS: _address_space() + memory_mb * 2**20,
        resource.RLIMIT_NPROC: processes,
        resource.RLIMIT_FSIZE: file_mb * 2**20,
        resource.RLIMIT_CPU: cpu_s,
        resource.RLIMIT_CORE: 0,
        # Each pipe and socket holds kernel memory no address-space limit counts: few of them.
        resource.RLIMIT_NOFILE: OPEN_FILES,
    }
    for kind, limit in hard.items():
        resource.setrlimit(kind, (limit, limit))


def past_half_cpu() -> bool:
    """Retire before the CPU limit ends the worker mid-call."""
    _, limit = resource.getrlimit(resource.RLIMIT_CPU)
    if limit == resource.RLIM_INFINITY:
        return False
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime > limit / 2


def call(function: Callable[..., Any], args: list[Any]) -> Any:
    """Call; what the call returns is awaited when it is awaitable (an async grader, or one wrapped by a
    decorator)."""
    result = function(*args)
    if hasattr(result, "__await__"):
        import asyncio  # only for async graders: with inspect, most of a worker's start-up time

        return asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": kind, "message": message[:2000]}


def _raised(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, MemoryError):
        return _error("grader_memory", "the grader ran out of its memory cap (MemoryError)")
    return _error("grader_error", f"{type(exc).__name__}: {exc}")


def _checked(value: Any) -> dict[str, Any]:
    """A float is finite; anything else is passed on for the pool to judge its shape."""
    if isinstance(value, float) and not math.isfinite(value):
        return _error("grader_invalid_result", f"returned {value!r}; a score must be a finite number")
    return {"ok": True, "value": value}


def serve(inbox: BinaryIO, outbox: BinaryIO) -> None:
    loader = Loader()
    while (message := read_message(inbox)) is not None:
        if message["op"] == "check":  # compile only: inline source checked without running it
            try:
                compile(message["target"]["source"], "<python grader>", "exec")
                write_message(outbox, {"ok": True})
            except SyntaxError as exc:
                write_message(outbox, _error("grader_load", f"{exc.msg} (line {exc.lineno})"))
            except (RecursionError, MemoryError):
                write_message(
                    outbox,
                    _error(
                        "grader_load",
                        "the source is nested too deeply for Python's compiler (an expression thousands of "
                        "levels deep); flatten it",
                    ),
                )
            continue
        if message["op"] == "describe":
            try:
                loaded = loader.load(message["target"])
            except BaseException as exc:
                write_message(outbox, _error("grader_load", f"{type(exc).__name__}: {exc}"))
                continue
            write_message(
                outbox,
                {
                    "ok": True,
                    "source_sha256": loaded.source_sha256,
                    "version": distribution_version(loaded.module),
                    "is_async": _is_async(loaded.function),
                },
            )
            continue
        calls: list[list[Any]] = message["calls"]
        try:
            loaded = loader.load(message["target"])
        except BaseException as exc:
            for _ in calls:
                write_message(outbox, _error("grader_load", f"{type(exc).__name__}: {exc}"))
            continue
        if message.get("sha256") not in (None, loaded.source_sha256):
            changed = _error(
                "grader_changed",
                "the grader's source changed since the service started (it is pinned by its hash); restart "
                "the service to grade with the new code",
            )
            for _ in calls:
                write_message(outbox, changed)
            continue
        for args in calls:
            try:
                reply = _checked(call(loaded.function, args))
            except BaseException as exc:
                reply = _raised(exc)
            if reply.get("error") == "grader_memory" or past_half_cpu():
                reply["retire"] = True
            try:
                write_message(outbox, reply)
            except (TypeError, ValueError) as exc:
                write_message(outbox, _error("grader_invalid_result", f"the result cannot be sent: {exc}"))


def watch_service(inbox: BinaryIO) -> None:
    """End this worker's process group once the service is gone: its end of the request pipe closes,
    which poll() reports even while a grader is busy and the pipe unread. An idle worker would see the
    pipe close anyway; this is for one busy in a grader that never ends. In the sandbox, the kernel then
    ends every process in the worker's PID namespace too, detached or not."""
    poller = select.poll()
    poller.register(inbox.fileno(), 0)  # POLLHUP and POLLERR are reported whatever is asked for

    def watch() -> None:
        while not poller.poll():
            pass
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="service-watch", daemon=True).start()


def main() -> None:
    apply_limits(sys.argv[1])
    if not seccomp.install():  # before any thread starts: threads made later inherit the filter
        print(f"no seccomp filter for {os.uname().machine}: grader code runs without one", file=sys.stderr)
    watch_service(sys.stdin.buffer)
    # The protocol gets stdout's pipe; what user code prints goes to stderr instead.
    outbox = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inbox = sys.stdin.buffer
    sys.stdin = open(os.devnull)  # noqa: SIM115 - user code reading stdin must not eat the protocol
    serve(inbox, outbox)


if __name__ == "__main__":
    main()
