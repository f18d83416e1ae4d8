"""The `pairwise` and `knockout` graders: the judge compares answers two at a time (llm/compare.py), and
the verdicts become each answer's score (docs/graders/comparison.md).

- pairwise: the pairs of schedule.pair_schedule, each in both orders unless the request says one
  (position bias cancels), all of a group's comparisons at once on the engine (they share the prompt up
  to the two answers). Score: the answer's Bradley-Terry expected win rate (`pairwise_score` "bt") or its
  share of soft wins ("winrate"), strength.py.
- knockout: the seeded bracket of schedule.py, round by round, a round's matches at once; N-1 matches.
  A match is one comparison in a seeded order; a drawn or failed one is played again in the swapped order
  and the two verdicts decide it together. Still even: the answer placed higher in the bracket advances
  and each is credited half a round. Score: rounds won (byes count) / rounds.

Failures are never a coin flip. A comparison without a verdict after its retries is left out, kept with
its error and counted (judge_comparisons_failed_total); scores come from the comparisons that succeeded.
A knockout match with no verdict in either order is void: neither answer goes on (each keeps the rounds
it won) and the next round's opponent gets a bye. An answer with no successful comparison is unscored,
with the reason; and where every comparison failed because the engine did, the group fails as an LLM
judge's would (503, retried by clients), rather than coming back unscored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from judge_service.backends.readiness import Readiness
from judge_service.errors import InvalidGroupError
from judge_service.judging.base import AnswerGrade, Group, GroupGrades, ModelRun
from judge_service.judging.comparison.schedule import (
    Pair,
    bracket_order,
    first_round,
    pair_schedule,
    rounds_for,
)
from judge_service.judging.comparison.strength import (
    Tally,
    Verdict,
    bradley_terry,
    expected_win_rates,
    outcome,
    tallies,
    win_rates,
)
from judge_service.judging.language import reason_language_name
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.caller import JudgeCaller
from judge_service.judging.llm.compare import Compared, compare
from judge_service.judging.llm.criteria import criterion_config, resolve_criteria
from judge_service.judging.llm.orders import order_seed
from judge_service.judging.llm.prompt import GroupContent
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import ComparisonOptions, Criterion, JudgeRequest, PairwiseScore, Usage

Mode = Literal["pairwise", "knockout"]
PAIRWISE: Mode = "pairwise"
KNOCKOUT: Mode = "knockout"
COMPARISON_GRADERS = (PAIRWISE, KNOCKOUT)
# Judge options that comparison grading does not take: named in a request, they are refused (422);
# `orders` above 1 too.
NOT_TAKEN = ("decoding", "score_from", "thinking", "reasoning_effort", "reasons", "attribution")


@dataclass(frozen=True)
class ComparisonGrading:
    """A comparison grader's options from a request. Frozen and hashable (fingerprints are cached)."""

    criteria: tuple[Criterion, ...]
    both_orders: bool
    max_pairs: int
    score: PairwiseScore
    seed: int | None
    reason_language: str | None
    referenced: bool = True  # False: a group without a reference (the no_reference/ compare prompts)
    structured: bool = False  # tools or trajectories (turns.py)


