"""One tree's app driven in process through ASGI: POST /v1/judge with the fake judge, one request at a time.

    python benchmarks/asgi_driver.py WARMUP GROUPS     (in the tree's folder, the tree first on sys.path)

Every group passes the whole request path but the socket: middleware, routing, validation, grading,
the durable SQLite write, metrics and the reply. The groups are the same for every tree (64 of 8
answers, seeded), and the driver imports only what every tree since 4b52f6d has (create_app, Settings,
FakeBackend), so instruction_guard runs this file against any of them. Prints what it did as one JSON
line; a request answered other than 200 is an error.

One request at a time, so that what a group costs does not hang on timing: with several in flight the
store commits as many judgements together as arrived meanwhile, and under callgrind (50x slower, and
slower still on a busy machine) that number, and the instructions per group with it, moved by 20%
between runs of one tree.
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


async def drive(warmup: int, groups: int) -> dict[str, int]:
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
            for index in range(warmup + groups):
                status = await post(app, "POST", "/v1/judge", payloads[index % len(payloads)])
                if status != 200:
                    raise RuntimeError(f"POST /v1/judge answered {status}")
    return {"warmup": warmup, "groups": groups}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(drive(int(sys.argv[1]), int(sys.argv[2])))))
