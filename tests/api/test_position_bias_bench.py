"""benchmarks/position_bias.py's figures, on scripted judges whose position bias is known."""

from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks.common import bench_settings, make_groups, running_app
from benchmarks.position_bias import summarize
from judge_service.backends.fake import FakeBackend
from judge_service.schemas import JudgeRequest, StoredJudgement
from tests.api.test_orders_api import FirstPlaceBias


async def judged(backend: FakeBackend, tmp_path: Path) -> list[StoredJudgement]:
    settings = bench_settings(tmp_path, parse_retries=0)
    bodies = make_groups(3, 4, seed=5, n_criteria=2, run_id="bias")
    async with running_app(settings, backend) as app:
        service = app.state.service
        requests = [JudgeRequest.model_validate(b | {"orders": 4}) for b in bodies]
        responses = await asyncio.gather(*(service.grade(r) for r in requests))
        return [await service.get(r.judgement_id) for r in responses]


async def test_a_judge_that_only_sees_position_is_fully_order_sensitive(tmp_path: Path) -> None:
    summary = summarize(await judged(FirstPlaceBias(), tmp_path), 4)
    assert summary["groups"] == 3
    assert summary["order_sensitivity_mean"] == 1.0
    assert summary["mean_score_by_position"] == {"1": 1.0, "2": 0.0, "3": 0.0, "4": 0.0}
    assert summary["marks_by_position"] == {"1": 12, "2": 12, "3": 12, "4": 12}  # 3 groups x 4 orders
    assert summary["spearman_position_vs_score"] < -0.5
    assert summary["kendall_tau_between_orders_mean"] < 0
    assert summary["answers_whose_score_changed_share"] == 1.0


async def test_a_judge_that_ignores_position_is_order_independent(tmp_path: Path) -> None:
    summary = summarize(await judged(FakeBackend(), tmp_path), 4)
    assert summary["order_sensitivity_mean"] == 0.0
    assert summary["answers_whose_score_changed_share"] == 0.0
    assert summary["kendall_tau_between_orders_mean"] == 1.0
    assert summary["order_pairs_compared"] == 3 * 6
