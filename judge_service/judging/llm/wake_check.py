"""Does the judge still judge the same after a wake? Probe groups judged before the first sleep and again
after every wake, their marks and expected marks compared.

A wake can bring an engine back subtly wrong with every health check green (weights restored from the
wrong buffer, a stale cache): the symptom is marks that move. Three fixed probe groups of four answers
(good, partly right, wrong, off-topic) are judged once, right before the engine first sleeps, at the
judge's own settings with a fixed answer order; after each wake they are judged again by the same path.
The wake passes when every mark is the same and every expected mark (where the backend gives
log-probabilities) within WAKE_TOLERANCE of before; otherwise the engine stays out of service
(backends/lifecycle.py: failed, /readyz 503 verify_failed) until an operator wakes it again or restarts
it. At temperature 0 a healthy engine gives the same marks; a judge configured to sample (JUDGE_TEMPERATURE
above 0) is compared on expected marks only, which sampling does not move much.

The probes are judged without the admission (the engine is not open to groups while it is checked), are
not stored, and cost about one group's judge call each.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge_service.judging.base import Group
from judge_service.judging.llm.judge import LLMJudge
from judge_service.schemas import Answer, ChatMessage, JudgeRequest

WAKE_TOLERANCE = 0.25  # in marks, for expected marks

_PROBES = (
    (
        "A train leaves at 14:10 and arrives at 16:45. How long is the journey?",
        "2 hours 35 minutes.",
        (
            "The journey takes 2 hours and 35 minutes (14:10 to 16:10 is 2 hours, then 35 minutes more).",
            "About two and a half hours.",
            "3 hours 35 minutes.",
            "Trains are a comfortable way to travel.",
        ),
    ),
    (
        "What is the capital of Australia?",
        "Canberra.",
        (
            "Canberra is the capital of Australia.",
            "Canberra, though Sydney is the largest city.",
            "Sydney.",
            "Australia has many beautiful beaches.",
        ),
    ),
    (
        "Convert 5 kilometres to metres.",
        "5,000 metres.",
        ("5 km = 5,000 m.", "Around 5,000.", "500 metres.", "Metres are a unit of length."),
    ),
)


@dataclass(frozen=True)
class ProbeMarks:
    """One probe judging: (probe, answer, criterion) -> (mark, expected mark)."""

    marks: dict[tuple[int, str, str], tuple[int | None, float | None]]


@dataclass(frozen=True)
class WakeCheck:
    passed: bool
    compared: int  # marks compared
    changed_marks: int
    max_expected_change: float | None
    detail: str  # what moved, or "marks as before"


def probe_requests() -> list[JudgeRequest]:
    return [
        JudgeRequest(
            conversation=[ChatMessage(role="user", content=question)],
            reference=reference,
            answers=[Answer(id=f"p{i}", text=text) for i, text in enumerate(answers)],
            seed=0,
        )
        for question, reference, answers in _PROBES
    ]


async def judge_probes(judge: LLMJudge) -> ProbeMarks:
    """The probe groups judged now (failures raise: a judge that cannot judge them fails the check)."""
    marks: dict[tuple[int, str, str], tuple[int | None, float | None]] = {}
    for index, request in enumerate(probe_requests()):
        graded = await judge.grade(Group.of(request, f"wake-probe-{index}"), judge.options(request))
        for answer_id, grade in graded.grades.items():
            if grade.score is None:
                raise RuntimeError(
                    f"probe {index} answer {answer_id} came back unscored: {grade.explanation}"
                )
            for criterion, fields in (grade.criteria or {}).items():
                mark, expected = fields.get("mark"), fields.get("expected_mark")
                if mark is None:  # a checklist item: met or not
                    mark = 1 if fields.get("met") else 0
                    expected = fields.get("met_probability")
                marks[index, answer_id, criterion] = (mark, expected)
    return ProbeMarks(marks)


def compare(before: ProbeMarks, after: ProbeMarks, *, marks_must_match: bool = True) -> WakeCheck:
    changed: list[str] = []
    largest: float | None = None
    looked = 0  # marks or expected marks actually compared
    for key, (mark, expected) in before.marks.items():
        now = after.marks.get(key)
        if now is None:
            changed.append(f"{key} missing")
            continue
        looked += marks_must_match or (expected is not None and now[1] is not None)
        if marks_must_match and now[0] != mark:
            changed.append(f"probe {key[0]} {key[1]} {key[2]}: mark {mark} -> {now[0]}")
        if expected is not None and now[1] is not None:
            moved = abs(now[1] - expected)
            largest = moved if largest is None else max(largest, moved)
            if moved > WAKE_TOLERANCE:
                changed.append(
                    f"probe {key[0]} {key[1]} {key[2]}: expected mark {expected:.3f} -> {now[1]:.3f}"
                )
    if not looked:  # a sampling judge with no log-probabilities: nothing here can tell
        return WakeCheck(True, 0, 0, None, "unchecked: the judge samples and gives no log-probabilities")
    return WakeCheck(
        passed=not changed,
        compared=len(before.marks),
        changed_marks=len(changed),
        max_expected_change=largest,
        detail="; ".join(changed[:5]) + (f" (and {len(changed) - 5} more)" if len(changed) > 5 else "")
        if changed
        else "marks as before",
    )


class ProbeVerifier:
    """backends/lifecycle.py's WakeVerifier: the probes judged before the first sleep, and after each
    wake compared with them. `judge` holds no admission slot (the engine is closed to groups meanwhile)."""

    def __init__(self, judge: LLMJudge) -> None:
        self._judge = judge
        self._before: ProbeMarks | None = None

    async def baseline(self) -> None:
        if self._before is None:
            self._before = await judge_probes(self._judge)

    async def verify(self) -> tuple[bool, str]:
        if self._before is None:
            return True, "no probes before the sleep"
        sampled = self._judge.settings.temperature > 0  # marks may move by sampling: expected marks only
        check = compare(self._before, await judge_probes(self._judge), marks_must_match=not sampled)
        return check.passed, check.detail
