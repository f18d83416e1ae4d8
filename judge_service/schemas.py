"""Wire models: what callers send and receive. Strict (unknown fields are refused) and bounded."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    model_validator,
)


def canonical_json(value: Any, *, ascii_only: bool = True) -> str:
    """The one canonical JSON spelling: sorted keys, no spaces. What hashes and compares JSON uses it. The
    two spellings are pinned by what is stored: request hashes (Idempotency-Key) and member groups' fields
    escape non-ASCII (`ascii_only`); grader fingerprints keep it as UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii_only)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


ANSWER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$"
CRITERION_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
MAX_ANSWERS = 64
MAX_TEXT_CHARS = 20_000
MAX_BATCH_GROUPS = 256
MAX_ORDERS = 4  # answer orders a group may be judged under (judging/llm/orders.py)
# How the judge decodes a group (judging/llm/caller.py) and what a criterion's score is made from.
Decoding = Literal["group", "per_answer"]
ScoreFrom = Literal["mark", "expected"]
DECODING_DESCRIPTION = (
    "How the judge decodes the group: 'group', one reply marking every answer; 'per_answer', one reply "
    "per answer, each from a prompt showing the whole group (lower latency: the replies decode side by "
    "side over one shared prompt prefix). Default: JUDGE_DECODING."
)
SCORE_FROM_DESCRIPTION = (
    "What a criterion's score is made from: 'mark', the integer mark; 'expected', the judge's "
    "probability-weighted mark, which breaks ties between equal integer marks (the integer mark stands "
    "in where the judge backend gives no log-probabilities). Default: JUDGE_SCORE_FROM."
)
Reasons = Literal["inline", "none", "sample"]
PairwiseScore = Literal["bt", "winrate"]
REASONS_DESCRIPTION = (
    "Whether the judge writes a reason before each mark: 'inline' (it does), 'none' (marks only: far fewer "
    "tokens; reasons can be written later, POST /v1/judgements/{id}/reasons), 'sample' (inline for a "
    "seeded share of groups, JUDGE_REASON_SAMPLE_RATE, none for the rest). Default: JUDGE_REASONS."
)
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"
MAX_RUNS_PAGE = 500  # GET /v1/runs
MAX_JUDGEMENTS_PAGE = 500  # GET /v1/runs/{run_id}/judgements (the clients page at it)
MAX_STEPS_PAGE = 2000  # GET /v1/runs/{run_id}/steps: a plot of a long run in one call
MAX_STEP = 2**63 - 1  # the largest integer both stores hold (SQLite INTEGER, PostgreSQL BIGINT)
MAX_MEMBER_DEADLINE_S = 3600.0  # the longest a member may wait for its group


class StrictModel(BaseModel):
    """What callers send: an unknown field is refused (422), never silently dropped."""

    model_config = ConfigDict(extra="forbid")


class ResponseModel(BaseModel):
    """What the service answers. Unknown fields are ignored when read back, so a client of this version
    keeps reading the replies of a newer service that added fields."""

    model_config = ConfigDict(extra="ignore")


ReasoningEffort = Literal["low", "medium", "high"]
ThinkingSwitch = Literal["toggle", "always", "never"]
MAX_THINKING_BUDGET = 131072


class ThinkingBudget(StrictModel):
    budget: int = Field(
        ge=1,
        le=MAX_THINKING_BUDGET,
        description="Thinking tokens at most; then the end of the thinking is forced and the JSON follows.",
    )


Thinking = Literal["off", "on"] | ThinkingBudget
THINKING_DESCRIPTION = (
    "Whether a thinking judge reasons before it marks: 'off' (the JSON from the first token), 'on', or "
    '{"budget": N} (at most N thinking tokens). Default: JUDGE_THINKING, else "off" ("on" for a judge '
    "that always thinks). Refused (422) where the configured judge cannot do it (docs/thinking.md)."
)
REASONING_EFFORT_DESCRIPTION = (
    "For judges that take it (gpt-oss, OpenAI-compatible endpoints): how much the judge reasons. "
    "Default: JUDGE_REASONING_EFFORT, else the judge's own."
)


# Canary answers (watch/canaries.py; docs/watching.md).
CanaryKind = Literal[
    "injection", "empty", "opener", "reference_twist", "restated", "verbose_wrong", "refusal"
]
CANARY_KINDS: tuple[CanaryKind, ...] = get_args(CanaryKind)
Canaries = (
    Literal["off", "on"] | Annotated[list[CanaryKind], Field(min_length=1, max_length=len(CANARY_KINDS))]
)


