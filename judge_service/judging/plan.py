"""A request's grading plan: which graders, at which weights; running them; one AnswerResult per answer.

A single grader is a blend of one term with weight 1, so one code path serves `grader="similarity"`,
`grader="judge+numbers"` and custom `terms`, with the blend rules of blend.py (weights not normalized; a
term that does not apply to the group is dropped and the rest scaled up; a term that failed for an
answer makes it unscored). A lone model grader of weight 1 is the exception in shape only: each answer's
result is that grader's own (its criteria marks and reasons), without a list of terms.

Graders that do not run a model (rules, code) go first, side by side, so that a group one of them refuses
(422) never waits for a model; model graders then run concurrently. A grader named twice in custom terms
runs once.

A request's `cascade` (docs/graders/cascades.md) puts a rule grader before all that: the rule scores
the group, and the plan's graders (the judge) run only where the rule leaves the group flat ("ties"), or
where some answer reaches the threshold ("verify": those answers score rule x the judge's correctness,
the rest keep the rule's score). Each answer says what scored it (`scored_by`); a judge that could not
score an answer leaves it unscored, never 0. The canary is only judged when the judge is called.

A group's canary (judging/base.py) is graded like an answer and returned apart (`GradedGroup.canary`): a
grader that compares answers (the LLM judge) is shown it among them; every other grader scores it in a
call of its own, so their grades of the caller's answers are the same as without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judge_service.judging.base import (
    AnswerGrade,
    Grade,
    Grader,
    Group,
    GroupGrades,
    ModelRun,
    sees_canary,
)
from judge_service.judging.blend import TermGrade, blend
from judge_service.schemas import AnswerResult, CascadePath

TIE_DIGITS = 6  # scores equal to this many digits are alike (a flat group), as the run views count them


@dataclass(frozen=True)
class Term:
    grader: Grader[Any]
    weight: float
    options: Any  # the grader's own options, read from the request


@dataclass(frozen=True)
class GradedGroup:
    answers: list[AnswerResult]
    run: ModelRun | None  # what the model grader ran, when the plan has one
    canary: AnswerResult | None = None  # the group's canary, graded like an answer (judging/base.py)
    cascade: CascadePath | None = None  # in a cascade: whether the judge was called


@dataclass(frozen=True)
class Cascade:
    """The rule grader that scores first, and when the plan's graders are called (module docstring)."""

    rule: Term
    judge: str  # "ties" or "verify"
    threshold: float


