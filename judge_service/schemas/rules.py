"""The rule-based graders' options (judging/rules/; docs/graders/rules.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from judge_service.schemas.common import StrictModel, Text, _bounded_depth


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