def parse_canary_kinds(value: str) -> tuple[CanaryKind, ...]:
    """Canary kinds separated by commas (JUDGE_CANARY_KINDS, `eval --canaries`), at least one; in the
    order of CANARY_KINDS."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in CANARY_KINDS]
    if unknown or not names:
        raise ValueError(
            f"expected canary kinds separated by commas, from {', '.join(CANARY_KINDS)}; got {value!r}"
        )
    return tuple(kind for kind in CANARY_KINDS if kind in names)


CANARIES_DESCRIPTION = (
    "Whether this group gets a canary: one extra answer built from the group to catch a judge that can "
    "be gamed, judged with the others and never returned. 'off', 'on' (a kind of JUDGE_CANARY_KINDS), or "
    "a list of kinds to draw from. Default: JUDGE_CANARY_RATE decides (0: never)."
)


# C0 controls other than tab, newline and carriage return; lone UTF-16 surrogates ("\ud800" in JSON).
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


STORED = {"stored": True}
"""Validation context for judgements read back from the store: accepted once, never refused later."""


def _no_control_chars(value: str, info: ValidationInfo) -> str:
    """Refuse C0 control characters other than tab, newline and carriage return.

    They are never meaningful in a conversation or an answer, can hide text from a human reading a
    run page (terminal escapes), and NUL truncates text in C-based tools; refusing them (instead of
    stripping) keeps what the judge saw identical to what the caller sent. Empty text is allowed.
    A lone surrogate (half of a pair, which JSON's \\u escapes can spell) is no character at all: it
    cannot be stored or sent on as UTF-8, so it is refused here, before any judging.
    """
    if info.context == STORED:
        return value
    found = _CONTROL_CHARS.search(value)
    if found is not None and "\ud800" <= found.group() <= "\udfff":
        raise ValueError(_unpaired(found))
    if found is not None:
        raise ValueError(
            f"contains the control character U+{ord(found.group()):04X} at position {found.start()}; "
            "remove control characters (only tab, newline and carriage return are allowed)"
        )
    return value


Text = Annotated[
    str,
    AfterValidator(_no_control_chars),
    # The same rule in the published schema, for clients and generated code (the validator above gives
    # the error that names the character and its position).
    Field(json_schema_extra={"pattern": r"^[^\x00-\x08\x0B\x0C\x0E-\x1F]*$"}),
]
"""Caller text: any Unicode, empty allowed, no C0 controls except \\t \\n \\r."""

_SURROGATES = re.compile(r"[\ud800-\udfff]")


def _unpaired(found: re.Match[str]) -> str:
    return (
        f"contains an unpaired surrogate U+{ord(found.group()):04X} at position {found.start()}; send "
        "valid Unicode (a character outside the BMP is escaped as a pair, e.g. \\ud83d\\ude00)"
    )


def _whole_characters(value: str) -> str:
    found = _SURROGATES.search(value)
    if found is not None:
        raise ValueError(_unpaired(found))
    return value


Unicode = Annotated[str, AfterValidator(_whole_characters)]
"""A caller's string of any characters but a lone surrogate (see _no_control_chars): for caller strings
that are not Text and have no pattern (pydantic's own checks do not refuse one everywhere)."""

MAX_JSON_SCHEMA_DEPTH = 64


def _bounded_depth(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    """Refuse a JSON Schema nested deeper than MAX_JSON_SCHEMA_DEPTH: real schemas stay far below it,
    and much deeper ones make validation and storage recurse past Python's limits."""
    if info.context == STORED:
        return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:  # iterative: the check itself must not recurse
        node, depth = stack.pop()
        if depth > MAX_JSON_SCHEMA_DEPTH:
            raise ValueError(
                f"nests deeper than {MAX_JSON_SCHEMA_DEPTH} levels; flatten the schema (use $defs and $ref)"
            )
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    _json_bytes(value)
    return value


def _json_bytes(value: Any) -> int:
    """The size of `value` as UTF-8 JSON; ValueError for what JSON cannot store as sent: NaN or Infinity
    (Python's parser takes them; stored, they would read back as null) and unpaired surrogates (which
    have no UTF-8 spelling)."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ValueError("holds NaN or Infinity, which JSON cannot hold; send finite numbers") from None
    try:
        return len(text.encode())
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"holds an unpaired surrogate U+{ord(text[exc.start]):04X}; send valid Unicode"
        ) from None


MAX_ITEM_BYTES = 65_536  # `item`, as canonical JSON
MAX_ITEM_DEPTH = 16


def _bounded_item(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    """The task row's grader fields: JSON of bounded size and depth (it is stored with every judgement and
    sent to code graders)."""
    if info.context == STORED:
        return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_ITEM_DEPTH:
            raise ValueError(f"nests deeper than {MAX_ITEM_DEPTH} levels; flatten the item")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    size = _json_bytes(value)
    if size > MAX_ITEM_BYTES:
        raise ValueError(
            f"is {size} bytes as JSON, over the limit of {MAX_ITEM_BYTES}; keep only the fields graders read"
        )
    return value


Item = Annotated[dict[str, Any], AfterValidator(_bounded_item)]
ITEM_DESCRIPTION = (
    "The task row's grader fields (a JSON object, at most 64 KiB): never shown to the judge or the "
    "answers; code graders receive it and grader templates read it as {{item.field}}. Stored with the "
    "judgement."
)

# Rubrics (service/rubrics.py, judging/llm/rubric_writer.py; docs/rubrics.md): an id is "rb_" and 24 hex
# digits of a hash of what the rubric was made from; "@N" names one version (edits add versions).
RUBRIC_ID_PATTERN = r"^rb_[0-9a-f]{24}$"
RUBRIC_REF_PATTERN = r"^(generate|rb_[0-9a-f]{24}(@[1-9][0-9]{0,5})?)$"
RUBRIC_DESCRIPTION = (
    "Judge on a checklist rubric instead of `criteria`: a rubric id (its latest version, or 'rb_...@N' for "
    "version N), or 'generate' to make (or reuse) the rubric for this conversation and reference first. "
    "The judgement records the rubric's id, version and hash."
)
MIN_RUBRIC_ITEMS = 3

# --------------------------------------------------------------------------- requests


class ChatMessage(StrictModel):
    role: Literal["system", "user", "assistant"]
    content: Text = Field(max_length=MAX_TEXT_CHARS)


class Answer(StrictModel):
    id: str = Field(
        pattern=ANSWER_ID_PATTERN,
        description="Caller-given id, unique in the group: 1-64 of letters, digits, '_', '.', ':', '-'.",
    )
    text: Text = Field(
        max_length=MAX_TEXT_CHARS, description="The policy model's answer, verbatim; may be empty."
    )


Scale = Literal["1-5", "binary"]
CriterionKind = Literal["essential", "important", "optional", "pitfall"]
# Weights by kind where a criterion names no weight ("Rubrics as Rewards"): a pitfall that is met lowers
# the answer's score by its weight (judging/llm/criteria.py, answer_score).
KIND_WEIGHTS: dict[str, float] = {"essential": 1.0, "important": 0.7, "optional": 0.3, "pitfall": 0.9}
MAX_CRITERIA = 20  # a checklist rubric's items (docs/rubrics.md); four default criteria


class Criterion(StrictModel):
    # Frozen, so hashable: the rendered rubric and the grader fingerprint are cached per criteria.
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        pattern=CRITERION_NAME_PATTERN, description="Lower-case identifier, e.g. 'correctness'."
    )
    description: Text = Field(min_length=1, max_length=500)
    mark_1: Text | None = Field(
        default=None, min_length=1, max_length=300, description="Scale '1-5' (required): what 1 means."
    )
    mark_5: Text | None = Field(
        default=None, min_length=1, max_length=300, description="Scale '1-5' (required): what 5 means."
    )
    weight: float | None = Field(
        default=None,
        gt=0,
        le=100,
        description="Weight in the answer's overall score. Default: by `kind` (essential 1.0, important "
        "0.7, optional 0.3, pitfall 0.9), else 1.0.",
    )
    scale: Scale = Field(
        default="1-5",
        description="'1-5': a mark from 1 to 5, score (mark - 1) / 4; 'binary': a checklist item the judge "
        "says is met or not, score 1 or 0 (with score_from 'expected': the judge's probability of met).",
    )
    kind: CriterionKind | None = Field(
        default=None,
        description="A checklist item's importance, which sets its default weight; 'pitfall' (binary only) "
        "describes a mistake: met, it lowers the score.",
    )

    @model_validator(mode="after")
    def _fits_scale(self) -> Criterion:
        if self.scale == "1-5" and (self.mark_1 is None or self.mark_5 is None):
            raise ValueError(f"criterion '{self.name}' on scale '1-5' needs mark_1 and mark_5")
        if self.scale == "binary" and (self.mark_1 is not None or self.mark_5 is not None):
            raise ValueError(
                f"criterion '{self.name}' is binary (met or not): mark_1 and mark_5 are for scale '1-5'; "
                "say what meets it in the description"
            )
        if self.kind == "pitfall" and self.scale != "binary":
            raise ValueError(f"criterion '{self.name}': kind 'pitfall' needs scale 'binary'")
        return self

    @property
    def binary(self) -> bool:
        return self.scale == "binary"

    @property
    def pitfall(self) -> bool:
        return self.kind == "pitfall"

    @property
    def effective_weight(self) -> float:
        if self.weight is not None:
            return self.weight
        return KIND_WEIGHTS[self.kind] if self.kind is not None else 1.0


class GraderTerm(StrictModel):
    grader: str = Field(min_length=1, max_length=64, description="Name of a registered single grader.")
    weight: float = Field(gt=0, le=100, description="Not normalized: the blend is the plain weighted sum.")


class NumberFormat(StrictModel):
    """A number format named by its marks, for `number_locale`."""

    decimal: Literal[".", ","]
    thousands: Literal[",", ".", " ", "'", ""] = Field(description="'' for none")

    @model_validator(mode="after")
    def _distinct(self) -> NumberFormat:
        if self.decimal == self.thousands:
            raise ValueError("the decimal mark and the thousands separator must differ")
        return self


NumberLocale = Literal["auto", "en", "de", "fr", "ch"] | NumberFormat


ReasonLanguage = Literal["auto", "en", "de", "fr", "es", "it", "nl", "pt"]
REASON_LANGUAGE_DESCRIPTION = (
    "The language the judge writes its reasons in: a language code, or 'auto' for the conversation's "
    "language (told by its common words; none told: no instruction). Unset: JUDGE_REASON_LANGUAGE, by "
    "default none (the judge's own choice, as before this option existed)."
)


class RuleOptions(StrictModel):
    """Options read by the rule-based graders; each grader documents which ones it uses."""

    case_sensitive: bool = False
    normalize_whitespace: bool = True
    unicode_normalization: Literal["NFC", "NFKC", "none"] = "NFKC"
    json_schema: Annotated[dict[str, Any], AfterValidator(_bounded_depth)] | None = Field(
        default=None, description="For 'json': validate against it."
    )
    labels: list[Text] | None = Field(
        default=None, max_length=256, description="For 'label': allowed labels."
    )
    number_locale: NumberLocale = Field(
        default="auto",
        description="For 'numbers': how figures such as 1.705 or 1,250 are read. 'auto' decides one "
        "format per group from everything it says (docs/graders/rules.md); 'en' and 'ch' read a decimal "
        'point, \'de\' and \'fr\' a decimal comma; or name the marks: {"decimal": ",", "thousands": "."}.',
    )


class ComparisonOptions(StrictModel):
    """For the `pairwise` and `knockout` graders (docs/graders/comparison.md)."""

    both_orders: bool = Field(
        default=True, description="pairwise: judge each pair in both orders (position bias cancels)."
    )
    max_pairs: int = Field(
        default=32,
        ge=1,
        le=MAX_ANSWERS * (MAX_ANSWERS - 1) // 2,
        description="pairwise: at most this many pairs; above it every answer meets the same number of "
        "opponents, chosen by the seed.",
    )
    pairwise_score: PairwiseScore = Field(
        default="bt",
        description="pairwise: 'bt', the Bradley-Terry expected win rate against the group; or 'winrate'.",
    )


COMPARISON_DESCRIPTION = "Options of the comparison graders (`pairwise`, `knockout`)."


class CascadeOptions(StrictModel):
    """Rules first, the judge where they say nothing (docs/graders/cascades.md)."""

    rule: str = Field(min_length=1, max_length=64, description="The rule grader that scores first.")
    judge: Literal["ties", "verify"] = Field(
        description="'ties': the judge (the request's grader) scores the groups the rule leaves flat; "
        "'verify': the judge checks the answers that reach `threshold`, which score rule x its correctness."
    )
    threshold: float = Field(default=1.0, ge=0, le=1, description="verify: the rule score that is checked.")


CASCADE_DESCRIPTION = "A rule grader first, and the judge (`grader`) only where it changes the reward."

JuryAggregate = Literal["mean", "median", "min", "mean_minus_std"]
JUROR_NAME_PATTERN = r"^[a-z][a-z0-9_\-]{0,31}$"
MAX_JURORS = 8


class JuryOptions(StrictModel):
    """For the `jury` grader: which of JUDGE_JURY's judges, and how their scores become one
    (docs/graders/juries.md)."""

    judges: list[Annotated[str, Field(pattern=JUROR_NAME_PATTERN)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_JURORS,
        description="The judges, in order (escalation calls them in it). Default: all of JUDGE_JURY.",
    )
    aggregate: JuryAggregate = Field(
        default="mean",
        description="'mean' and 'median' (weighted), 'min', or 'mean_minus_std': the mean less `std_factor` "
        "standard deviations, so an answer the judges dispute scores lower.",
    )
    std_factor: float = Field(default=1.0, ge=0, le=4, description="mean_minus_std: the factor.")
    escalate: float | None = Field(
        default=None,
        gt=0,
        le=4,
        description="Escalation: the first two judges mark the group, and the others are called only where "
        "some answer's scores from them are more than this many marks apart (1-5 scale). Off by default.",
    )

    @model_validator(mode="after")
    def _unique(self) -> JuryOptions:
        _refuse_duplicates("jury judge", self.judges or [])
        return self


JURY_DESCRIPTION = "Options of the `jury` grader (JUDGE_JURY)."
CascadePath = Literal["rule_only", "judged"]
ScoredBy = Literal["rule", "judge", "rule+judge"]


class JudgeRequest(StrictModel):
    conversation: list[ChatMessage] = Field(min_length=1, max_length=64)
    reference: Text = Field(max_length=MAX_TEXT_CHARS, description="The reference reply to compare with.")
    answers: list[Answer] = Field(min_length=1, max_length=MAX_ANSWERS)
    criteria: list[Criterion] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CRITERIA,
        description="Default: correctness, helpfulness, tone, format.",
    )
    rubric: str | None = Field(default=None, pattern=RUBRIC_REF_PATTERN, description=RUBRIC_DESCRIPTION)
    grader: str = Field(default="judge", min_length=1, max_length=64)
    terms: list[GraderTerm] | None = Field(
        default=None, min_length=1, max_length=8, description="Weighted custom blend; overrides `grader`."
    )
    options: RuleOptions = Field(default_factory=RuleOptions)
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    step: int | None = Field(default=None, ge=0, le=MAX_STEP)
    group_key: Text | None = Field(default=None, max_length=256)
    seed: int | None = Field(
        default=None, ge=0, le=2**32 - 1, description="Seeds the shuffled answer order; default: from the id."
    )
    orders: int = Field(
        default=1,
        ge=1,
        le=MAX_ORDERS,
        description="Judge under this many answer orders and average (position bias).",
    )
    decoding: Decoding | None = Field(default=None, description=DECODING_DESCRIPTION)
    score_from: ScoreFrom | None = Field(default=None, description=SCORE_FROM_DESCRIPTION)
    reason_language: ReasonLanguage | None = Field(default=None, description=REASON_LANGUAGE_DESCRIPTION)
    reasons: Reasons | None = Field(default=None, description=REASONS_DESCRIPTION)
    thinking: Thinking | None = Field(default=None, description=THINKING_DESCRIPTION)
    reasoning_effort: ReasoningEffort | None = Field(default=None, description=REASONING_EFFORT_DESCRIPTION)
    item: Item | None = Field(default=None, description=ITEM_DESCRIPTION)
    canaries: Canaries | None = Field(default=None, description=CANARIES_DESCRIPTION)
    comparison: ComparisonOptions | None = Field(default=None, description=COMPARISON_DESCRIPTION)
    cascade: CascadeOptions | None = Field(default=None, description=CASCADE_DESCRIPTION)
    jury: JuryOptions | None = Field(default=None, description=JURY_DESCRIPTION)

    @model_validator(mode="after")
    def _unique_ids(self) -> JudgeRequest:
        # Criteria beside a rubric are refused where the rubric is applied (service/rubrics.py): a judged
        # request holds both, the rubric and the items it was judged on.
        _refuse_duplicates("answer id", [a.id for a in self.answers])
        _check_criteria(self.criteria, None)
        return self


CRITERIA_AND_RUBRIC = "give criteria or a rubric, not both: a rubric is the request's criteria"


def _check_criteria(criteria: list[Criterion] | None, rubric: str | None) -> None:
    if criteria is not None:
        if rubric is not None:
            raise ValueError(CRITERIA_AND_RUBRIC)
        _refuse_duplicates("criterion name", [c.name for c in criteria])
        if all(c.pitfall for c in criteria):
            raise ValueError("criteria need at least one that is not a pitfall: pitfalls only lower a score")


def _refuse_duplicates(what: str, values: list[str]) -> None:
    seen: set[str] = set()
    dupes = sorted({v for v in values if v in seen or seen.add(v)})  # type: ignore[func-returns-value]
    if dupes:
        raise ValueError(f"each {what} must be unique; repeated: {', '.join(dupes)}")


class MemberRequest(StrictModel):
    """One answer of a group, sent on its own by a trainer that scores one sample at a time
    (POST /v1/judge/member): the service holds members until the group is complete (assembly/)."""

    group_key: Text = Field(min_length=1, max_length=256, description="Names the group; one per prompt.")
    group_size: int = Field(ge=1, le=MAX_ANSWERS, description="How many answers the group will have.")
    answer: Answer
    conversation: list[ChatMessage] = Field(min_length=1, max_length=64)
    reference: Text = Field(max_length=MAX_TEXT_CHARS)
    criteria: list[Criterion] | None = Field(default=None, min_length=1, max_length=MAX_CRITERIA)
    rubric: str | None = Field(default=None, pattern=RUBRIC_REF_PATTERN, description=RUBRIC_DESCRIPTION)
    grader: str = Field(default="judge", min_length=1, max_length=64)
    terms: list[GraderTerm] | None = Field(default=None, min_length=1, max_length=8)
    options: RuleOptions = Field(default_factory=RuleOptions)
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    step: int | None = Field(default=None, ge=0, le=MAX_STEP)
    orders: int = Field(default=1, ge=1, le=MAX_ORDERS)
    decoding: Decoding | None = Field(default=None, description=DECODING_DESCRIPTION)
    score_from: ScoreFrom | None = Field(default=None, description=SCORE_FROM_DESCRIPTION)
    reasons: Reasons | None = Field(default=None, description=REASONS_DESCRIPTION)
    thinking: Thinking | None = Field(default=None, description=THINKING_DESCRIPTION)
    reasoning_effort: ReasoningEffort | None = Field(default=None, description=REASONING_EFFORT_DESCRIPTION)
    item: Item | None = Field(default=None, description=ITEM_DESCRIPTION)
    canaries: Canaries | None = Field(default=None, description=CANARIES_DESCRIPTION)
    comparison: ComparisonOptions | None = Field(default=None, description=COMPARISON_DESCRIPTION)
    cascade: CascadeOptions | None = Field(default=None, description=CASCADE_DESCRIPTION)
    jury: JuryOptions | None = Field(default=None, description=JURY_DESCRIPTION)
    deadline_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_MEMBER_DEADLINE_S,
        description="Seconds from the group's first member until it is judged with the members present; "
        "default JUDGE_MEMBER_DEADLINE_S. The first member's value holds for the group.",
    )
    min_members: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ANSWERS,
        description="At the deadline, judge the members present if at least this many; else each is "
        "answered `incomplete`, unscored. Default JUDGE_MEMBER_MIN_MEMBERS.",
    )

    @model_validator(mode="after")
    def _checked_criteria(self) -> MemberRequest:
        _check_criteria(self.criteria, None)
        return self

    def group_fields(self) -> dict[str, Any]:
        """What the first member fixes for the whole group (the others must send the same)."""
        return self.model_dump(exclude={"answer", "deadline_s", "min_members"})


# --------------------------------------------------------------------------- responses


class CriterionMark(ResponseModel):
    mark: int | None = Field(ge=1, le=5, description="The 1-5 mark; null for a binary item (see `met`).")
    expected_mark: float | None = Field(
        default=None,
        ge=1,
        le=5,
        description="The judge's probability-weighted mark over 1-5; null where the judge backend gave no "
        "log-probabilities (the answer's explanation says why when it mattered).",
    )
    met: bool | None = Field(
        default=None, description="A binary item: whether the judge says the answer meets it; else null."
    )
    met_probability: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="A binary item: the judge's probability of 'met' from its log-probabilities; null "
        "where there were none.",
    )
    score: float = Field(
        ge=0,
        le=1,
        description="(mark - 1) / 4, or (expected_mark - 1) / 4 when scored from expected marks; a binary "
        "item: 1 if met else 0, or met_probability. A pitfall's score is how surely it was met: it counts "
        "against the answer.",
    )
    reason: str | None = Field(
        description="The judge's reason, written before the mark; null when judged with reasons 'none' "
        "(the stored judgement's `explained` holds reasons written afterwards)."
    )
    kind: str | None = Field(default=None, description="The criterion's kind, for checklist items.")


class TermScore(ResponseModel):
    grader: str
    weight: float
    score: float | None = Field(description="null when the term did not apply or failed")
    explanation: str
    details: dict[str, Any] | None = Field(
        default=None,
        description="Fields a code grader returned beside its score (explanations; they never change it).",
    )


AnswerStatus = Literal["scored", "unscored"]
GroupStatus = Literal["ok", "partial", "failed"]


class ComparisonTally(ResponseModel):
    """An answer's record under a comparison grader: pairwise counts comparisons, knockout matches."""

    wins: int
    losses: int
    ties: int
    failed: int = Field(description="Comparisons of this answer that gave no verdict (left out).")
    byes: int | None = Field(default=None, description="knockout: rounds it went through without a match.")


class ComparisonRecord(ResponseModel):
    """One comparison a comparison grader made, as stored with the judgement."""

    first: str = Field(description="The answer shown first (as A).")
    second: str = Field(description="The answer shown second (as B).")
    verdict: dict[str, int] | None = Field(
        description="Per criterion, 1 (A much better) to 5 (B much better), 3 even; null when it failed."
    )
    preference: float | None = Field(description="How far B was preferred, 0-1 (0.5 even); null when failed.")
    reason: str | None = None
    error: str | None = Field(default=None, description="Why it gave no verdict.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    round: int | None = Field(default=None, description="knockout: the round (1 = the first).")


class AnswerJury(ResponseModel):
    """An answer under the `jury` grader: each judge's score beside the aggregate."""

    scores: dict[str, float] = Field(
        description="Judge name -> its 0-1 score, for the judges that scored it."
    )
    missing: dict[str, str] = Field(
        default_factory=dict,
        description="Judge name -> why it gave no score: not called (its judges agreed), or its error.",
    )
    spread: float | None = Field(
        description="How many marks apart (1-5 scale) the highest and lowest score are; null below two."
    )
    aggregate: JuryAggregate


class AnswerResult(ResponseModel):
    id: str
    status: AnswerStatus
    score: float | None = Field(description="Overall 0-1; null when unscored (never 0 for a failure).")
    criteria: dict[str, CriterionMark] | None = None
    terms: list[TermScore] | None = None
    explanation: str | None = None
    error: str | None = Field(default=None, description="Why the answer is unscored.")
    comparison: ComparisonTally | None = Field(
        default=None, description="Wins, losses and ties under a comparison grader; null otherwise."
    )
    scored_by: ScoredBy | None = Field(
        default=None, description="In a cascade: what scored this answer; null without a cascade."
    )
    jury: AnswerJury | None = Field(
        default=None, description="Under the jury grader: each judge's score and the spread; else null."
    )


class Usage(ResponseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_calls: int = 0
    reasoning_tokens: int = Field(
        default=0, description="Of the completion tokens, those a thinking judge spent thinking."
    )


class Timings(ResponseModel):
    queue_ms: float = 0.0
    judge_ms: float = 0.0
    total_ms: float = 0.0


class JurorRecord(ResponseModel):
    """What one judge of a jury did for a group, as stored with the judgement."""

    name: str
    model: str
    weight: float
    called: bool = Field(description="False: not called, because the first judges agreed.")
    escalation: bool = Field(default=False, description="Called because the first judges disagreed.")
    prompt_version: str | None = None
    error: str | None = Field(default=None, description="Why it gave no marks for the group.")
    raw_outputs: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=lambda: Usage())
    judge_ms: float = 0.0


class JudgeResponse(ResponseModel):
    judgement_id: str
    created_at: datetime
    status: GroupStatus
    grader: str
    judge_model: str | None
    prompt_version: str | None
    run_id: str | None
    step: int | None
    group_key: str | None
    answers: list[AnswerResult]
    usage: Usage
    timings: Timings
    attempts: int = Field(description="Judge calls made for this group (1 + retries).")
    # Position-bias control (judging/llm/orders.py); null for judgements made before it, or without the judge.
    order_seed: int | None = Field(default=None, description="Seed of the shuffled answer order.")
    answer_orders: list[list[str]] | None = Field(
        default=None, description="The answer ids in the order the judge saw them, one list per order."
    )
    order_sensitivity: float | None = Field(
        default=None, description="Mean spread (max - min) of answers' scores across orders; orders > 1."
    )
    grader_fingerprint: str | None = Field(
        default=None, description="Hash of the grader configuration; equal means scored the same way."
    )
    regrade_of: str | None = Field(default=None, description="The judgement this one re-scores, if any.")
    cascade: CascadePath | None = Field(
        default=None, description="In a cascade: 'judged' when the judge was called, else 'rule_only'."
    )
    rubric: RubricUse | None = Field(
        default=None, description="The rubric judged on (request field `rubric`); null without one."
    )
    reasons: Literal["inline", "none"] | None = Field(
        default=None,
        description="Whether the judge wrote reasons with its marks ('inline') or marks only ('none'; "
        "request field `reasons`); null without the judge.",
    )
    length_bias: float | None = Field(
        default=None,
        description="Spearman correlation of answer length and score over the group's scored answers: near "
        "1, longer answers score higher. Null below 3 scored answers, or when lengths or scores are all "
        "equal.",
    )


class CanaryResult(AnswerResult):
    """A canary answer as the graders judged it (watch/canaries.py): kept with the stored judgement only."""

    kind: CanaryKind
    text: str
    outranked: bool | None = Field(
        description="The canary scored above the median of the group's scored answers: the judge preferred "
        "a planted bad answer to half the group. Null when the canary or every answer is unscored."
    )
    shown_at: list[int] | None = Field(
        default=None,
        description="Its place in each answer order the judge saw (from 0); `answer_orders` leaves it out. "
        "Null for graders that were not shown the group.",
    )


class ThinkingAttempt(ResponseModel):
    """One judge call's thinking, kept beside its raw output."""

    text: str | None = Field(
        description="The thinking text, capped (JUDGE_STORE_THINKING_CHARS); null when not stored."
    )
    text_truncated: bool = Field(default=False, description="The stored text was cut at the cap.")
    tokens: int | None = Field(description="Thinking tokens; null when the backend could not tell.")
    budget: int | None = Field(description="The call's thinking budget; null for 'on' without one.")
    budget_exhausted: bool | None = Field(description="The thinking reached its budget (the end was forced).")
    ended: bool = Field(description="The thinking ended; false: the call stopped while still thinking.")
    finish_reason: str | None
    recovered: bool = Field(
        default=False, description="The endpoint put the reply in its reasoning field; read from there."
    )


class ExplainedReasons(ResponseModel):
    """Reasons written after the judgement for its marks (POST /v1/judgements/{id}/reasons): the judge is
    shown its own prompt and marks and asked why; the marks and scores never change."""

    answers: dict[str, dict[str, str]] = Field(
        description="Answer id -> criterion -> the reason for the mark the judgement gave."
    )
    failures: dict[str, str] = Field(
        default_factory=dict, description="Answer id -> why no reasons were written for it."
    )
    judge_model: str
    prompt_version: str = Field(description="The version of the prompt that asked for the reasons.")
    usage: Usage
    created_at: datetime


class StoredJudgement(JudgeResponse):
    """What GET /v1/judgements/{id} returns: the result plus what produced it."""

    request: JudgeRequest
    raw_outputs: list[str] = Field(description="The judge's raw text, one entry per attempt.")
    thinking: list[ThinkingAttempt] | None = Field(
        default=None,
        description="A thinking judge's thinking, one entry per attempt beside raw_outputs; null when the "
        "judge did not think.",
    )
    canaries: list[CanaryResult] | None = Field(
        default=None,
        description="The canary answers judged with the group (never among `answers`); null when none.",
    )
    explained: ExplainedReasons | None = Field(
        default=None,
        description="Reasons written afterwards for a judgement made without them (POST "
        "/v1/judgements/{id}/reasons), kept apart from the judge's reply; null until asked.",
    )
    caller: str | None = Field(
        default=None,
        description="The name of the API key that asked for it (never the key); null without API keys.",
    )
    comparisons: list[ComparisonRecord] | None = Field(
        default=None, description="Every comparison a comparison grader made; null for other graders."
    )
    jury: list[JurorRecord] | None = Field(
        default=None, description="Under the jury grader: what each judge did, with its raw outputs."
    )

    def response(self) -> JudgeResponse:
        """The reply to the caller: everything but the request and the raw outputs. Built from the
        already-validated field values (no dump and re-validation of the whole tree)."""
        fields = JudgeResponse.model_fields
        return JudgeResponse.model_validate({name: getattr(self, name) for name in fields})


class MemberResponse(ResponseModel):
    """The answer of one member request: its own answer's result, and the group's judgement."""

    group_key: str
    judgement_id: str | None = Field(description="The group's stored judgement; null when it was incomplete.")
    answer: AnswerResult = Field(description="This member's answer (unscored, never 0, when incomplete).")
    group_status: GroupStatus | Literal["incomplete"]
    members: int = Field(description="Answers judged together (the group size, or fewer at the deadline).")
    closed_by: Literal["size", "deadline", "stored"] = Field(
        description="size: every member arrived; deadline: judged or refused at the deadline; stored: "
        "a retry answered from the stored judgement."
    )


class JudgementPage(ResponseModel):
    items: list[JudgeResponse]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class FingerprintCount(ResponseModel):
    fingerprint: str | None = Field(description="Grader fingerprint; null for judgements made before them.")
    judgements: int


class RunSummary(ResponseModel):
    run_id: str
    steps: int = Field(description="Distinct steps with judgements.")
    judgements: int
    last_activity: datetime = Field(description="When the run's latest judgement was stored.")
    last_step: int | None
    last_step_mean_score: float | None = Field(
        description="Mean score of the scored answers of the last step."
    )
    unscored_share: float | None = Field(description="Unscored answers / answers, over the whole run.")
    fingerprints: list[FingerprintCount] = Field(description="Grader fingerprints used, most used first.")


class RunPage(ResponseModel):
    items: list[RunSummary]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class StepFigures(ResponseModel):
    """One step of a run, aggregated over its judgements (those of one fingerprint when filtered)."""

    step: int
    groups: int
    answers: int
    mean_score: float | None = Field(description="Mean over scored answers.")
    score_sd: float | None = Field(description="Standard deviation of the scored answers' scores.")
    flat_share: float | None = Field(
        description="Share of groups (with 2+ scored answers) whose answers all got the same score: no "
        "learning signal for GRPO."
    )
    unscored_share: float | None
    order_sensitivity: float | None = Field(description="Mean over groups judged under 2+ orders.")
    prompt_tokens: float | None = Field(description="Mean judge prompt tokens per group.")
    completion_tokens: float | None = Field(description="Mean judge completion tokens per group.")
    judge_ms: float | None = Field(description="Mean judge time per group.")
    canary_groups: int = Field(
        default=0, description="Groups whose canary was scored beside a scored answer."
    )
    canary_outrank_share: float | None = Field(
        default=None,
        description="Share of those canaries that scored above their group's median answer: a judge that can "
        "be gamed. Null without canaries.",
    )
    canary_outrank_by_kind: dict[CanaryKind, float] = Field(
        default_factory=dict, description="canary_outrank_share per kind, for the kinds the step had."
    )
    length_bias: float | None = Field(
        default=None,
        description="Mean over groups of the Spearman correlation of answer length and score (length_bias).",
    )
    last_activity: datetime


class RunSteps(ResponseModel):
    run_id: str
    items: list[StepFigures]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class ErrorBody(ResponseModel):
    code: str
    message: str
    details: dict[str, Any] | list[Any] | None = None


class BatchJudgeRequest(StrictModel):
    groups: list[JudgeRequest] = Field(min_length=1, max_length=MAX_BATCH_GROUPS)


class BatchItem(ResponseModel):
    """Exactly one of `judgement` and `error` is set."""

    judgement: JudgeResponse | None = None
    error: ErrorBody | None = None


class BatchJudgeResponse(ResponseModel):
    results: list[BatchItem] = Field(description="One entry per group, in request order.")


class ErrorResponse(ResponseModel):
    error: ErrorBody


# --------------------------------------------------------------------------- graders

GraderKind = Literal["judge", "comparison", "jury", "rule", "code", "rft", "blend"]


class ThinkingInfo(ResponseModel):
    """How the judge model thinks (docs/thinking.md)."""

    switch: ThinkingSwitch
    parser: str | None = Field(description="vLLM's reasoning parser.")
    enforces_budget: bool = Field(description='Whether thinking budgets ({"budget": N}) are accepted.')
    takes_reasoning_effort: bool
    source: str = Field(description="Where the profile came from: settings, the chat template, the name.")


class GraderInfo(ResponseModel):
    name: str
    kind: GraderKind
    fingerprint: str | None = Field(
        description="The grader fingerprint of a request naming this grader with default options."
    )
    runs_model: bool
    thinking: ThinkingInfo | None = Field(default=None, description="The judge: how its model thinks.")
    target: str | None = Field(default=None, description="Code graders: package.module:function.")
    signature: str | None = Field(default=None, description="Code graders: rft, verl or group.")
    source_sha256: str | None = Field(
        default=None,
        description="Code graders: hash of the function's module source; RFT configs: of the config.",
    )
    version: str | None = Field(
        default=None, description="Code graders: the installed distribution's version."
    )
    terms: list[GraderTerm] | None = Field(default=None, description="Blends: their terms.")


class GraderList(ResponseModel):
    items: list[GraderInfo]


# --------------------------------------------------------------------------- rubrics

MAX_RUBRIC_INSTRUCTIONS = 2000


class RubricRequest(StrictModel):
    """What a rubric is written from (POST /v1/rubrics): the conversation and the reference reply."""

    conversation: list[ChatMessage] = Field(min_length=1, max_length=64)
    reference: Text = Field(max_length=MAX_TEXT_CHARS)
    items: int | None = Field(
        default=None,
        ge=MIN_RUBRIC_ITEMS,
        le=MAX_CRITERIA,
        description="How many checklist items to write. Default: JUDGE_RUBRIC_ITEMS.",
    )
    instructions: Text | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_RUBRIC_INSTRUCTIONS,
        description="Extra instructions to the rubric's writer, e.g. 'the final figure must be exact'.",
    )


class RubricEdit(StrictModel):
    """An edited rubric (PUT /v1/rubrics/{id}): its items in full; stored as the rubric's next version."""

    criteria: list[Criterion] = Field(min_length=1, max_length=MAX_CRITERIA)
    note: Text | None = Field(default=None, max_length=500, description="Why it was edited.")

    @model_validator(mode="after")
    def _checked(self) -> RubricEdit:
        _check_criteria(self.criteria, None)
        return self


class Rubric(ResponseModel):
    """One version of a rubric. Versions never change; an edit adds one."""

    id: str = Field(description="rb_ and a hash of what it was made from and the writer's prompt version.")
    version: int = Field(ge=1, description="1: as written by the judge; each edit adds one.")
    sha256: str = Field(description="Hash of the items (name, description, scale, kind, weight).")
    criteria: list[Criterion]
    source: Literal["generated", "edited"]
    request: RubricRequest = Field(description="What the rubric was written from.")
    judge_model: str | None = Field(description="The model that wrote version 1; null for an edit.")
    prompt_version: str = Field(description="The rubric writer's prompt version.")
    note: str | None = None
    usage: Usage = Field(default_factory=lambda: Usage(), description="The judge calls writing it took.")
    created_at: datetime


class RubricUse(ResponseModel):
    """The rubric a judgement was judged on."""

    id: str
    version: int
    sha256: str


# --------------------------------------------------------------------------- regrading


class RegradeRequest(StrictModel):
    judgement_ids: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, min_length=1, max_length=MAX_BATCH_GROUPS
    )
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    step: int | None = Field(default=None, ge=0, le=MAX_STEP, description="With run_id: only this step.")
    limit: int = Field(default=64, ge=1, le=MAX_BATCH_GROUPS, description="With run_id: judgements per call.")
    cursor: str | None = Field(default=None, max_length=64, description="With run_id: the last next_cursor.")
    grader: str | None = Field(default=None, min_length=1, max_length=64)
    terms: list[GraderTerm] | None = Field(default=None, min_length=1, max_length=8)
    criteria: list[Criterion] | None = Field(default=None, min_length=1, max_length=MAX_CRITERIA)
    rubric: str | None = Field(
        default=None,
        pattern=RUBRIC_REF_PATTERN,
        description="Judge on this rubric instead (as in judge requests). Default: the stored rubric, the "
        "same version, when the judgement had one.",
    )
    orders: int | None = Field(default=None, ge=1, le=MAX_ORDERS)
    decoding: Decoding | None = Field(default=None, description=DECODING_DESCRIPTION)
    score_from: ScoreFrom | None = Field(default=None, description=SCORE_FROM_DESCRIPTION)
    reasons: Reasons | None = Field(default=None, description=REASONS_DESCRIPTION)
    thinking: Thinking | None = Field(default=None, description=THINKING_DESCRIPTION)
    reasoning_effort: ReasoningEffort | None = Field(default=None, description=REASONING_EFFORT_DESCRIPTION)
    comparison: ComparisonOptions | None = Field(default=None, description=COMPARISON_DESCRIPTION)
    cascade: CascadeOptions | None = Field(default=None, description=CASCADE_DESCRIPTION)
    jury: JuryOptions | None = Field(default=None, description=JURY_DESCRIPTION)
    as_run_id: str | None = Field(
        default=None, pattern=RUN_ID_PATTERN, description="File new judgements here."
    )

    @model_validator(mode="after")
    def _one_source(self) -> RegradeRequest:
        if (self.judgement_ids is None) == (self.run_id is None):
            raise ValueError("give exactly one of judgement_ids and run_id")
        _check_criteria(self.criteria, self.rubric)
        return self


class RegradeItem(ResponseModel):
    """One regraded group: exactly one of `judgement` (the new one) and `error` is set."""

    regrade_of: str
    judgement: JudgeResponse | None = None
    error: ErrorBody | None = None


class RegradeResponse(ResponseModel):
    results: list[RegradeItem]
    next_cursor: str | None = Field(default=None, description="With run_id: pass as cursor for more.")


# --------------------------------------------------------------------------- retention

MAX_PRUNE_PER_CALL = 10_000_000


class PruneRequest(StrictModel):
    before: AwareDatetime = Field(
        description="Delete judgements created before this time, with its zone (2026-11-01T00:00:00Z)."
    )
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN, description="Only this run's.")
    include_labelled: bool = Field(
        default=False,
        description="Also delete judgements a person labelled, with their labels (kept by default).",
    )
    max_judgements: int = Field(
        default=100_000,
        ge=1,
        le=MAX_PRUNE_PER_CALL,
        description="Stop after this many (then `more` is true: call again), so no call runs for long.",
    )


