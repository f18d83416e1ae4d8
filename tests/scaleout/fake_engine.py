"""An OpenAI-compatible stand-in for one `vllm serve` engine, for router tests on a machine without GPUs:
the project's FakeBackend behind /v1/chat/completions, /v1/models, /health and /metrics, in a process of
its own. GET /stats says which group ids (the X-Session-ID header) it served, and how often.

    python -m tests.scaleout.fake_engine --name A --latency 0.05 [--model judge-b]   (port from the OS,
    logged by uvicorn)
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import uvicorn
from fastapi import FastAPI, Request

from judge_service.backends.base import GenerationRequest
from judge_service.backends.fake import FakeBackend

MODEL = "fake-judge"


def build(name: str, latency_s: float, model: str = MODEL) -> FastAPI:
    app = FastAPI()
    backend = FakeBackend(latency_s=latency_s, model_name=model)
    sessions: Counter[str] = Counter()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": model, "object": "model", "max_model_len": 32768}]}

    @app.get("/metrics")
    async def metrics() -> str:
        return ""

    @app.get("/stats")
    async def stats() -> dict[str, Any]:
        return {"name": name, "requests": sum(sessions.values()), "sessions": dict(sessions)}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict[str, Any]:
        body = await request.json()
        sessions[request.headers.get("x-session-id", "")] += 1
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema")
        reply = await backend.generate(
            GenerationRequest(messages=body["messages"], max_tokens=body["max_tokens"], json_schema=schema)
        )
        return {
            "id": f"{name}-{sum(sessions.values())}",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }

    return app


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default=MODEL, help="The model name it serves (and its fake judge's).")
    args = parser.parse_args()
    uvicorn.run(
        build(args.name, args.latency, args.model), host="127.0.0.1", port=args.port, log_level="info"
    )


if __name__ == "__main__":
    main()
