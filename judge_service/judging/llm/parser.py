"""The judge's output contract: the JSON schema it is constrained to, and the validation of what it wrote.

Shape: {"<answer id>": {"<criterion>": {"reason": "...", "mark": 1-5}, ...}, ...}. The reason comes
before the mark so the model explains itself before committing to a number. Marks only (reasons
"none"): {"<answer id>": {"<criterion>": 1-5, ...}, ...}, the most compact form a judge can write: about
19 tokens an answer for four criteria, where {"<criterion>": {"mark": 1-5}} takes 34.

Checklist items (binary criteria, docs/rubrics.md) hold "met" (true or false) where a mark would be:
{"<item>": {"reason": "...", "met": true}}, or the bare boolean in marks only. A parsed item's Mark has
mark 1 (met) or 0 (not met), and its expected value is the probability of met.

Parsing is pure and total: it never raises on judge text. Each expected answer either gets marks for
every criterion or a failure message; an unreadable reply fails every answer with the same message.
A key repeated in a JSON object (an answer id or a criterion) is ambiguous, so that entry fails rather
than silently keeping the last copy. `problems` names each kind of fault once, for metrics.
Backends without constrained decoding may wrap the JSON in prose or code fences, use a list of objects
with an "id" field, or nest it under "answers"/"judgements": all of these are accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from judge_service.judging.json_text import Decoded, Duplicate, decode_whole, extract_json

# Reasons as words (JUDGE_REASON_WORDS): letters first, then words or plain numbers separated by spaces and
# punctuation. A small judge under a free string schema degenerates into "4.5" or "1.1.1.1..." up to the
# length bound; this pattern leaves it no such path (a number must be followed by a space or the end, and
# has at most one decimal part), while "Says 42, not 41." passes. Plain regular syntax, no lookarounds:
# the engines' grammar compilers accept it. xgrammar cannot combine a pattern with maxLength (vLLM
# refuses such a schema), so the pattern bounds itself: at most reason_max_chars // 6 words after the
# first (~6 characters per word and space in prose), each at most 15 letters (+ one joined part:
# "well-built", "reference's"). The parser still cuts a reason to reason_max_chars.
MAX_CITED_STEPS = 8  # steps a mark may rest on: the judge names the few that decide it, not every one
_LETTER = "[A-Za-z\u00c0-\u024f]"
_WORD = f"{_LETTER}{{1,15}}(?:[-'.]{_LETTER}{{1,15}})?"
_NUMBER = "[0-9]{1,6}(?:[.,][0-9]{1,3})?%?"
_GAP = "[,;:.!?)]{0,2}[ ][(]?"


def reason_words_pattern(reason_max_chars: int) -> str:
    words = max(1, reason_max_chars // 6)
    return f"^{_WORD}(?:{_GAP}(?:{_WORD}|{_NUMBER})){{0,{words}}}[.!?)]{{0,2}}$"


def reason_schema(reason_max_chars: int, *, reason_words: bool = False) -> dict[str, Any]:
    """One reason: a bounded string, or words (reason_words_pattern)."""
    if reason_words:  # the pattern bounds its own length; vLLM refuses a pattern beside length bounds
        return {"type": "string", "pattern": reason_words_pattern(reason_max_chars)}
    return {"type": "string", "minLength": 1, "maxLength": reason_max_chars}


def mark_schema(
    reason_max_chars: int, *, reason_words: bool = False, steps: int | None = None
) -> dict[str, Any]:
    """One criterion's {"reason", "mark"}; the reason before the mark (module docstring). `steps`: the
    answer's number of steps, when the judge names those the mark rests on (attribution_schema)."""
    reason = reason_schema(reason_max_chars, reason_words=reason_words)
    return _criterion_object(reason, "mark", {"type": "integer", "enum": [1, 2, 3, 4, 5]}, steps)


