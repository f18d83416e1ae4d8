"""Grader fingerprints (judging/fingerprint.py): what changes them, what does not."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings

from judge_service.backends.fake import FakeBackend, fake_thinking_profile
from judge_service.backends.readiness import Readiness
from judge_service.backends.thinking_profile import ThinkingProfile
from judge_service.config import PACKAGED_PROMPTS, JudgingSettings, ThinkingSettings
from judge_service.errors import InvalidGroupError
from judge_service.judging.fingerprint import grader_fingerprint
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.caller import JudgeCaller
from judge_service.judging.llm.judge import LLMJudge
from judge_service.judging.llm.prompt import PromptRenderer
from judge_service.judging.registry import GraderRegistry
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import JudgeRequest
from tests.request_changes import JUDGE_FIELDS, TEXT_ANSWERS, change
from tests.unit.requests import CRITERION, request

PROMPTS = PACKAGED_PROMPTS


def judge(model: str = "fake-judge", *, thinking: ThinkingProfile | None = None, **settings: Any) -> LLMJudge:
    renderer = PromptRenderer(PROMPTS, "judge_group")
    metrics = JudgeMetrics()
    backend = FakeBackend(model_name=model, **({} if thinking is None else {"thinking": thinking}))
    caller = JudgeCaller(backend, renderer, metrics, JudgingSettings(**settings), ThinkingSettings())
    return LLMJudge(
        caller,
        admission=GroupAdmission(1, 1, metrics),
        metrics=metrics,
        readiness=Readiness(metrics, backend="fake"),
    )


def fp(req: JudgeRequest, llm: LLMJudge | None = None) -> str:
    return grader_fingerprint(GraderRegistry.with_rule_graders(llm or judge()).plan(req))


def test_fingerprints_are_those_the_previous_build_stored() -> None:
    """Pinned: tests/data/make_fixture_4b52f6d.py printed these at 4b52f6d (the fake judge, default
    settings), so judgements stored before this build stay comparable with new ones."""
    assert fp(request()) == "eeaf606fb56327bd"
    assert fp(request(grader="judge+similarity", orders=2)) == "9c0e58fcca4ea948"
    assert fp(request(grader="similarity")) == "d9816aa5a72b9d14"


def test_fingerprint_is_short_stable_and_ignores_per_group_fields() -> None:
    base = fp(request())
    assert len(base) == 16 and int(base, 16) >= 0
    assert fp(request(seed=5, run_id="r", step=3, group_key="k")) == base
    assert fp(request(answers=[{"id": "z", "text": "other"}])) == base


@pytest.mark.parametrize(
    "changed",
    [
        lambda: fp(request(criteria=[CRITERION])),
        lambda: fp(request(orders=2)),
        lambda: fp(request(grader="judge+similarity")),
        lambda: fp(request(terms=[{"grader": "judge", "weight": 2}])),
        lambda: fp(request(), judge(model="other-judge")),
        lambda: fp(request(), judge(temperature=0.7)),
        lambda: fp(request(), judge(reason_max_chars=60)),
        lambda: fp(request(), judge(parse_retries=0)),
        lambda: fp(request(), judge(shuffle_answers=False)),
    ],
)
def test_anything_that_changes_scores_changes_the_fingerprint(changed: Any) -> None:
    assert changed() != fp(request())


def test_weights_and_rule_options_count_only_where_they_apply() -> None:
    one = fp(request(criteria=[CRITERION]))
    assert fp(request(criteria=[CRITERION | {"weight": 2}])) != one
    # Rule options change a rule grader's scores, not the judge's.
    assert fp(request(options={"case_sensitive": True})) == fp(request())
    sim = request(grader="similarity")
    assert fp(request(grader="similarity", options={"case_sensitive": True})) != fp(sim)
    # A rule-only grader does not depend on the judge's model.
    assert fp(sim, judge(model="other-judge")) == fp(sim)


def test_number_locale_counts_only_when_set_and_the_judge_reason_language_only_when_asked() -> None:
    numbers = request(grader="numbers")
    assert fp(request(grader="numbers", options={"number_locale": "auto"})) == fp(numbers)
    assert fp(request(grader="numbers", options={"number_locale": "de"})) != fp(numbers)
    # the similarity fingerprint pinned above does not move for the option's default
    assert fp(request(grader="similarity", options={"number_locale": "auto"})) == "d9816aa5a72b9d14"
    assert fp(request(reason_language="de")) != fp(request())
    assert fp(request(reason_language="auto")) != fp(request(reason_language="de"))


# A judge request's fields as the judge's fingerprint sees them: what belongs to the group never changes
# it; each field of the grading has a value that does (on a judge that takes it); the fields other graders
# read leave the judge's fingerprint alone. Every field is in one of the three.
OF_THE_GROUP = {
    "conversation",
    "reference",
    "answers",
    "run_id",
    "step",
    "group_key",
    "seed",
    "item",
    "canaries",
}
THINKER = fake_thinking_profile(ThinkingProfile(switch="toggle", parser="qwen3"))
GRADING: dict[str, tuple[Any, ThinkingProfile | None]] = {
    "criteria": ([CRITERION], None),
    "rubric": ("generate", None),
    "grader": ("judge+similarity", None),
    "terms": ([{"grader": "judge", "weight": 2}], None),
    "orders": (2, None),
    "decoding": ("per_answer", None),
    "score_from": ("expected", None),
    "reason_language": ("de", None),
    "reasons": ("none", None),
    "thinking": ("on", THINKER),
    "reasoning_effort": ("high", THINKER),
    "cascade": ({"rule": "numbers", "judge": "ties"}, None),
    "attribution": ("steps", None),  # on a group of trajectories (STEPS)
}
OTHER_GRADERS = {"options", "comparison", "jury"}
# Fields of the group whose presence, not their value, changes how the judge is asked (docs/trajectories.md).
SHAPING = {"tools"}
TOOL = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}


def test_every_request_field_is_of_the_group_of_the_grading_or_of_other_graders() -> None:
    fields = set(JudgeRequest.model_fields)
    assert OF_THE_GROUP | set(GRADING) | OTHER_GRADERS | SHAPING == fields
    assert len(OF_THE_GROUP) + len(GRADING) + len(OTHER_GRADERS) + len(SHAPING) == len(fields)


def test_a_group_without_a_reference_or_with_structure_is_judged_under_a_fingerprint_of_its_own() -> None:
    plain = fp(request())
    assert fp(request(reference=None)) != plain
    with_tools = fp(request(tools=[TOOL]))
    assert with_tools != plain and fp(request(reference=None, tools=[TOOL])) not in (plain, with_tools)
    other_tool = {"type": "function", "function": {"name": "fetch", "description": "gets a page"}}
    assert fp(request(tools=[other_tool])) == with_tools  # which tools: the group's, not the grading's
    steps = [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "search"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
        {"role": "assistant", "content": "done"},
    ]
    trajectory = request(answers=[{"id": "t1", "messages": steps}, {"id": "t2", "text": "done"}])
    assert fp(trajectory) == with_tools
    assert fp(request(reference="another reference")) == plain


STEPS = [
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "search"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "found"},
    {"role": "assistant", "content": "done"},
]


@pytest.mark.parametrize("field", sorted(GRADING))
def test_each_field_of_the_grading_changes_the_fingerprint(field: str) -> None:
    value, thinking = GRADING[field]
    llm = judge(thinking=thinking)
    group = {"answers": [{"id": "t1", "messages": STEPS}]} if field == "attribution" else {}
    assert fp(request(**group, **{field: value}), llm) != fp(request(**group), llm)


@settings(max_examples=200, deadline=None)
@given(
    change({name: JUDGE_FIELDS[name] for name in OF_THE_GROUP | OTHER_GRADERS} | {"answers": TEXT_ANSWERS})
)
def test_fields_of_the_group_and_of_other_graders_leave_the_judges_fingerprint(
    field_value: tuple[str, Any],
) -> None:
    field, value = field_value
    try:
        changed = fp(request(**{field: value}))
    except (ValueError, InvalidGroupError):  # refused: jury options beside the judge, or by the model
        assume(False)
        raise
    assert changed == fp(request())
