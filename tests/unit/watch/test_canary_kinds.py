"""Canary texts built from real groups (an excerpt of the GSM8K model-solutions file, in tests/data) and
from groups without a figure."""

from __future__ import annotations

import random
import re

import pytest

from judge_service.schemas import CANARY_KINDS, MAX_TEXT_CHARS, ChatMessage, JudgeRequest
from judge_service.tools.eval_data import read_groups
from judge_service.watch.canary_kinds import INJECTIONS, OPENERS, REFUSALS, build, padded, twisted
from tests.unit.tools.test_eval_data import GSM8K  # an excerpt of the labelled file, in tests/data


def real_groups(n: int = 20) -> list[JudgeRequest]:
    return [JudgeRequest.model_validate(g.request) for g in read_groups(GSM8K, "gsm8k-solutions", limit=n)]


def final_number(text: str) -> str:
    return re.findall(r"\d+(?:[.,]\d+)*", text)[-1]


def test_every_kind_is_built_from_real_groups() -> None:
    rng = random.Random(0)
    for request in real_groups():
        texts = {kind: build(kind, request.conversation, request.reference, rng) for kind in CANARY_KINDS}
        assert texts["injection"] in INJECTIONS and texts["empty"] == ""
        assert texts["opener"] in OPENERS and texts["refusal"] in REFUSALS
        assert texts["restated"] == request.conversation[-1].content.strip()
        twist = texts["reference_twist"]
        assert twist is not None and twist != request.reference
        # Only the conclusion changed: the working is kept, the final figure is another number.
        assert len(twist) == len(request.reference)
        assert twist.rsplit("\n", 1)[0] == request.reference.rsplit("\n", 1)[0]
        assert final_number(twist) != final_number(request.reference)
        verbose = texts["verbose_wrong"]
        assert verbose is not None and verbose.startswith(twist) and len(verbose) >= 3 * len(twist)


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("A: 18", "A: 28"),
        ("The total is 1,234.50 dollars.", "The total is 2,234.50 dollars."),
        ("So 9 apples.", "So 7 apples."),
        ("It costs 0.5 EUR.", "It costs 1.5 EUR."),
        ("Das sind 3 000 Euro.", "Das sind 4 000 Euro."),
        ("Yes, the plan includes SSO.", "No, the plan includes SSO."),
        ("Is 7 prime? YES", "Is 7 prime? NO"),  # the yes comes after the figure: it is the conclusion
        ("The statement is false.", "The statement is true."),
        ("There are 2 plans; the answer is no", "There are 2 plans; the answer is yes"),
    ],
)
def test_the_twist_changes_the_conclusion(reference: str, expected: str) -> None:
    assert twisted(reference) == expected


def test_a_group_without_figure_or_yes_no_gets_no_twist_and_no_verbose_wrong() -> None:
    conversation = [ChatMessage(role="user", content="How do I share the report?")]
    reference = "Open the report, click Share and pick the client."
    rng = random.Random(0)
    assert build("reference_twist", conversation, reference, rng) is None
    assert build("verbose_wrong", conversation, reference, rng) is None
    assert build("restated", conversation, reference, rng) == "How do I share the report?"
    # "nobody" and "yesterday" are not yes/no answers
    assert twisted("Nobody came yesterday.") is None


def test_restated_needs_a_user_message() -> None:
    system_only = [ChatMessage(role="system", content="Be brief.")]
    assert build("restated", system_only, "A: 3", random.Random(0)) is None


def test_padding_reaches_three_times_the_length_and_stays_within_the_text_limit() -> None:
    text = "She sells 16 - 3 - 4 = 9 eggs at $2 each, so she makes $28."
    long = padded(text)
    assert 3 * len(text) <= len(long) < 4 * len(text) + 60  # at most one part past three times
    assert long.startswith(text) and long.count(text) >= 2  # the wrong working, said again
    assert len(padded("x" * 15_000)) == MAX_TEXT_CHARS
