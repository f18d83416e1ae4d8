"""An OpenAI-compatible stand-in for one `vllm serve` engine, for router tests on a machine without GPUs:
the project's FakeBackend behind /v1/chat/completions, /v1/models, /health and /metrics, in a process of
its own. GET /stats says which group ids (the X-Session-ID header) it served, and how often.

With `--policy` it stands in for the policy under training instead of a judge: each reply is a short
answer of its own ("Answer 3 to: <the question>"), so the rollouts of one prompt differ. Replies stream
(server-sent events, usage last when asked) when the request says `stream`, as vLLM's do.

    python -m tests.scaleout.fake_engine --name A --latency 0.05 [--model judge-b] [--policy]
    (port from the OS, logged by uvicorn)
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from judge_service.backends.base import GenerationRequest
from judge_service.backends.fake import FakeBackend

MODEL = "fake-judge"
DEFAULT_MAX_TOKENS = 1024  # what a request without max_tokens may use, as the engine's context allows


def build(name: str, latency_s: float, model: str = MODEL, policy: bool = False) -> FastAPI:
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

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(request: Request) -> dict[str, Any] | StreamingResponse:
        body = await request.json()
        sessions[request.headers.get("x-session-id", "")] += 1
        served = sum(sessions.values())
        if policy:
            text = _policy_answer(body["messages"], served)
            usage = _usage(len(json.dumps(body["messages"])) // 4, len(text) // 4)
        else:
            schema = body.get("response_format", {}).get("json_schema", {}).get("schema")
            reply = await backend.generate(
                GenerationRequest(
                    messages=body["messages"],
                    max_tokens=body.get("max_tokens") or DEFAULT_MAX_TOKENS,
                    json_schema=schema,
                )
            )
            text, usage = reply.text, _usage(reply.prompt_tokens, reply.completion_tokens)
        head = {"id": f"{name}-{served}", "created": int(time.time()), "model": model}
        if body.get("stream"):
            with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = _events(head, text, usage if with_usage else None)
            return StreamingResponse(events, media_type="text/event-stream")
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return {**head, "object": "chat.completion", "choices": [choice], "usage": usage}

    return app


def _policy_answer(messages: list[dict[str, Any]], served: int) -> str:
    question = next((str(m["content"]) for m in reversed(messages) if m["role"] == "user"), "")
    return f"Answer {served} to: {question[:80]}"


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    total = prompt_tokens + completion_tokens
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": total}


def _events(head: dict[str, Any], text: str, usage: dict[str, int] | None) -> Iterator[str]:
    """The reply as chat.completion.chunk events: the text in two deltas, the finish, the usage if asked."""
    chunk = {**head, "object": "chat.completion.chunk"}
    half = len(text) // 2
    deltas = [{"role": "assistant", "content": text[:half]}, {"content": text[half:]}]
    for delta in deltas:
        yield _event({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    yield _event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage is not None:
        yield _event({**chunk, "choices": [], "usage": usage})
    yield "data: [DONE]\n\n"


def _event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data)}\n\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default=MODEL, help="The model name it serves (and its fake judge's).")
    parser.add_argument("--policy", action="store_true", help="Answer as a policy, not as a judge.")
    args = parser.parse_args()
    uvicorn.run(
        build(args.name, args.latency, args.model, args.policy),
        host="127.0.0.1",
        port=args.port,
        log_level="info",
    )


if __name__ == "__main__":
    main()
