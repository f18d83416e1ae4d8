"""A scripted judge: for tests of the layers above the backend and for capacity benchmarks. No model.

Without a script it answers every request with valid marks for exactly the ids and criteria in the
request's JSON schema (a per-answer request: for its one answer), derived from a hash of (answer id,
criterion) so results are repeatable, except for groups that ask for an unscored answer
(LEAVE_ONE_UNSCORED) and answers that ask for a mark (MARK_ANSWER). Asked for log-probabilities, it
gives each mark's digit a repeatable spread over two neighbouring marks (fake_logprobs), so expected
marks differ from the integer ones. Checklist items (a criterion whose schema holds "met") are met where
the mark would be 3 or more, pitfalls where it would be 2 or less; a rubric writer's request gets a
checklist built from the reference's last figure (its last item a pitfall). With a script
it returns the scripted texts or generations (or raises the scripted exceptions) in order.

Given a thinking profile (`thinking=`, or JUDGE_THINKING_SWITCH for a service on the fake backend), a call
that thinks gets `<think>...</think>` before its JSON, read back as a no-parser endpoint's reply would be
(reasoning_split.split_text). The thinking holds a decoy mark, which must never count. Texts in the
conversation script the failures: THINK_FOREVER (the thinking ends only where a budget forces it, else
the reply runs out of tokens while thinking), THINK_PAST_BUDGET (a budget is not held either) and
REPLY_IN_REASONING (the JSON arrives in the reasoning field, as some endpoints send it).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from judge_service.backends.base import (
    THINKING_OFF,
    BackendHealth,
    Generation,
    GenerationRequest,
    ThinkingCall,
    TokenLogprobs,
)
from judge_service.backends.reasoning_split import reply_from_fields, split_text, with_parts
from judge_service.backends.thinking_profile import (
    NO_THINKING,
    THINK_END,
    THINK_START,
    ThinkingProfile,
)
from judge_service.errors import JudgeBackendError

# A group whose conversation holds this text gets no marks for the answer shown first, on every attempt,
# so that answer ends unscored: how tests in other processes (trainers) reach the unscored path.
LEAVE_ONE_UNSCORED = "[fake judge: leave one answer unscored]"
# An answer whose text holds "[fake judge: mark N]" (N 1-5) gets mark N on every criterion: how tests in
# other processes script a judge that follows labels, or one that marks everything alike.
MARK_ANSWER = "[fake judge: mark {}]"
_MARK_ANSWER = re.compile(r"\[fake judge: mark ([1-5])\]")
# "[fake judge <model>: mark N]" asks only the fake judge serving <model> for mark N (before MARK_ANSWER):
# how tests script the judges of a jury to disagree.
MARK_BY_MODEL = "[fake judge {}: mark {}]"
_CORRUPT_MARK = re.compile(r'"mark"\s*:\s*[1-5]')
# A comparison (judging/llm/compare.py) showing an answer that holds this text gets no verdict, on every
# attempt: how tests reach a failed comparison. Other comparisons follow the answers' asked-for marks.
REFUSE_COMPARISONS = "[fake judge: refuse comparisons]"
THINK_FOREVER = "[fake judge: think forever]"
THINK_PAST_BUDGET = "[fake judge: think past any budget]"
REPLY_IN_REASONING = "[fake judge: reply in the reasoning field]"
# The thinking of every thinking reply: a mark in JSON form that must not be read as one.
DECOY_THINKING = 'Draft: {"mark": 1, "reason": "decoy"}. Looking again at the answers before I mark them.'
_CHARS_PER_THINKING_TOKEN = 8  # how much thinking text the fake counts as one token
_ANSWER_BLOCK = re.compile(r'<answer id="([^"]+)">(.*?)</answer>', re.DOTALL)


class FakeBackend:
    def __init__(
        self,
        *,
        script: Iterable[str | Generation | BaseException] | None = None,
        model_name: str = "fake-judge",
        max_context_tokens: int | None = None,
        latency_s: float = 0.0,
        record: bool = True,
        thinking: ThinkingProfile = NO_THINKING,
        sleep_latency_s: float = 0.0,
        corrupt_wake: bool = False,
    ) -> None:
        # A wake that brings the engine back wrong: afterwards every mark is 1 (a wake check must see it).
        self.corrupt_wake = corrupt_wake
        self._corrupted = False
        self._script = deque(script) if script is not None else None
        self._sleep_latency_s = sleep_latency_s  # each sleep and each wake takes this long
        self.asleep = False
        self.sleeps = 0  # sleeps so far, for tests
        self._model_name = model_name
        self._max_context = max_context_tokens
        self._latency_s = latency_s
        self._ready = False
        # Every request, for tests to inspect; off in a service (JUDGE_BACKEND=fake), where it would grow
        # without bound.
        self._record = record
        self._thinking = thinking
        self.requests: list[GenerationRequest] = []
        self.health: BackendHealth | None = None  # set by tests: what health checks answer

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def max_context_tokens(self) -> int | None:
        return self._max_context

    @property
    def thinking_profile(self) -> ThinkingProfile:
        return self._thinking

    async def check_health(self) -> BackendHealth:
        if self.health is not None:
            return self.health
        return BackendHealth(ok=self._ready, error=None if self._ready else "not started")

    async def start(self) -> None:
        self._ready = True

    async def count_prompt_tokens(
        self, messages: list[dict[str, str]], thinking: ThinkingCall = THINKING_OFF
    ) -> int | None:
        return sum(len(m["content"]) for m in messages) // 4 + 8

    def why_no_sleep(self) -> str | None:
        return None

    async def sleep(self, level: int) -> int | None:
        """Pretends to free memory (1 GiB a level); generate() while asleep is an error, as a sleeping
        engine would fail or hang: a group that reaches it shows a hole in the gate."""
        await asyncio.sleep(self._sleep_latency_s)
        self.asleep = True
        self.sleeps += 1
        return level * 2**30

    async def wake(self) -> None:
        await asyncio.sleep(self._sleep_latency_s)
        self.asleep = False
        self._corrupted = self.corrupt_wake

    async def generate(self, request: GenerationRequest) -> Generation:
        if self.asleep:
            raise JudgeBackendError("the fake engine was called while asleep")
        if self._record:
            self.requests.append(request)
        if self._latency_s:
            await asyncio.sleep(self._latency_s)
        if self._script is not None:
            if not self._script:
                raise RuntimeError("FakeBackend script exhausted")
            step = self._script.popleft()
            if isinstance(step, BaseException):
                raise step
            if isinstance(step, Generation):
                return step
            text = step
        else:
            text = self.unscripted_reply(request)
            if self._corrupted:
                text = _CORRUPT_MARK.sub('"mark":1', text)
        prompt_tokens = await self.count_prompt_tokens(request.messages) or 0
        logprobs = fake_logprobs(text) if request.top_logprobs and self._script is None else None
        reply = Generation(
            text=text, prompt_tokens=prompt_tokens, completion_tokens=len(text) // 4, logprobs=logprobs
        )
        thinks = request.thinking.enabled or self._thinking.switch == "always"
        if self._thinking.thinks and thinks and self._script is None:
            return self._thinking_reply(request, reply)
        return reply

    def _thinking_reply(self, request: GenerationRequest, reply: Generation) -> Generation:
        """The reply with thinking before it, split as a no-parser endpoint's text would be (module
        docstring). Thinking takes one token per _CHARS_PER_THINKING_TOKEN characters."""
        prompt = "\n".join(m["content"] for m in request.messages)
        if REPLY_IN_REASONING in prompt:
            parts = reply_from_fields(None, reply.text, "stop", None, expects_thinking=True)
            return with_parts(reply, parts)
        budget = request.thinking.budget if self._thinking.enforces_budget else None
        if THINK_PAST_BUDGET in prompt:
            budget = None
        forever = THINK_FOREVER in prompt or THINK_PAST_BUDGET in prompt
        wanted = 10**9 if forever else len(DECOY_THINKING) // _CHARS_PER_THINKING_TOKEN
        thinking_tokens = min(wanted, budget if budget is not None else wanted)
        reply_tokens = reply.completion_tokens
        if thinking_tokens + reply_tokens > request.max_tokens:  # out of tokens while thinking
            thought = _thinking_text(request.max_tokens)
            parts = split_text(
                THINK_START + thought, None, start_marker=THINK_START, end_marker=THINK_END, opened=False
            )
            return with_parts(
                replace(reply, finish_reason="length"),
                parts,
                completion_tokens=request.max_tokens,
                reasoning_tokens=request.max_tokens,
            )
        thought = _thinking_text(thinking_tokens)
        raw = f"{THINK_START}{thought}{THINK_END}{reply.text}"
        logprobs = None
        if reply.logprobs is not None:
            logprobs = (
                *fake_logprobs(THINK_START + thought),
                TokenLogprobs(THINK_END, 0.0, ()),
                *reply.logprobs,
            )
        parts = split_text(raw, logprobs, start_marker=THINK_START, end_marker=THINK_END, opened=False)
        return with_parts(
            reply, parts, completion_tokens=thinking_tokens + reply_tokens, reasoning_tokens=thinking_tokens
        )

    @staticmethod
    def marks_for(request: GenerationRequest) -> dict[str, dict[str, dict[str, object]]]:
        """Valid marks for the request's ids and criteria; tests override it to script a judge."""
        return _marks(_criteria_by_id(request))

    def unscripted_reply(self, request: GenerationRequest) -> str:
        """The reply the schema asks for: marks with reasons, marks only (a criterion's schema is the
        mark), or, for a call continuing the judge's marks (explain.py), a reason per mark."""
        if len(request.messages) >= 3 and request.messages[-2]["role"] == "assistant":
            return _explained_reply(request)
        if _asks_for_rubric(request):
            return _rubric_reply(request)
        if _asks_for_verdict(request):
            return _verdict_reply(request)
        text = self._reply_with_reasons(request)
        binary = _binary_items(request)
        if binary:
            text = _as_checklist(text, binary, _pitfalls(request))
        if _asks_for_steps(request):
            text = _with_steps(text, request)
        return text if _wants_reasons(request) else _marks_only(text)

    def _reply_with_reasons(self, request: GenerationRequest) -> str:
        if request.json_schema is not None and set(request.json_schema.get("properties", ())) == {"result"}:
            return _result_reply(request)  # an RFT score_model or label_model grader (judging/rft/model.py)
        if type(self).marks_for is not FakeBackend.marks_for:
            marks = self.marks_for(request)
            return json.dumps(marks[request.answer_id] if request.answer_id is not None else marks)
        # Scripts are looked for only in prompts that name the fake judge: a plain substring test first,
        # so a capacity benchmark does not pay regex scans of every prompt.
        scripted = any(_SCRIPTED in m["content"] for m in request.messages)
        if scripted and any(_MARKS_ASKED.search(m["content"]) for m in request.messages):
            marks = _marked_answers(request, self._model_name)
            return json.dumps(marks[request.answer_id] if request.answer_id is not None else marks)
        if scripted and any(LEAVE_ONE_UNSCORED in m["content"] for m in request.messages):
            marks = _marks(_criteria_by_id(request))
            first = _ANSWER_SHOWN.search(request.messages[-1]["content"])
            if request.answer_id is not None:  # per-answer: the first shown answer's call marks nothing
                shown_first = first is not None and first.group(1) == request.answer_id
                return "{}" if shown_first else json.dumps(marks[request.answer_id])
            marks.pop(next(iter(marks)))  # the answer shown first
            return json.dumps(marks)
        if request.answer_id is not None:
            return _answer_reply_for(_criteria_by_id(request)[0])
        # Cached, and sorted so that every shown order of a group hits the same entry (the parser
        # maps marks by id): a capacity benchmark then measures the service, not the fake.
        return _reply_for(tuple(sorted(_criteria_by_id(request))))

    async def close(self) -> None:
        self._ready = False