@dataclass(frozen=True)
class GradingPlan:
    grader: str  # what is reported and stored: the grader name, or "custom" for `terms`
    terms: tuple[Term, ...]
    cascade: Cascade | None = None

    def config(self) -> dict[str, Any]:
        """The canonical description the grader fingerprint hashes (fingerprint.py)."""
        config: dict[str, Any] = {
            "grader": self.grader,
            "terms": [[t.grader.name, t.weight] for t in self.terms],
        }
        for term in self._distinct():
            config.update(term.grader.config(term.options))
        if self.cascade is not None:  # only then: fingerprints without a cascade are as before
            rule = self.cascade.rule
            config["cascade"] = {
                "rule": rule.grader.name,
                "judge": self.cascade.judge,
                "threshold": self.cascade.threshold,
                "rule_config": dict(rule.grader.config(rule.options)),
            }
        return config

    async def grade(self, group: Group) -> GradedGroup:
        if self.cascade is None:
            return await self._grade_terms(group)
        rule = self.cascade.rule
        ruled = (await rule.grader.grade(group.without_canary(), rule.options)).grades
        ids = [a.id for a in group.answers]
        if self.cascade.judge == "ties":
            scores = {round(g.score, TIE_DIGITS) for g in ruled.values() if g.applies and g.score is not None}
            if len(scores) > 1:  # the rule tells the answers apart: it decides
                return GradedGroup([_by(ruled[i], i, "rule") for i in ids], None, cascade="rule_only")
            judged = await self._grade_terms(group)
            answers = [a.model_copy(update={"scored_by": "judge"}) for a in judged.answers]
            return GradedGroup(answers, judged.run, judged.canary, cascade="judged")
        threshold = self.cascade.threshold
        checked = {i for i in ids if (score := ruled[i].score) is not None and score >= threshold}
        if not checked:
            return GradedGroup([_by(ruled[i], i, "rule") for i in ids], None, cascade="rule_only")
        judged = await self._grade_terms(group)
        by_id = {a.id: a for a in judged.answers}
        answers = [_verified(ruled[i], by_id[i]) if i in checked else _by(ruled[i], i, "rule") for i in ids]
        return GradedGroup(answers, judged.run, judged.canary, cascade="judged")

    async def _grade_terms(self, group: Group) -> GradedGroup:
        own = group.without_canary()
        by_grader: dict[str, GroupGrades] = {}
        checks = [term for term in self._distinct() if not term.grader.runs_model]
        if len(checks) > 1:  # code graders wait on their workers side by side
            checked = await asyncio.gather(
                *(term.grader.grade(own, term.options) for term in checks), return_exceptions=True
            )
            for term, grades in zip(checks, checked, strict=True):
                if isinstance(grades, BaseException):  # a refusal (422) once every check has ended
                    raise grades
                by_grader[term.grader.name] = grades
        elif checks:
            by_grader[checks[0].grader.name] = await checks[0].grader.grade(own, checks[0].options)
        models = [term for term in self._distinct() if term.grader.runs_model]
        if len(models) == 1:  # the usual case: no task to schedule
            graded = [await _grade_model(models[0], group)]
        else:
            graded = await asyncio.gather(*(_grade_model(term, group) for term in models))
        by_grader.update((term.grader.name, grades) for term, grades in zip(models, graded, strict=True))
        run = next((grades.run for grades in graded if grades.run is not None), None)
        if group.canary is not None:
            await self._grade_canary_alone(group, by_grader)
        answers = [self._answer(answer.id, by_grader) for answer in group.answers]
        canary = None if group.canary is None else self._answer(group.canary.id, by_grader)
        return GradedGroup(answers, run, canary)

    async def _grade_canary_alone(self, group: Group, by_grader: dict[str, GroupGrades]) -> None:
        """Grade the canary with every grader that was not shown it, as a group of its own, and add its
        grade to theirs. A grader's failure on the canary leaves the canary unscored, never the group."""
        alone = group.canary_alone()
        canary_id = alone.answers[0].id
        terms = [term for term in self._distinct() if not sees_canary(term.grader)]
        graded = await asyncio.gather(
            *(term.grader.grade(alone, term.options) for term in terms), return_exceptions=True
        )
        for term, grades in zip(terms, graded, strict=True):
            if isinstance(grades, Exception):
                failed = AnswerGrade(None, f"the grader failed on the canary: {grades}")
                by_grader[term.grader.name].grades[canary_id] = failed
            elif isinstance(grades, BaseException):
                raise grades
            else:
                by_grader[term.grader.name].grades.update(grades.grades)

    def _distinct(self) -> list[Term]:
        return list({term.grader.name: term for term in reversed(self.terms)}.values())[::-1]

    def _answer(self, answer_id: str, by_grader: Mapping[str, GroupGrades]) -> AnswerResult:
        grades = [(term, by_grader[term.grader.name].grades[answer_id]) for term in self.terms]
        if len(grades) == 1 and grades[0][0].weight == 1.0 and grades[0][0].grader.runs_model:
            return _own_result(answer_id, grades[0][1])
        terms = [
            TermGrade(term.grader.name, term.weight, Grade(grade.score, grade.explanation), grade.applies)
            for term, grade in grades
        ]
        details = [grade.details for _, grade in grades]
        score, explanation = blend(terms)
        # Plain data validated once: cheaper than a model object per criterion and term.
        return AnswerResult.model_validate(
            {
                "id": answer_id,
                "status": "unscored" if score is None else "scored",
                "score": None if score is None else round(score, 6),
                "criteria": next((grade.criteria for _, grade in grades if grade.criteria is not None), None),
                "terms": [
                    {
                        "grader": t.grader,
                        "weight": t.weight,
                        "score": t.grade.score,
                        "explanation": t.grade.explanation,
                        "details": term_details,
                    }
                    for t, term_details in zip(terms, details, strict=True)
                ],
                "explanation": explanation,
                "error": explanation if score is None else None,
                "comparison": next((g.comparison for _, g in grades if g.comparison is not None), None),
                "jury": next((g.jury for _, g in grades if g.jury is not None), None),
            }
        )


async def _grade_model(term: Term, group: Group) -> GroupGrades:
    """A model grader's grades: shown the canary among the answers if it compares them, else without it."""
    shown = group if sees_canary(term.grader) else group.without_canary()
    return await term.grader.grade(shown, term.options)


def _by(grade: AnswerGrade, answer_id: str, scored_by: str) -> AnswerResult:
    """A cascade's answer scored by its rule alone."""
    result = _own_result(answer_id, grade)
    return result.model_copy(update={"scored_by": scored_by})


def _verified(rule: AnswerGrade, judged: AnswerResult) -> AnswerResult:
    """verify: the rule's score times the judge's correctness (its overall score where it marks no
    correctness criterion); unscored when the judge did not score the answer."""
    mark = (judged.criteria or {}).get("correctness")
    correctness = mark.score if mark is not None else judged.score
    if judged.score is None or correctness is None or rule.score is None:
        why = judged.error or "the judge gave no correctness for this answer"
        return judged.model_copy(
            update={"status": "unscored", "score": None, "error": why, "scored_by": "rule+judge"}
        )
    score = round(rule.score * correctness, 6)
    explanation = f"rule {rule.score:g} x judge's correctness {correctness:g} ({rule.explanation})"
    return judged.model_copy(update={"score": score, "explanation": explanation, "scored_by": "rule+judge"})


def _own_result(answer_id: str, grade: AnswerGrade) -> AnswerResult:
    if grade.score is None:
        return AnswerResult.model_validate(
            {
                "id": answer_id,
                "status": "unscored",
                "score": None,
                "error": grade.explanation,
                "comparison": grade.comparison,
                "jury": grade.jury,
            }
        )
    return AnswerResult.model_validate(
        {
            "id": answer_id,
            "status": "scored",
            "score": grade.score,
            "criteria": grade.criteria,
            "explanation": grade.explanation,
            "comparison": grade.comparison,
            "jury": grade.jury,
        }
    )
