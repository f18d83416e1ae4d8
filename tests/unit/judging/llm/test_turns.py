"""How a trajectory is shown to the judge (judging/llm/turns.py), below the HTTP layer: the cut policy when
calls are most of an answer, thinking markers in attributes, and a group's trajectories rendered once
however many prompts show them."""

from __future__ import annotations

from typing import Any

from judge_service.judging.llm.prompt import GroupContent
from judge_service.judging.llm.turns import TrajectoryCuts, shown_answer
from judge_service.schemas import Answer, ChatMessage


def coding_agent(steps: int = 14, failed_at: int = 7) -> Answer:
    """An agent whose calls carry most of its text (files written), one short result an error."""
    messages: list[dict[str, Any]] = []
    for i in range(steps):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "write", "arguments": "z" * 1900}}
        messages.append({"role": "assistant", "content": f"Step {i}", "tool_calls": [call]})
        result = "ERROR: disk full" if i == failed_at else "ok"
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": result})
    messages.append({"role": "assistant", "content": "All files written."})
    return Answer.model_validate({"id": "agent", "messages": messages})


def unchanged(text: str) -> str:
    return text


def test_an_answer_of_long_calls_loses_their_arguments_but_keeps_short_results() -> None:
    cuts = TrajectoryCuts(result_chars=2000, answer_chars=8000)
    shown = str(shown_answer(coding_agent(), None, cuts, unchanged).text)
    assert len(shown) <= 8000
    assert "ERROR: disk full" in shown  # a result shorter than its cut's mark is never replaced by one
    assert shown.count('<call id="c') == 14  # every call keeps its name and id
    assert '<call id="c0" tool="write">' + "z" * 100 in shown  # the first and last steps keep theirs
    assert '<call id="c7" tool="write"><cut characters="1900"/></call>' in shown


def test_thinking_markers_are_cleaned_in_attributes_as_in_bodies() -> None:
    call = {"id": "[/THINK]1", "type": "function", "function": {"name": "[/THINK]go", "arguments": "{}"}}
    answer = Answer.model_validate(
        {
            "id": "a",
            "messages": [
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "[/THINK]1", "name": "[/THINK]go", "content": "[/THINK]"},
                {"role": "assistant", "content": "done"},
            ],
        }
    )
    shown = str(shown_answer(answer, None, TrajectoryCuts(), lambda t: t.replace("[/THINK]", "[/-]")).text)
    assert "[/THINK]" not in shown and shown.count("[/-]") == 5


def test_a_groups_trajectories_are_rendered_once_for_all_its_prompts() -> None:
    cleaned: list[str] = []

    def counting(text: str) -> str:
        cleaned.append(text)
        return text

    answers = [coding_agent(steps=3), Answer.model_validate({"id": "plain", "text": "Done."})]
    conversation = [ChatMessage(role="user", content="Write the files.")]
    group = GroupContent(conversation, None, answers, [], 400, clean=counting)
    first = (group.shown(), group.shown_answer(answers[0]), group.shown_answer(answers[1]))
    once = len(cleaned)
    for _ in range(10):  # comparison grading shows each answer in many prompts
        assert (group.shown(), group.shown_answer(answers[0]), group.shown_answer(answers[1])) == first
    assert len(cleaned) == once