_SCORE = re.compile(r"\[fake judge: score (-?[0-9.]+)\]")
_LABEL = re.compile(r"\[fake judge: label ([^\]]+)\]")


def _result_reply(request: GenerationRequest) -> str:
    """An RFT model grader's {"result": ...}: the score or label that "[fake judge: score X]" or "[fake
    judge: label L]" in the prompt asks for; else 0, or the first label."""
    text = "\n".join(m["content"] for m in request.messages)
    labels = (request.json_schema or {})["properties"]["result"].get("enum")
    if labels:
        asked = _LABEL.search(text)
        label = asked.group(1) if asked and asked.group(1) in labels else labels[0]
        return json.dumps({"result": label})
    score = _SCORE.search(text)
    return json.dumps({"result": float(score.group(1)) if score else 0})


def _asks_for_verdict(request: GenerationRequest) -> bool:
    schema = request.json_schema or {}
    return set(schema.get("properties", ())) == {"reason", "verdict"}


def _verdict_reply(request: GenerationRequest) -> str:
    """A comparison's verdict: per criterion 3 plus the difference of the marks the two answers ask for
    (MARK_ANSWER), within 1-5; where either asks for none, of marks drawn from their texts' hashes. So
    the same two answers get mirrored verdicts in the swapped order. No verdict for REFUSE_COMPARISONS."""
    shown = dict(_ANSWER_BLOCK.findall(request.messages[-1]["content"]))
    first, second = shown.get("A", ""), shown.get("B", "")
    if REFUSE_COMPARISONS in first or REFUSE_COMPARISONS in second:
        return "I cannot compare these answers."
    names = (request.json_schema or {})["properties"]["verdict"]["required"]
    asked = [_MARK_ANSWER.search(text) for text in (first, second)]
    verdict = {}
    for name in names:
        if asked[0] is not None and asked[1] is not None:
            a, b = int(asked[0].group(1)), int(asked[1].group(1))
        else:
            a, b = _mark(first, name), _mark(second, name)
        verdict[name] = 3 + max(-2, min(2, b - a))
    return json.dumps({"reason": "scripted verdict", "verdict": verdict})


