"""Writes judge-service.json, the Grafana dashboard of the judge fleet: judge, router and vLLM rows.

    python deploy/grafana/build_dashboard.py        (tests/deploy checks the committed file is its output)

Every expression is checked with promtool, and every metric it names against what a live service, a live
vllm-router and the installed vLLM export (tests/deploy/test_dashboard.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

# (title, unit, [(legend, expression), ...]) per panel, by row.
ROWS: list[tuple[str, list[tuple[str, str, list[tuple[str, str]]]]]] = [
    (
        "Judge service",
        [
            ("Groups per second, by outcome", "reqps", [
                ("{{status}}", "sum by (status) (rate(judge_groups_total[5m]))"),
            ]),
            ("Group latency", "s", [
                (f"p{q}", f"histogram_quantile(0.{q}, sum by (le) (rate(judge_group_seconds_bucket[5m])))")
                for q in (50, 90, 99)
            ]),
            ("Unscored answers (share)", "percentunit", [
                ("unscored", "sum(rate(judge_unscored_answers_total[5m]))"
                             " / sum(rate(judge_answers_per_group_sum[5m]))"),
            ]),
            ("Queue and admission, per replica", "short", [
                ("queued {{instance}}", "sum by (instance) (judge_queue_depth)"),
                ("in flight {{instance}}", "sum by (instance) (judge_groups_in_flight)"),
                ("queue cap {{instance}}", 'sum by (instance) (judge_admission_limit{limit="queued"})'),
            ]),
            ("Requests per second, by HTTP status", "reqps", [
                ("{{status}}", "sum by (status) (rate(judge_requests_total[5m]))"),
            ]),
            ("Replicas ready", "short", [
                ("ready", "sum(judge_engine_ready)"),
            ]),
            ("Idempotent replays and waits", "reqps", [
                ("replays", "sum(rate(judge_idempotent_replays_total[5m]))"),
                ("waits", "sum(rate(judge_idempotent_waits_total[5m]))"),
            ]),
            ("Members waiting for their group", "short", [
                ("waiting", "sum(judge_members_waiting)"),
                ("open groups", "sum(judge_member_open_groups)"),
            ]),
            ("Judge tokens per second", "short", [
                ("prompt", "sum(rate(judge_prompt_tokens_total[5m]))"),
                ("completion", "sum(rate(judge_completion_tokens_total[5m]))"),
            ]),
        ],
    ),
    (
        "Reward hacking watch",
        [
            ("Canaries outranking their group, by kind", "percentunit", [
                ("{{kind}}", "sum by (kind) (increase(judge_canary_outranked_total[30m]))"
                             " / sum by (kind) (increase(judge_canary_groups_total[30m]))"),
            ]),
            ("Canary scores (median), by kind", "short", [
                ("{{kind}}", "histogram_quantile(0.5, sum by (le, kind) ("
                             "rate(judge_canary_score_bucket[30m])))"),
            ]),
            ("Length bias (mean per group)", "short", [
                ("length bias", "sum(rate(judge_length_bias_sum[30m]))"
                                " / sum(rate(judge_length_bias_count[30m]))"),
            ]),
            ("Audit judge: groups per second, by outcome", "reqps", [
                ("{{outcome}}", "sum by (outcome) (rate(judge_audit_groups_total[5m]))"),
                ("backlog", "sum(judge_audit_backlog)"),
            ]),
            ("Audit judge: divergence onset step, by run", "short", [
                ("{{run_id}}", "max by (run_id) (judge_audit_divergence_onset_step)"),
            ]),
        ],
    ),
    (
        "Router",
        [
            ("Engine calls per second, by engine", "reqps", [
                ("{{worker}}", "sum by (worker) (rate(vllm_router_processed_requests_total[5m]))"),
            ]),
            ("Engines in rotation", "short", [
                ("healthy {{worker}}", "vllm_router_worker_health"),
                ("breaker open {{worker}}", "vllm_router_cb_state"),
            ]),
            ("Router retries per second", "reqps", [
                ("retries", "sum(rate(vllm_router_retries_total[5m]))"),
            ]),
        ],
    ),
    (
        "vLLM engines",
        [
            ("KV cache in use", "percentunit", [
                ("{{instance}}", "max by (instance) (vllm:kv_cache_usage_perc)"),
            ]),
            ("Prefix cache hit rate", "percentunit", [
                ("hits", "sum(rate(vllm:prefix_cache_hits_total[5m]))"
                         " / sum(rate(vllm:prefix_cache_queries_total[5m]))"),
            ]),
            ("Requests running and waiting", "short", [
                ("running {{instance}}", "sum by (instance) (vllm:num_requests_running)"),
                ("waiting {{instance}}", "sum by (instance) (vllm:num_requests_waiting)"),
            ]),
            ("Tokens per second", "short", [
                ("prompt", "sum(rate(vllm:prompt_tokens_total[5m]))"),
                ("generated", "sum(rate(vllm:generation_tokens_total[5m]))"),
            ]),
            ("Engine request latency", "s", [
                (f"p{q}", f"histogram_quantile(0.{q}, sum by (le) ("
                          "rate(vllm:e2e_request_latency_seconds_bucket[5m])))")
                for q in (50, 99)
            ]),
        ],
    ),
]  # fmt: skip


def panel(
    panel_id: int, title: str, unit: str, targets: list[tuple[str, str]], x: int, y: int
) -> dict[str, Any]:
    return {
        "id": panel_id,
        "type": "timeseries",
        "title": title,
        "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": 8, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
            for i, (legend, expr) in enumerate(targets)
        ],
    }


def dashboard() -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    y = 0
    for row_title, row_panels in ROWS:
        panels.append({"id": len(panels) + 1, "type": "row", "title": row_title, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})  # fmt: skip
        y += 1
        for i, (title, unit, targets) in enumerate(row_panels):
            panels.append(panel(len(panels) + 1, title, unit, targets, x=(i % 3) * 8, y=y + (i // 3) * 8))
        y += ((len(row_panels) + 2) // 3) * 8
    return {
        "uid": "judge-service",
        "title": "Judge service",
        "tags": ["judge-service", "vllm"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"}
            ]
        },
        "panels": panels,
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    (HERE / "judge-service.json").write_text(render())
