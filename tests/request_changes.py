"""Hypothesis strategies for one field of a judge or member request: any value the request model accepts
for it. The idempotency and fingerprint property tests change one field at a time with them, and check
that these tables name every field of the models, so a field added later is covered (or the test says
which one to add)."""

from __future__ import annotations

from typing import Any, get_args

from hypothesis import strategies as st

from judge_service.schemas import (
    ANSWER_ID_PATTERN,
    CANARY_KINDS,
    CRITERION_NAME_PATTERN,
    JUROR_NAME_PATTERN,
    MAX_ANSWERS,
    MAX_ORDERS,
    MAX_STEP,
    RUBRIC_REF_PATTERN,
    RUN_ID_PATTERN,
    Attribution,
    Decoding,
    JuryAggregate,
    PairwiseScore,
    ReasoningEffort,
    ReasonLanguage,
    Reasons,
    ScoreFrom,
)

# Caller text: printable, as the models accept it (no control characters).
TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=30)
NON_EMPTY = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=30)


def _pattern(pattern: str) -> st.SearchStrategy[str]:
    return st.from_regex(pattern, fullmatch=True)


def _one_of_literal(kind: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(get_args(kind))


_MESSAGES = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]), "content": TEXT}),
    min_size=1,
    max_size=3,
)
_TEXT_ANSWER = st.fixed_dictionaries({"id": _pattern(ANSWER_ID_PATTERN), "text": TEXT})
_CALL_ID = _pattern(r"[A-Za-z0-9_]{1,12}")
_TOOL_NAME = _pattern(r"[a-z_]{1,12}")


def _trajectory(call_id: str, tool: str, arguments: str, result: str, final: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "function": {"name": tool, "arguments": arguments}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
        {"role": "assistant", "content": final},
    ]


_TRAJECTORY_ANSWER = st.fixed_dictionaries(
    {
        "id": _pattern(ANSWER_ID_PATTERN),
        "messages": st.builds(_trajectory, _CALL_ID, _TOOL_NAME, TEXT, TEXT, TEXT),
    }
)
_ANSWER = st.one_of(_TEXT_ANSWER, _TRAJECTORY_ANSWER)
# Answers of text alone: trajectories, like tools, change how the judge is asked (its fingerprint).
TEXT_ANSWERS = st.lists(_TEXT_ANSWER, min_size=1, max_size=4, unique_by=lambda a: a["id"])
_TOOLS = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": _TOOL_NAME}, optional={"description": TEXT}),
        }
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda t: t["function"]["name"],
)
_CRITERION = st.fixed_dictionaries(
    {
        "name": _pattern(CRITERION_NAME_PATTERN),
        "description": NON_EMPTY,
        "mark_1": NON_EMPTY,
        "mark_5": NON_EMPTY,
    },
    optional={"weight": st.floats(0.01, 100), "kind": st.sampled_from(["essential", "optional"])},
)
_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "case_sensitive": st.booleans(),
        "normalize_whitespace": st.booleans(),
        "unicode_normalization": st.sampled_from(["NFC", "NFKC", "none"]),
        "labels": st.lists(TEXT, max_size=3),
        "number_locale": st.sampled_from(["auto", "en", "de", "fr", "ch"]),
        "json_schema": st.just({"type": "object"}),
    },
)
_GRADER = _pattern(r"[a-z][a-z_+]{0,20}")

# Request fields a group of the judge and a member share, name -> strategy of its values.
SHARED: dict[str, st.SearchStrategy[Any]] = {
    "conversation": _MESSAGES,
    "tools": _TOOLS,
    "reference": TEXT,
    "criteria": st.lists(_CRITERION, min_size=1, max_size=3, unique_by=lambda c: c["name"]),
    "rubric": _pattern(RUBRIC_REF_PATTERN),
    "grader": _GRADER,
    "terms": st.lists(
        st.fixed_dictionaries({"grader": _GRADER, "weight": st.floats(0.01, 100)}), min_size=1, max_size=3
    ),
    "options": _OPTIONS,
    "run_id": _pattern(RUN_ID_PATTERN),
    "step": st.integers(0, MAX_STEP),
    "orders": st.integers(1, MAX_ORDERS),
    "decoding": _one_of_literal(Decoding),
    "score_from": _one_of_literal(ScoreFrom),
    "reasons": _one_of_literal(Reasons),
    "thinking": st.one_of(st.sampled_from(["off", "on"]), st.builds(dict, budget=st.integers(1, 4096))),
    "reasoning_effort": _one_of_literal(ReasoningEffort),
    "item": st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), TEXT), max_size=3),
    "canaries": st.one_of(
        st.sampled_from(["off", "on"]), st.lists(st.sampled_from(CANARY_KINDS), min_size=1, unique=True)
    ),
    "comparison": st.fixed_dictionaries(
        {},
        optional={
            "both_orders": st.booleans(),
            "max_pairs": st.integers(1, 100),
            "pairwise_score": _one_of_literal(PairwiseScore),
        },
    ),
    "cascade": st.fixed_dictionaries(
        {"rule": _GRADER, "judge": st.sampled_from(["ties", "verify"])},
        optional={"threshold": st.floats(0, 1)},
    ),
    "jury": st.fixed_dictionaries(
        {},
        optional={
            "judges": st.lists(_pattern(JUROR_NAME_PATTERN), min_size=1, max_size=3, unique=True),
            "aggregate": _one_of_literal(JuryAggregate),
            "std_factor": st.floats(0, 4),
            "escalate": st.floats(0.01, 4),
        },
    ),
}

JUDGE_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    **SHARED,
    "answers": st.lists(_ANSWER, min_size=1, max_size=4, unique_by=lambda a: a["id"]),
    "group_key": st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=40),
    "seed": st.integers(0, 2**32 - 1),
    "reason_language": _one_of_literal(ReasonLanguage),
    "attribution": _one_of_literal(Attribution),  # refused beside answers of text alone (BASE's)
}

MEMBER_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    **SHARED,
    "answer": _ANSWER,
    "group_key": NON_EMPTY,
    "group_size": st.integers(1, MAX_ANSWERS),
    "deadline_s": st.floats(0.01, 3600),
    "min_members": st.integers(1, MAX_ANSWERS),
}


def change(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[tuple[str, Any]]:
    """(field name, a value for it), any field."""
    return st.sampled_from(sorted(fields)).flatmap(lambda name: fields[name].map(lambda v: (name, v)))
