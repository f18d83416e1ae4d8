"""The vLLM scheduler's stats become the service's engine metrics."""

from __future__ import annotations

from types import SimpleNamespace

from judge_service.backends.engine_stats import record_scheduler_stats
from judge_service.metrics import JudgeMetrics


def value(metrics: JudgeMetrics, name: str) -> float:
    sample = metrics.registry.get_sample_value(name)
    assert sample is not None, name
    return sample


def test_scheduler_stats_set_the_gauges_and_add_up_prefix_cache_lookups() -> None:
    metrics = JudgeMetrics()
    for waiting, hits in ((5, 100), (2, 300)):
        stats = SimpleNamespace(
            num_waiting_reqs=waiting,
            num_running_reqs=8,
            kv_cache_usage=0.25,
            prefix_cache_stats=SimpleNamespace(queries=400, hits=hits),
        )
        record_scheduler_stats(metrics, stats)
    assert value(metrics, "judge_engine_waiting_requests") == 2  # the latest step, not a sum
    assert value(metrics, "judge_engine_running_requests") == 8
    assert value(metrics, "judge_engine_kv_cache_usage") == 0.25
    assert value(metrics, "judge_engine_prefix_cache_queried_tokens_total") == 800
    assert value(metrics, "judge_engine_prefix_cache_hit_tokens_total") == 400


def test_a_field_vllm_renamed_reads_as_zero_instead_of_failing() -> None:
    metrics = JudgeMetrics()
    record_scheduler_stats(metrics, SimpleNamespace())
    assert value(metrics, "judge_engine_waiting_requests") == 0
