"""The `jury` grader: several LLM judges mark the same group, and their scores become one
(docs/graders/juries.md).

For one group: the jury takes one admission slot (the group counts once), then asks its judges, each an
LLM judge of its own (llm/judge.py) over its own backend, with the request's criteria and options. Without
escalation every judge is asked at once. With `escalate` (a mark spread) the first two judges are asked;
the others only where some answer's scores from them are more than that many marks apart, or where one
of them gave an answer no score (agreement cannot be told from one judge).

Each answer's score is the aggregate (aggregate.py) of the scores of the judges that scored it, beside
each judge's score and the spread. A judge that fails (its endpoint down, its replies unreadable) leaves
the verdict to the others, and the stored judgement records why; an answer that fewer than the quorum
(JUDGE_JURY_QUORUM) of judges scored is unscored with their reasons, never 0. A group is refused (503)
only when fewer judges than the quorum can judge at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judge_service.errors import InvalidGroupError, JudgeServiceError, NotReadyError
from judge_service.judging.base import AnswerGrade, Group, GroupGrades, ModelRun
from judge_service.judging.jury.aggregate import Aggregate, aggregate, spread_marks
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.judge import JudgeOptions, LLMJudge
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import JudgeRequest, JuryOptions, Usage

JURY = "jury"
FIRST_JUDGES = 2  # with escalation: the judges asked first
NOT_CALLED = "not called: the first judges agreed"


@dataclass(frozen=True)
class Juror:
    """One judge of the jury: its name in JUDGE_JURY, its LLM judge, and its weight."""

    name: str
    judge: LLMJudge
    weight: float = 1.0


@dataclass(frozen=True)
class JuryGrading:
    """The jury's options from a request. Frozen and hashable (fingerprints are cached per options)."""

    jurors: tuple[tuple[str, JudgeOptions], ...]  # in the order they are asked
    aggregate: Aggregate
    std_factor: float
    escalate: float | None


@dataclass
class _Verdict:
    """What one judge gave for the group."""

    juror: Juror
    grades: GroupGrades | None
    error: str | None
    seconds: float
    escalation: bool

    def score(self, answer_id: str) -> float | None:
        if self.grades is None:
            return None
        grade = self.grades.grades.get(answer_id)
        return None if grade is None else grade.score


