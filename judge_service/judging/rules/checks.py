"""Pass/fail checks: exact, contains, json, label, json-fields.

Options used (RuleOptions): exact, contains, label and the string values compared by json-fields apply
`unicode_normalization`, then `normalize_whitespace` (collapse runs to one space, strip the ends), then
`case_sensitive` (casefold when False). json reads only `json_schema`; label also reads `labels`
(None means the only label is the reference) and ignores surrounding quotes, backticks, `**` emphasis
and a trailing period on the answer, the reference and the labels alike.

Caller errors raise ValueError (the service answers 422), because they are the same for every answer
of the group and no answer is to blame:
  * json: `json_schema` is not a valid Draft 2020-12 schema, or holds a $ref that cannot be resolved
    (remote references are never fetched; a bad $ref surfaces when validation first reaches it);
  * label: the reference (after the same normalization) is not one of `labels`;
  * json-fields: the reference holds no JSON object, or an empty one.
contains returns score None ("does not apply") for a reference that normalizes to empty text.
As Draft 2020-12 specifies, "format" is an annotation in json schemas: it is not asserted.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from referencing.exceptions import Unresolvable

from judge_service.judging.base import Grade
from judge_service.judging.json_text import extract_json
from judge_service.judging.rules.text import normalize, shorten
from judge_service.schemas import RuleOptions, canonical_json

_LABEL_QUOTES = "\"'`“”‘’«»*"


class ExactGrader:
    name = "exact"

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade:
        if normalize(answer, options) == normalize(reference, options):
            return Grade(score=1.0, explanation="matches the reference exactly (after normalization)")
        return Grade(score=0.0, explanation="differs from the reference")


class ContainsGrader:
    name = "contains"

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade:
        needle = normalize(reference, options)
        if not needle:
            return Grade(score=None, explanation="reference is empty; contains does not apply")
        if needle in normalize(answer, options):
            return Grade(score=1.0, explanation="contains the reference")
        return Grade(score=0.0, explanation="does not contain the reference")


class JsonGrader:
    """Valid JSON (optionally fenced or inside prose), and valid against `options.json_schema` if set."""

    name = "json"
    needs_reference = False

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade:
        validator = (
            _validator(canonical_json(options.json_schema)) if options.json_schema is not None else None
        )
        document, error = extract_json(answer)
        if error is not None:
            return Grade(score=0.0, explanation=shorten(error))
        if validator is None:
            return Grade(score=1.0, explanation="valid JSON")
        try:
            first = best_match(validator.iter_errors(document))
        except Unresolvable as exc:
            raise ValueError(f"json_schema has a $ref that cannot be resolved: {exc}") from exc
        if first is None:
            return Grade(score=1.0, explanation="valid JSON, matches the schema")
        return Grade(
            score=0.0, explanation=shorten(f"schema violation at {first.json_path}: {first.message}")
        )


@lru_cache(maxsize=32)
def _validator(canonical_schema: str) -> Draft202012Validator:
    """A checked validator per distinct schema; a group's answers share one."""
    schema = json.loads(canonical_schema)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"json_schema is not a valid JSON Schema (Draft 2020-12): {exc.message}") from exc
    return Draft202012Validator(schema)


class LabelGrader:
    """The answer must be one of the known labels and equal the reference's label."""

    name = "label"

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade:
        labels = options.labels if options.labels is not None else [reference]
        known = {_label_key(label, options) for label in labels}
        expected = _label_key(reference, options)
        if expected not in known:
            raise ValueError("label: the reference is not one of options.labels")
        given = _label_key(answer, options)
        if given == expected:
            return Grade(score=1.0, explanation="correct label")
        if given in known:
            return Grade(score=0.0, explanation=shorten(f"wrong label: {given!r}"))
        return Grade(score=0.0, explanation=shorten(f"not a known label: {given!r}"))


def _label_key(text: str, options: RuleOptions) -> str:
    """Normalize, then drop surrounding quotes/markdown emphasis and a trailing period."""
    key = normalize(text, options).strip()
    previous = None
    while key != previous:
        previous = key
        key = key.strip().rstrip(".").strip().strip(_LABEL_QUOTES)
    return key


class JsonFieldsGrader:
    """Share of the reference object's top-level fields that the answer's object matches exactly."""

    name = "json-fields"

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade:
        expected, _ = extract_json(reference)
        if not isinstance(expected, dict):
            raise ValueError("json-fields: the reference holds no JSON object")
        if not expected:
            raise ValueError("json-fields: the reference JSON object has no fields")
        given, error = extract_json(answer)
        if not isinstance(given, dict):
            reason = error or "the JSON is not an object"
            return Grade(score=0.0, explanation=shorten(f"answer has no JSON object ({reason})"))
        differing = [
            key
            for key, value in expected.items()
            if key not in given or not _same(value, given[key], options)
        ]
        matched = len(expected) - len(differing)
        explanation = f"{matched}/{len(expected)} fields match"
        if differing:
            explanation += "; differ: " + ", ".join(differing)
        return Grade(score=matched / len(expected), explanation=shorten(explanation))


def _same(expected: Any, given: Any, options: RuleOptions) -> bool:
    """JSON equality with numbers compared by value (1 == 1.0, but true != 1) and strings per options."""
    if isinstance(expected, bool) or isinstance(given, bool):
        return type(expected) is type(given) and expected == given
    if isinstance(expected, int | float) and isinstance(given, int | float):
        return expected == given  # Python compares int and float by exact value
    if isinstance(expected, str) and isinstance(given, str):
        return normalize(expected, options) == normalize(given, options)
    if isinstance(expected, list) and isinstance(given, list):
        return len(expected) == len(given) and all(
            _same(e, g, options) for e, g in zip(expected, given, strict=True)
        )
    if isinstance(expected, dict) and isinstance(given, dict):
        return expected.keys() == given.keys() and all(
            _same(v, given[k], options) for k, v in expected.items()
        )
    return expected is None and given is None