class ComparisonGrader:
    """Grader[ComparisonGrading] (judging/base.py) over the LLM judge's engine, sharing its admission."""

    runs_model = True

    def __init__(
        self,
        caller: JudgeCaller,
        *,
        mode: Mode,
        admission: GroupAdmission,
        metrics: JudgeMetrics,
        readiness: Readiness,
    ) -> None:
        self._caller = caller
        self._mode = mode
        self._admission = admission
        self._metrics = metrics
        self._readiness = readiness

    @property
    def name(self) -> str:
        return self._mode

    def options(self, request: JudgeRequest) -> ComparisonGrading:
        named = [field for field in NOT_TAKEN if getattr(request, field) is not None]
        if request.orders != 1:
            named.append("orders")
        if named:
            raise InvalidGroupError(
                f"the {self._mode} grader does not take {', '.join(named)}: comparisons are judged with "
                "reasons, without thinking, and in the orders their `comparison` options set",
                details={"fields": named},
            )
        referenced = request.reference is not None
        criteria = tuple(resolve_criteria(request.criteria, referenced=referenced))
        binary = [c.name for c in criteria if c.binary]
        if binary:
            raise InvalidGroupError(
                "comparison grading takes criteria on the 1-5 scale; "
                f"{', '.join(binary)} are checklist items",
                details={"criteria": binary},
            )
        try:
            self._caller.renderer.compare_version(referenced=referenced)
        except FileNotFoundError as exc:
            raise InvalidGroupError(f"comparisons cannot be judged: {exc}") from None
        given = request.comparison or ComparisonOptions()
        reason_language = request.reason_language or self._caller.settings.reason_language
        return ComparisonGrading(
            criteria,
            given.both_orders,
            given.max_pairs,
            given.pairwise_score,
            request.seed,
            reason_language,
            referenced,
            request.structured,
        )

    def config(self, options: ComparisonGrading) -> Mapping[str, Any]:
        s = self._caller.settings
        comparison: dict[str, Any] = {"mode": self._mode}
        if self._mode == PAIRWISE:
            comparison |= {
                "both_orders": options.both_orders,
                "max_pairs": options.max_pairs,
                "pairwise_score": options.score,
            }
        judge: dict[str, Any] = {
            "model": self._caller.model_name,
            "prompt_version": self._caller.renderer.compare_version(referenced=options.referenced),
            "temperature": s.temperature,
            "reason_max_chars": self._caller.reason_max_chars,
            "parse_retries": s.parse_retries,
        }
        if options.reason_language is not None:
            judge["reason_language"] = options.reason_language
        if self._caller.chat_template_sha256 is not None:
            judge["chat_template"] = self._caller.chat_template_sha256
        if not options.referenced:  # only then: fingerprints of groups with a reference are as before
            judge["reference"] = None
        if options.structured:
            cuts = self._caller.cuts
            judge["trajectory"] = {"result_chars": cuts.result_chars, "max_chars": cuts.answer_chars}
        return {
            "compare": judge,
            "comparison": comparison,
            "criteria": [criterion_config(c) for c in options.criteria],
        }

    async def grade(self, group: Group, options: ComparisonGrading) -> GroupGrades:
        self._readiness.check_judging()
        ids = [a.id for a in group.answers]
        seed = options.seed if options.seed is not None else order_seed(group.judgement_id)
        content = self._caller.content(
            list(group.conversation),
            group.reference,
            list(group.answers),
            list(options.criteria),
            reason_language_name(options.reason_language, group.conversation_text()),
            group.tools,
        )
        match = _Matches(self._caller, content, group.judgement_id)
        pairs: list[Pair] = []
        if self._mode == PAIRWISE:
            try:
                pairs = pair_schedule(
                    ids, max_pairs=options.max_pairs, both_orders=options.both_orders, seed=seed
                )
            except ValueError as exc:
                raise InvalidGroupError(str(exc), details={"max_pairs": options.max_pairs}) from None
        queued = time.perf_counter()
        async with self._admission.slot():
            admitted = time.perf_counter()
            if self._mode == PAIRWISE:
                made = await match.all(pairs)
                grades = _pairwise_grades(ids, made, options.score)
            else:
                made, grades = await _knockout(ids, match, seed)
        finished = time.perf_counter()
        failed = [c for c in made if c.preference is None]
        self._metrics.comparisons.labels(grader=self._mode).observe(len(made))
        if failed:
            self._metrics.comparisons_failed.labels(grader=self._mode).inc(len(failed))
        engine_errors = [c.failure for c in made if c.failure is not None]
        if made and len(failed) == len(made) and engine_errors:
            raise engine_errors[0]
        run = ModelRun(
            model=self._caller.model_name,
            prompt_version=self._caller.renderer.compare_version(referenced=options.referenced),
            usage=Usage(
                prompt_tokens=sum(c.prompt_tokens for c in made),
                completion_tokens=sum(c.completion_tokens for c in made),
                judge_calls=sum(c.calls for c in made),
            ),
            raw_outputs=[text for c in made for text in c.raw_outputs],
            queue_ms=(admitted - queued) * 1000,
            judge_ms=(finished - admitted) * 1000,
            seed=seed,
            reasons="inline",
            comparisons=[c.record() for c in made],
        )
        return GroupGrades(grades, run)


class _Matches:
    """Comparisons of one group, numbered in the order they are asked for (their request ids)."""

    def __init__(self, caller: JudgeCaller, content: GroupContent, judgement_id: str) -> None:
        self._caller, self._content, self._judgement_id = caller, content, judgement_id
        self._by_id = {a.id: a for a in content.answers}
        self._made = 0

    async def one(self, pair: Pair, round_: int | None = None) -> Compared:
        k, self._made = self._made, self._made + 1
        first, second = (self._by_id[i] for i in pair)
        done = await compare(
            self._caller,
            self._content,
            first,
            second,
            request_id=f"{self._judgement_id}-c{k}",
            group_id=self._judgement_id,
        )
        done.round = round_
        return done

    async def all(self, pairs: Sequence[Pair], round_: int | None = None) -> list[Compared]:
        return list(await asyncio.gather(*(self.one(pair, round_) for pair in pairs)))


def _pairwise_grades(ids: list[str], made: list[Compared], score: PairwiseScore) -> dict[str, AnswerGrade]:
    verdicts = [Verdict(c.first, c.second, c.preference) for c in made if c.preference is not None]
    counts = tallies(ids, verdicts)
    played = {i for i in ids if counts[i].played}
    if score == "bt":
        strengths = bradley_terry(ids, verdicts)
        scores: dict[str, float | None] = dict(expected_win_rates({i: strengths[i] for i in played}))
        how = "Bradley-Terry expected win rate"
    else:
        scores = dict(win_rates(ids, verdicts))
        how = "win rate"
    grades = {}
    for i in ids:
        failed = sum(1 for c in made if c.preference is None and i in (c.first, c.second))
        value = scores.get(i)
        if i not in played or value is None:
            grades[i] = AnswerGrade(None, _why_none(i, made, len(ids)), comparison=_tally(counts[i], failed))
            continue
        line = f"{how} over {counts[i].played} comparisons ({_record(counts[i])})"
        if failed:
            line += f"; {failed} failed and left out"
        grades[i] = AnswerGrade(round(value, 6), line, comparison=_tally(counts[i], failed))
    return grades


