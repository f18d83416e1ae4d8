"""Agreement statistics against values worked by hand (and matching scipy.stats' tie handling)."""

from __future__ import annotations

import json
import math

import pytest

from judge_service.quality.agreement import (
    HumanLabels,
    JudgementIndex,
    agreement,
    average_ranks,
    group_agreement,
    kendall_tau_b,
    labels_from_jsonl,
    pairwise_agreement,
    spearman_rho,
)


def test_perfect_and_reversed_orders() -> None:
    x = [1.0, 2.0, 3.0, 4.0]
    assert kendall_tau_b(x, [0.1, 0.2, 0.3, 0.4]) == 1.0
    assert kendall_tau_b(x, [0.4, 0.3, 0.2, 0.1]) == -1.0
    assert spearman_rho(x, [0.1, 0.2, 0.3, 0.4]) == pytest.approx(1.0)
    assert spearman_rho(x, [0.4, 0.3, 0.2, 0.1]) == pytest.approx(-1.0)


def test_ties_match_scipy_tau_b_and_spearman_worked_by_hand() -> None:
    # x = [1, 2, 2, 3], y = [1, 3, 2, 4]: of the 6 pairs, 5 concordant, 0 discordant, 1 tied in x only.
    # tau-b = 5 / sqrt((6 - 1) * (6 - 0)) = 5 / sqrt(30) (scipy.stats.kendalltau: 0.9128709291752769).
    x, y = [1.0, 2.0, 2.0, 3.0], [1.0, 3.0, 2.0, 4.0]
    assert kendall_tau_b(x, y) == pytest.approx(5 / math.sqrt(30))
    assert kendall_tau_b(x, y) == pytest.approx(0.9128709291752769)
    # Average ranks x: 1, 2.5, 2.5, 4; y: 1, 3, 2, 4. Centered sums: cov 4.5, var_x 4.5, var_y 5.
    # rho = 4.5 / sqrt(4.5 * 5) (scipy.stats.spearmanr: 0.9486832980505138).
    assert average_ranks(x) == [1.0, 2.5, 2.5, 4.0]
    assert spearman_rho(x, y) == pytest.approx(4.5 / math.sqrt(22.5))
    assert spearman_rho(x, y) == pytest.approx(0.9486832980505138)


def test_two_swaps_without_ties() -> None:
    # 10 pairs, 2 discordant: tau = (8 - 2) / 10; rho = 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 24 / 120.
    x, y = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0]
    assert kendall_tau_b(x, y) == pytest.approx(0.6)
    assert spearman_rho(x, y) == pytest.approx(0.8)


def test_undefined_when_one_side_is_constant() -> None:
    assert kendall_tau_b([1.0, 2.0, 3.0], [0.5, 0.5, 0.5]) is None
    assert spearman_rho([1.0, 2.0, 3.0], [0.5, 0.5, 0.5]) is None
    assert kendall_tau_b([1.0], [1.0]) is None


def test_pairwise_counts_grader_ties_as_half_and_skips_human_ties() -> None:
    assert pairwise_agreement([1.0, 2.0, 3.0], [0.5, 0.5, 1.0]) == (2.5, 3)
    assert pairwise_agreement([1.0, 2.0, 2.0, 3.0], [1.0, 3.0, 2.0, 4.0]) == (5.0, 5)
    assert pairwise_agreement([2.0, 1.0], [0.1, 0.9]) == (0.0, 1)


def test_ranks_are_one_best() -> None:
    labels = HumanLabels(group_key="g", human={"a": 1, "b": 2, "c": 3}, kind="rank")
    result = group_agreement(labels, {"a": 0.9, "b": 0.5, "c": 0.1})
    assert result.kendall_tau_b == 1.0 and result.pairwise_accuracy == 1.0
    assert result.mean_absolute_error is None


def test_scores_on_a_one_to_five_scale_are_scaled_for_mae() -> None:
    labels = HumanLabels(judgement_id="j", human={"a": 5, "b": 1, "c": 3}, scale=(1, 5))
    result = group_agreement(labels, {"a": 0.75, "b": 0.0, "c": None})
    assert result.answers == 2 and result.missing_answers == ["c"]
    assert result.mean_absolute_error == pytest.approx((0.25 + 0.0) / 2)
    with pytest.raises(ValueError, match="outside the scale"):
        group_agreement(HumanLabels(judgement_id="j", human={"a": 5}), {"a": 0.5})


def test_report_averages_per_group_and_pools_pairs_and_mae() -> None:
    perfect = HumanLabels(group_key="p", human={"a": 1.0, "b": 0.5, "c": 0.0})
    reversed_ = HumanLabels(group_key="r", human={"a": 0.0, "b": 1.0})
    lost = HumanLabels(group_key="lost", human={"a": 1.0})
    report = agreement(
        [
            (perfect, {"a": 1.0, "b": 0.5, "c": 0.0}),
            (reversed_, {"a": 1.0, "b": 0.0}),
            (lost, None),
        ]
    )
    assert (report.groups, report.matched_groups, report.unmatched) == (3, 2, ["lost"])
    assert report.mean_kendall_tau_b == pytest.approx(0.0)  # (1 + -1) / 2
    assert report.tau_groups == 2
    assert (report.pairs, report.pairwise_accuracy) == (4, pytest.approx(3 / 4))
    assert report.mae_answers == 5 and report.mean_absolute_error == pytest.approx(2 / 5)


def test_labels_file_and_judgement_index() -> None:
    lines = [
        json.dumps({"judgement_id": "j1", "human": {"a": 1, "b": 2}, "kind": "rank"}),
        "",
        json.dumps({"group_key": "q7", "human": {"a": 0.2}}),
    ]
    labels = labels_from_jsonl(lines)
    assert [lab.key for lab in labels] == ["j1", "q7"]
    with pytest.raises(ValueError, match="line 1"):
        labels_from_jsonl([json.dumps({"human": {"a": 1}})])

    index = JudgementIndex()
    answers = [
        {"id": "a", "status": "scored", "score": 0.5},
        {"id": "b", "status": "unscored", "score": None},
    ]
    index.add_jsonl(
        [
            json.dumps({"judgement_id": "j1", "group_key": "q7", "answers": answers}),
            json.dumps({"index": 2, "judgement": {"judgement_id": "j2", "group_key": None, "answers": []}}),
            json.dumps({"index": 3, "error": {"code": "judge_timeout"}}),
            "{cut off",
        ]
    )
    assert index.find(labels[0]) == {"a": 0.5, "b": None}
    assert index.find(labels[1]) == {"a": 0.5, "b": None}
    assert index.find(HumanLabels(judgement_id="j2", human={"a": 1})) == {}
    assert index.find(HumanLabels(judgement_id="nope", human={"a": 1})) is None
