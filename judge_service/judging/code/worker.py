"""The worker process that runs graders written as code: `python -m judge_service.judging.code.worker`.

It imports only the standard library (and the graders' own modules), so a worker starts in a few tens of
milliseconds and user code never runs in the service's process. The protocol, on the pipes the pool
holds: each message is a 4-byte big-endian length and a JSON object. The pool sends one request at a time
and reads every reply before the next:

  {"op": "describe", "target": T}        -> {"ok": true, "source_sha256", "version", "is_async"} | error
  {"op": "call", "target": T, "sha256": H, "calls": [args, ...], "memory_mb": M}
                                         -> one reply per call, in order: {"ok": true, "value": V} | error
  error: {"ok": false, "error": "grader_error" | "grader_memory" | "grader_changed" | "grader_load",
          "message": "..."}

T is {"module": "pkg.mod", "function": "name"} (a function in an importable module) or {"source": "..."}
(inline source defining `grade`). Before each call the worker's address space may grow by at most M MiB
(RLIMIT_AS, set and lifted around the call): a grader that allocates more gets MemoryError, reported as
`grader_memory`. What user code prints goes to stderr: stdout carries the protocol. A worker whose
service is gone kills its own process group (watch_service).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import resource
import signal
import struct
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, BinaryIO

_HEADER = struct.Struct(">I")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    return json.loads(stream.read(size))


def write_message(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message, default=_jsonable, allow_nan=False).encode()
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


def call_capped(function: Callable[..., Any], args: list[Any], memory_mb: int) -> Any:
    """Call with the address space capped at what it is now plus `memory_mb`; what the call returns is
    awaited when it is awaitable (an async grader, or one wrapped by a decorator)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _address_space() + memory_mb * 2**20
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        result = function(*args)
        if hasattr(result, "__await__"):
            import asyncio  # only for async graders: with inspect, most of a worker's start-up time

            return asyncio.run(_awaited(result))
        return result
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


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
                reply = _checked(call_capped(loaded.function, args, message["memory_mb"]))
            except BaseException as exc:
                reply = _raised(exc)
            try:
                write_message(outbox, reply)
            except (TypeError, ValueError) as exc:
                write_message(outbox, _error("grader_invalid_result", f"the result is not JSON: {exc}"))


def watch_service(poll_s: float = 0.5) -> None:
    """Kill this worker's process group (what its grader started with it) once the service that started it
    is gone. An idle worker sees its pipe close and returns; this is for one busy in a grader that never
    ends, which nothing would stop once the service that would time it out is dead."""
    service = int(os.environ.get("JUDGE_CODE_POOL_PID") or os.getppid())

    def watch() -> None:
        pause = threading.Event()
        while os.getppid() == service:
            pause.wait(poll_s)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="service-watch", daemon=True).start()


def main() -> None:
    watch_service()
    # The protocol gets stdout's pipe; what user code prints goes to stderr instead.
    outbox = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inbox = sys.stdin.buffer
    sys.stdin = open(os.devnull)  # noqa: SIM115 - user code reading stdin must not eat the protocol
    serve(inbox, outbox)


if __name__ == "__main__":
    main()
