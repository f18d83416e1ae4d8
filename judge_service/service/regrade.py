"""Regrading: re-score stored groups under another grader configuration, without the trainer.

Each regraded group becomes a NEW judgement (the old one is never changed) whose `regrade_of` names the
judgement it re-scores. The stored request is replayed with the overrides applied: `grader` (which clears
the stored `terms`, since terms override a grader name), `terms`, `criteria`, `orders`, `decoding`,
`score_from`, `reasons`, `thinking`, `reasoning_effort`, `comparison`, `cascade`, `jury`, and `as_run_id`
to file the new judgements under another run. A judge's groups regraded by a comparison grader
(`pairwise`, `knockout`) drop the judge's own options (decoding, orders, ...), which it does not take.
A judgement made on a rubric is regraded on the same items
(the stored request holds them) unless `criteria` or `rubric` replace them. The stored shuffle seed is
reused, so the judge sees the answers in the same order and only the configuration differs. A run is
regraded a page at a time (`limit`, then `cursor` = the previous `next_cursor`), and only its original
judgements, not earlier regrades.
"""

from __future__ import annotations

from pydantic import ValidationError

from judge_service.errors import InvalidGroupError
from judge_service.judging.comparison.grader import COMPARISON_GRADERS, NOT_TAKEN
from judge_service.schemas import JudgeRequest, RegradeRequest, StoredJudgement


def regraded_request(old: StoredJudgement, overrides: RegradeRequest) -> JudgeRequest:
    """The stored request with the overrides applied (rules in the module docstring)."""
    data = old.request.model_dump()
    if overrides.grader is not None:
        data["grader"] = overrides.grader
        data["terms"] = None
        if overrides.grader in COMPARISON_GRADERS:
            data.update(dict.fromkeys(NOT_TAKEN), orders=1)
    if overrides.terms is not None:
        data["terms"] = [t.model_dump() for t in overrides.terms]
    if overrides.criteria is not None:
        data["criteria"] = [c.model_dump() for c in overrides.criteria]
        data["rubric"] = None
    if overrides.rubric is not None:
        data["rubric"], data["criteria"] = overrides.rubric, None
    for name in (
        "orders",
        "decoding",
        "score_from",
        "reasons",
        "thinking",
        "reasoning_effort",
        "comparison",
        "cascade",
        "jury",
    ):
        if getattr(overrides, name) is not None:
            data[name] = getattr(overrides, name)
    if overrides.as_run_id is not None:
        data["run_id"] = overrides.as_run_id
    if data.get("seed") is None and old.order_seed is not None:
        data["seed"] = old.order_seed
    try:
        return JudgeRequest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise InvalidGroupError(f"the overrides do not make a valid request: {problems}") from exc