CriteriaById = tuple[tuple[str, tuple[str, ...]], ...]


_ANSWER_SHOWN = re.compile(r'<answer id="([^"]+)">')
# A mark's digit: after "mark" in a reply with reasons, after its criterion in a marks-only one.
_MARK_DIGIT = re.compile(r'": ([1-5])(?=[,}])')
_MET = re.compile(r'": (true|false)(?=[,}])')  # a checklist item's met


def _wants_reasons(request: GenerationRequest) -> bool:
    """False when the schema's criteria hold a bare mark (reasons "none")."""
    schema = request.json_schema or {}
    if request.answer_id is None and schema.get("required"):  # a group reply: one answer's object first
        schema = schema["properties"][schema["required"][0]]
    criteria = schema.get("properties") or {}
    first: dict[str, Any] = next(iter(criteria.values()), {})
    return first.get("type") not in ("integer", "boolean")


def _criteria_schemas(request: GenerationRequest) -> dict[str, Any]:
    """Criterion name -> its schema, from one answer's object in the request's schema."""
    schema = request.json_schema or {}
    if request.answer_id is None and schema.get("required"):
        schema = schema["properties"][schema["required"][0]]
    return dict(schema.get("properties") or {})


def _binary_items(request: GenerationRequest) -> frozenset[str]:
    """The checklist items among the request's criteria: their schema holds "met", or is a boolean."""
    return frozenset(
        name
        for name, inner in _criteria_schemas(request).items()
        if isinstance(inner, dict)
        and (inner.get("type") == "boolean" or "met" in (inner.get("properties") or {}))
    )


