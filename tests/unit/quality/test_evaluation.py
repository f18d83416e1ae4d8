"""The eval figures against values computed by hand: ties, a group with one label, unscored answers, the
seeded bootstrap."""

from __future__ import annotations

import pytest

from judge_service.quality.evaluation import (
    JudgedAnswer,
    JudgedGroup,
    auroc,
    bootstrap,
    evaluate,
    flat_share,
    kendall_tau,
    pairwise_accuracy,
    spearman,
    unscored_share,
)


def group(index: int, *answers: tuple[bool | float, float | None], **extra: object) -> JudgedGroup:
    judged = tuple(JudgedAnswer(f"a{i}", label, score) for i, (label, score) in enumerate(answers))
    return JudgedGroup(index, judged, **extra)  # type: ignore[arg-type]


def test_auroc_counts_ties_half_and_leaves_unscored_answers_out() -> None:
    groups = [
        group(0, (True, 0.9), (False, 0.1), (False, 0.9)),  # 0.9 > 0.1 wins, 0.9 = 0.9 half
        group(1, (True, 0.5), (False, None)),  # the unscored wrong answer is not a 0
    ]
    # positives [0.9, 0.5], negatives [0.1, 0.9]: 0.9>0.1 1, 0.9=0.9 .5, 0.5>0.1 1, 0.5<0.9 0 -> 2.5/4
    assert auroc(groups) == pytest.approx(0.625)
    assert unscored_share(groups) == pytest.approx(1 / 5)


def test_auroc_needs_both_labels() -> None:
    assert auroc([group(0, (True, 0.9), (True, 0.2))]) is None


def test_pairwise_accuracy_pools_the_pairs_of_mixed_groups_only() -> None:
    groups = [
        group(0, (True, 0.9), (False, 0.1), (False, 0.9)),  # pairs: right 1, tie 0.5 -> 1.5 of 2
        group(1, (True, 0.2), (True, 0.3)),  # one label: no pair
        group(2, (True, 0.2), (False, 0.8)),  # wrong: 0 of 1
    ]
    assert pairwise_accuracy(groups) == pytest.approx(1.5 / 3)
    assert pairwise_accuracy([groups[1]]) is None


def test_rank_correlations_average_over_groups_with_numeric_labels() -> None:
    groups = [
        group(0, (3.0, 0.9), (2.0, 0.5), (1.0, 0.1)),  # same order: tau 1, rho 1
        group(1, (3.0, 0.1), (2.0, 0.5), (1.0, 0.9)),  # reversed: -1, -1
        group(2, (3.0, 0.4), (1.0, None)),  # one scored answer: left out
    ]
    assert kendall_tau(groups[:1]) == pytest.approx(1.0)
    assert kendall_tau(groups) == pytest.approx(0.0)
    assert spearman([groups[1]]) == pytest.approx(-1.0)
    assert kendall_tau([group(0, (True, 0.9), (False, 0.1))]) is None  # binary labels: not this figure


def test_flat_share_counts_groups_whose_scored_answers_all_tie() -> None:
    groups = [
        group(0, (True, 0.5), (False, 0.5), (False, None)),
        group(1, (True, 0.9), (False, 0.1)),
        group(2, (True, 0.5), (False, None)),  # one scored answer: not counted either way
    ]
    assert flat_share(groups) == pytest.approx(0.5)


def test_the_bootstrap_is_seeded_and_brackets_the_value() -> None:
    groups = [group(i, (True, 0.6 + i / 100), (False, 0.5 - (i % 3) / 10)) for i in range(20)]
    groups += [group(20, (True, 0.1), (False, 0.9))]
    first = bootstrap(groups, auroc, rounds=200, seed=7)
    assert first == bootstrap(groups, auroc, rounds=200, seed=7)
    assert first != bootstrap(groups, auroc, rounds=200, seed=8)
    value = auroc(groups)
    assert first[0] is not None and first[1] is not None and value is not None
    assert first[0] <= value <= first[1] and first[0] < first[1]


def test_evaluate_reports_every_figure_with_an_interval_or_none() -> None:
    report = evaluate([group(0, (True, 0.9), (False, 0.1)), group(1, (True, 0.8), (False, 0.3))], rounds=50)
    assert report.groups == 2
    assert report.figures["auroc"].value == 1.0
    assert (report.figures["auroc"].low, report.figures["auroc"].high) == (1.0, 1.0)
    assert report.figures["kendall_tau"].value is None and report.figures["kendall_tau"].low is None
    assert report.figures["order_sensitivity"].value is None
