"""Calibration: pass rates, the recommended threshold and its tie rule, flat and thin groups."""

from __future__ import annotations

import json

import pytest

from judge_service.quality.calibration import THRESHOLDS, calibrate, groups_from_jsonl


def test_thresholds_are_the_twenty_step_grid() -> None:
    assert THRESHOLDS == (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def test_rates_counts_and_the_tie_rule_worked_by_hand() -> None:
    groups = [[1.0, 0.75, 0.5, 0.25], [0.6, 0.6, None], [0.9], [None, None]]
    report = calibrate(groups)
    assert (report.groups, report.scored_answers, report.unscored_answers) == (4, 7, 3)
    assert report.mean_score == pytest.approx(4.6 / 7)
    by_t = {r.threshold: r for r in report.thresholds}
    assert (by_t[0.5].passed, by_t[0.5].failed) == (6, 1)
    assert (by_t[0.55].passed, by_t[0.6].passed, by_t[0.65].passed) == (5, 5, 3)
    assert by_t[0.95].passed == 1 and by_t[0.95].pass_rate == pytest.approx(1 / 7)
    # 0.55 and 0.60 both fail 2/7 (28.6%), equally close to 37.5%: the lower threshold wins.
    assert report.recommendation.threshold == 0.55
    assert report.recommendation.fail_rate == pytest.approx(2 / 7)
    assert report.flat_groups == 1 and report.flat_group_share == 0.25
    assert report.too_few_scored_groups == 2 and report.too_few_scored_share == 0.5


def test_recommendation_prefers_the_fail_rate_nearest_the_middle_of_the_band() -> None:
    # 20 answers: 6 at 0.5, 2 at 0.6, 4 at 0.7, 8 at 1.0 -> fail 30% at 0.55-0.6, 40% at 0.65-0.7.
    scores = [0.5] * 6 + [0.6] * 2 + [0.7] * 4 + [1.0] * 8
    report = calibrate([scores[i : i + 4] for i in range(0, 20, 4)])
    assert report.recommendation.threshold == 0.65
    assert report.recommendation.fail_rate == pytest.approx(0.4)


def test_scores_a_hair_under_a_threshold_from_float_rounding_still_pass() -> None:
    report = calibrate([[0.55 - 1e-12, 0.2]])
    assert {r.threshold: r.passed for r in report.thresholds}[0.55] == 1


@pytest.mark.parametrize(
    ("scores", "hint"),
    [
        ([1.0] * 8, "lenient"),
        ([0.25] * 8, "strict"),
        ([0.4] * 2 + [0.6] * 6 + [1.0] * 2, "jumps from 20% at 0.60 to 80% at 0.65"),
    ],
)
def test_no_threshold_in_the_band_says_why(scores: list[float], hint: str) -> None:
    recommendation = calibrate([scores]).recommendation
    assert recommendation.threshold is None and recommendation.fail_rate is None
    assert hint in recommendation.reason


def test_nothing_scored() -> None:
    report = calibrate([[None, None]])
    assert report.recommendation.reason == "no scored answers"
    assert report.mean_score is None and report.unscored_answers == 2
    assert calibrate([]).flat_group_share is None


def test_scores_above_one_are_flagged() -> None:
    assert "exceed 1" in calibrate([[1.5, 0.2]]).notes[0]


def test_groups_from_jsonl_reads_responses_wrappers_and_skips_errors() -> None:
    response = {"answers": [{"id": "a", "status": "scored", "score": 0.5}, {"id": "b", "status": "unscored"}]}
    lines = [
        json.dumps(response),
        json.dumps({"index": 3, "judgement": response}),
        json.dumps({"index": 4, "error": {"code": "judge_timeout", "message": "slow"}}),
        "{truncated",
        "",
    ]
    groups, skipped = groups_from_jsonl(lines)
    assert groups == [[0.5, None], [0.5, None]]
    assert skipped == 2