class JuryGrader:
    """Grader[JuryGrading] (judging/base.py) over the judges of JUDGE_JURY."""

    runs_model = True
    sees_canary = True  # each judge is shown the canary among the answers, as the judge is

    def __init__(
        self,
        jurors: Sequence[Juror],
        *,
        admission: GroupAdmission,
        metrics: JudgeMetrics,
        quorum: int = 1,
    ) -> None:
        if not jurors:
            raise ValueError("a jury needs at least one judge")
        self._jurors = {juror.name: juror for juror in jurors}
        self._admission = admission
        self._metrics = metrics
        self.quorum = quorum

    @property
    def name(self) -> str:
        return JURY

    @property
    def jurors(self) -> list[Juror]:
        return list(self._jurors.values())

    def states(self) -> dict[str, str]:
        """Each judge's readiness state (backends/readiness.py), for /readyz."""
        return {name: juror.judge.readiness.state for name, juror in self._jurors.items()}

    @property
    def ready(self) -> bool:
        """Enough judges are ready to give a verdict (the quorum)."""
        return sum(j.judge.readiness.ready for j in self._jurors.values()) >= self.quorum

    def model_name(self, options: JuryGrading) -> str:
        """What judgements name as their judge model: the jury's judges and their models."""
        named = ", ".join(f"{name}={self._jurors[name].judge.model_name}" for name, _ in options.jurors)
        return f"jury({named})"

    def options(self, request: JudgeRequest) -> JuryGrading:
        given = request.jury or JuryOptions()
        names = given.judges or list(self._jurors)
        unknown = [name for name in names if name not in self._jurors]
        if unknown:
            raise InvalidGroupError(
                f"unknown jury judge(s) {', '.join(map(repr, unknown))}; JUDGE_JURY has: "
                f"{', '.join(self._jurors)}",
                details={"jury.judges": unknown},
            )
        if len(names) < self.quorum:
            raise InvalidGroupError(
                f"the jury needs at least {self.quorum} judges (JUDGE_JURY_QUORUM); the request names "
                f"{len(names)}",
                details={"jury.judges": names},
            )
        if given.escalate is not None and len(names) <= FIRST_JUDGES:
            raise InvalidGroupError(
                f"escalation asks the judges after the first {FIRST_JUDGES} where those disagree; the jury "
                f"has {len(names)}: name a third judge or leave `escalate` out",
                details={"jury.escalate": given.escalate},
            )
        if request.attribution is not None:  # each judge would name its own steps: no one answer to give
            raise InvalidGroupError(
                "attribution 'steps' is given by one judge, not a jury: use the grader 'judge' for it",
                details={"attribution": request.attribution},
            )
        jurors = tuple((name, self._jurors[name].judge.options(request)) for name in names)
        return JuryGrading(jurors, given.aggregate, given.std_factor, given.escalate)

    def config(self, options: JuryGrading) -> Mapping[str, Any]:
        judges = [
            {"name": name, "weight": self._jurors[name].weight, **self._jurors[name].judge.config(judged)}
            for name, judged in options.jurors
        ]
        jury: dict[str, Any] = {"judges": judges, "aggregate": options.aggregate, "quorum": self.quorum}
        if options.aggregate == "mean_minus_std":
            jury["std_factor"] = options.std_factor
        if options.escalate is not None:
            jury["escalate"] = options.escalate
        return {"jury": jury}

    async def grade(self, group: Group, options: JuryGrading) -> GroupGrades:
        able = [name for name, _ in options.jurors if self._jurors[name].judge.readiness.can_judge]
        if len(able) < self.quorum:
            states = ", ".join(f"{name}: {state}" for name, state in self.states().items())
            raise NotReadyError(
                f"too few jury judges can judge now ({len(able)} of the {self.quorum} needed; {states}); "
                "retry when /readyz answers 200"
            )
        by_name = dict(options.jurors)
        first = options.jurors if options.escalate is None else options.jurors[:FIRST_JUDGES]
        rest = options.jurors[len(first) :]
        ids = [a.id for a in group.answers] + ([group.canary.id] if group.canary is not None else [])
        queued = time.perf_counter()
        async with self._admission.slot():
            admitted = time.perf_counter()
            verdicts = await self._ask([name for name, _ in first], by_name, group, escalation=False)
            path = "all"
            if options.escalate is not None:
                path = "agreed"
                if _disputed(verdicts, ids, options.escalate):
                    path = "escalated"
                    verdicts += await self._ask([name for name, _ in rest], by_name, group, escalation=True)
        self._metrics.jury_groups.labels(path=path).inc()
        called = {v.juror.name for v in verdicts}
        grades = {answer_id: self._answer(answer_id, verdicts, options) for answer_id in ids}
        run = _jury_run(
            verdicts,
            [self._jurors[name] for name, _ in rest if name not in called],
            model=self.model_name(options),
            queue_ms=(admitted - queued) * 1000,
            judge_ms=(time.perf_counter() - admitted) * 1000,
        )
        return GroupGrades(grades, run)

    async def _ask(
        self, names: list[str], options: Mapping[str, JudgeOptions], group: Group, *, escalation: bool
    ) -> list[_Verdict]:
        return list(
            await asyncio.gather(
                *(self._ask_one(self._jurors[n], options[n], group, escalation=escalation) for n in names)
            )
        )

    async def _ask_one(
        self, juror: Juror, options: JudgeOptions, group: Group, *, escalation: bool
    ) -> _Verdict:
        self._metrics.jury_calls.labels(judge=juror.name).inc()
        started = time.perf_counter()
        grades: GroupGrades | None = None
        error: str | None = None
        try:
            grades = await juror.judge.grade(group, options)
        except JudgeServiceError as exc:  # left to the other judges, and recorded
            error = f"{exc.code}: {exc.message}"
            self._metrics.jury_failures.labels(judge=juror.name).inc()
        seconds = time.perf_counter() - started
        self._metrics.jury_seconds.labels(judge=juror.name).observe(seconds)
        return _Verdict(juror, grades, error, seconds, escalation)

    def _answer(self, answer_id: str, verdicts: list[_Verdict], options: JuryGrading) -> AnswerGrade:
        scored = [(v, s) for v in verdicts if (s := v.score(answer_id)) is not None]
        missing = {v.juror.name: _why_missing(v, answer_id) for v in verdicts if v.score(answer_id) is None}
        called = {v.juror.name for v in verdicts}
        missing |= {name: NOT_CALLED for name, _ in options.jurors if name not in called}
        spread = spread_marks([s for _, s in scored])
        if spread is not None:
            self._metrics.jury_disagreement.observe(spread)
        jury = {
            "scores": {v.juror.name: s for v, s in scored},
            "missing": missing,
            "spread": None if spread is None else round(spread, 6),
            "aggregate": options.aggregate,
        }
        if len(scored) < self.quorum:
            why = "; ".join(f"{name}: {reason}" for name, reason in missing.items())
            return AnswerGrade(
                None, f"{len(scored)} of the {self.quorum} judges needed scored it ({why})", jury=jury
            )
        pairs = [(s, v.juror.weight) for v, s in scored]
        score = aggregate(pairs, options.aggregate, options.std_factor)
        named = ", ".join(f"{v.juror.name} {s:.3g}" for v, s in scored)
        explanation = f"{options.aggregate} of {len(scored)} judges' scores ({named})"
        criteria = _criteria(answer_id, [v for v, _ in scored], options)
        return AnswerGrade(round(score, 6), explanation, criteria=criteria, jury=jury)


