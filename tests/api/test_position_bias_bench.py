"""benchmarks/position_bias.py's figures, on scripted judges whose position bias is known."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.engine import bench_settings, running_app
from benchmarks.groups import make_groups
from benchmarks.position_bias import judge_in_four_orders, stand_ins, summarize
from judge_service.backends.fake import FakeBackend
from judge_service.schemas import StoredJudgement
from tests.api.test_orders_api import FirstPlaceBias


async def judged(backend: FakeBackend, tmp_path: Path, decoding: str) -> list[list[StoredJudgement]]:
    settings = bench_settings(tmp_path, parse_retries=0, shuffle_answers=False, decoding=decoding)
    bodies = make_groups(3, 4, seed=5, n_criteria=2, run_id="bias")
    async with running_app(settings, backend) as app:
        return await judge_in_four_orders(app.state.service, bodies, seed=5)


@pytest.mark.parametrize("decoding", ["group", "per_answer"])
async def test_a_judge_that_only_sees_position_is_fully_order_sensitive(
    tmp_path: Path, decoding: str
) -> None:
    groups = await judged(FirstPlaceBias(), tmp_path, decoding)
    assert [len(g) for g in groups] == [4, 4, 4]  # four orders per group, each its own judgement
    summary = summarize(groups, 4)
    assert summary["groups"] == 3
    assert summary["order_sensitivity_mean"] == 1.0
    assert summary["mean_score_by_position"] == {"1": 1.0, "2": 0.0, "3": 0.0, "4": 0.0}
    assert summary["marks_by_position"] == {"1": 12, "2": 12, "3": 12, "4": 12}  # 3 groups x 4 orders
    assert summary["spearman_position_vs_score"] < -0.5
    assert summary["kendall_tau_between_orders_mean"] < 0
    assert summary["answers_whose_score_changed_share"] == 1.0
    assert summary["flat_share"] == 0.0 and summary["distinct_scores_per_group_mean"] == 2.0


async def test_a_judge_that_ignores_position_is_order_independent(tmp_path: Path) -> None:
    groups = await judged(FakeBackend(), tmp_path, "group")
    summary = summarize(groups, 4)
    assert summary["order_sensitivity_mean"] == 0.0
    assert summary["answers_whose_score_changed_share"] == 0.0
    assert summary["kendall_tau_between_orders_mean"] == 1.0
    assert summary["order_pairs_compared"] == 3 * 6


async def test_expected_marks_break_the_ties_of_integer_marks(tmp_path: Path) -> None:
    """The fake judge spreads each mark's probability over its neighbours: the same stored judgements
    scored from expected marks have more distinct scores and no fewer than from integer marks."""
    groups = await judged(FakeBackend(), tmp_path, "per_answer")
    assert stand_ins(groups) == 0  # every criterion mark has its expected mark
    by_mark, by_expected = summarize(groups, 4, "mark"), summarize(groups, 4, "expected")
    assert by_expected["distinct_scores_per_group_mean"] >= by_mark["distinct_scores_per_group_mean"]
    assert by_expected["flat_share"] <= by_mark["flat_share"]
    # Orders change nothing for this judge, whichever score is used.
    assert by_expected["order_sensitivity_mean"] == 0.0