WRONG_STEP = "[fake judge: wrong step]"  # in a trajectory's turn: the fake names that step first wrong
STEP_OUT_OF_RANGE = "[fake judge: step out of range]"  # in an answer: the fake cites a step it lacks
_STEP_BLOCK = re.compile(r'<step n="(\d+)"[^>]*>(.*?)</step>', re.DOTALL)


def _answer_block(prompt: str, answer_id: str) -> str:
    """The shown answer's block in the prompt (found by its opening tag: one search, not a scan of all)."""
    start = prompt.find(f'<answer id="{answer_id}">')
    if start < 0:
        return ""
    return prompt[start : prompt.find("</answer>", start)]


def _asks_for_steps(request: GenerationRequest) -> bool:
    """Whether the schema's criteria hold "steps" (attribution): read in place, as every reply asks it."""
    schema = request.json_schema or {}
    if request.answer_id is None and schema.get("required"):
        schema = schema["properties"][schema["required"][0]]
    first = next(iter((schema.get("properties") or {}).values()), None)
    return isinstance(first, dict) and "steps" in (first.get("properties") or ())


def _with_steps(text: str, request: GenerationRequest) -> str:
    """A reply with every criterion's steps and first wrong step, before its mark: the answer's last step
    cited, and the step holding WRONG_STEP (cited too) as the first wrong one, else null; an answer holding
    STEP_OUT_OF_RANGE cites a step past its last."""
    value = json.loads(text)
    prompt = request.messages[-1]["content"]
    ids = [request.answer_id] if request.answer_id is not None else list(value)
    blocks = {answer_id: _answer_block(prompt, answer_id) for answer_id in ids}
    schema = request.json_schema or {}

    def attributed(answer_id: str, marks: dict[str, Any], answer_schema: dict[str, Any]) -> dict[str, Any]:
        criterion = next(iter(answer_schema["properties"].values()))
        count = criterion["properties"]["steps"].get("items", {}).get("maximum", 0)
        block = blocks.get(answer_id, "")
        wrong = next((int(n) for n, body in _STEP_BLOCK.findall(block) if WRONG_STEP in body), None)
        cited = [count + 1] if STEP_OUT_OF_RANGE in block else [n for n in (wrong, count) if n]
        out = {}
        for name, node in marks.items():
            *head, last = node.items()  # the reason, then the mark (or met)
            steps = {"steps": list(dict.fromkeys(cited)), "first_wrong_step": wrong}
            out[name] = {**dict(head), **steps, last[0]: last[1]}
        return out

    if request.answer_id is not None:
        return json.dumps(attributed(request.answer_id, value, schema))
    return json.dumps({i: attributed(i, marks, schema["properties"][i]) for i, marks in value.items()})


