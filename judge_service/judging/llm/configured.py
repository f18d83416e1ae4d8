"""The LLM judge's caller as the settings describe it: what app.py builds for the judge, and what each
judge of a jury (judging/jury/build.py) builds with the settings it overrides."""

from __future__ import annotations

from judge_service.backends.base import JudgeBackend
from judge_service.config import Settings
from judge_service.judging.llm.caller import JudgeCaller, JudgeSettings
from judge_service.judging.llm.prompt import PromptRenderer
from judge_service.metrics import JudgeMetrics


def judge_caller(settings: Settings, backend: JudgeBackend, metrics: JudgeMetrics) -> JudgeCaller:
    return JudgeCaller(
        backend,
        PromptRenderer(settings.resolved_prompts_dir(), settings.prompt_template),
        metrics,
        JudgeSettings(
            temperature=settings.temperature,
            reason_max_chars=settings.resolved_reason_max_chars(),
            parse_retries=settings.parse_retries,
            deadline_s=settings.group_deadline_s,
            shuffle_answers=settings.shuffle_answers,
            decoding=settings.resolved_decoding(),
            reason_words=settings.resolved_reason_words(),
            score_from=settings.score_from,
            reason_language=settings.reason_language,
            reasons=settings.reasons,
            reason_sample_rate=settings.reason_sample_rate,
            mark_logprobs=settings.mark_logprobs,
            thinking=settings.resolved_thinking(),
            reasoning_effort=settings.reasoning_effort,
            thinking_max_tokens=settings.thinking_max_tokens,
            thinking_min_tokens=settings.thinking_min_tokens,
            store_thinking=settings.store_thinking,
            store_thinking_chars=settings.store_thinking_chars,
            chat_template_sha256=settings.chat_template_sha256(),
            rubric_items=settings.rubric_items,
            rubric_instructions=settings.rubric_instructions,
        ),
    )
