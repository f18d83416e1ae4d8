"""One tree's app driven in process through ASGI: POST /v1/judge with the fake judge, IN_FLIGHT at a time.

    python benchmarks/asgi_driver.py WARMUP GROUPS [IN_FLIGHT]     (in the tree's folder, first on sys.path)

Every group passes the whole request path but the socket: middleware, routing, validation, grading,
the durable SQLite write, metrics and the reply. The groups are the same for every tree (64 of 8
answers, seeded), and the driver imports only what every tree since 4b52f6d has (create_app, Settings,
FakeBackend), so instruction_guard runs this file against any of them. Prints what it did as one JSON
line; a request answered other than 200 is an error.

With several in flight (8 by default) the event loop and the store share work between requests, as
they do under load: one at a time, every request pays a whole turn of the loop and the wake-up from the
store's writer thread alone. How many judgements the store commits together hangs on timing, so the
instructions of all threads move between runs (by 20% under callgrind, 50x slower, on a busy machine);
instruction_guard counts the main thread's, which move far less.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

WORDS = (
    "the",
    "report",
    "share",
    "client",
    "open",
    "click",
    "pick",
    "menu",
    "page",
    "export",
    "link",
    "send",
)


def bodies(count: int = 64, answers: int = 8, seed: int = 7) -> list[bytes]:
    """`count` distinct groups of `answers` answers, the same on every run."""
    rng = random.Random(seed)

    def text(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."

    return [
        json.dumps(
            {
                "run_id": "instructions",
                "conversation": [{"role": "user", "content": text(20)}],
                "reference": text(30),
                "answers": [{"id": f"a{i}", "text": text(rng.randint(10, 60))} for i in range(answers)],
            }
        ).encode()
        for _ in range(count)
    ]


async def post(app: Any, method: str, path: str, body: bytes = b"") -> int:
    """One request through the app's ASGI interface; its status."""
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")]
    if body:
        headers.append((b"content-length", str(len(body)).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # no disconnect while the reply is written
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    return status[0]


async def drive(warmup: int, groups: int, in_flight: int) -> dict[str, int]:
    from judge_service.app import create_app
    from judge_service.backends.fake import FakeBackend
    from judge_service.config import Settings

    payloads = bodies()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(backend="fake", home_dir=Path(tmp), db_path=Path(tmp) / "judgements.sqlite3")
        app = create_app(settings, backend=FakeBackend())
        async with app.router.lifespan_context(app):
            for _ in range(6000):  # the fake judge is ready at once; a minute at most
                if await post(app, "GET", "/readyz") == 200:
                    break
                await asyncio.sleep(0.01)
            gate = asyncio.Semaphore(in_flight)

            async def one(index: int) -> None:
                async with gate:
                    status = await post(app, "POST", "/v1/judge", payloads[index % len(payloads)])
                if status != 200:
                    raise RuntimeError(f"POST /v1/judge answered {status}")

            await asyncio.gather(*(one(i) for i in range(warmup)))
            await asyncio.gather(*(one(i) for i in range(groups)))
    return {"warmup": warmup, "groups": groups, "in_flight": in_flight}


if __name__ == "__main__":
    in_flight = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    print(json.dumps(asyncio.run(drive(int(sys.argv[1]), int(sys.argv[2]), in_flight))))