_PITFALL_LINE = re.compile(r"^- ([a-z][a-z0-9_]*) \(yes or no, pitfall\)", re.MULTILINE)


def _pitfalls(request: GenerationRequest) -> frozenset[str]:
    """The pitfall items the system message lists (checklist_system.j2)."""
    return frozenset(_PITFALL_LINE.findall(request.messages[0]["content"]))


def _as_checklist(text: str, binary: frozenset[str], pitfalls: frozenset[str]) -> str:
    """A reply with reasons and marks as a checklist reply: an item is met where its mark is 3 or more, a
    pitfall where it is 2 or less (a poor answer makes the mistake), so marks scripted to follow labels
    meet items the same way."""
    value = json.loads(text)

    def item(name: str, node: dict[str, Any]) -> dict[str, Any]:
        mark = int(node["mark"])
        return {"reason": node["reason"], "met": mark <= 2 if name in pitfalls else mark >= 3}

    def answer(marks: dict[str, Any]) -> dict[str, Any]:
        return {name: item(name, node) if name in binary else node for name, node in marks.items()}

    if all(name in value for name in binary):  # one answer's object (a per-answer reply)
        return json.dumps(answer(value))
    return json.dumps({answer_id: answer(marks) for answer_id, marks in value.items()})


def _asks_for_rubric(request: GenerationRequest) -> bool:
    properties = (request.json_schema or {}).get("properties") or {}
    first: dict[str, Any] = next(iter(properties.values()), {})
    return bool(properties) and set(first.get("properties") or {}) == {"description", "kind"}


