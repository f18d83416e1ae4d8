"""OpenRLHF's remote reward protocol (`--reward.remote_url`, OpenRLHF 0.11), on group assembly.

OpenRLHF posts `{"query": [...], "prompts": [...], "labels": [...]}` per sample, where a query is the
prompt and the response decoded together, special tokens included, and expects `{"rewards": [...],
"scores": [...], "extra_logs": {...}}` with numbers only: a missing reward is fatal to its run. So:
- each sample is a member of its prompt's group: the group key is a hash of the prompt and the label, or
  the `group_id` of a JSON label (`{"group_id": ..., "reference": ...}`); the answer is the query minus
  the prompt, special tokens (`<|...|>`, `<s>`, `</s>`) stripped, and its id a hash of that text; the
  conversation is the prompt's turns where its chat template can be read (ChatML, Llama 3), else the
  prompt as one user message;
- the group size, and optionally grader, run id, deadline and the reward for an unscored answer, ride in
  the URL the user gives OpenRLHF: `http://judge:8000/v1/compat/openrlhf?group_size=8`;
- an unscored answer (or a member of a group judged without it) gets the fallback reward (default 0.0)
  with `extra_logs["judge_ok"] = 0.0`, so the run logs it instead of learning from a silent 0.
Samples whose text is the same in one group are one member (they get one result).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judge_service.schemas import MAX_MEMBER_DEADLINE_S, MemberRequest, MemberResponse, Unicode

_SPECIAL = re.compile(r"<\|[^|<>]{1,64}\|>|</?s>")
# Chat templates whose turns can be read back from the prompt text: ChatML (Qwen and others), Llama 3.
_TURNS = (
    re.compile(r"<\|im_start\|>(system|user|assistant)\n(.*?)(?=<\|im_end\|>|<\|im_start\|>|$)", re.S),
    re.compile(
        r"<\|start_header_id\|>(system|user|assistant)<\|end_header_id\|>(.*?)(?=<\|eot_id\|>|<\|start_header_id\|>|$)",
        re.S,
    ),
)


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's reward request; fields it may add later are ignored."""

    model_config = ConfigDict(extra="ignore")

    query: list[Unicode] = Field(min_length=1, max_length=256)
    prompts: list[Unicode] = Field(min_length=1, max_length=256)
    labels: list[Any] | None = None


class OpenRLHFParams(BaseModel):
    """What rides in the URL."""

    group_size: int = Field(ge=1, le=64)
    grader: str | None = Field(default=None, min_length=1, max_length=64)
    run_id: str | None = None
    deadline_s: float | None = Field(default=None, gt=0, le=MAX_MEMBER_DEADLINE_S)
    min_members: int | None = Field(default=None, ge=1, le=64)
    fallback: float = Field(default=0.0, allow_inf_nan=False)


def strip_special(text: str) -> str:
    return _SPECIAL.sub("", text).strip()


def conversation(prompt: str) -> list[dict[str, str]]:
    """The prompt's chat turns when its template is one we can read (ChatML, Llama 3), else the prompt
    as one user message; special tokens stripped, and the empty turn that opens the reply dropped."""
    for turns in _TURNS:
        found = [(role, strip_special(text)) for role, text in turns.findall(prompt)]
        messages = [{"role": role, "content": text} for role, text in found if text]
        if messages:
            return messages
    return [{"role": "user", "content": strip_special(prompt)}]


def members(request: OpenRLHFRequest, params: OpenRLHFParams) -> list[MemberRequest]:
    """One member request per sample; ValueError (422) when the lists do not line up."""
    labels = request.labels if request.labels is not None else [None] * len(request.query)
    if not len(request.query) == len(request.prompts) == len(labels):
        raise ValueError(
            f"query, prompts and labels must be as long as each other: got {len(request.query)}, "
            f"{len(request.prompts)} and {len(labels)}"
        )
    return [
        _member(q, p, label, params)
        for q, p, label in zip(request.query, request.prompts, labels, strict=True)
    ]


def _member(query: str, prompt: str, label: Any, params: OpenRLHFParams) -> MemberRequest:
    response = query[len(prompt) :] if query.startswith(prompt) else query
    answer = strip_special(response)
    group_id, reference = _label_parts(label)
    # surrogatepass: a lone surrogate in a label is refused below, by MemberRequest, naming the field
    key = group_id or hashlib.sha256(f"{prompt}\n{reference}".encode(errors="surrogatepass")).hexdigest()[:32]
    body: dict[str, Any] = {
        "group_key": key,
        "group_size": params.group_size,
        "answer": {"id": hashlib.sha256(answer.encode()).hexdigest()[:16], "text": answer},
        "conversation": conversation(prompt),
        "reference": reference,
        "run_id": params.run_id,
        "deadline_s": params.deadline_s,
        "min_members": params.min_members,
    }
    if params.grader is not None:
        body["grader"] = params.grader
    return MemberRequest.model_validate(body)


def _label_parts(label: Any) -> tuple[str | None, str]:
    """(group id, reference) from a label: a JSON object with group_id/reference, else the label itself."""
    if isinstance(label, str):
        try:
            parsed = json.loads(label)
        except ValueError:
            return None, label
        label = parsed if isinstance(parsed, dict) else label
    if isinstance(label, dict):
        group_id = label.get("group_id")
        reference = label.get("reference", "")
        return (str(group_id) if group_id is not None else None), str(reference)
    return None, "" if label is None else str(label)


def reply(results: list[MemberResponse | None], params: OpenRLHFParams) -> dict[str, Any]:
    """OpenRLHF's reply: a number for every sample; None stands for a member refused as late."""
    rewards = [
        r.answer.score if r is not None and r.answer.score is not None else params.fallback for r in results
    ]
    ok = [1.0 if r is not None and r.answer.score is not None else 0.0 for r in results]
    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {
            "judge_ok": sum(ok) / len(ok),
            "judge_members": float(sum(r.members for r in results if r)),
        },
    }
