"""Scores from comparison verdicts: Bradley-Terry strengths, win rates and each answer's tally.

A verdict is how far the judge preferred the second answer shown: 0 (the first is much better) to 1 (the
second is), 0.5 even. It counts as a soft result: the second answer takes `preference` of a win and the
first the rest, so a tie is half a win each and "better" counts less than "much better".

Bradley-Terry: each answer has a strength p, and answer i beats j with probability p_i / (p_i + p_j). The
strengths are fitted by minorization-maximization (Hunter 2004, "MM algorithms for generalized
Bradley-Terry models"), with a weak prior: each answer also plays `prior` games against a virtual answer
of strength 1 and draws them, so an unbeaten answer's strength stays finite and an answer that met few
others stays near the middle. An answer's score is its expected win rate against the others of its group
under the fitted strengths: 0-1, 0.5 for a group of equals, independent of the strengths' scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PRIOR_GAMES = 1.0  # drawn games against the virtual answer of strength 1 (module docstring)
_TOLERANCE = 1e-10
_MAX_ITERATIONS = 10_000


@dataclass(frozen=True)
class Verdict:
    """One comparison's result: `first` and `second` as shown, and how far `second` was preferred."""

    first: str
    second: str
    preference: float  # 0 first much better .. 0.5 even .. 1 second much better


@dataclass(frozen=True)
class Tally:
    wins: int = 0
    losses: int = 0
    ties: int = 0

    @property
    def played(self) -> int:
        return self.wins + self.losses + self.ties


def outcome(preference: float) -> int:
    """+1 the second answer won, -1 the first did, 0 a tie (preferences within 1e-9 of even)."""
    if abs(preference - 0.5) <= 1e-9:
        return 0
    return 1 if preference > 0.5 else -1


def tallies(ids: Sequence[str], verdicts: Iterable[Verdict]) -> dict[str, Tally]:
    """Each answer's wins, losses and ties."""
    counts = {i: [0, 0, 0] for i in ids}
    for v in verdicts:
        result = outcome(v.preference)
        if result == 0:
            counts[v.first][2] += 1
            counts[v.second][2] += 1
        else:
            winner, loser = (v.second, v.first) if result > 0 else (v.first, v.second)
            counts[winner][0] += 1
            counts[loser][1] += 1
    return {i: Tally(*c) for i, c in counts.items()}


def win_rates(ids: Sequence[str], verdicts: Iterable[Verdict]) -> dict[str, float | None]:
    """Each answer's share of the (soft) wins in the comparisons it took part in; None for none."""
    won = dict.fromkeys(ids, 0.0)
    played = dict.fromkeys(ids, 0)
    for v in verdicts:
        won[v.second] += v.preference
        won[v.first] += 1.0 - v.preference
        played[v.first] += 1
        played[v.second] += 1
    return {i: won[i] / played[i] if played[i] else None for i in ids}


def bradley_terry(
    ids: Sequence[str], verdicts: Iterable[Verdict], *, prior: float = PRIOR_GAMES
) -> dict[str, float]:
    """Each answer's fitted strength (module docstring); 1.0 for an answer that played no one. Without a
    prior (`prior` 0) an answer that never lost has no finite strength: ValueError."""
    index = {answer_id: k for k, answer_id in enumerate(ids)}
    n = len(ids)
    wins = [prior / 2] * n
    games: dict[tuple[int, int], float] = {}
    for v in verdicts:
        i, j = index[v.first], index[v.second]
        wins[j] += v.preference
        wins[i] += 1.0 - v.preference
        key = (min(i, j), max(i, j))
        games[key] = games.get(key, 0.0) + 1.0
    opponents: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for (i, j), count in games.items():
        opponents[i].append((j, count))
        opponents[j].append((i, count))
    if prior <= 0:
        unbeaten = [ids[i] for i in range(n) if opponents[i] and _lost(i, opponents, wins) == 0]
        if unbeaten:
            raise ValueError(f"without a prior, unbeaten answers have no finite strength: {unbeaten}")
    strength = [1.0] * n
    for _ in range(_MAX_ITERATIONS):
        updated = []
        for i in range(n):
            denominator = sum(count / (strength[i] + strength[j]) for j, count in opponents[i])
            denominator += prior / (strength[i] + 1.0)
            updated.append(wins[i] / denominator if denominator > 0 else 1.0)
        if prior <= 0:  # the scale is free without the virtual answer: fix the geometric mean at 1
            played = [s for s, o in zip(updated, opponents, strict=True) if o]
            mean = _geometric_mean(played) if played else 1.0
            updated = [s / mean if o else 1.0 for s, o in zip(updated, opponents, strict=True)]
        change = max(abs(a - b) / b for a, b in zip(updated, strength, strict=True)) if n else 0.0
        strength = updated
        if change < _TOLERANCE:
            break
    return {answer_id: strength[k] for answer_id, k in index.items()}


def expected_win_rates(strengths: dict[str, float]) -> dict[str, float]:
    """Each answer's probability of beating another of the group, averaged over the others; 0.5 alone."""
    ids = list(strengths)
    rates = {}
    for i in ids:
        others = [j for j in ids if j != i]
        if not others:
            rates[i] = 0.5
            continue
        p = strengths[i]
        rates[i] = sum(p / (p + strengths[j]) for j in others) / len(others)
    return rates


def _lost(i: int, opponents: list[list[tuple[int, float]]], wins: list[float]) -> float:
    games = sum(count for _, count in opponents[i])
    return games - wins[i]


def _geometric_mean(values: Sequence[float]) -> float:
    product = 1.0
    for value in values:
        product *= value
    return product ** (1 / len(values))
