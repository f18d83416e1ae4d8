"""The error body every refused request gets."""

from __future__ import annotations

from typing import Any

from judge_service.schemas.common import ResponseModel


class ErrorBody(ResponseModel):
    code: str
    message: str
    details: dict[str, Any] | list[Any] | None = None


class ErrorResponse(ResponseModel):
    error: ErrorBody