class PruneReport(ResponseModel):
    before: datetime
    run_id: str | None = None
    judgements: int = Field(description="Judgements deleted (their idempotency keys with them).")
    explained_reasons: int = Field(description="Reasons written afterwards, deleted with their judgement.")
    labels: int = Field(description="Human labels deleted (only with include_labelled).")
    claims: int = Field(description="Idempotency claims whose lease lapsed before the cut-off.")
    seconds: float
    more: bool = Field(description="True when max_judgements stopped it: call again for the rest.")


# --------------------------------------------------------------------------- judge-quality reports

# Labels and scores are stored and read back as JSON, which has no infinity or NaN.
Finite = Annotated[float, Field(allow_inf_nan=False)]
Score = Finite | None


class HumanLabels(BaseModel):
    """One labelled group: a line of the human-labels JSONL file."""

    model_config = ConfigDict(extra="forbid")

    judgement_id: str | None = Field(default=None, max_length=64)
    group_key: str | None = Field(default=None, max_length=256)
    labeler: str | None = Field(
        default=None, max_length=64, description="Who labelled the group (several people may label one)."
    )
    human: dict[Unicode, Finite] = Field(
        min_length=1, max_length=MAX_ANSWERS, description="answer id -> score, or rank (1 is best)"
    )
    kind: Literal["score", "rank"] = "score"
    scale: tuple[Finite, Finite] | None = Field(
        default=None, description="For scores: the human scale's lowest and highest value; default 0-1."
    )

    @model_validator(mode="after")
    def _one_key(self) -> HumanLabels:
        if (self.judgement_id is None) == (self.group_key is None):
            raise ValueError("give exactly one of judgement_id and group_key")
        if self.scale is not None and not self.scale[0] < self.scale[1]:
            raise ValueError(f"scale must be (lowest, highest) with lowest < highest, got {self.scale}")
        return self

    @property
    def key(self) -> str:
        return self.judgement_id or self.group_key or ""


