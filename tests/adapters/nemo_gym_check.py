"""Run by tests/adapters/test_nemo_gym.py inside the NeMo Gym environment (.venv-nemo-gym), with this
repository on PYTHONPATH: the resources server's /verify, through NeMo Gym's own webserver (and so its
judge failsafe), with real BaseVerifyRequest bodies, against the service at argv[1]. argv[2]: a port that
refuses connections. Prints one JSON object of what came back."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any
from unittest.mock import MagicMock

import httpx
from nemo_gym.openai_utils import (
    NeMoGymFunctionCallOutput,
    NeMoGymResponse,
    NeMoGymResponseCreateParamsNonStreaming,
    NeMoGymResponseFunctionToolCall,
    NeMoGymResponseOutputMessage,
    NeMoGymResponseOutputText,
)
from nemo_gym.server_utils import ServerClient

from judge_service.adapters.nemo_gym import JudgeServiceConfig, JudgeServiceResourcesServer

MARKER = "[fake judge: leave one answer unscored]"  # judge_service.backends.fake.LEAVE_ONE_UNSCORED
ANSWERS = ["Click Share.", "Use the Share button.", "Email it.", "You cannot."]


SEARCH = {"type": "function", "name": "search", "parameters": {"type": "object"}, "strict": True}


def message(text: str) -> NeMoGymResponseOutputMessage:
    return NeMoGymResponseOutputMessage(
        id="msg",
        content=[NeMoGymResponseOutputText(annotations=[], text=text, type="output_text")],
        role="assistant",
        status="completed",
        type="message",
    )


def agent_output(tool: str, found: str) -> list[Any]:
    """A rollout that called a function, read its output and replied (Responses API items)."""
    arguments = json.dumps({"q": found})
    return [
        NeMoGymResponseFunctionToolCall(arguments=arguments, call_id="fc_1", name=tool, type="function_call"),
        NeMoGymFunctionCallOutput(
            call_id="fc_1", output=f"<page>{found}</page>", type="function_call_output"
        ),
        message(f"Found: {found}."),
    ]


def body(
    question: str, answer: str, group_id: str | None = None, output: list[Any] | None = None
) -> dict[str, Any]:
    response = NeMoGymResponse(
        id="resp",
        created_at=0.0,
        model="policy",
        object="response",
        output=output or [message(answer)],
        parallel_tool_calls=False,
        tool_choice="none",
        tools=[],
    )
    params = NeMoGymResponseCreateParamsNonStreaming(
        input=[{"role": "user", "content": question}], tools=[SEARCH] if output else []
    )
    data = {
        "responses_create_params": params.model_dump(),
        "response": response.model_dump(),
        "expected_answer": "Click Share.",
    }
    if group_id is not None:
        data["_ng_group_id"] = group_id
    return data


def server(url: str, size: int, **extra: Any) -> JudgeServiceResourcesServer:
    config = JudgeServiceConfig(
        host="127.0.0.1",
        port=0,
        entrypoint="",
        name="judge_service",
        judge_service_url=url,
        num_rollouts_per_prompt=size,
        run_id="nemo-run",
        timeout_s=30,
        **extra,
    )
    return JudgeServiceResourcesServer(config=config, server_client=MagicMock(spec=ServerClient))


async def verify_all(app: Any, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gym", timeout=60) as client:
        replies = await asyncio.gather(*(client.post("/verify", json=b) for b in bodies))
    return [{"status": r.status_code, **r.json()} for r in replies]


async def main(url: str, refusing_port: int) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    grouped = server(url, 4).setup_webserver()
    seen["group"] = await verify_all(
        grouped, [body("How do I share the report?", a, "ng-group-1") for a in ANSWERS]
    )
    seen["unscored"] = await verify_all(grouped, [body(f"How do I share it? {MARKER}", a) for a in ANSWERS])
    chosen = server(url, 4, request_options={"decoding": "per_answer"}).setup_webserver()
    seen["options"] = await verify_all(chosen, [body("How do I print it?", a, "ng-options") for a in ANSWERS])
    try:
        server(url, 4, request_options={"seed": 1})
        seen["bad_options"] = ""
    except ValueError as exc:  # pydantic's ValidationError
        seen["bad_options"] = str(exc)
    pair = server(url, 2).setup_webserver()
    outputs = [agent_output("search", "share"), agent_output("mail", "pdf")]
    seen["agents"] = await verify_all(pair, [body("Find the page.", "", "ng-agents", o) for o in outputs])
    single = server(url, 1).setup_webserver()
    seen["single"] = await verify_all(single, [body("How do I share the report?", "Click Share.")])
    down = server(f"http://127.0.0.1:{refusing_port}", 1).setup_webserver()
    seen["down"] = await verify_all(down, [body("How do I share the report?", "Click Share.")])
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], int(sys.argv[2]))), default=str))
