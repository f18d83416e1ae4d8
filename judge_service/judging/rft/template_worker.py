"""The process templates that are not plain render in:
`python -m judge_service.judging.rft.template_worker <max_output_chars> <memory_mb> <timeout_s>`.

The protocol, on the pipes the pool (template_pool.py) holds: each message a 4-byte big-endian length and
a JSON object, one request at a time, each answered before the next:

  {"op": "check", "template": T}                   -> {"ok": true} | error
  {"op": "render", "template": T, "namespaces": N} -> {"ok": true, "text": "..."} | error
  error: {"ok": false, "message": "what is wrong and what to change"}

Limits no template can lift: the address space may grow by at most memory_mb MiB past what the process
holds once started (RLIMIT_AS, soft and hard), and each request arms a timer whose signal ends the
process, so a render outlives neither its timeout nor a pool that is gone (the pool kills it first when
it is there). A worker whose pool is gone reads the end of its input and exits. The budget of budget.py
refuses the common bombs before they are computed.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import struct
import sys
from functools import lru_cache
from typing import Any, BinaryIO

from jinja2 import Template, TemplateError, UndefinedError

from judge_service.judging.rft.budget import (
    BudgetedEnvironment,
    BudgetExceeded,
    check_constants,
    render_capped,
)

HEADER = struct.Struct(">I")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    message: dict[str, Any] = json.loads(stream.read(size))
    return message


def write_message(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


class Renderer:
    def __init__(self, max_output_chars: int, memory_mb: int) -> None:
        self._env = BudgetedEnvironment(max_output_chars)
        self._max_output_chars = max_output_chars
        self._memory_mb = memory_mb
        self._compiled = lru_cache(maxsize=256)(self._compile)

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        template = message["template"]
        shown = f"template {template[:80]!r}"
        try:
            compiled = self._compiled(template)
            if message["op"] == "check":
                return {"ok": True}
            text = render_capped(compiled, message["namespaces"], self._max_output_chars)
        except BudgetExceeded as exc:
            return _error(f"{shown} is over its budget: {exc}")
        except MemoryError:
            return _error(f"{shown} needs more than the {self._memory_mb} MiB a template may use")
        except UndefinedError as exc:
            return _error(f"{shown}: {exc.message}")
        except (TemplateError, RecursionError) as exc:
            return _error(f"{shown} is invalid: {exc}")
        except Exception as exc:  # the sandbox refusing an attribute, a failing filter
            return _error(f"{shown} failed: {type(exc).__name__}: {exc}")
        return {"ok": True, "text": text}

    def _compile(self, template: str) -> Template:
        check_constants(self._env.parse(template), self._max_output_chars)
        return self._env.from_string(template)


def _error(message: str) -> dict[str, Any]:
    return {"ok": False, "message": message}


def _cap_memory(memory_mb: int) -> None:
    with open("/proc/self/statm") as statm:
        held = int(statm.read().split()[0]) * _PAGE
    cap = held + memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def main() -> None:
    max_output_chars, memory_mb, timeout_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the service, which ends us
    os.nice(10)  # on a busy machine the service's event loop gets the CPU before a template does
    renderer = Renderer(max_output_chars, memory_mb)
    _cap_memory(memory_mb)
    inbox, outbox = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but the protocol on stdout
    while (message := read_message(inbox)) is not None:
        signal.setitimer(signal.ITIMER_REAL, 2 * timeout_s + 1)  # SIGALRM's default action ends the process
        reply = renderer.handle(message)
        signal.setitimer(signal.ITIMER_REAL, 0)
        write_message(outbox, reply)


if __name__ == "__main__":
    main()