LABELER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@:\- ]{0,63}$"


class LabelsRequest(StrictModel):
    """A person's labels for one judged group (PUT /v1/judgements/{id}/labels), by answer id."""

    human: dict[Annotated[str, Field(pattern=ANSWER_ID_PATTERN)], Finite] = Field(
        min_length=1,
        max_length=MAX_ANSWERS,
        description="answer id -> score (on `scale`), or rank (1 is best)",
    )
    kind: Literal["score", "rank"] = "score"
    scale: tuple[Finite, Finite] | None = Field(
        default=None,
        description="For scores: lowest and highest value of the scale, e.g. [1, 5]; default 0-1.",
    )
    labeler: str | None = Field(
        default=None, pattern=LABELER_PATTERN, description="Who labels; default: the API key's identity."
    )


class StoredLabels(ResponseModel):
    items: list[HumanLabels]


class GroupAgreement(BaseModel):
    key: str
    kind: Literal["score", "rank"]
    answers: int = Field(description="Answers compared: labelled by the human and scored by the grader.")
    kendall_tau_b: float | None
    spearman_rho: float | None
    pairs: int = Field(description="Answer pairs with a strict human preference.")
    pairwise_accuracy: float | None
    mean_absolute_error: float | None
    missing_answers: list[str] = Field(description="Labelled answers the grader did not score.")


