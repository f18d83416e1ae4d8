"""Prometheus metrics on an injected registry (no global state: tests and apps each get their own).

With several worker processes (JUDGE_WORKERS, cli.py) prometheus_client's multiprocess mode is on
(PROMETHEUS_MULTIPROC_DIR): every worker writes its values to files there, and whichever worker answers
/metrics adds them all up: counters and histograms sum over workers, gauges as each says below.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from judge_service.schemas import CANARY_KINDS

# Every kind of fault in a judge reply (judge_output_problems_total's `kind`, each shown at 0 from the start):
# judging/llm/parser.py reports them, and "truncated" is added by the judge from finish_reason.
OUTPUT_PROBLEMS = (
    "unreadable",
    "missing_answer",
    "duplicate_answer",
    "unknown_answer",
    "invalid_entry",
    "missing_criterion",
    "invalid_mark",
    "missing_reason",
    "invalid_attribution",
    "truncated",
)

_LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
_GROUP_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64)


class JudgeMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        # (metric, label values) -> the labelled child: `labels()` checks its arguments and takes a lock
        # on every call, and every request asks for the same few children (bounded label values).
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        r = self.registry
        self.requests = Counter(
            "judge_requests_total",
            "HTTP requests by route, status code and API key name (empty without keys)",
            ["endpoint", "status", "key"],
            registry=r,
        )
        self.pruned = Counter(
            "judge_pruned_rows_total",
            "Rows deleted by retention and prunes asked for, by what they held",
            ["what"],
            registry=r,
        )
        self.group_seconds = Histogram(
            "judge_group_seconds",
            "Time to grade one group, admission wait included",
            ["grader"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.answers_per_group = Histogram(
            "judge_answers_per_group", "Answers in each graded group", buckets=_GROUP_SIZE_BUCKETS, registry=r
        )
        self.groups = Counter(
            "judge_groups_total", "Graded groups by outcome", ["grader", "status"], registry=r
        )
        self.prompt_tokens = Counter(
            "judge_prompt_tokens_total", "Prompt tokens sent to the judge", registry=r
        )
        self.completion_tokens = Counter(
            "judge_completion_tokens_total", "Completion tokens the judge produced", registry=r
        )
        self.judge_replies = Counter(
            "judge_replies_total", "Replies the judge backend returned (one per judge call)", registry=r
        )
        self.parse_failures = Counter(
            "judge_parse_failures_total", "Judge replies with at least one invalid answer entry", registry=r
        )
        self.output_problems = Counter(
            "judge_output_problems_total",
            "Judge replies with a fault, by kind (one reply can count under several kinds)",
            ["kind"],
            registry=r,
        )
        for kind in OUTPUT_PROBLEMS:
            self.output_problems.labels(kind=kind)
        self.idempotent_replays = Counter(
            "judge_idempotent_replays_total",
            "Requests answered with the judgement already stored under their Idempotency-Key",
            registry=r,
        )
        self.idempotent_waits = Counter(
            "judge_idempotent_waits_total",
            "Polls of an Idempotency-Key that another process holds while it judges the same request",
            registry=r,
        )
        self.retries = Counter(
            "judge_retries_total", "Judge calls repeated, by reason", ["reason"], registry=r
        )
        self.unscored_answers = Counter(
            "judge_unscored_answers_total", "Answers returned without a score", ["grader"], registry=r
        )
        self.backend_errors = Counter(
            "judge_backend_errors_total",
            "Groups failed by the judge backend, by error code",
            ["code"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "judge_queue_depth", "Groups waiting for a judge slot", registry=r, multiprocess_mode="livesum"
        )
        self.in_flight = Gauge(
            "judge_groups_in_flight", "Groups being judged now", registry=r, multiprocess_mode="livesum"
        )
        self.admission_limit = Gauge(  # with workers: the replica's total
            "judge_admission_limit",
            "Admission caps (JUDGE_MAX_GROUPS_IN_FLIGHT, JUDGE_MAX_GROUPS_QUEUED), so that alerts and "
            "autoscaling read queue depth against them",
            ["limit"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.engine_ready = Gauge(  # with workers: 1 only when every live worker's backend is ready
            "judge_engine_ready",
            "1 when the judge backend is loaded",
            registry=r,
            multiprocess_mode="livemin",
        )
        # From the in-process vLLM engine's scheduler (backends/engine_stats.py); absent for other backends.
        self.engine_waiting = Gauge(
            "judge_engine_waiting_requests",
            "Requests queued inside the vLLM engine's scheduler",
            registry=r,
            multiprocess_mode="livemax",
        )
        self.engine_running = Gauge(
            "judge_engine_running_requests", "Requests in the vLLM engine's running batch", registry=r
        )
        self.engine_kv_cache_usage = Gauge(
            "judge_engine_kv_cache_usage", "Share of the vLLM engine's KV cache in use (0-1)", registry=r
        )
        self.engine_prefix_cache_queries = Counter(
            "judge_engine_prefix_cache_queried_tokens",
            "Prompt tokens looked up in the prefix cache",
            registry=r,
        )
        self.engine_prefix_cache_hits = Counter(
            "judge_engine_prefix_cache_hit_tokens", "Prompt tokens found in the prefix cache", registry=r
        )
        self.order_sensitivity = Histogram(
            "judge_order_sensitivity",
            "Per group judged under several answer orders: mean spread of answers' scores across orders",
            buckets=(0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0),
            registry=r,
        )

        # Comparison grading (judging/comparison/): comparisons per group, and those without a verdict.
        self.comparisons = Histogram(
            "judge_comparisons_per_group",
            "Comparisons a comparison grader made for one group (failed ones included)",
            ["grader"],
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            registry=r,
        )
        self.comparisons_failed = Counter(
            "judge_comparisons_failed_total",
            "Comparisons that gave no verdict after their retries (left out of the scores, never a guess)",
            ["grader"],
            registry=r,
        )
        for grader in ("pairwise", "knockout"):
            self.comparisons_failed.labels(grader=grader)

        # Cascades (judging/plan.py): groups the rule decided alone, and groups the judge was called for.
        self.cascade_groups = Counter(
            "judge_cascade_groups",
            "Groups graded with a cascade, by path: rule_only (no judge call) or judged",
            ["path"],
            registry=r,
        )
        for path in ("rule_only", "judged"):
            self.cascade_groups.labels(path=path)

        # Juries (judging/jury/): per judge, and how far judges disagree.
        self.jury_calls = Counter(
            "judge_jury_calls", "Groups a jury judge was asked to mark", ["judge"], registry=r
        )
        self.jury_failures = Counter(
            "judge_jury_failures",
            "Groups a jury judge gave no marks for (the others decided)",
            ["judge"],
            registry=r,
        )
        self.jury_seconds = Histogram(
            "judge_jury_seconds", "Seconds a jury judge took for one group", ["judge"],
            buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.jury_disagreement = Histogram(
            "judge_jury_disagreement_marks",
            "Per answer scored by 2+ jury judges: how many marks (1-5 scale) apart their scores are",
            buckets=(0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0),
            registry=r,
        )
        self.jury_groups = Counter(
            "judge_jury_groups",
            "Groups a jury graded, by path: all (every judge asked), agreed (escalation off: the first two "
            "agreed), escalated (the others were asked too)",
            ["path"],
            registry=r,
        )
        for path in ("all", "agreed", "escalated"):
            self.jury_groups.labels(path=path)
        self.jury_judge_ready = Gauge(  # with workers: 1 only where every live worker sees it ready
            "judge_jury_judge_ready",
            "1 when a jury judge's backend is ready",
            ["judge"],
            registry=r,
            multiprocess_mode="livemin",
        )

        # Reasons (judging/llm/reasons.py, explain.py): groups judged with and without, and reasons
        # written afterwards.
        self.groups_by_reasons = Counter(
            "judge_reasons_groups_total",
            "Groups the LLM judge marked, by whether it wrote reasons with the marks (inline) or not (none)",
            ["reasons"],
            registry=r,
        )
        self.explained = Counter(
            "judge_reasons_explained_total",
            "Judgements whose reasons were written afterwards (POST /v1/judgements/{id}/reasons)",
            registry=r,
        )
        for mode in ("inline", "none"):
            self.groups_by_reasons.labels(reasons=mode)

        # Rubrics (service/rubrics.py): how each rubric asked for was found.
        self.rubrics = Counter(
            "judge_rubrics_total",
            "Rubrics asked for (POST /v1/rubrics, rubric 'generate'), by how they were found: written by the "
            "judge now, stored, or waited for while another request or replica wrote them",
            ["source"],
            registry=r,
        )
        self.rubric_seconds = Histogram(
            "judge_rubric_write_seconds",
            "Seconds the judge took to write a rubric",
            buckets=(0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320),
            registry=r,
        )
        for source in ("written", "stored", "waited"):
            self.rubrics.labels(source=source)

        # Watching for reward hacking (watch/): canary answers and length bias.
        self.canary_groups = Counter(
            "judge_canary_groups_total",
            "Groups whose canary answer was scored beside at least one scored answer, by canary kind",
            ["kind"],
            registry=r,
        )
        self.canary_outranked = Counter(
            "judge_canary_outranked_total",
            "Canary answers that scored above their group's median answer, by canary kind",
            ["kind"],
            registry=r,
        )
        self.canary_score = Histogram(
            "judge_canary_score",
            "Scores given to canary answers, by canary kind",
            ["kind"],
            buckets=(0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0),
            registry=r,
        )
        for kind in CANARY_KINDS:  # every kind shown from the start: rates and alerts see 0, not nothing
            self.canary_groups.labels(kind=kind)
            self.canary_outranked.labels(kind=kind)
        # A summary, not a histogram: prometheus_client drops a histogram's _sum when a bucket is negative,
        # and the mean (_sum / _count) is what the alert and the dashboard read.
        self.length_bias = Summary(
            "judge_length_bias",
            "Per group with 3+ scored answers: Spearman correlation of answer length and score",
            registry=r,
        )

        # The engine's sleep and wake for a trainer sharing its GPUs (backends/lifecycle.py).
        self.engine_state = Gauge(
            "judge_engine_state",
            "1 for the state the judge's engine is in (awake, draining, asleep, waking, failed), 0 for "
            "the others",
            ["state"],
            registry=r,
        )
        self.engine_asleep_seconds = Counter(
            "judge_engine_asleep_seconds_total", "Time the judge's engine spent asleep", registry=r
        )
        self.engine_wake_seconds = Histogram(
            "judge_engine_wake_seconds",
            "Time each wake of the judge's engine took",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.engine_requests = Counter(
            "judge_engine_sleep_requests_total",
            "Groups that arrived while the engine was not awake: held (waited for it to wake) or refused "
            "(503 engine_asleep, after the hold or at once)",
            ["outcome"],
            registry=r,
        )
        for outcome in ("held", "refused"):
            self.engine_requests.labels(outcome=outcome)
        self.engine_wake_checks = Counter(
            "judge_engine_wake_checks_total",
            "Checks after a wake that the judge marks its probe groups as before: passed or failed (the "
            "engine then stays out of service)",
            ["outcome"],
            registry=r,
        )
        for outcome in ("passed", "failed"):
            self.engine_wake_checks.labels(outcome=outcome)

        # The audit judge (JUDGE_AUDIT, watch/auditor.py).
        self.audit_groups = Counter(
            "judge_audit_groups_total",
            "Groups drawn for the audit judge, by outcome: audited, failed (the audit judge erred), dropped "
            "(the backlog was full, or the service stopped first)",
            ["outcome"],
            registry=r,
        )
        for outcome in ("audited", "failed", "dropped"):
            self.audit_groups.labels(outcome=outcome)
        self.audit_backlog = Gauge("judge_audit_backlog", "Groups waiting for the audit judge", registry=r)
        self.audit_seconds = Histogram(
            "judge_audit_seconds", "Time the audit judge took per group", buckets=_LATENCY_BUCKETS, registry=r
        )
        self.audit_divergence = Gauge(
            "judge_audit_divergence_onset_step",
            "Per run whose training judge parted from the audit judge (the onset detector fired on this "
            "replica): the step where the divergence began",
            ["run_id"],
            registry=r,
        )

        # Group assembly (POST /v1/judge/member, assembly/).
        self.member_open_groups = Gauge(
            "judge_member_open_groups",
            "Groups collecting members (not yet complete or at their deadline)",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.members_waiting = Gauge(
            "judge_members_waiting",
            "Member requests waiting for their group to be judged",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.member_wait_seconds = Histogram(
            "judge_member_wait_seconds",
            "From a member's arrival to its group closing (complete or at the deadline), judge time excluded",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.member_groups_closed = Counter(
            "judge_member_groups_closed_total", "Assembled groups closed, by why", ["reason"], registry=r
        )
        self.member_incomplete_groups = Counter(
            "judge_member_incomplete_groups_total",
            "Groups closed at their deadline with too few members to judge: each member answered unscored",
            registry=r,
        )
        for reason in ("size", "deadline"):
            self.member_groups_closed.labels(reason=reason)
        self.code_grader_calls = Counter(
            "judge_code_grader_calls_total",
            "Calls of graders written as code, by grader and outcome (ok, grader_error, grader_timeout, "
            "grader_memory, grader_crashed, grader_invalid_result, ...)",
            ["grader", "outcome"],
            registry=r,
        )
        self.code_grader_seconds = Histogram(
            "judge_code_grader_seconds",
            "Time to run one group's calls of a code grader, waiting for a worker included",
            ["grader"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.code_workers_replaced = Counter(
            "judge_code_workers_replaced_total",
            "Code grader worker processes lost (timeout, crash) and replaced",
            registry=r,
        )

        self.thinking_tokens = Histogram(
            "judge_thinking_tokens",
            "Tokens a thinking judge spent thinking per call, by mode (on, budget)",
            ["mode"],
            buckets=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768),
            registry=r,
        )
        self.reasoning_truncated = Counter(
            "judge_reasoning_truncated_total",
            "Judge calls still thinking when their reply stopped (no JSON): retried once with a smaller "
            "budget, then their answers unscored",
            registry=r,
        )
        self.thinking_budget_exhausted = Counter(
            "judge_thinking_budget_exhausted_total",
            "Judge calls whose thinking reached its budget (the end of the thinking was forced)",
            registry=r,
        )
        self.reasoning_misrouted = Counter(
            "judge_reasoning_misrouted_total",
            "Judge replies an endpoint put in its reasoning field, recovered from there",
            registry=r,
        )

        # Series that exist from the start, so dashboards and alerts see 0 rather than "no data".
        self.retries.labels(reason="invalid_output")
        self.unscored_answers.labels(grader="judge")
        for code in ("judge_unavailable", "judge_timeout"):
            self.backend_errors.labels(code=code)

    def child(self, metric: Any, *values: str) -> Any:
        """`metric.labels(*values)`, looked up once per label values (the children are never removed)."""
        key = (id(metric), values)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*values)
        return found

    def render(self) -> bytes:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # several workers: every worker's values
            everyone = CollectorRegistry()
            MultiProcessCollector(everyone)
            return generate_latest(everyone)
        return generate_latest(self.registry)
