"""Steady load from a process of its own: POST /v1/judge groups, each with an Idempotency-Key of its own,
round robin over the replicas' URLs, and write what each request got to a JSON file.

    python -m tests.scaleout.load --urls http://a,http://b --requests 300 --concurrency 12 --out results.json

One line per request in the output: key, url, HTTP status (0 when no response came: refused or cut
off), judgement id when 200, Retry-After when given, and seconds taken.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx


def body(i: int, run_id: str) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": f"Question {i}: how do I share the report?"}],
        "reference": "Click Share.",
        "answers": [{"id": f"a{j}", "text": f"Answer {j} to question {i}"} for j in range(4)],
        "run_id": run_id,
        "step": i,
    }


async def send(client: httpx.AsyncClient, url: str, i: int, run_id: str, prefix: str) -> dict[str, Any]:
    key = f"{prefix}-{i}"
    started = time.monotonic()
    outcome: dict[str, Any] = {"key": key, "url": url, "status": 0, "judgement_id": None, "retry_after": None}
    try:
        response = await client.post(
            f"{url}/v1/judge", json=body(i, run_id), headers={"Idempotency-Key": key}
        )
        outcome["status"] = response.status_code
        outcome["retry_after"] = response.headers.get("retry-after")
        if response.status_code == 200:
            outcome["judgement_id"] = response.json()["judgement_id"]
        else:
            outcome["error"] = response.json()["error"]["code"]
    except httpx.HTTPError as exc:
        outcome["error"] = type(exc).__name__
    outcome["seconds"] = round(time.monotonic() - started, 3)
    return outcome


async def run(
    urls: list[str], requests: int, concurrency: int, run_id: str, prefix: str
) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=concurrency * 2)) as client:

        async def one(i: int) -> dict[str, Any]:
            async with gate:
                return await send(client, urls[i % len(urls)], i, run_id, prefix)

        return list(await asyncio.gather(*(one(i) for i in range(requests))))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", required=True, help="comma-separated base URLs of the replicas")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--run-id", default="load")
    parser.add_argument("--key-prefix", default="load")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    urls = args.urls.split(",")
    results = asyncio.run(run(urls, args.requests, args.concurrency, args.run_id, args.key_prefix))
    args.out.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
