"""The judging routes' JSON in and out, without FastAPI's generic per-request work.

For a declared body FastAPI decodes the JSON into Python objects, validates those, then solves every
parameter kind (query, cookies, headers) whether the route has them or not, and it validates the
returned model again before serializing it: 2.6% of the instructions of a POST /v1/judge through the app
(benchmarks/results/capacity_guard.md, section 36). A JSONRoute reads the raw body with pydantic's JSON
validator in one pass, reads only the headers the endpoint declares, and answers with the model's own
JSON. The endpoint's signature, and so the OpenAPI description, stay what FastAPI reads; a bad body is
the same 422 as on every route (a RequestValidationError, errors located under "body").

Only what the judging routes use is supported, and checked when the route is made: one body parameter
that is a pydantic model, the Request, header parameters, no dependencies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from fastapi import APIRouter, Request, Response
from fastapi._compat import ModelField
from fastapi.dependencies.utils import get_validation_alias, request_params_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from judge_service.api.errors import capped

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])
NOT_JSON = "send the body as JSON, with the header Content-Type: application/json"
NOT_UTF8 = "the body is not UTF-8: send JSON encoded as UTF-8"


class JSONRoute(APIRoute):
    """A POST route whose body is one pydantic model and whose reply is a model (module docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        dependant = self.dependant
        if (
            dependant.dependencies
            or dependant.query_params
            or dependant.path_params
            or dependant.cookie_params
        ):
            raise TypeError(f"{self.path}: a JSONRoute takes a body, the Request and headers only")
        if len(dependant.body_params) != 1 or not _is_model(dependant.body_params[0].field_info.annotation):
            raise TypeError(f"{self.path}: a JSONRoute's body is one pydantic model")
        body_name = dependant.body_params[0].name
        model: type[BaseModel] = dependant.body_params[0].field_info.annotation  # type: ignore[assignment]
        headers, request_name, call = dependant.header_params, dependant.request_param_name, dependant.call
        assert call is not None
        status = self.status_code or 200
        # Most requests send none of the optional headers: then each is its default, and FastAPI's
        # reading (which walks every header the request sent) is skipped.
        names = [_header_name(h) for h in headers]
        # (No header model, and defaults that need not be copied per request, as FastAPI copies them.)
        simple = all(not h.field_info.is_required() and isinstance(h.default, str | None) for h in headers)
        absent = {h.name: h.default for h in headers} if simple else None

        async def handle(request: Request) -> Response:
            if not _declares_json(request.headers.get("content-type")):
                raise RequestValidationError([{"type": "content_type", "loc": ("body",), "msg": NOT_JSON}])
            values: dict[str, Any] = {body_name: _read(model, await request.body())}
            if absent is not None and not any(name in request.headers for name in names):
                values.update(absent)
            elif headers:
                read, errors = request_params_to_args(headers, request.headers)
                if errors:
                    raise RequestValidationError(errors)
                values.update(read)
            if request_name is not None:
                values[request_name] = request
            reply = await call(**values)
            if isinstance(reply, Response):
                return reply
            if not isinstance(reply, BaseModel):
                raise TypeError(f"{self.path}: the endpoint returned {type(reply).__name__}, not a model")
            return Response(reply.model_dump_json(), status_code=status, media_type="application/json")

        return handle


def post_json(router: APIRouter, path: str, **route: Any) -> Callable[[Endpoint], Endpoint]:
    """`@router.post(path, **route)` made a JSONRoute."""

    def register(endpoint: Endpoint) -> Endpoint:
        router.add_api_route(path, endpoint, methods=["POST"], route_class_override=JSONRoute, **route)
        return endpoint

    return register


def _read(model: type[BaseModel], raw: bytes) -> BaseModel:
    """The body as `model`; a RequestValidationError (errors under "body") when it is not one. JSON that
    pydantic's parser refuses but Python's reads (nesting past pydantic's depth limit, say) is validated
    as Python objects, so the model's own validators say what is wrong (a schema nested too deeply)."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        if errors[0]["type"] != "json_invalid":
            raise _in_body(errors) from None
        syntax = errors[0]
    try:
        value = json.loads(raw)  # bytes: UTF-8 (a BOM too), UTF-16 or UTF-32, as FastAPI reads a body
    except UnicodeDecodeError:
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body",), "msg": NOT_UTF8}]) from None
    except (ValueError, RecursionError):
        raise RequestValidationError([{**syntax, "loc": ("body",)}]) from None
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise _in_body(exc.errors(include_url=False, include_context=False, include_input=False)) from None


def _in_body(errors: list[Any]) -> RequestValidationError:
    """The errors located under "body", as FastAPI locates them; a body of 400,000 unknown keys has as
    many errors, and only the ones the reply names (api/errors.py, capped) are located."""
    return RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in capped(errors)])


def _header_name(field: ModelField) -> str:
    """The header a parameter reads, as FastAPI names it: its alias, or its name with "-" for "_"."""
    alias = get_validation_alias(field)
    if alias == field.name and getattr(field.field_info, "convert_underscores", True):
        return alias.replace("_", "-")
    return alias


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _declares_json(content_type: str | None) -> bool:
    """application/json or application/*+json, parameters (charset) aside, as FastAPI accepts."""
    if content_type is None:
        return False
    kind = content_type.partition(";")[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))
