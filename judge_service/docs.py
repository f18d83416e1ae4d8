"""The reference pages of the docs site, written from the code: `judge-service docs` writes
docs/reference/configuration.md from `Settings`, metrics.md from `JudgeMetrics` and http-api.md from the
app's OpenAPI document (the app built on the fake backend, never started). `judge-service docs --check`
writes nothing and fails, naming each page, where a committed page differs from what the code writes
(`make lint` runs it), so the references cannot drift from the settings, metrics and routes they describe.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from prometheus_client import Counter, Gauge, Histogram, Summary
from prometheus_client.metrics import MetricWrapperBase
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from judge_service.config import Settings
from judge_service.metrics import JudgeMetrics

REFERENCE = Path("docs") / "reference"
_HEAD = "<!-- Written by `judge-service docs` from {source}: edit that, then run `judge-service docs`. -->\n"


def pages() -> dict[str, str]:
    """Each reference page's file name and the text the code gives it."""
    return {
        "configuration.md": configuration_page(),
        "metrics.md": metrics_page(),
        "http-api.md": http_api_page(),
    }


def write(folder: Path = REFERENCE) -> list[Path]:
    """Write every page into `folder`; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in pages().items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def check(folder: Path = REFERENCE) -> list[Path]:
    """The pages in `folder` that are missing or differ from what the code writes (none: all current)."""
    stale = []
    for name, text in pages().items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


# --- configuration.md ------------------------------------------------------------------------------


def configuration_page() -> str:
    prefix = Settings.model_config.get("env_prefix", "")
    fields = Settings.model_fields
    lines = [
        _HEAD.format(source="judge_service.config.Settings"),
        "# Configuration",
        "",
        f"Every setting has a default; set `{prefix}*` environment variables to change them. "
        f"All {len(fields)} settings of `judge_service.config.Settings`, in its order. A boolean is "
        "`true` or `false`; a default of unset means no value unless one is given (the description says "
        "what the service does then).",
    ]
    for owner, names in _by_owner(Settings):
        if owner is not Settings:
            lines += ["", f"## {owner.__name__}", ""]
            if owner.__doc__:
                lines += [_cell(owner.__doc__), ""]
        lines += ["", "| variable | type | default | description |", "| --- | --- | --- | --- |"]
        for name in names:
            field = fields[name]
            row = (f"`{prefix}{name.upper()}`", _type(field), _default(field), field.description or "")
            lines.append("| " + " | ".join(_cell(part) for part in row) + " |")
    return "\n".join(lines) + "\n"


def _by_owner(settings: type[BaseSettings]) -> Iterator[tuple[type, list[str]]]:
    """The fields in order, grouped by the class that declares them (one group while Settings holds all)."""
    groups: dict[type, list[str]] = {}
    for name in settings.model_fields:
        owner = next(
            (c for c in reversed(settings.__mro__) if name in getattr(c, "__annotations__", {})), settings
        )
        groups.setdefault(owner, []).append(name)
    yield from groups.items()


_TYPE_NAMES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
    SecretStr: "secret string",
}


def _type(field: FieldInfo) -> str:
    annotation: Any = field.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in get_args(annotation))
    text = _TYPE_NAMES.get(annotation) or str(getattr(annotation, "__name__", annotation))
    bounds = []
    for item in field.metadata:
        for kind, attribute, sign in ((Ge, "ge", ">="), (Gt, "gt", ">"), (Le, "le", "<="), (Lt, "lt", "<")):
            if isinstance(item, kind):
                bounds.append(f"{sign} {_number(getattr(item, attribute))}")
        if isinstance(item, MinLen):
            bounds.append(f"at least {item.min_length} characters")
        if isinstance(item, MaxLen):
            bounds.append(f"at most {item.max_length} characters")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            bounds.append(f"matching `{pattern}`")
    return ", ".join([text, *bounds])


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):  # a folder under the user's home, as each machine has its own
        home = Path.home()
        return f"`~/{value.relative_to(home)}`" if value.is_relative_to(home) else f"`{value}`"
    if isinstance(value, int | float):
        return f"`{_number(value)}`"
    return f"`{value}`"


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


# --- metrics.md ------------------------------------------------------------------------------------

_KINDS: tuple[tuple[type, str, Callable[[str], str]], ...] = (
    (Counter, "counter", lambda name: f"{name}_total"),
    (Gauge, "gauge", lambda name: name),
    (Histogram, "histogram", lambda name: name),
    (Summary, "summary", lambda name: name),
)


def metrics_page() -> str:
    metrics = JudgeMetrics()
    found = [value for value in vars(metrics).values() if isinstance(value, MetricWrapperBase)]
    lines = [
        _HEAD.format(source="judge_service.metrics.JudgeMetrics"),
        "# Metrics",
        "",
        f"All {len(found)} metrics `GET /metrics` exposes (`judge_service.metrics.JudgeMetrics`), in its "
        "order. A counter is exposed with `_total`, a histogram as `_bucket`, `_sum` and `_count`, a summary "
        "as `_sum` and `_count`. With several workers (`JUDGE_WORKERS`) any worker answers for the whole "
        "replica.",
        "",
        "| metric | type | labels | help |",
        "| --- | --- | --- | --- |",
    ]
    for metric in found:
        (family,) = metric.describe()
        kind, exposed = next((kind, name) for cls, kind, name in _KINDS if isinstance(metric, cls))
        labels = ", ".join(f"`{label}`" for label in metric._labelnames)
        row = (f"`{exposed(family.name)}`", kind, labels, family.documentation)
        lines.append("| " + " | ".join(_cell(part) for part in row) + " |")
    return "\n".join(lines) + "\n"


# --- http-api.md -----------------------------------------------------------------------------------


class _Defaults(Settings):
    """Settings at their defaults, whatever JUDGE_* variables this process has: the page is the code's."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def openapi() -> dict[str, Any]:
    """The OpenAPI document of the app built on the fake backend (not started: nothing is loaded)."""
    from judge_service.app import create_app

    return create_app(_Defaults(backend="fake")).openapi()


def http_api_page() -> str:
    document = openapi()
    rows = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            scope = operation.get("x-scope")
            row = (
                method.upper(),
                f"`{path}`",
                f"`{scope}`" if scope else "public",
                operation.get("summary", ""),
            )
            rows.append("| " + " | ".join(_cell(part) for part in row) + " |")
    lines = [
        _HEAD.format(source="the app's OpenAPI document (judge_service.app.create_app)"),
        "# HTTP API",
        "",
        f"The {len(rows)} operations of the OpenAPI document (`GET /openapi.json`, version "
        f"{document['info']['version']}), in its order. The scope is what an API key needs "
        "(`x-scope`; the policy is `judge_service/api/scopes.py`, the scopes are explained in "
        "[Security](../operations/security.md)); public routes need none. `GET /metrics` is public "
        "unless `JUDGE_METRICS_PUBLIC=false`. The run pages (`/ui/...`) and `/docs` are not in the "
        "document. Request and response bodies: [API](../api.md) and `GET /docs` on a running service.",
        "",
        "| method | path | scope | summary |",
        "| --- | --- | --- | --- |",
        *rows,
    ]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text that stays inside one cell of a markdown table."""
    return " ".join(text.split()).replace("|", "\\|")
