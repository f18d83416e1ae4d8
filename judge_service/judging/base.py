"""The one interface every grader implements, the LLM judge and the rule graders alike.

A grader is given the whole group (the conversation, the reference, every answer) and its own typed
options, read from the request by the grader itself, and returns a grade per answer. So a grader that
ranks answers against each other, one that calls a model or one that does other I/O all fit the same
slot as ROUGE-L. Graders that run a model (`runs_model`) are graded after the others, so that a request
a cheap grader refuses (422) never waits for, or pays for, a model; they also report what they ran
(`ModelRun`), which is stored with the judgement.

A group may carry a canary (watch/canaries.py): an answer the caller did not send, planted to catch a
judge that can be gamed. Only a grader that shows the answers to each other (`sees_canary`, the LLM
judge) is given it, and puts it among them (`Group.with_canary`); the plan grades it with every other
grader on its own (plan.py), so their grades of the caller's answers are as if it were not there.

Each grader states what decides its scores (`config`); the grader fingerprint hashes those
(judging/fingerprint.py), so two judgements with equal fingerprints were scored the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, TypeVar

from judge_service.schemas import Answer, ChatMessage, JudgeRequest, ThinkingAttempt, Tool, Usage


@dataclass(frozen=True)
class Grade:
    """One answer's grade from a per-answer check.

    score is in [0, 1], or None when the grader does not apply (e.g. the numbers grader on a reference
    without figures) or could not grade; `explanation` always says why, in a short sentence.
    """

    score: float | None
    explanation: str


@dataclass(frozen=True)
class Group:
    """What every grader sees: the group as the caller sent it, and the id its judgement will have."""

    judgement_id: str
    conversation: Sequence[ChatMessage]
    reference: str | None  # None: a group without a reference
    answers: Sequence[Answer]
    item: Mapping[str, Any] | None = None  # the task row's grader fields, never shown to the judge
    canary: Answer | None = None  # not among `answers` (module docstring)
    tools: Sequence[Tool] | None = None  # the tools the policy saw (trajectories)

    @classmethod
    def of(cls, request: JudgeRequest, judgement_id: str, *, canary: Answer | None = None) -> Group:
        return cls(
            judgement_id,
            request.conversation,
            request.reference,
            request.answers,
            request.item,
            canary,
            request.tools,
        )

    def with_canary(self, order: Sequence[str], index: int = 0) -> list[str]:
        """An answer order (of the caller's ids) with the canary's id put in, at a place fixed by its id and
        the order's index: the caller's answers keep the order they have without it, and a regrade, which
        reuses the canary, shows it at the same place."""
        if self.canary is None:
            return list(order)
        digest = hashlib.sha256(f"{self.canary.id}/{index}".encode()).hexdigest()
        place = int(digest, 16) % (len(order) + 1)
        return [*order[:place], self.canary.id, *order[place:]]

    def without_canary(self) -> Group:
        return self if self.canary is None else replace(self, canary=None)

    def canary_alone(self) -> Group:
        """The canary as a group of its own, for the graders that score answers one by one."""
        assert self.canary is not None
        return replace(self, answers=[self.canary], canary=None)

    def conversation_text(self) -> str:
        """The conversation's messages as one text (what tells a group's language)."""
        return "\n".join(message.content for message in self.conversation)


@dataclass(frozen=True)
class AnswerGrade:
    """One answer's grade from one grader.

    `applies=False`: the grader does not apply to this group (a blend drops the term and rescales the
    others). `applies=True` with score None: the grader failed for this answer, which leaves the answer
    unscored, never 0. `criteria` holds per-criterion marks for graders that mark criteria, as plain
    data in CriterionMark's shape ({"mark", "score", "reason"}): validated once with the answer's result,
    which costs far less than a model object per criterion. `details`: explanation fields a code grader
    returned beside its score (stored and shown, never part of the score); `comparison`: a comparison
    grader's wins, losses and ties.
    """

    score: float | None
    explanation: str
    applies: bool = True
    criteria: dict[str, dict[str, Any]] | None = None
    details: dict[str, Any] | None = None
    comparison: dict[str, int] | None = None  # a comparison grader's tally (ComparisonTally's shape)
    jury: dict[str, Any] | None = None  # the jury grader's per-judge scores (AnswerJury's shape)


@dataclass
class ModelRun:
    """What a model grader ran for a group: stored with the judgement, counted in the metrics."""

    model: str
    prompt_version: str
    usage: Usage = field(default_factory=Usage)
    raw_outputs: list[str] = field(default_factory=list)
    queue_ms: float = 0.0
    judge_ms: float = 0.0
    seed: int | None = None  # of the shuffled answer order; None when not shuffled
    orders: list[list[str]] | None = None  # answer ids in the order shown, per order
    order_sensitivity: float | None = None
    thinking: list[ThinkingAttempt] | None = None  # one per attempt, beside raw_outputs, when it thought
    reasons: Literal["inline", "none"] | None = None  # whether the judge wrote reasons with its marks
    comparisons: list[dict[str, Any]] | None = None  # a comparison grader's (ComparisonRecord's shape)
    jury: list[dict[str, Any]] | None = None  # the jury grader's, one per judge (JurorRecord's shape)


@dataclass
class GroupGrades:
    grades: dict[str, AnswerGrade]  # by answer id, one for every answer of the group
    run: ModelRun | None = None


OptionsT = TypeVar("OptionsT")


class Grader(Protocol[OptionsT]):
    """A grader (module docstring). Implementations raise errors.InvalidGroupError (422) for a group or
    options they cannot grade at all, and other errors.JudgeServiceError subclasses for failures that
    fail the whole group (the judge unavailable, its deadline)."""

    @property
    def name(self) -> str: ...

    @property
    def runs_model(self) -> bool: ...

    def options(self, request: JudgeRequest) -> OptionsT:
        """This grader's options, read from the request."""
        ...

    def config(self, options: OptionsT) -> Mapping[str, Any]:
        """What decides this grader's scores under `options`, as JSON-able data (the fingerprint)."""
        ...

    async def grade(self, group: Group, options: OptionsT) -> GroupGrades: ...


def sees_canary(grader: Grader[Any]) -> bool:
    """Whether a grader is given a group's canary among its answers (module docstring): a grader opts in
    with a true `sees_canary` attribute; the others score the canary on its own."""
    return bool(getattr(grader, "sees_canary", False))