def attribution_schema(steps: int) -> dict[str, Any]:
    """The members an attributed criterion holds between its reason and its mark: "steps", at most
    MAX_CITED_STEPS of the answer's step numbers, and "first_wrong_step", one of its steps or null. An
    answer given as text has no steps: an empty list and null. Ranges, not enums of every number: the
    schema stays the size of one without steps however long the trajectories (a group of 64 answers of 128
    steps under 20 criteria: 1.9 MB of JSON for the engine to compile with enums)."""
    if steps == 0:
        return {"steps": {"type": "array", "maxItems": 0}, "first_wrong_step": {"type": "null"}}
    step = {"type": "integer", "minimum": 1, "maximum": steps}
    return {
        "steps": {"type": "array", "items": step, "maxItems": min(steps, MAX_CITED_STEPS)},
        "first_wrong_step": {"anyOf": [step, {"type": "null"}]},
    }


def _criterion_object(
    reason: dict[str, Any], key: str, value: dict[str, Any], steps: int | None
) -> dict[str, Any]:
    properties = {"reason": reason, **(attribution_schema(steps) if steps is not None else {}), key: value}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


MARK_ONLY: dict[str, Any] = {"type": "integer", "enum": [1, 2, 3, 4, 5]}
MET_ONLY: dict[str, Any] = {"type": "boolean"}


def met_schema(
    reason_max_chars: int, *, reason_words: bool = False, steps: int | None = None
) -> dict[str, Any]:
    """One checklist item's {"reason", "met"}; the reason first, as for marks."""
    reason = reason_schema(reason_max_chars, reason_words=reason_words)
    return _criterion_object(reason, "met", MET_ONLY, steps)


def object_of(keys: list[str], value: dict[str, Any]) -> dict[str, Any]:
    """A JSON object schema with exactly these keys, each holding `value`."""
    return {
        "type": "object",
        "properties": dict.fromkeys(keys, value),
        "required": list(keys),
        "additionalProperties": False,
    }


def answer_schema(
    criteria: list[str],
    reason_max_chars: int,
    *,
    reason_words: bool = False,
    reasons: bool = True,
    binary: frozenset[str] = frozenset(),
    steps: int | None = None,
) -> dict[str, Any]:
    """One answer's marks, {"<criterion>": {"reason", "mark"}, ...} (or {"<criterion>": mark, ...} without
    reasons; "met" for the `binary` ones): a per-answer call's whole reply. `steps`: the answer's number of
    steps, where the judge names those each mark rests on (attribution, with reasons only)."""
    words = reason_words
    mark = mark_schema(reason_max_chars, reason_words=words, steps=steps) if reasons else MARK_ONLY
    schema = object_of(criteria, mark)
    if binary:
        met = met_schema(reason_max_chars, reason_words=words, steps=steps) if reasons else MET_ONLY
        schema["properties"] = {name: met if name in binary else mark for name in criteria}
    return schema


