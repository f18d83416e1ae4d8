"""Grader names: the rule graders, the named blends, and the registry that resolves a request to graders.

Every grader is registered the same way, the LLM judge included (app.py registers it under "judge"
beside the built-in rule graders). Blends are data: (grader name, weight) terms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from judge_service.errors import ConflictError, InvalidGroupError
from judge_service.judging.base import Grader
from judge_service.judging.code.grader import CodeGrader
from judge_service.judging.comparison.grader import ComparisonGrader
from judge_service.judging.fingerprint import grader_fingerprint
from judge_service.judging.jury.grader import JuryGrader
from judge_service.judging.llm.judge import JUDGE, LLMJudge
from judge_service.judging.plan import Cascade, GradingPlan, Term
from judge_service.judging.rft.grader import RftConfigGrader
from judge_service.judging.rules.base import PerAnswerGrader, RuleGrader
from judge_service.judging.rules.checks import (
    ContainsGrader,
    ExactGrader,
    JsonFieldsGrader,
    JsonGrader,
    LabelGrader,
)
from judge_service.judging.rules.numbers import NumbersGrader
from judge_service.judging.rules.similarity import SimilarityGrader
from judge_service.schemas import GraderInfo, GraderTerm, JudgeRequest

# The rule graders are stateless, so one shared instance of each is safe.
RULE_GRADERS: Mapping[str, RuleGrader] = MappingProxyType(
    {
        grader.name: grader
        for grader in (
            SimilarityGrader(),
            NumbersGrader(),
            ExactGrader(),
            ContainsGrader(),
            JsonGrader(),
            LabelGrader(),
            JsonFieldsGrader(),
        )
    }
)

BLENDS: Mapping[str, tuple[tuple[str, float], ...]] = MappingProxyType(
    {
        "judge+similarity": ((JUDGE, 0.7), ("similarity", 0.3)),
        "judge+numbers": ((JUDGE, 0.5), ("numbers", 0.5)),
    }
)


def rule_grader(name: str) -> RuleGrader:
    """The rule grader called `name`; ValueError for any other name."""
    try:
        return RULE_GRADERS[name]
    except KeyError:
        raise ValueError(f"unknown rule grader {name!r}; rule graders: {', '.join(RULE_GRADERS)}") from None


class GraderRegistry:
    """Graders by name, and the blends over them."""

    def __init__(
        self, graders: Iterable[Grader[Any]], blends: Mapping[str, tuple[tuple[str, float], ...]] = BLENDS
    ) -> None:
        self._graders: dict[str, Grader[Any]] = {}
        for grader in graders:
            if grader.name in self._graders:
                raise ValueError(f"two graders are named {grader.name!r}")
            self._graders[grader.name] = grader
        # A blend over a grader this registry lacks (a registry without the judge) is not offered.
        self._blends = {
            name: terms for name, terms in blends.items() if all(n in self._graders for n, _ in terms)
        }

    @classmethod
    def with_rule_graders(cls, *graders: Grader[Any]) -> GraderRegistry:
        """`graders` (the LLM judge), then the built-in rule graders, with the built-in blends."""
        return cls([*graders, *(PerAnswerGrader(rule) for rule in RULE_GRADERS.values())])

    @property
    def names(self) -> tuple[str, ...]:
        return (*self._graders, *self._blends)

    def grader(self, name: str) -> Grader[Any]:
        return self._graders[name]

    def explainer(self, model: str | None) -> LLMJudge:
        """The LLM judge that runs `model`, to write reasons for its marks afterwards; 409 when none does."""
        if model is None:
            raise ConflictError(
                "this judgement has no judge marks to explain: it was graded without the LLM judge"
            )
        judges = [g for g in self._graders.values() if isinstance(g, LLMJudge)]
        for judge in judges:
            if judge.model_name == model:
                return judge
        running = ", ".join(repr(j.model_name) for j in judges) or "no LLM judge"
        raise ConflictError(
            f"this judgement was marked by {model!r}, and this service runs {running}: reasons from another "
            "judge would not explain its marks",
            details={"judge_model": model},
        )

    def rubric_writer(self) -> LLMJudge:
        """The LLM judge, which writes rubrics; 422 for a registry without one."""
        for grader in self._graders.values():
            if isinstance(grader, LLMJudge):
                return grader
        raise InvalidGroupError("rubrics are written by the LLM judge, and this service runs none")

    def blend_terms(self, name: str) -> list[tuple[str, float]] | None:
        """The (grader, weight) terms of the named blend, or None when `name` is not a blend."""
        terms = self._blends.get(name)
        return list(terms) if terms is not None else None

    def grader_terms(self, name: str) -> list[tuple[str, float]]:
        """What a request's `grader` name runs: a blend's terms, or [(name, 1.0)] for a single grader.

        ValueError names the valid choices when `name` is unknown.
        """
        terms = self.blend_terms(name)
        if terms is not None:
            return terms
        if name in self._graders:
            return [(name, 1.0)]
        raise ValueError(f"unknown grader {name!r}; valid graders: {', '.join(self.names)}")

    def check_term_names(self, names: list[str]) -> None:
        """ValueError unless every name is a single grader (blend terms cannot nest blends)."""
        unknown = [name for name in names if name not in self._graders]
        if unknown:
            raise ValueError(
                f"unknown term grader(s) {', '.join(map(repr, unknown))}; "
                f"terms may use: {', '.join(self._graders)}"
            )

    def describe(self) -> list[GraderInfo]:
        """Every grader and blend by name, with its kind and the fingerprint a request naming it (with
        default options) gets (GET /v1/graders)."""
        probe = {
            "conversation": [{"role": "user", "content": "."}],
            "reference": "",
            "answers": [{"id": "a", "text": ""}],
        }
        infos = []
        for name in self.names:
            fingerprint = grader_fingerprint(
                self.plan(JudgeRequest.model_validate({**probe, "grader": name}))
            )
            terms = self.blend_terms(name)
            if terms is not None:
                infos.append(
                    GraderInfo(
                        name=name,
                        kind="blend",
                        fingerprint=fingerprint,
                        runs_model=any(self._graders[n].runs_model for n, _ in terms),
                        terms=[GraderTerm(grader=n, weight=w) for n, w in terms],
                    )
                )
                continue
            grader = self._graders[name]
            info: dict[str, Any] = {"name": name, "fingerprint": fingerprint, "runs_model": grader.runs_model}
            if isinstance(grader, CodeGrader):
                info |= {
                    "kind": "code",
                    "target": grader.spec.target,
                    "signature": grader.spec.signature,
                    "source_sha256": grader.pinned.source_sha256,
                    "version": grader.pinned.version,
                }
            elif isinstance(grader, RftConfigGrader):
                info |= {"kind": "rft", "source_sha256": grader.config_sha256}
            elif isinstance(grader, PerAnswerGrader):
                info["kind"] = "rule"
            elif isinstance(grader, ComparisonGrader):
                info["kind"] = "comparison"
            elif isinstance(grader, JuryGrader):
                info["kind"] = "jury"
            else:
                info["kind"] = "judge"
                if isinstance(grader, LLMJudge):
                    info["thinking"] = grader.thinking_info()
            infos.append(GraderInfo.model_validate(info))
        return infos

    def plan(self, request: JudgeRequest) -> GradingPlan:
        """The request's plan; InvalidGroupError (422) naming the valid graders for an unknown one."""
        try:
            if request.terms is not None:
                self.check_term_names([t.grader for t in request.terms])
                named = [(t.grader, t.weight) for t in request.terms]
                name = "custom"
            else:
                named, name = self.grader_terms(request.grader), request.grader
        except ValueError as exc:
            raise InvalidGroupError(str(exc)) from exc
        options: dict[str, Any] = {}  # one options object per grader, shared by its terms
        terms = []
        for grader_name, weight in named:
            grader = self._graders[grader_name]
            if grader_name not in options:
                options[grader_name] = grader.options(request)
            terms.append(Term(grader, weight, options[grader_name]))
        if request.jury is not None and not any(isinstance(t.grader, JuryGrader) for t in terms):
            raise InvalidGroupError(
                "`jury` options are for the jury grader: set grader to 'jury' (or name it in terms), or "
                "leave them out",
                details={"grader": name},
            )
        if request.attribution is not None and not any(t.grader.runs_model for t in terms):
            raise InvalidGroupError(  # the comparison graders and the jury refuse it in their options
                "attribution 'steps' is named by the judge; the rule graders name no steps: grade with "
                "'judge' (or a blend with it), or leave attribution out",
                details={"grader": name, "attribution": request.attribution},
            )
        return GradingPlan(name, tuple(terms), self._cascade(request))

    def _cascade(self, request: JudgeRequest) -> Cascade | None:
        """The request's cascade (docs/graders/cascades.md); 422 unless its rule is a rule grader."""
        if request.cascade is None:
            return None
        name = request.cascade.rule
        if name not in RULE_GRADERS or name not in self._graders:
            raise InvalidGroupError(
                f"cascade rule {name!r} is not a rule grader; rule graders: {', '.join(RULE_GRADERS)}",
                details={"cascade.rule": name},
            )
        rule = self._graders[name]
        term = Term(rule, 1.0, rule.options(request))
        return Cascade(term, request.cascade.judge, request.cascade.threshold)
