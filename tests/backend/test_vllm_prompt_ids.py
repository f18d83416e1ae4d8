"""The in-process engine tokenizes a prompt once: counted before admission, reused by generate()."""

from __future__ import annotations

from typing import Any

from judge_service.backends.vllm_engine import EngineOptions, TokenizedPrompts, VLLMEngineBackend


class CountingTokenizer:
    def __init__(self) -> None:
        self.calls = 0

    def apply_chat_template(self, messages: list[dict[str, str]], **_: Any) -> list[int]:
        self.calls += 1
        return [len(m["content"]) + i for i, m in enumerate(messages)] + [70_000, 2**31 - 1]


def messages(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "rubric"}, {"role": "user", "content": text}]


async def test_the_counted_ids_are_handed_to_generate_once() -> None:
    backend = VLLMEngineBackend(EngineOptions(model="m", served_model_name="m"))
    tokenizer = CountingTokenizer()
    backend._tokenizer = tokenizer
    prompt = messages("four answers")
    assert await backend.count_prompt_tokens(prompt) == 4
    assert backend._counted.take(prompt) == [6, 13, 70_000, 2**31 - 1]  # large ids survive storage
    assert backend._counted.take(prompt) is None  # taken once: a retry tokenizes again
    assert tokenizer.calls == 1


def test_only_the_same_list_object_matches_and_the_store_is_bounded() -> None:
    kept = TokenizedPrompts(max_prompts=2)
    first, equal_copy = messages("a"), messages("a")
    kept.keep(first, [1, 2])
    assert kept.take(equal_copy) is None  # equal content, another list: not assumed the same prompt
    kept.keep(first, [1, 2])
    for i in range(3):
        kept.keep(messages(str(i)), [i])
    assert len(kept) == 2 and kept.take(first) is None  # the oldest was dropped


def test_prompts_never_generated_cannot_pile_up_past_the_token_budget() -> None:
    kept = TokenizedPrompts(max_tokens=1_000)
    refused = [messages(f"giant {i}") for i in range(5)]
    for prompt in refused:
        kept.keep(prompt, list(range(400)))
    assert len(kept) == 2  # 800 tokens kept, the three oldest dropped
    assert kept.take(refused[0]) is None and kept.take(refused[4]) == list(range(400))
    kept.keep(messages("huge"), list(range(5_000)))  # over the budget alone: not kept at all
    assert len(kept) == 0