async def _knockout(
    ids: list[str], match: _Matches, seed: int
) -> tuple[list[Compared], dict[str, AnswerGrade]]:
    rounds = rounds_for(len(ids))
    credit = dict.fromkeys(ids, 0.0)
    byes = dict.fromkeys(ids, 0)
    results = {i: [0, 0, 0] for i in ids}  # matches won, lost, drawn
    compared: set[str] = set()
    made: list[Compared] = []

    async def play_round(pairs: list[Pair], round_: int) -> list[str | None]:
        decided = await asyncio.gather(*(_play(match, pair, round_) for pair in pairs))
        winners: list[str | None] = []
        for pair, (winner, drawn, played) in zip(pairs, decided, strict=True):
            made.extend(played)
            if any(c.preference is not None for c in played):
                compared.update(pair)
            winners.append(winner)
            if winner is None:  # void: neither goes on
                continue
            loser = pair[1] if winner == pair[0] else pair[0]
            if drawn:
                credit[winner] += 0.5
                credit[loser] += 0.5
                results[winner][2] += 1
                results[loser][2] += 1
            else:
                credit[winner] += 1
                results[winner][0] += 1
                results[loser][1] += 1
        return winners

    def bye(answer_id: str) -> None:
        credit[answer_id] += 1
        byes[answer_id] += 1

    bye_ids, pairs = first_round(bracket_order(ids, seed=seed))
    for i in bye_ids:
        bye(i)
    # The bracket's slots for the next round, in bracket order; None where a match was void.
    slots: list[str | None] = [*bye_ids, *await play_round(pairs, 1)] if rounds else []
    for round_ in range(2, rounds + 1):
        meetings = list(zip(slots[::2], slots[1::2], strict=True))
        matches = [(a, b) for a, b in meetings if a is not None and b is not None]
        for a, b in meetings:
            lone = a if b is None else b if a is None else None
            if lone is not None:  # its opponent's match was void: a bye
                bye(lone)
        winners = iter(await play_round(matches, round_))
        slots = [
            next(winners) if a is not None and b is not None else (a if a is not None else b)
            for a, b in meetings
        ]
    grades = {}
    for i in ids:
        failed = sum(1 for c in made if c.preference is None and i in (c.first, c.second))
        tally = Tally(*results[i])
        if i not in compared:
            grades[i] = AnswerGrade(
                None, _why_none(i, made, len(ids)), comparison=_tally(tally, failed, byes[i])
            )
            continue
        line = f"won {credit[i]:g} of {rounds} rounds ({_record(tally)}"
        line += f", {byes[i]} bye{'s' if byes[i] != 1 else ''})" if byes[i] else ")"
        grades[i] = AnswerGrade(round(credit[i] / rounds, 6), line, comparison=_tally(tally, failed, byes[i]))
    return made, grades


async def _play(match: _Matches, pair: Pair, round_: int) -> tuple[str | None, bool, list[Compared]]:
    """(winner, drawn, comparisons) of a knockout match (module docstring); winner None: void."""
    first = await match.one(pair, round_)
    played = [first]
    if first.preference is None or outcome(first.preference) == 0:
        played.append(await match.one((pair[1], pair[0]), round_))
    # Each verdict as a preference for pair[1]: the replay showed pair[1] first.
    preferences = [
        c.preference if c.first == pair[0] else 1.0 - c.preference for c in played if c.preference is not None
    ]
    if not preferences:
        return None, False, played
    mean = sum(preferences) / len(preferences)
    result = outcome(mean)
    if result == 0:
        return pair[0], True, played  # still even: the higher place in the bracket goes on
    return (pair[1] if result > 0 else pair[0]), False, played


def _why_none(answer_id: str, made: list[Compared], size: int) -> str:
    if size < 2:
        return "comparison grading needs at least two answers: there is nothing to compare this one with"
    errors = [c.error for c in made if c.error and answer_id in (c.first, c.second)]
    if errors:
        return f"no comparison of this answer succeeded ({len(errors)} failed; the first: {errors[0]})"
    return "this answer met no opponent: every match around it was void"


def _record(tally: Tally) -> str:
    return f"{tally.wins} won, {tally.losses} lost, {tally.ties} even"


def _tally(tally: Tally, failed: int, byes: int | None = None) -> dict[str, int]:
    record = {"wins": tally.wins, "losses": tally.losses, "ties": tally.ties, "failed": failed}
    if byes is not None:
        record["byes"] = byes
    return record
