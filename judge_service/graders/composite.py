"""Turns a request's grader choice into terms, and per-term grades into one AnswerResult per answer.

The LLM judge is one possible term ("judge"); rule graders are the others. A single grader is a blend of
one term with weight 1, so one code path serves `grader="similarity"`, `grader="judge+numbers"` and
custom `terms`, with the blend rules of graders/blend.py (weights not normalized; a term that does not
apply to the group is dropped and the rest scaled up; a term that failed for an answer makes it unscored).
"""

from __future__ import annotations

from dataclasses import dataclass

from judge_service.errors import InvalidGroupError
from judge_service.graders.base import Grade
from judge_service.graders.blend import TermGrade, blend
from judge_service.graders.registry import JUDGE, check_term_names, grader_terms, rule_grader
from judge_service.schemas import AnswerResult, JudgeRequest, TermScore


@dataclass(frozen=True)
class GradingPlan:
    grader: str  # what is reported and stored: the grader name, or "custom" for `terms`
    terms: tuple[tuple[str, float], ...]

    @property
    def uses_judge(self) -> bool:
        return any(name == JUDGE for name, _ in self.terms)

    @property
    def uses_rules(self) -> bool:
        return any(name != JUDGE for name, _ in self.terms)

    @property
    def judge_only(self) -> bool:
        return self.terms == ((JUDGE, 1.0),)


def plan_for(request: JudgeRequest) -> GradingPlan:
    try:
        if request.terms is not None:
            names = [t.grader for t in request.terms]
            check_term_names(names)
            return GradingPlan("custom", tuple((t.grader, t.weight) for t in request.terms))
        return GradingPlan(request.grader, tuple(grader_terms(request.grader)))
    except ValueError as exc:
        raise InvalidGroupError(str(exc)) from exc


def rule_grades(plan: GradingPlan, request: JudgeRequest) -> dict[str, list[TermGrade]]:
    """Every rule term for every answer: answer id -> term grades (the judge's term comes later)."""
    per_answer: dict[str, list[TermGrade]] = {a.id: [] for a in request.answers}
    for name, weight in plan.terms:
        if name == JUDGE:
            continue
        grader = rule_grader(name)
        for answer in request.answers:
            try:
                grade = grader.grade(answer.text, request.reference, request.options)
            except ValueError as exc:  # the caller's reference or options do not fit this grader
                raise InvalidGroupError(f"grader '{name}': {exc}") from exc
            except RecursionError:  # e.g. a schema check of JSON nested hundreds of levels deep
                # Failed for this answer (unscored), unlike a grader that does not apply to the group.
                failed = Grade(None, f"the answer is nested too deeply for {name} to check")
                per_answer[answer.id].append(TermGrade(name, weight, failed, applies=True))
                continue
            per_answer[answer.id].append(TermGrade.from_rule(name, weight, grade))
    return per_answer


def combine(
    answer_id: str, plan: GradingPlan, judged: AnswerResult | None, rules: list[TermGrade]
) -> AnswerResult:
    """One answer's result. `judged` is the judge's result when the plan uses the judge."""
    if plan.judge_only and judged is not None:
        return judged
    terms = list(rules)
    if judged is not None:
        judge_grade = Grade(judged.score, judged.error or "weighted mean of the judge's criterion scores")
        weight = next(w for name, w in plan.terms if name == JUDGE)
        terms.insert(_judge_position(plan), TermGrade(JUDGE, weight, judge_grade, applies=True))
    score, explanation = blend(terms)
    return AnswerResult(
        id=answer_id,
        status="unscored" if score is None else "scored",
        score=None if score is None else round(score, 6),
        criteria=judged.criteria if judged is not None else None,
        terms=[
            TermScore(grader=t.grader, weight=t.weight, score=t.grade.score, explanation=t.grade.explanation)
            for t in terms
        ],
        explanation=explanation,
        error=explanation if score is None else None,
    )


def _judge_position(plan: GradingPlan) -> int:
    return [name for name, _ in plan.terms].index(JUDGE)
