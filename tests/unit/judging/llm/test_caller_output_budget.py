"""The judge's output budget: the worst case the schema allows where the context has room."""

from __future__ import annotations

import pytest

from judge_service.backends.fake import FakeBackend
from judge_service.config import PACKAGED_PROMPTS, JudgingSettings, ThinkingSettings
from judge_service.errors import PromptTooLongError
from judge_service.judging.llm.caller import JudgeCaller, OrderPlan
from judge_service.judging.llm.criteria import DEFAULT_CRITERIA
from judge_service.judging.llm.parser import max_output_tokens
from judge_service.judging.llm.prompt import PromptRenderer
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import Answer, ChatMessage

PROMPTS = PACKAGED_PROMPTS
N, CRITERIA, CHARS = 4, len(DEFAULT_CRITERIA), 120
USUAL = max_output_tokens(N, CRITERIA, CHARS)
WORST = max_output_tokens(N, CRITERIA, CHARS, chars_per_token=1)


async def prepared_max_tokens(context: int | None) -> int:
    judge = JudgeCaller(
        FakeBackend(max_context_tokens=context),
        PromptRenderer(PROMPTS, "judge_group"),
        JudgeMetrics(),
        JudgingSettings(reason_max_chars=CHARS),
        ThinkingSettings(),
    )
    calls = await judge.prepare(
        OrderPlan(
            conversation=[ChatMessage(role="user", content="2+2?")],
            reference="4",
            answers=[Answer(id=f"a{i}", text=str(i)) for i in range(N)],
            criteria=list(DEFAULT_CRITERIA),
            request_id="r",
        )
    )
    return calls[0].request.max_tokens


def test_the_worst_case_covers_a_token_per_reason_character() -> None:
    assert WORST - USUAL == N * CRITERIA * (CHARS - CHARS // 3)
    assert max_output_tokens(8, 4, 120) > 7 * max_output_tokens(1, 4, 120)
    assert max_output_tokens(4, 4, 240) > max_output_tokens(4, 4, 120)


async def test_without_a_known_context_the_judge_gets_the_worst_case() -> None:
    assert await prepared_max_tokens(None) == WORST


async def test_with_room_the_judge_gets_the_worst_case() -> None:
    assert await prepared_max_tokens(100_000) == WORST


async def test_a_tight_context_gives_what_is_left_and_refuses_only_below_the_usual_budget() -> None:
    with pytest.raises(PromptTooLongError) as refused:
        await prepared_max_tokens(USUAL)  # the prompt itself needs some of it
    prompt = refused.value.details["prompt_tokens"]
    assert refused.value.details["reply_tokens"] == USUAL
    assert await prepared_max_tokens(prompt + USUAL) == USUAL  # just fits: all that is left
    assert await prepared_max_tokens(prompt + USUAL + 100) == USUAL + 100
    assert await prepared_max_tokens(prompt + WORST + 5) == WORST
