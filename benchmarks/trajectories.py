"""What the judge reads for a group of agent trajectories: flattened into prose, as the adapters sent them
before, or as structure (turns, calls, results, tools; docs/trajectories.md).

    .venv/bin/python -m benchmarks trajectories [--groups 5] [--answers 8] [--seed 0]

Each group is `--answers` seeded trajectories of 10-30 turns (assistant turns calling search, read_page
or calculator, tool results of 100-1,200 characters, a final reply). Both forms are judged through the
service in process (fake judge, default settings, the real prompt renderer), once with the group in one
prompt and once per answer, and the prompts the judge got are counted in tokens with the embedded
judge's tokenizer and chat template. For per-answer decoding, the prefix-cache share is the part of
answers 2..N's prompts that equals the first one's prompt, in whole 16-token blocks (what vLLM's
prefix cache can reuse). The flattened form is the old ART adapter's: each turn's text, tool calls as JSON,
other roles as `[role] text`, joined by blank lines, with no tools shown.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from benchmarks.experiment import Experiment, Outcome, option
from benchmarks.report import log, markdown_table
from judge_service.app import create_app
from judge_service.backends.default_model import prepared_model_dir
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings

BLOCK = 16  # vLLM's default KV-cache block: the prefix cache reuses whole blocks
WORDS = ["plan", "price", "seat", "team", "export", "share", "admin", "report", "client", "invoice", "audit"]
TOOLS = [
    {"type": "function", "function": {"name": name, "description": description, "parameters": params}}
    for name, description, params in [
        ("search", "Search the help center.", {"type": "object", "properties": {"q": {"type": "string"}}}),
        ("read_page", "Read a help page.", {"type": "object", "properties": {"url": {"type": "string"}}}),
        (
            "calculator",
            "Evaluate arithmetic.",
            {"type": "object", "properties": {"expr": {"type": "string"}}},
        ),
    ]
]
TASK = [
    {"role": "system", "content": "You are a support agent. Use the tools, then answer."},
    {"role": "user", "content": "Which plan gives 40 seats with SSO, and what does it cost a year?"},
]


def words(rng: random.Random, chars: int) -> str:
    text = []
    while sum(len(w) + 1 for w in text) < chars:
        text.append(rng.choice(WORDS))
    return " ".join(text)


def trajectory(rng: random.Random) -> list[dict[str, Any]]:
    """10-30 turns: (assistant call, tool result) pairs, then a final reply."""
    turns: list[dict[str, Any]] = []
    for n in range(rng.randint(5, 15) - 1):
        name, key = rng.choice([("search", "q"), ("read_page", "url"), ("calculator", "expr")])
        call = {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": ""}}
        call["function"]["arguments"] = json.dumps({key: words(rng, 30)})
        turns.append({"role": "assistant", "content": words(rng, rng.randint(0, 120)), "tool_calls": [call]})
        turns.append(
            {"role": "tool", "tool_call_id": f"call_{n}", "content": words(rng, rng.randint(100, 1200))}
        )
    turns.append({"role": "assistant", "content": "Business: " + words(rng, 200)})
    return turns


def flattened(turns: list[dict[str, Any]]) -> str:
    """The old ART adapter's prose (module docstring)."""
    parts = []
    for turn in turns:
        text = turn["content"]
        if turn.get("tool_calls"):
            text += ("\n" if text else "") + json.dumps(turn["tool_calls"], ensure_ascii=False)
        parts.append(text if turn["role"] == "assistant" else f"[{turn['role']}] {text}")
    return "\n\n".join(p for p in parts if p)


def groups(seed: int, count: int, answers: int) -> list[list[list[dict[str, Any]]]]:
    rng = random.Random(seed)
    return [[trajectory(rng) for _ in range(answers)] for _ in range(count)]


def body(group: list[list[dict[str, Any]]], form: str, decoding: str) -> dict[str, Any]:
    if form == "flattened":
        answers: list[dict[str, Any]] = [{"id": f"t{i}", "text": flattened(t)} for i, t in enumerate(group)]
        extra: dict[str, Any] = {}
    else:
        answers = [{"id": f"t{i}", "messages": t} for i, t in enumerate(group)]
        extra = {"tools": TOOLS}
    return {"conversation": TASK, "answers": answers, "decoding": decoding, **extra}


def prompts(client: TestClient, backend: FakeBackend, request: dict[str, Any]) -> list[list[dict[str, str]]]:
    """The chat prompts the judge got for one group."""
    before = len(backend.requests)
    reply = client.post("/v1/judge", json=request)
    reply.raise_for_status()
    return [r.messages for r in backend.requests[before:]]


def run(args: argparse.Namespace) -> Outcome:
    from transformers import AutoTokenizer

    home = Path(tempfile.mkdtemp(prefix="judge-trajectories-"))
    tokenizer = AutoTokenizer.from_pretrained(prepared_model_dir(Settings().home_dir))
    backend = FakeBackend()
    app = create_app(Settings(backend="fake", home_dir=home), backend=backend)

    def tokens(messages: list[dict[str, str]]) -> list[int]:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    figures: dict[str, dict[str, Any]] = {}
    with TestClient(app) as client:
        for form in ("flattened", "structured"):
            group_tokens, per_answer_tokens, shares = [], [], []
            for group in groups(args.seed, args.groups, args.answers):
                (whole,) = prompts(client, backend, body(group, form, "group"))
                group_tokens.append(len(tokens(whole)))
                each = [tokens(p) for p in prompts(client, backend, body(group, form, "per_answer"))]
                per_answer_tokens.append(sum(len(t) for t in each))
                first = each[0]
                for other in each[1:]:
                    pairs = zip(first, other, strict=False)
                    common = next(
                        (i for i, (a, b) in enumerate(pairs) if a != b), min(len(first), len(other))
                    )
                    shares.append((common // BLOCK * BLOCK) / len(other))
            figures[form] = {
                "group_prompt_tokens": statistics.mean(group_tokens),
                "per_answer_prompt_tokens": statistics.mean(per_answer_tokens),
                "prefix_cache_share": statistics.mean(shares),
            }
            log(f"{form}: {figures[form]}")
    table = markdown_table(
        [
            "form",
            "group prompt (tokens)",
            "per-answer prompts, all (tokens)",
            "prefix-cache share, answers 2..N",
        ],
        [
            [
                form,
                round(f["group_prompt_tokens"]),
                round(f["per_answer_prompt_tokens"]),
                f"{f['prefix_cache_share']:.1%}",
            ]
            for form, f in figures.items()
        ],
    )
    return Outcome({"figures": figures}, table)


EXPERIMENT = Experiment(
    options=[
        option("--groups", 5, "groups of each form"),
        option("--answers", 8, "trajectories per group"),
        option("--seed", 0),
    ],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