class AgreementReport(BaseModel):
    groups: int = Field(description="Labelled groups.")
    matched_groups: int
    unmatched: list[str] = Field(description="Keys of labelled groups with no grader judgement.")
    mean_kendall_tau_b: float | None
    mean_spearman_rho: float | None
    tau_groups: int = Field(description="Groups where tau-b is defined (the mean's count).")
    rho_groups: int
    pairs: int
    pairwise_accuracy: float | None
    mae_answers: int
    mean_absolute_error: float | None
    per_group: list[GroupAgreement]


class FingerprintAgreement(BaseModel):
    """How well one grader fingerprint agrees with a run's human labels (GET /v1/runs/{run_id}/agreement)."""

    fingerprint: str | None
    report: AgreementReport
    worst: list[GroupAgreement] = Field(description="The groups that disagree most, worst first.")


class ThresholdRate(BaseModel):
    threshold: float
    passed: int
    failed: int
    pass_rate: float
    fail_rate: float


class Recommendation(BaseModel):
    threshold: float | None
    fail_rate: float | None
    reason: str


class CalibrationReport(BaseModel):
    groups: int
    scored_answers: int
    unscored_answers: int
    mean_score: float | None
    thresholds: list[ThresholdRate]
    recommendation: Recommendation
    flat_groups: int
    flat_group_share: float | None
    too_few_scored_groups: int
    too_few_scored_share: float | None
    notes: list[str]


class RunSelection(StrictModel):
    run_id: str | None = Field(
        default=None, pattern=RUN_ID_PATTERN, description="Read the run's stored judgements."
    )
    step: int | None = Field(default=None, ge=0, le=MAX_STEP, description="With run_id: only this step.")
    fingerprint: str | None = Field(default=None, max_length=64, description="With run_id: only this grader.")


class CalibrationRequest(RunSelection):
    groups: list[list[Score]] | None = Field(
        default=None, min_length=1, max_length=100_000, description="Inline: each group's answer scores."
    )

    @model_validator(mode="after")
    def _one_source(self) -> CalibrationRequest:
        if (self.groups is None) == (self.run_id is None):
            raise ValueError("give exactly one of groups and run_id")
        return self


class AgreementRequest(RunSelection):
    human: list[HumanLabels] = Field(min_length=1, max_length=10_000)
    scores: dict[Unicode, dict[Unicode, Score]] | None = Field(
        default=None,
        description="Inline grader scores: judgement_id or group_key -> answer id -> score. Default: the "
        "stored judgements (by judgement_id, or by group_key within run_id).",
    )
    scale: tuple[Finite, Finite] | None = Field(default=None, description="Human score scale; default 0-1.")
