"""RFT grader configs, the JSON the hosted fine-tuning API takes, as typed models.

Accepted as they are: the same fields and types (`string_check`, `text_similarity`, `score_model`,
`label_model`, `multi`, `python`). Unknown fields are refused, so a typo is a 422 rather than a setting
silently ignored. A multi grader's `graders` is an object of name -> grader (the documented form); a lone
grader there is read as {its name: it}.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge_service.schemas import Finite, Unicode

MAX_TEMPLATE_CHARS = 20_000
MAX_SOURCE_CHARS = 256_000


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StringCheckGrader(_Config):
    type: Literal["string_check"]
    name: str = Field(min_length=1, max_length=128)
    input: str = Field(max_length=MAX_TEMPLATE_CHARS)
    reference: str = Field(max_length=MAX_TEMPLATE_CHARS)
    operation: Literal["eq", "ne", "like", "ilike"]


SimilarityMetric = Literal[
    "cosine",
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
]


class TextSimilarityGrader(_Config):
    type: Literal["text_similarity"]
    name: str = Field(min_length=1, max_length=128)
    input: str = Field(max_length=MAX_TEMPLATE_CHARS)
    reference: str = Field(max_length=MAX_TEMPLATE_CHARS)
    evaluation_metric: SimilarityMetric
    pass_threshold: Finite | None = None  # evals' form; the reward is the metric itself


class TextContent(_Config):
    type: Literal["input_text", "output_text"]
    text: str = Field(max_length=MAX_TEMPLATE_CHARS)


class MediaContent(BaseModel):
    """Images and audio: accepted by the schema, refused when run (this service's judge reads text)."""

    model_config = ConfigDict(extra="allow")
    type: Literal["input_image", "input_audio"]


Content = Annotated[TextContent | MediaContent, Field(discriminator="type")]


class InputMessage(_Config):
    role: Literal["user", "assistant", "system", "developer"]
    content: Unicode | Content | list[Unicode | Content]
    type: Literal["message"] | None = None

    def parts(self) -> list[str | TextContent | MediaContent]:
        return list(self.content) if isinstance(self.content, list) else [self.content]


class SamplingParams(_Config):
    max_completions_tokens: int | None = Field(default=None, ge=1, le=32_768)
    reasoning_effort: Unicode | None = None
    seed: int | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)


class ScoreModelGrader(_Config):
    type: Literal["score_model"]
    name: str = Field(min_length=1, max_length=128)
    model: str = Field(max_length=256, description="Recorded; this service's judge model answers.")
    input: list[InputMessage] = Field(min_length=1, max_length=64)
    range: list[Finite] | None = Field(default=None, min_length=2, max_length=2)
    sampling_params: SamplingParams | None = None
    pass_threshold: Finite | None = None

    @field_validator("range")
    @classmethod
    def _ordered(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not value[0] < value[1]:
            raise ValueError(f"range must be [lowest, highest] with lowest < highest, got {value}")
        return value

    @property
    def score_range(self) -> tuple[float, float]:
        return (self.range[0], self.range[1]) if self.range else (0.0, 1.0)


class LabelModelGrader(_Config):
    type: Literal["label_model"]
    name: str = Field(min_length=1, max_length=128)
    model: str = Field(max_length=256, description="Recorded; this service's judge model answers.")
    input: list[InputMessage] = Field(min_length=1, max_length=64)
    labels: list[Unicode] = Field(min_length=1, max_length=256)
    passing_labels: list[Unicode] = Field(min_length=1, max_length=256)

    @model_validator(mode="after")
    def _passing_subset(self) -> LabelModelGrader:
        unknown = [label for label in self.passing_labels if label not in self.labels]
        if unknown:
            raise ValueError(f"passing_labels must be a subset of labels; not in labels: {unknown}")
        return self


class PythonGrader(_Config):
    type: Literal["python"]
    name: str = Field(min_length=1, max_length=128)
    source: str = Field(min_length=1, max_length=MAX_SOURCE_CHARS)
    image_tag: Unicode | None = Field(default=None, description="Recorded; the service's own Python runs it.")


LeafGrader = Annotated[
    StringCheckGrader | TextSimilarityGrader | ScoreModelGrader | LabelModelGrader | PythonGrader,
    Field(discriminator="type"),
]


class MultiGrader(_Config):
    type: Literal["multi"]
    name: str = Field(min_length=1, max_length=128)
    graders: dict[Unicode, LeafGrader] = Field(min_length=1, max_length=32)
    calculate_output: str = Field(min_length=1, max_length=2000)

    @field_validator("graders", mode="before")
    @classmethod
    def _lone_grader(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            return {value.get("name", value["type"]): value}
        return value


RftGrader = Annotated[
    StringCheckGrader
    | TextSimilarityGrader
    | ScoreModelGrader
    | LabelModelGrader
    | PythonGrader
    | MultiGrader,
    Field(discriminator="type"),
]


def leaves(grader: BaseModel) -> list[BaseModel]:
    """The graders a config runs: itself, or a multi grader's members."""
    return list(grader.graders.values()) if isinstance(grader, MultiGrader) else [grader]


def runs_model(grader: BaseModel) -> bool:
    return any(isinstance(leaf, ScoreModelGrader | LabelModelGrader) for leaf in leaves(grader))


def runs_python(grader: BaseModel) -> bool:
    return any(isinstance(leaf, PythonGrader) for leaf in leaves(grader))
