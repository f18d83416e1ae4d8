"""The in-process vLLM engine's scheduler state, as the service's Prometheus metrics.

vLLM hands every engine step's statistics to its stat loggers, in the service's own process; this one
copies what an operator of a judge needs: requests waiting in the engine (the real engine queue, behind
the service's admission queue), requests running, KV cache use, and prefix cache lookups and hits (the
rubric shared by every group should hit). vLLM says these stats are not a stable interface, hence
getattr with defaults: a renamed field shows as 0 instead of breaking the engine.
"""

from __future__ import annotations

from typing import Any

from judge_service.metrics import JudgeMetrics


def stat_logger_factory(metrics: JudgeMetrics) -> Any:
    """A vLLM StatLoggerBase subclass (a per-engine logger factory) that records into `metrics`."""
    from vllm.v1.metrics.loggers import StatLoggerBase

    class EngineStatsToPrometheus(StatLoggerBase):
        def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
            self.engine_index = engine_index

        def record(
            self,
            scheduler_stats: Any,
            iteration_stats: Any,
            mm_cache_stats: Any = None,
            engine_idx: int = 0,
        ) -> None:
            if scheduler_stats is not None:
                record_scheduler_stats(metrics, scheduler_stats)

        def log_engine_initialized(self) -> None:
            pass

    return EngineStatsToPrometheus


def record_scheduler_stats(metrics: JudgeMetrics, stats: Any) -> None:
    metrics.engine_waiting.set(getattr(stats, "num_waiting_reqs", 0))
    metrics.engine_running.set(getattr(stats, "num_running_reqs", 0))
    metrics.engine_kv_cache_usage.set(getattr(stats, "kv_cache_usage", 0.0))
    prefix = getattr(stats, "prefix_cache_stats", None)
    if prefix is not None:
        metrics.engine_prefix_cache_queries.inc(max(0, getattr(prefix, "queries", 0)))
        metrics.engine_prefix_cache_hits.inc(max(0, getattr(prefix, "hits", 0)))