_FIGURE = re.compile(r"-?\d[\d,.]*")


def _rubric_reply(request: GenerationRequest) -> str:
    """A checklist for the reference in the prompt: its final figure (or opening words) essential, then
    items of each kind, the last a pitfall (from four items on)."""
    prompt = request.messages[-1]["content"]
    found = re.search(r"<reference>(.*?)</reference>", prompt, re.DOTALL)
    reference = found.group(1).strip() if found else ""
    figures = _FIGURE.findall(reference)
    gist = figures[-1].rstrip(".,") if figures else " ".join(reference.split()[:6]) or "the task's result"
    names = list((request.json_schema or {})["required"])
    kinds = ["essential", "important", "optional"]
    items = {}
    for i, name in enumerate(names):
        if i == 0:
            items[name] = {"description": f"Gives the final result {gist}", "kind": "essential"}
        elif i == len(names) - 1 and len(names) >= 4:
            items[name] = {"description": f"States a final result other than {gist}", "kind": "pitfall"}
        else:
            items[name] = {"description": f"Shows reasoning step {i} towards {gist}", "kind": kinds[i % 3]}
    return json.dumps(items)


def _marks_only(text: str) -> str:
    """A reply with reasons as the marks-only reply of the same marks."""
    try:
        value = json.loads(text)
    except ValueError:
        return text

    def bare(node: object) -> object:
        if isinstance(node, dict):
            if set(node) == {"reason", "mark"}:
                return node["mark"]
            if set(node) == {"reason", "met"}:
                return node["met"]
            return {key: bare(inner) for key, inner in node.items()}
        return node

    return json.dumps(bare(value))


def _explained_reply(request: GenerationRequest) -> str:
    """Reasons for the marks in the judge's own reply (the message before the question)."""
    marks = json.loads(request.messages[-2]["content"])
    schema = request.json_schema or {}
    if request.answer_id is not None:
        return json.dumps({name: f"explains mark {marks[name]} for {name}" for name in schema["required"]})
    return json.dumps(
        {
            answer_id: {
                name: f"explains mark {marks[answer_id][name]} for {answer_id}/{name}"
                for name in schema["properties"][answer_id]["required"]
            }
            for answer_id in schema["required"]
        }
    )


def _criteria_by_id(request: GenerationRequest) -> CriteriaById:
    """(answer id, its criterion names) in schema order: all the unscripted reply depends on."""
    schema = request.json_schema
    if schema is None:
        raise ValueError("the fake judge needs the request's JSON schema to know the ids")
    if request.answer_id is not None:  # a per-answer call: the schema is one answer's criteria
        return ((request.answer_id, tuple(schema["required"])),)
    return tuple((i, tuple(schema["properties"][i]["required"])) for i in schema["required"])


@functools.lru_cache(maxsize=1024)
def _answer_reply_for(criteria_of: tuple[str, tuple[str, ...]]) -> str:
    return json.dumps(_marks((criteria_of,))[criteria_of[0]])


@functools.lru_cache(maxsize=1024)
def fake_logprobs(text: str) -> tuple[TokenLogprobs, ...]:
    """Tokens of a reply: the text between marks in one token each, every mark's digit its own token with
    p=0.6 on the mark and 0.3/0.1 on its neighbours (which side takes 0.3: the first byte of the SHA-256
    of the text before the digit, even for the higher side).

    An engine computes log-probabilities in its own process; this stand-in must not cost the service's
    benchmarks more than that: the prefix is hashed once, incrementally (a copy of the running hash at
    each digit), and each (mark, side) has one precomputed token."""
    tokens: list[TokenLogprobs] = []
    start = 0
    running = hashlib.sha256()
    found = sorted([*_MARK_DIGIT.finditer(text), *_MET.finditer(text)], key=_digit_start)
    for match in found:
        at = match.start(1)
        if at > start:
            tokens.append(TokenLogprobs(text[start:at], 0.0, ()))
        running.update(text[start:at].encode())
        written = match.group(1)
        if written in _MET_TOKENS:
            tokens.append(_MET_TOKENS[written])
        else:
            up = running.copy().digest()[0] % 2 == 0
            tokens.append(_DIGIT_TOKENS[written, up])
        running.update(text[at : match.end(1)].encode())
        start = match.end(1)
    if start < len(text):
        tokens.append(TokenLogprobs(text[start:], 0.0, ()))
    return tuple(tokens)


