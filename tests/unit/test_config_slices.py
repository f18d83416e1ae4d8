"""The settings split into slices (judge_service/config/) keeps every JUDGE_* name: a split that drops or
renames one fails here. Adding a setting adds its name below."""

from __future__ import annotations

import pytest

from judge_service.config import (
    BackendSettings,
    JudgingSettings,
    MemberAssemblySettings,
    Settings,
    StorageSettings,
    ThinkingSettings,
)

NAMES = [
    "access_log",
    "allow_inline_python",
    "allowed_hosts",
    "api_keys",
    "api_keys_file",
    "audit",
    "audit_backlog",
    "audit_concurrency",
    "audit_rate",
    "backend",
    "body_timeout_s",
    "canary_kinds",
    "canary_rate",
    "chat_template",
    "code_graders",
    "code_sandbox",
    "code_workers",
    "database_pool_size",
    "database_timeout_s",
    "database_url",
    "db_path",
    "dead_engine_exit_s",
    "decoding",
    "drain_timeout_s",
    "dtype",
    "enable_prefix_caching",
    "enforce_eager",
    "fake_latency_s",
    "gpu_memory_utilization",
    "group_deadline_s",
    "header_timeout_s",
    "health_interval_s",
    "home_dir",
    "host",
    "idempotency_lease_s",
    "jury",
    "jury_quorum",
    "keep_alive_s",
    "key_groups_per_minute",
    "key_max_groups_in_flight",
    "kv_cache_gib",
    "mark_logprobs",
    "max_groups_in_flight",
    "max_groups_queued",
    "max_model_len",
    "max_num_seqs",
    "max_request_bytes",
    "max_requests_in_flight",
    "member_assembly",
    "member_deadline_s",
    "member_max_open_groups",
    "member_max_waiting",
    "member_min_members",
    "metrics_public",
    "migrate_on_start",
    "model",
    "openai_api_key",
    "openai_backoff_base_s",
    "openai_backoff_max_s",
    "openai_base_url",
    "openai_group_header",
    "openai_timeout_s",
    "openai_transport_retries",
    "parse_retries",
    "port",
    "prompt_template",
    "prompts_dir",
    "prune_batch_rows",
    "prune_interval_s",
    "prune_pause_s",
    "ready_requires_store",
    "ready_store_timeout_s",
    "reason_language",
    "reason_max_chars",
    "reason_sample_rate",
    "reason_words",
    "reasoning_effort",
    "reasoning_parser",
    "reasoning_parser_plugin",
    "reasons",
    "retention_days",
    "rft_graders",
    "rubric_instructions",
    "rubric_items",
    "score_from",
    "served_model_name",
    "session_secret",
    "shuffle_answers",
    "sleep_drain_timeout_s",
    "sleep_hold_s",
    "sleep_mode",
    "store_thinking",
    "store_thinking_chars",
    "temperature",
    "template_max_output_chars",
    "template_memory_mb",
    "template_timeout_s",
    "template_workers",
    "thinking",
    "thinking_max_tokens",
    "thinking_min_tokens",
    "thinking_special_markers",
    "thinking_switch",
    "thinking_template_kwarg",
    "trajectory_max_chars",
    "trajectory_result_chars",
    "wake_check",
    "workers",
]


def test_the_setting_names_are_pinned() -> None:
    assert sorted(Settings.model_fields) == NAMES
    assert len(NAMES) == 108  # 98 at the cut; then trajectories 2, the audit 4, sleep and wake 4


def test_each_setting_belongs_to_one_slice() -> None:
    slices = [base for base in Settings.__mro__[1:] if base.__module__.startswith("judge_service.config.")]
    assert len(slices) == 12
    owned = [name for s in slices for name in s.__annotations__ if name in Settings.model_fields]
    assert sorted(owned) == NAMES  # none twice, none outside a slice


def test_a_slice_reads_its_environment_as_settings_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_MEMBER_DEADLINE_S", "7")
    monkeypatch.setenv("JUDGE_GROUP_DEADLINE_S", "9")
    assert MemberAssemblySettings().member_deadline_s == Settings().member_deadline_s == 7
    assert JudgingSettings().group_deadline_s == 9
    with pytest.raises(ValueError):
        StorageSettings(database_url="mysql://nowhere")
    with pytest.raises(ValueError):
        ThinkingSettings(thinking="sometimes")


def test_defaults_that_follow_the_judge_read_the_backend_slice() -> None:
    """A judging slice alone judges as a chosen model does; Settings asks its backend slice."""
    assert not BackendSettings(backend="fake").embedded_judge
    assert Settings().embedded_judge and Settings().resolved_reason_max_chars() == 60
    assert Settings(backend="fake").resolved_decoding() == "group"
    assert JudgingSettings().resolved_reason_max_chars() == 120
    assert JudgingSettings().resolved_decoding() == "group"