def output_schema(
    answer_ids: list[str],
    criteria: list[str],
    reason_max_chars: int,
    *,
    reason_words: bool = False,
    reasons: bool = True,
    binary: frozenset[str] = frozenset(),
    steps: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The group reply: every answer's marks under its id. `steps`: answer id -> its number of steps,
    where the judge names the steps each mark rests on (answers of different lengths, different schemas)."""
    per_answer = answer_schema(
        criteria, reason_max_chars, reason_words=reason_words, reasons=reasons, binary=binary
    )
    schema = object_of(answer_ids, per_answer)
    if steps is not None:
        schema["properties"] = {
            answer_id: answer_schema(
                criteria,
                reason_max_chars,
                reason_words=reason_words,
                reasons=reasons,
                binary=binary,
                steps=steps[answer_id],
            )
            for answer_id in answer_ids
        }
    return schema


def max_output_tokens(
    n_answers: int,
    n_criteria: int,
    reason_max_chars: int,
    *,
    chars_per_token: int = 3,
    reasons: bool = True,
    attribution: bool = False,
) -> int:
    """Tokens a complete reply takes with reasons at `chars_per_token` plus JSON structure.

    The default (3, ordinary prose) is what a reply usually needs; `chars_per_token=1` covers the
    worst the schema lets through in ASCII: a small judge that degenerates into "1.0.0.1.1..." spends a
    token per character, and a reply cut off at the limit is unreadable JSON. LLMJudge.prepare gives
    the judge the worst-case budget where the context has room, and refuses a group only when even
    the usual budget does not fit.
    """
    # Without reasons a criterion is `"<name>":4,`: its name's tokens and a few of JSON (names are short).
    per_mark = reason_max_chars // chars_per_token + 24 if reasons else 12
    if attribution:  # "steps":[..] of up to MAX_CITED_STEPS numbers, "first_wrong_step":n
        per_mark += 3 * MAX_CITED_STEPS + 16
    return n_answers * (n_criteria * per_mark + 16) + 32


class Mark(NamedTuple):
    """A tuple, not a dataclass: a group's reply makes one per answer and criterion, twice with expected
    marks, and a tuple costs a fraction of a frozen dataclass to build."""

    mark: int  # 1-5; a checklist item: 1 met, 0 not met
    reason: str | None  # None: a marks-only reply
    expected: float | None = None  # the probability-weighted mark, or of met (expected.py); None: none
    # Attribution (steps): the steps the mark rests on, in the judge's order, and the first that went
    # wrong (None: none did); `steps` None: not asked.
    steps: tuple[int, ...] | None = None
    first_wrong: int | None = None


@dataclass
class ParsedJudgement:
    marks: dict[str, dict[str, Mark]] = field(default_factory=dict)  # answer id -> criterion -> mark
    failures: dict[str, str] = field(default_factory=dict)  # answer id -> why it has no marks
    notes: list[str] = field(default_factory=list)  # problems that cost no answer (e.g. unknown ids)
    problems: set[str] = field(default_factory=set)  # kinds of fault in this reply (metrics.OUTPUT_PROBLEMS)
    # The reply and its JSON when the reply is that value alone (duplicates flagged), for expected marks to
    # walk instead of decoding the reply again; None when it was found in prose or a fence, or not at all.
    document: Decoded | None = field(default=None, repr=False)

    @property
    def complete(self) -> bool:
        return not self.failures


def parse_judgement(
    text: str,
    answer_ids: list[str],
    criteria: list[str],
    reason_max_chars: int = 1000,
    *,
    reasons: bool = True,
    binary: frozenset[str] = frozenset(),
    steps: Mapping[str, int] | None = None,
) -> ParsedJudgement:
    """The group reply's marks per answer. `steps`: answer id -> its number of steps, where each mark must
    name the steps it rests on (attribution); a step out of range fails that answer (retried)."""
    result = ParsedJudgement()
    try:
        by_id = _entries_by_id(_read_reply(text, result), result)
    except ValueError as exc:
        result.failures = {answer_id: str(exc) for answer_id in answer_ids}
        result.problems.add("unreadable")
        return result

    expected = set(answer_ids)
    unknown = sorted(set(by_id) - expected)
    if unknown:
        result.notes.append(f"ignored unknown answer ids: {', '.join(unknown[:10])}")
        result.problems.add("unknown_answer")
    for answer_id in answer_ids:
        entry = by_id.get(answer_id)
        if entry is None:
            result.failures[answer_id] = "the judge's reply has no entry for this answer"
            result.problems.add("missing_answer")
            continue
        if isinstance(entry, Duplicate):
            result.failures[answer_id] = "the judge's reply has more than one entry for this answer"
            result.problems.add("duplicate_answer")
            continue
        count = None if steps is None else steps[answer_id]
        marks, problem = _marks_for(
            entry, criteria, reason_max_chars, reasons=reasons, binary=binary, steps=count
        )
        if problem:
            result.problems.add(problem[0])
            result.failures[answer_id] = problem[1]
        else:
            result.marks[answer_id] = marks
    return result


def parse_answer(
    text: str,
    answer_id: str,
    criteria: list[str],
    reason_max_chars: int = 1000,
    *,
    reasons: bool = True,
    binary: frozenset[str] = frozenset(),
    steps: int | None = None,
) -> ParsedJudgement:
    """A per-answer reply: one answer's criteria object. Also accepted: that object under the answer's
    id, or a list/wrapper holding it (backends without constrained decoding)."""
    result = ParsedJudgement()
    try:
        data = _read_reply(text, result)
    except ValueError as exc:
        result.failures[answer_id] = str(exc)
        result.problems.add("unreadable")
        return result
    # The answer's own object holds every criterion; only an object that does not may be a wrapper (an
    # answer id or a criterion named "tone", "answers" or "results" is both a key of it and of a wrapper).
    wrapped = (
        isinstance(data, dict) and not set(criteria) <= set(data) and {answer_id, *_WRAPPERS} & set(data)
    )
    if isinstance(data, list) or wrapped:
        counts = None if steps is None else {answer_id: steps}
        return parse_judgement(
            text, [answer_id], criteria, reason_max_chars, reasons=reasons, binary=binary, steps=counts
        )
    marks, problem = _marks_for(data, criteria, reason_max_chars, reasons=reasons, binary=binary, steps=steps)
    if problem:
        result.problems.add(problem[0])
        result.failures[answer_id] = problem[1]
    else:
        result.marks[answer_id] = marks
    return result


_WRAPPERS = ("answers", "judgements", "results")


def _read_reply(text: str, result: ParsedJudgement) -> Any:
    """The reply's JSON value (json_text's rules, duplicates flagged); kept as `result.document` when it
    is the whole reply."""
    result.document = decode_whole(text, flag_duplicates=True)
    if result.document is not None:
        return result.document.value
    value, error = extract_json(text, flag_duplicates=True)
    if error is None:
        return value
    if not text.strip():
        raise ValueError("the judge's reply is empty")
    raise ValueError(f"the judge's reply is not valid JSON (starts {text.strip()[:60]!r}): {error}")


def _entries_by_id(data: Any, result: ParsedJudgement) -> dict[str, Any]:
    if isinstance(data, dict):
        for wrapper in _WRAPPERS:
            if wrapper in data and isinstance(data[wrapper], (dict, list)) and len(data) == 1:
                data = data[wrapper]
                break
    if isinstance(data, dict):
        return dict(data)
    if isinstance(data, list):
        by_id: dict[str, Any] = {}
        for item in data:
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                result.notes.append("ignored a list entry without a string 'id'")
                continue
            answer_id = item["id"]
            entry = {k: v for k, v in item.items() if k != "id"}
            by_id[answer_id] = Duplicate() if answer_id in by_id else entry
        return by_id
    raise ValueError(f"the judge's reply is JSON but not an object or list ({type(data).__name__})")


def _marks_for(
    entry: Any,
    criteria: list[str],
    reason_max_chars: int,
    *,
    reasons: bool = True,
    binary: frozenset[str] = frozenset(),
    steps: int | None = None,
) -> tuple[dict[str, Mark], tuple[str, str] | None]:
    """The entry's marks, or ({}, (problem kind, message)). Without reasons a criterion's value is the
    mark itself (or, from a judge that wrote more than asked, an object with a "mark"); a checklist item
    (`binary`) holds "met" where the others hold "mark". `steps`: the answer's number of steps, where
    each mark names the steps it rests on (_attributed)."""
    marks, problem = _marks_of(entry, criteria, reason_max_chars, reasons=reasons, binary=binary)
    if problem is None and steps is not None:
        return _attributed(entry, marks, steps)
    return marks, problem


def _attributed(
    entry: dict[str, Any], marks: dict[str, Mark], steps: int
) -> tuple[dict[str, Mark], tuple[str, str] | None]:
    """The marks with the steps each rests on and the first that went wrong: step numbers 1..`steps`
    (whole numbers; repeats dropped, the judge's order kept, at most MAX_CITED_STEPS), the first wrong one
    a step number too, or null. Anything else is an output problem of the answer, as a bad mark is."""
    attributed: dict[str, Mark] = {}
    for name, mark in marks.items():
        raw = entry[name]  # an object: attribution is asked with reasons only
        cited, first = raw.get("steps"), raw.get("first_wrong_step", _MISSING)
        if isinstance(cited, Duplicate) or isinstance(first, Duplicate):
            return {}, (
                "invalid_attribution",
                f"criterion '{name}' has a repeated 'steps' or 'first_wrong_step'",
            )
        if not isinstance(cited, list) or first is _MISSING:
            return {}, (
                "invalid_attribution",
                f"criterion '{name}' does not name its steps and first wrong step",
            )
        named = [*cited, first] if first is not None else cited  # null: no step went wrong; never in steps
        bad = next((s for s in named if not _is_step(s, steps)), _MISSING)
        if bad is not _MISSING:
            held = f"steps 1-{steps}" if steps else "no steps (it is text)"
            return {}, (
                "invalid_attribution",
                f"criterion '{name}' names step {ascii(bad)[:40]}; the answer has {held}",
            )
        kept = tuple(dict.fromkeys(cited))[:MAX_CITED_STEPS]
        attributed[name] = Mark(mark.mark, mark.reason, mark.expected, kept, first)
    return attributed, None


_MISSING = object()


def _is_step(value: Any, steps: int) -> bool:
    return type(value) is int and 1 <= value <= steps


def _marks_of(
    entry: Any,
    criteria: list[str],
    reason_max_chars: int,
    *,
    reasons: bool,
    binary: frozenset[str],
) -> tuple[dict[str, Mark], tuple[str, str] | None]:
    if not isinstance(entry, dict):
        return {}, ("invalid_entry", f"the entry is {type(entry).__name__}, not an object of criteria")
    marks: dict[str, Mark] = {}
    for name in criteria:
        raw = entry.get(name)
        if reasons and type(raw) is dict and name not in binary:  # the usual entry, checked the short way
            value, reason = raw.get("mark"), raw.get("reason")
            if type(value) is int and 1 <= value <= 5 and type(reason) is str:
                stripped = reason.strip()
                if stripped:
                    marks[name] = Mark(value, stripped[:reason_max_chars])
                    continue
        key, read, expected_value = (
            ("met", _as_met, "true or false") if name in binary else ("mark", _as_mark, "an integer 1-5")
        )
        if isinstance(raw, Duplicate):
            return {}, ("invalid_entry", f"criterion '{name}' appears more than once")
        if not reasons and raw is not None and not isinstance(raw, dict):
            bare = read(raw)
            if bare is None:
                return {}, (
                    "invalid_mark",
                    f"criterion '{name}' has {key} {raw!r}; expected {expected_value}",
                )
            marks[name] = Mark(mark=bare, reason=None)
            continue
        if not isinstance(raw, dict):
            return {}, ("missing_criterion", f"criterion '{name}' is missing or not an object")
        if isinstance(raw.get(key), Duplicate) or isinstance(raw.get("reason"), Duplicate):
            return {}, ("invalid_entry", f"criterion '{name}' has a repeated '{key}' or 'reason'")
        mark = read(raw.get(key))
        if mark is None:
            return {}, (
                "invalid_mark",
                f"criterion '{name}' has {key} {raw.get(key)!r}; expected {expected_value}",
            )
        reason = raw.get("reason")
        if not reasons:
            marks[name] = Mark(mark=mark, reason=None)
            continue
        if not isinstance(reason, str) or not reason.strip():
            return {}, ("missing_reason", f"criterion '{name}' has no reason")
        marks[name] = Mark(mark=mark, reason=reason.strip()[:reason_max_chars])
    return marks, None


_MET_WORDS = {"yes": 1, "met": 1, "true": 1, "no": 0, "not met": 0, "false": 0}


def _as_met(value: Any) -> int | None:
    """A checklist item's met (1) or not (0): a boolean, or from judges without constrained decoding
    "yes"/"no" or 1/0."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        return _MET_WORDS.get(value.strip().lower())
    if isinstance(value, int) and value in (0, 1):
        return value
    return None


def _as_mark(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 1 <= value <= 5:
        return value
    return None
