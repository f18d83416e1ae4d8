"""Length bias: within one judged group, the Spearman correlation between answer length and score.

Near 1 in group after group, longer answers score higher whatever they say: the commonest way a policy
games a judge, seen without a single extra judge call. One group's figure is noisy (its answers may really
be better when longer); the run pages and the alert read the mean over many groups.
"""

from __future__ import annotations

from collections.abc import Sequence

from judge_service.quality.agreement import spearman_rho
from judge_service.schemas import Answer, AnswerResult

MIN_SCORED = 3


def length_bias(answers: Sequence[Answer], results: Sequence[AnswerResult]) -> float | None:
    """Spearman's rho between the characters of each scored answer and its score (ties averaged); None
    below MIN_SCORED scored answers or when the lengths or the scores are all equal."""
    lengths = {a.id: float(len(a.text)) for a in answers}
    pairs = [(lengths[r.id], r.score) for r in results if r.score is not None and r.id in lengths]
    if len(pairs) < MIN_SCORED:
        return None
    rho = spearman_rho([p[0] for p in pairs], [p[1] for p in pairs])
    return None if rho is None else round(rho, 6)