def _disputed(verdicts: list[_Verdict], answer_ids: list[str], escalate: float) -> bool:
    """Whether the judges asked first leave the group in doubt: some answer they scored more than
    `escalate` marks apart, or one that not both of them scored."""
    for answer_id in answer_ids:
        scores = [s for v in verdicts if (s := v.score(answer_id)) is not None]
        spread = spread_marks(scores)
        if spread is None or spread > escalate:
            return True
    return False


def _why_missing(verdict: _Verdict, answer_id: str) -> str:
    if verdict.error is not None:
        return verdict.error
    assert verdict.grades is not None
    grade = verdict.grades.grades.get(answer_id)
    return grade.explanation if grade is not None else "it gave no marks for this answer"


def _criteria(
    answer_id: str, verdicts: list[_Verdict], options: JuryGrading
) -> dict[str, dict[str, Any]] | None:
    """Per criterion, the judges' criterion scores aggregated as the answer's are; the mark is the one
    nearest that score, the reason the first judge's, named."""
    marked = [
        (v, criteria_of)
        for v in verdicts
        if v.grades is not None
        and (grade := v.grades.grades.get(answer_id)) is not None
        and (criteria_of := grade.criteria)
    ]
    if not marked:
        return None
    first_judge, first = marked[0]
    criteria: dict[str, dict[str, Any]] = {}
    for name, fields in first.items():
        pairs = [(g[name]["score"], v.juror.weight) for v, g in marked if name in g]
        score = round(aggregate(pairs, options.aggregate, options.std_factor), 6)
        reason = fields.get("reason")
        merged: dict[str, Any] = {
            "score": score,
            "reason": None if reason is None else f"{first_judge.juror.name}: {reason}",
            "kind": fields.get("kind"),
        }
        if fields.get("mark") is None:  # a checklist item
            merged |= {"mark": None, "met": score >= 0.5, "met_probability": score}
        else:
            merged |= {"mark": round(1 + 4 * score)}
        criteria[name] = merged
    return criteria


def _jury_run(
    verdicts: list[_Verdict], not_called: list[Juror], *, model: str, queue_ms: float, judge_ms: float
) -> ModelRun:
    """The jury's ModelRun: usage summed over its judges, the first judge's answer orders (every judge
    shows the same seeded orders), and one record per judge (JurorRecord's shape)."""
    usage = Usage()
    raw: list[str] = []
    records: list[dict[str, Any]] = []
    for v in verdicts:
        run = v.grades.run if v.grades is not None else None
        if run is not None:
            usage = Usage(
                prompt_tokens=usage.prompt_tokens + run.usage.prompt_tokens,
                completion_tokens=usage.completion_tokens + run.usage.completion_tokens,
                judge_calls=usage.judge_calls + run.usage.judge_calls,
                reasoning_tokens=usage.reasoning_tokens + run.usage.reasoning_tokens,
            )
            raw += run.raw_outputs
        records.append(
            {
                "name": v.juror.name,
                "model": v.juror.judge.model_name,
                "weight": v.juror.weight,
                "called": True,
                "escalation": v.escalation,
                "prompt_version": None if run is None else run.prompt_version,
                "error": v.error,
                "raw_outputs": [] if run is None else run.raw_outputs,
                "usage": Usage() if run is None else run.usage,
                "judge_ms": round(v.seconds * 1000, 3),
            }
        )
    for juror in not_called:
        records.append(
            {"name": juror.name, "model": juror.judge.model_name, "weight": juror.weight, "called": False}
        )
    shown = next((v.grades.run for v in verdicts if v.grades is not None and v.grades.run), None)
    return ModelRun(
        model=model,
        prompt_version=shown.prompt_version if shown else "",
        usage=usage,
        raw_outputs=raw,
        queue_ms=queue_ms,
        judge_ms=judge_ms,
        seed=shown.seed if shown else None,
        orders=shown.orders if shown else None,
        reasons=shown.reasons if shown else None,
        jury=records,
    )
