"""ROUGE-L F1 between an answer and the reference, on word tokens.

Tokens come from `text.word_tokens`: NFKC, casefold, runs of Unicode letters/digits, with '.', ',' and
apostrophes between digits kept inside the token ("1,705.3" and "9.91" are one token each). The grader
ignores RuleOptions: the comparison is always case- and punctuation-insensitive.

    LCS = longest common subsequence of the two token lists
    precision = LCS / answer tokens, recall = LCS / reference tokens, F1 = 2PR / (P + R)

Both texts without tokens (empty, or punctuation only) score 1.0: they agree. Exactly one without tokens
scores 0.0. F1 is symmetric in answer and reference.

The LCS length uses the bit-parallel algorithm of Allison-Dix / Hyyrö: one Python integer holds a bit
per reference token, and each answer token costs a handful of big-integer operations. That is
O(n * ceil(m / 64)) machine work instead of the O(n * m) Python-level steps of the table DP. The
reference's tokens and bit masks are memoized (last 64 references), since a group shares one reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from judge_service.judging.base import Grade
from judge_service.judging.rules.text import word_tokens
from judge_service.schemas import RuleOptions


def lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (bit-parallel)."""
    return _lcs_against(first, _bit_positions(second), len(second))


def _bit_positions(tokens: Sequence[str]) -> dict[str, int]:
    """Bit i of result[token] is set where tokens[i] == token."""
    positions: dict[str, int] = {}
    for index, token in enumerate(tokens):
        positions[token] = positions.get(token, 0) | (1 << index)
    return positions


def _lcs_against(first: Sequence[str], positions: dict[str, int], length: int) -> int:
    # `row` holds one row of the LCS table in difference form: a 0 bit marks a step up.
    full = (1 << length) - 1
    row = full
    for token in first:
        matches = positions.get(token)
        if matches is None:  # no match: the row stays as it is
            continue
        hits = row & matches
        # Carries above the top bit are harmless (no mask has bits there) and are cut off once, below.
        row = (row + hits) | (row - hits)
    return length - (row & full).bit_count()


@lru_cache(maxsize=64)
def _reference_index(reference: str) -> tuple[int, dict[str, int]]:
    # A group's answers share one reference: tokenize and index it once. Callers must not mutate.
    tokens = word_tokens(reference)
    return len(tokens), _bit_positions(tokens)


def rouge_l_f1(answer_length: int, reference_length: int, common: int) -> float:
    """ROUGE-L F1 from the token counts and the LCS length; see the module docstring for empty texts."""
    if answer_length == 0 and reference_length == 0:
        return 1.0
    # F1 = 2PR/(P+R) with P = L/a and R = L/r simplifies to 2L/(a+r).
    return 2.0 * common / (answer_length + reference_length)


class SimilarityGrader:
    name = "similarity"

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade:
        answer_tokens = word_tokens(answer)
        reference_length, positions = _reference_index(reference)
        common = _lcs_against(answer_tokens, positions, reference_length)
        score = rouge_l_f1(len(answer_tokens), reference_length, common)
        return Grade(
            score=score,
            explanation=(
                f"ROUGE-L F1 {score:.2f}: {common} words in common order "
                f"(answer {len(answer_tokens)}, reference {reference_length} words)"
            ),
        )