def _digit_start(match: re.Match[str]) -> int:
    return match.start(1)


def _digit_token(mark: int, up: bool) -> TokenLogprobs:
    """Mark `mark` written with p=0.6, 0.3 on the neighbour above (`up`) or below, 0.1 on the other."""
    lower, higher = max(1, mark - 1), min(5, mark + 1)
    first, second = (higher, lower) if up else (lower, higher)
    spread = {mark: 0.6}
    spread[first] = spread.get(first, 0.0) + 0.3
    spread[second] = spread.get(second, 0.0) + 0.1
    top = tuple((str(d), math.log(p)) for d, p in sorted(spread.items(), key=lambda kv: -kv[1]))
    return TokenLogprobs(str(mark), math.log(spread[mark]), top)


_DIGIT_TOKENS = {(str(mark), up): _digit_token(mark, up) for mark in range(1, 6) for up in (True, False)}
# A checklist item's met: p=0.8 on what was written, 0.2 on the other.
_MET_TOKENS = {
    written: TokenLogprobs(written, math.log(0.8), ((written, math.log(0.8)), (other, math.log(0.2))))
    for written, other in (("true", "false"), ("false", "true"))
}


def _marks(criteria_by_id: CriteriaById) -> dict[str, dict[str, dict[str, object]]]:
    return {
        answer_id: {
            name: {"reason": f"scripted mark for {answer_id}/{name}", "mark": _mark(answer_id, name)}
            for name in criteria
        }
        for answer_id, criteria in criteria_by_id
    }


@functools.lru_cache(maxsize=1024)
def _reply_for(criteria_by_id: CriteriaById) -> str:
    return json.dumps(_marks(criteria_by_id))


def _mark(answer_id: str, criterion: str) -> int:
    return hashlib.sha256(f"{answer_id}/{criterion}".encode()).digest()[0] % 5 + 1


_MARKS_ASKED = re.compile(r"\[fake judge[^\]:]*: mark [1-5]\]")
_SCRIPTED = "[fake judge"  # what every script above starts with


def _marked_answers(request: GenerationRequest, model: str) -> dict[str, dict[str, dict[str, object]]]:
    """Marks for the request's ids, with the mark an answer's text asks of this model (MARK_BY_MODEL),
    else of every fake judge (MARK_ANSWER)."""
    own = re.compile(re.escape(f"[fake judge {model}: mark ") + r"([1-5])\]")
    asked = {
        answer_id: int(found.group(1))
        for answer_id, text in _ANSWER_BLOCK.findall(request.messages[-1]["content"])
        if (found := own.search(text) or _MARK_ANSWER.search(text))
    }
    marks = _marks(_criteria_by_id(request))
    for answer_id, by_criterion in marks.items():
        if answer_id in asked:
            for mark in by_criterion.values():
                mark["mark"] = asked[answer_id]
    return marks


def fake_thinking_profile(profile: ThinkingProfile) -> ThinkingProfile:
    """A profile the fake judge plays: it holds budgets and takes reasoning_effort when it thinks."""
    if not profile.thinks:
        return profile
    return replace(
        profile, start_marker=THINK_START, end_marker=THINK_END, enforces_budget=True, takes_effort=True
    )


def _thinking_text(tokens: int) -> str:
    """`tokens` of thinking: the decoy first, cut or padded to length."""
    chars = tokens * _CHARS_PER_THINKING_TOKEN
    if chars <= len(DECOY_THINKING):
        return DECOY_THINKING[:chars]
    return DECOY_THINKING + " hmm" * ((chars - len(DECOY_THINKING)) // 4)
