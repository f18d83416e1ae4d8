import pytest

from judge_service.judging.rules.checks import (
    ContainsGrader,
    ExactGrader,
    JsonFieldsGrader,
    JsonGrader,
    LabelGrader,
)
from judge_service.schemas import RuleOptions

DEFAULT = RuleOptions()
STRICT = RuleOptions(case_sensitive=True, normalize_whitespace=False, unicode_normalization="none")


@pytest.mark.parametrize(
    ("answer", "reference", "options", "score"),
    [
        ("Paris", "Paris", DEFAULT, 1.0),
        ("  PARIS \n", "paris", DEFAULT, 1.0),
        ("New   York", "new york", DEFAULT, 1.0),
        ("ﬁne", "fine", DEFAULT, 1.0),  # NFKC folds the ligature
        ("Straße", "STRASSE", DEFAULT, 1.0),  # casefold
        ("PARIS", "Paris", STRICT, 0.0),
        ("Paris ", "Paris", STRICT, 0.0),
        ("ﬁne", "fine", STRICT, 0.0),
        ("Paris, France", "Paris", DEFAULT, 0.0),
    ],
)
def test_exact(answer: str, reference: str, options: RuleOptions, score: float) -> None:
    assert ExactGrader().grade(answer, reference, options).score == score


@pytest.mark.parametrize(
    ("answer", "reference", "options", "score"),
    [
        ("The capital is PARIS, France.", "paris", DEFAULT, 1.0),
        ("The capital is\nNew  York.", "new york", DEFAULT, 1.0),
        ("The capital is PARIS.", "Paris", STRICT, 0.0),
        ("The capital is Lyon.", "Paris", DEFAULT, 0.0),
    ],
)
def test_contains(answer: str, reference: str, options: RuleOptions, score: float) -> None:
    assert ContainsGrader().grade(answer, reference, options).score == score


def test_contains_does_not_apply_to_an_empty_reference() -> None:
    assert ContainsGrader().grade("anything", "  ", DEFAULT).score is None


@pytest.mark.parametrize(
    "answer",
    [
        '{"name": "Ada", "age": 36}',
        'Here you go:\n```json\n{"name": "Ada", "age": 36}\n```\nAnything else?',
        'Sure! The result is {"name": "Ada", "age": 36}. Hope that helps.',
        "[1, 2, 3]",
        "```\n[1, 2]\n```",
    ],
)
def test_json_accepts_fenced_and_embedded_json(answer: str) -> None:
    assert JsonGrader().grade(answer, "", DEFAULT).score == 1.0


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ('{"name": "Ada",}', "not valid JSON"),
        ("no json at all", "no JSON object or array found"),
        ("", "empty"),
        ('{"x": NaN}', "NaN"),
        ('```json\n{"a": 1\n```', "not valid JSON"),
    ],
)
def test_json_rejects_invalid_json(answer: str, reason: str) -> None:
    grade = JsonGrader().grade(answer, "", DEFAULT)
    assert grade.score == 0.0
    assert reason in grade.explanation


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}


def test_json_schema_pass_and_first_error() -> None:
    options = RuleOptions(json_schema=SCHEMA)
    assert JsonGrader().grade('{"name": "Ada", "age": 36}', "", options).score == 1.0
    grade = JsonGrader().grade('{"name": "Ada", "age": "old"}', "", options)
    assert grade.score == 0.0
    assert grade.explanation == "schema violation at $.age: 'old' is not of type 'integer'"


@pytest.mark.parametrize(
    "schema", [{"type": "nonsense"}, {"$ref": "#/$defs/missing"}, {"$ref": "https://example.com/s.json"}]
)
def test_json_invalid_schema_is_a_caller_error(schema: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="json_schema"):
        JsonGrader().grade('{"a": 1}', "", RuleOptions(json_schema=schema))


LABELS = RuleOptions(labels=["positive", "negative", "neutral"])


@pytest.mark.parametrize(
    ("answer", "score", "explanation"),
    [
        ("positive", 1.0, "correct label"),
        ("  Positive.  ", 1.0, "correct label"),
        ('"positive"', 1.0, "correct label"),
        ("**Positive**", 1.0, "correct label"),
        ("'positive'.", 1.0, "correct label"),
        ("negative", 0.0, "wrong label"),
        ("mostly positive", 0.0, "not a known label"),
        ("", 0.0, "not a known label"),
    ],
)
def test_label(answer: str, score: float, explanation: str) -> None:
    grade = LabelGrader().grade(answer, "positive", LABELS)
    assert grade.score == score
    assert grade.explanation.startswith(explanation)


def test_label_without_labels_uses_the_reference() -> None:
    assert LabelGrader().grade("Spam.", "spam", DEFAULT).score == 1.0
    assert LabelGrader().grade("ham", "spam", DEFAULT).explanation.startswith("not a known label")


@pytest.mark.parametrize("labels", [LABELS, RuleOptions(labels=[])])
def test_label_reference_outside_labels_is_a_caller_error(labels: RuleOptions) -> None:
    with pytest.raises(ValueError, match="reference is not one of"):
        LabelGrader().grade("positive", "mixed", labels)


def test_label_case_sensitive() -> None:
    options = RuleOptions(labels=["A", "a"], case_sensitive=True)
    assert LabelGrader().grade("a", "A", options).explanation.startswith("wrong label")


REFERENCE_OBJECT = (
    '```json\n{"city": "Paris", "population": 2100000, "tags": ["capital"], "meta": {"a": 1}}\n```'
)


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ('{"city": "Paris", "population": 2100000, "tags": ["capital"], "meta": {"a": 1}}', 1.0),
        ('Result: {"city": "paris", "population": 2100000.0, "tags": ["Capital"], "meta": {"a": 1.0}}', 1.0),
        ('{"city": "Paris", "population": 2100000, "tags": ["capital"], "meta": {"a": 1, "b": 2}}', 0.75),
        ('{"city": "Lyon", "population": "2100000", "extra": true}', 0.0),
        ('{"city": "Paris"}', 0.25),
        ("no json", 0.0),
        ("[1, 2]", 0.0),
    ],
)
def test_json_fields(answer: str, score: float) -> None:
    assert JsonFieldsGrader().grade(answer, REFERENCE_OBJECT, DEFAULT).score == score


def test_json_fields_booleans_are_not_numbers() -> None:
    assert JsonFieldsGrader().grade('{"ok": 1}', '{"ok": true}', DEFAULT).score == 0.0


def test_json_fields_explanation_names_differing_fields() -> None:
    grade = JsonFieldsGrader().grade('{"city": "Lyon"}', REFERENCE_OBJECT, DEFAULT)
    assert grade.explanation == "0/4 fields match; differ: city, population, tags, meta"


@pytest.mark.parametrize("reference", ["no json here", "[1, 2]", "{}"])
def test_json_fields_reference_without_object_is_a_caller_error(reference: str) -> None:
    with pytest.raises(ValueError, match="json-fields"):
        JsonFieldsGrader().grade('{"a": 1}', reference, DEFAULT)
