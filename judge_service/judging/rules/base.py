"""Rule graders check one answer against the reference; `PerAnswerGrader` adapts one to the Grader
interface (judging/base.py), grading each answer of the group on its own. A group without a reference is
refused (422) by every rule that compares with one; the json check needs none.

Adapter rules, the same for every rule grader:
  * a check's score None means "does not apply" (it depends on the reference alone, so it is the same
    for every answer of a group): the term is dropped from a blend, never scored 0;
  * ValueError from a check is the caller's reference or options not fitting it: 422 for the group;
  * RecursionError (JSON nested hundreds of levels deep) fails that answer alone: unscored.
A rule that needs the whole group (the numbers grader reads every answer in the group's number format)
also has `grade_group`; the adapter then calls it once per group, with the conversation's text.
Large groups are checked in a worker thread, so the event loop keeps serving meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from judge_service.errors import InvalidGroupError
from judge_service.judging.base import AnswerGrade, Grade, Group, GroupGrades
from judge_service.schemas import JudgeRequest, RuleOptions

# Above this many characters of answers (plus the reference once per answer) a group is checked in a
# worker thread: a full group of 20,000-character answers can take a second or two of CPU (the
# adversarial table of benchmarks/rule_graders.py), and the GIL switches every few milliseconds, so the
# event loop keeps answering other requests meanwhile. Below it the thread hop would cost more.
INLINE_CHARS = 50_000


# Options added after fingerprints were introduced, at the value that keeps the earlier behaviour: left out
# of the fingerprint at that value, so judgements stored before them compare with new ones.
_LATER_OPTIONS = {"number_locale": "auto"}


class RuleGrader(Protocol):
    name: str

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade: ...


def needs_reference(rule: RuleGrader) -> bool:
    """Whether a rule compares each answer with the reference (all but the json check do)."""
    return bool(getattr(rule, "needs_reference", True))


@runtime_checkable
class GroupRuleGrader(RuleGrader, Protocol):
    """A rule grader that reads the group as a whole (module docstring)."""

    def grade_group(
        self, answers: Sequence[str], reference: str, context: str, options: RuleOptions
    ) -> list[Grade]: ...


class PerAnswerGrader:
    """A RuleGrader as a Grader[RuleOptions] (module docstring)."""

    runs_model = False

    def __init__(self, rule: RuleGrader) -> None:
        self._rule = rule
        # Decided once: a runtime protocol check costs more than the grading of a small group.
        self._group_rule = rule if isinstance(rule, GroupRuleGrader) else None
        self._needs_reference = needs_reference(rule)

    @property
    def name(self) -> str:
        return self._rule.name

    def options(self, request: JudgeRequest) -> RuleOptions:
        return request.options

    def config(self, options: RuleOptions) -> Mapping[str, Any]:
        dumped = options.model_dump(mode="json")
        for name, original in _LATER_OPTIONS.items():
            if dumped.get(name) == original:
                del dumped[name]
        return {"options": dumped, **getattr(self._rule, "config", {})}

    async def grade(self, group: Group, options: RuleOptions) -> GroupGrades:
        reference = group.reference
        if reference is None:
            if self._needs_reference:
                raise InvalidGroupError(
                    f"grader '{self.name}' compares each answer with the reference, and this group has none: "
                    "send a reference, or use a grader that needs none (the judge, json, a code grader)",
                    details={"grader": self.name, "reference": None},
                )
            reference = ""  # read by no check that needs none
        size = sum(len(a.text) + len(reference) for a in group.answers)
        if size <= INLINE_CHARS:
            return self._grade_all(group, reference, options)
        return await asyncio.to_thread(self._grade_all, group, reference, options)

    def _grade_all(self, group: Group, reference: str, options: RuleOptions) -> GroupGrades:
        if self._group_rule is not None:
            return self._grade_group(self._group_rule, group, reference, options)
        return GroupGrades({a.id: self._grade_one(a.text, reference, options) for a in group.answers})

    def _grade_group(
        self, rule: GroupRuleGrader, group: Group, reference: str, options: RuleOptions
    ) -> GroupGrades:
        try:
            answers = [a.text for a in group.answers]
            grades = rule.grade_group(answers, reference, group.conversation_text(), options)
        except ValueError as exc:
            raise InvalidGroupError(f"grader '{self.name}': {exc}") from exc
        return GroupGrades(
            {
                a.id: AnswerGrade(grade.score, grade.explanation, applies=grade.score is not None)
                for a, grade in zip(group.answers, grades, strict=True)
            }
        )

    def _grade_one(self, answer: str, reference: str, options: RuleOptions) -> AnswerGrade:
        try:
            grade = self._rule.grade(answer, reference, options)
        except ValueError as exc:  # the caller's reference or options do not fit this grader
            raise InvalidGroupError(f"grader '{self.name}': {exc}") from exc
        except RecursionError:  # e.g. a schema check of JSON nested hundreds of levels deep
            return AnswerGrade(None, f"the answer is nested too deeply for {self.name} to check")
        return AnswerGrade(grade.score, grade.explanation, applies=grade.score is not None)
