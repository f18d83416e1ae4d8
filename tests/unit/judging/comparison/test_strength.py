"""Scores from comparison verdicts (judging/comparison/strength.py) against hand-computed values and a
reference Bradley-Terry fit (choix)."""

from __future__ import annotations

import math
import random

import choix
import pytest

from judge_service.judging.comparison.strength import (
    Verdict,
    bradley_terry,
    expected_win_rates,
    tallies,
    win_rates,
)

A_WINS, EVEN, B_WINS = 0.0, 0.5, 1.0  # preference for the second answer shown


def test_three_wins_to_one_without_a_prior_is_a_strength_ratio_of_three() -> None:
    verdicts = [Verdict("a", "b", A_WINS)] * 3 + [Verdict("a", "b", B_WINS)]
    strengths = bradley_terry(["a", "b"], verdicts, prior=0)
    assert strengths["a"] / strengths["b"] == pytest.approx(3.0)
    rates = expected_win_rates(strengths)
    assert (rates["a"], rates["b"]) == (pytest.approx(0.75), pytest.approx(0.25))


def test_ties_are_half_wins() -> None:
    verdicts = [Verdict("a", "b", EVEN), Verdict("b", "a", EVEN)]
    assert expected_win_rates(bradley_terry(["a", "b"], verdicts)) == {"a": 0.5, "b": 0.5}
    assert win_rates(["a", "b"], verdicts) == {"a": 0.5, "b": 0.5}
    assert tallies(["a", "b"], verdicts)["a"].ties == 2
    # Two wins and a tie: 2.5 of 3.
    mixed = [Verdict("a", "b", A_WINS), Verdict("b", "a", B_WINS), Verdict("a", "b", EVEN)]
    assert win_rates(["a", "b"], mixed)["a"] == pytest.approx(2.5 / 3)


def test_an_unbeaten_answer_stays_finite_under_the_prior() -> None:
    """a beat b once; each also drew one game with a virtual answer of strength 1. By symmetry p_b = 1/p_a,
    and b's equation 0.5 = 1/(p_a^2 + 1) + 1/(1 + p_a) fixes p_a (solved here by bisection)."""
    strengths = bradley_terry(["a", "b"], [Verdict("a", "b", A_WINS)])
    low, high = 1.0, 10.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if 1 / (mid**2 + 1) + 1 / (1 + mid) > 0.5 else (low, mid)
    assert strengths["a"] == pytest.approx(low, rel=1e-6)
    assert strengths["b"] == pytest.approx(1 / low, rel=1e-6)
    assert expected_win_rates(strengths)["a"] == pytest.approx(low**2 / (low**2 + 1), rel=1e-6)
    with pytest.raises(ValueError, match="unbeaten"):
        bradley_terry(["a", "b"], [Verdict("a", "b", A_WINS)], prior=0)


def test_one_answer_alone_has_the_middle_and_no_record() -> None:
    assert bradley_terry(["a"], []) == {"a": 1.0}
    assert expected_win_rates({"a": 1.0}) == {"a": 0.5}
    assert win_rates(["a"], []) == {"a": None}
    assert tallies(["a"], [])["a"].played == 0


def test_the_fit_agrees_with_choix_on_random_tournaments() -> None:
    rng = random.Random(7)
    ids = [f"x{i}" for i in range(6)]
    truth = {i: rng.uniform(0.2, 5.0) for i in ids}
    verdicts = []
    for _ in range(400):
        a, b = rng.sample(ids, 2)
        second_wins = rng.random() < truth[b] / (truth[a] + truth[b])
        verdicts.append(Verdict(a, b, B_WINS if second_wins else A_WINS))
    ours = bradley_terry(ids, verdicts, prior=0)
    index = {answer_id: k for k, answer_id in enumerate(ids)}
    # choix takes (winner, loser) pairs and returns log-strengths centred on 0.
    games = [
        (index[v.second], index[v.first]) if v.preference == B_WINS else (index[v.first], index[v.second])
        for v in verdicts
    ]
    theirs = choix.ilsr_pairwise(len(ids), games, alpha=0.0)
    for answer_id, k in index.items():
        assert math.log(ours[answer_id]) == pytest.approx(theirs[k], abs=1e-4)
