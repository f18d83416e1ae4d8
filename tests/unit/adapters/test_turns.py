"""A trainer's messages as the service's turns (adapters/turns.py): structure kept, and whatever the service
would refuse mended instead of failing the trainer's batch; every result is checked by the request model
itself, so what the adapters build is what the service takes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from judge_service.adapters.groups import as_conversation
from judge_service.adapters.turns import as_answer, as_tools, as_turns
from judge_service.schemas import JudgeRequest


def call(call_id: Any, name: str = "search", arguments: Any = '{"q": "x"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def judged(conversation: list[Any], answers: list[dict[str, Any]], tools: Any = None) -> JudgeRequest:
    return JudgeRequest.model_validate({"conversation": conversation, "answers": answers, "tools": tools})


def test_calls_and_results_stay_structure_and_the_answer_continues_the_conversation() -> None:
    prompt = [
        {"role": "developer", "content": "Use the tools."},
        {"role": "user", "content": [{"type": "text", "text": "Find it."}]},
        {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "name": "search", "content": "found"},
    ]
    conversation, made = as_turns(prompt)
    assert conversation[0] == {"role": "system", "content": "Use the tools."}
    assert conversation[2]["tool_calls"][0]["function"] == {"name": "search", "arguments": '{"q": "x"}'}
    assert conversation[3] == {"role": "tool", "content": "found", "tool_call_id": "c1", "name": "search"}
    # The answer's own result may answer the conversation's call; its last reply is its text.
    answer = as_answer(
        "a",
        [
            {"role": "tool", "tool_call_id": "c1", "content": "more"},
            {"role": "assistant", "content": "Done."},
        ],
        made,
    )
    request = judged(conversation, [answer])
    assert request.answers[0].text == "Done." and request.answers[0].messages is not None


def test_what_the_service_would_refuse_is_mended_not_sent() -> None:
    turns, _ = as_turns(
        [
            {"role": "tool", "tool_call_id": "nowhere", "content": "orphan"},  # answers no call
            {"role": "assistant", "content": "", "tool_calls": [call(None), call("has space"), call("c1")]},
            {"role": "assistant", "content": "", "tool_calls": [call("c1", name="", arguments={"a": [1]})]},
            {"role": "tool", "tool_call_id": "c1", "content": "to the latest c1"},
            {"role": "narrator", "content": "odd\x00role"},
        ]
    )
    assert turns[0] == {"role": "user", "content": "[tool result] orphan"}
    ids = [c["id"] for t in turns[1:3] for c in t["tool_calls"]]
    assert len(set(ids)) == 4 and ids[2] == "c1"  # a missing, malformed or repeated id gets its own
    second = turns[2]["tool_calls"][0]
    assert second["function"] == {"name": "?", "arguments": '{"a": [1]}'}
    assert turns[3]["tool_call_id"] == second["id"]
    assert turns[4] == {"role": "user", "content": "oddrole"}
    judged(turns, [{"id": "a", "text": "x"}])  # the service takes it


def test_a_lone_reply_is_text_and_messages_without_a_reply_are_their_text() -> None:
    assert as_answer("a", [{"role": "assistant", "content": "Hi."}]) == {"id": "a", "text": "Hi."}
    assert as_answer("a", [{"role": "user", "content": "q"}, {"role": "user", "content": "r"}]) == {
        "id": "a",
        "text": "[user] q\n\n[user] r",
    }


def test_objects_as_the_sdks_hold_them() -> None:
    function = SimpleNamespace(name="search", arguments='{"q": 1}')
    message = SimpleNamespace(
        role="assistant",
        content=None,
        tool_calls=[SimpleNamespace(id="c9", type="function", function=function)],
    )
    turns, made = as_turns([message])
    assert turns[0]["tool_calls"][0] == call("c9", arguments='{"q": 1}') and made.by_given == {"c9": "c9"}


def test_tools_in_openai_form_named_once() -> None:
    spec = {"name": "search", "description": "Find.", "parameters": {"type": "object"}, "strict": None}
    tools = as_tools([{"type": "function", "function": spec}, spec, {"function": {"name": "bad name"}}])
    assert tools == [
        {
            "type": "function",
            "function": {"name": "search", "description": "Find.", "parameters": {"type": "object"}},
        }
    ]
    assert as_tools(None) is None and as_tools([]) is None


_ROLE = st.sampled_from(["system", "developer", "user", "assistant", "tool", "other"])
_ID = st.one_of(st.none(), st.sampled_from(["c1", "c2", "bad id", ""]), st.integers())
_MESSAGE = st.fixed_dictionaries(
    {"role": _ROLE, "content": st.one_of(st.none(), st.text(max_size=20))},
    optional={
        "tool_calls": st.lists(
            st.builds(
                call,
                _ID,
                st.text(max_size=10),
                st.one_of(
                    st.text(max_size=10), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
                ),
            ),
            max_size=3,
        ),
        "tool_call_id": _ID,
    },
)


@settings(max_examples=300, deadline=None)
@given(
    conversation=st.lists(_MESSAGE, min_size=1, max_size=6), answer=st.lists(_MESSAGE, min_size=1, max_size=6)
)
def test_whatever_a_trainer_holds_the_service_takes(conversation: list[Any], answer: list[Any]) -> None:
    turns, made = as_turns(conversation)
    judged(turns, [as_answer("a", answer, made)])


def test_a_prompt_as_a_conversation() -> None:
    assert as_conversation("Find\x07 it.") == [{"role": "user", "content": "Find it."}]
    assert as_conversation([]) == [{"role": "user", "content": ""}]
    assert as_conversation([{"role": "tool", "tool_call_id": "c", "content": "r"}]) == [
        {"role": "user", "content": "[tool result] r"}
    ]


def test_what_passes_the_services_limits_is_cut_or_sent_as_prose_never_refused() -> None:
    long_call = [call(f"c{i}", arguments="a" * 30_000) for i in range(40)]  # 40 calls, each too long
    turns, _ = as_turns([{"role": "assistant", "content": "b" * 25_000, "tool_calls": long_call}])
    assert len(turns[0]["tool_calls"]) == 32 and 19_900 < len(turns[0]["content"]) <= 20_000
    assert "characters left out" in turns[0]["tool_calls"][0]["function"]["arguments"]
    many = []
    for i in range(70):  # 141 turns: over the service's 128
        many += [
            {"role": "assistant", "content": "", "tool_calls": [call(f"c{i}")]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"},
        ]
    many.append({"role": "assistant", "content": "Done."})
    answer = as_answer("a", many)
    assert (
        set(answer) == {"id", "text"} and answer["text"].endswith("Done.") and "[tool] ok" in answer["text"]
    )
    judged([{"role": "user", "content": "q"}], [answer])


def test_hostile_trainer_objects_are_read_or_left_out_never_raised() -> None:
    circular: list[Any] = []
    circular.append(circular)

    class Raising:
        role = "assistant"

        @property
        def content(self) -> str:
            raise RuntimeError("no content for you")

    class Slotted:
        __slots__ = ("content", "role")

        def __init__(self) -> None:
            self.role, self.content = "assistant", "From slots."

    turns, _ = as_turns(
        [
            {"role": "assistant", "content": "\ud800x", "tool_calls": [call("c1", arguments=circular)]},
            Raising(),
            Slotted(),
        ]
    )
    assert turns[0]["content"] == "x" and turns[1] == {"role": "assistant", "content": ""}
    assert turns[2] == {"role": "assistant", "content": "From slots."}
    judged(turns, [{"id": "a", "text": "x"}])
    tools = as_tools(
        [{"type": "function", "function": {"name": f"t{i}", "description": "d" * 15_000}} for i in range(8)]
        + [{"function": {"name": "deep", "parameters": {"a": {1, 2}}}}]
    )
    assert tools is not None and len(tools) == 6  # the rest past 100,000 characters; a set is no JSON
    judged([{"role": "user", "content": "q"}], [{"id": "a", "text": "x"}], tools)
