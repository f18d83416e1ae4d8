"""Grader templates: `{{item.x}}`, `{{sample.output_text}}`, `{{sample.output_json.x}}`, in a sandboxed
Jinja2 environment.

Only the `item` and `sample` namespaces exist. A variable that is not there (a missing field, a typo, a
sample without JSON) is an error, `TemplateVariableError`, never an empty string: a grader that silently
compared against "" would hand out rewards for nothing. Objects and lists render as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError, UndefinedError
from jinja2.sandbox import SandboxedEnvironment


class TemplateVariableError(ValueError):
    """A template names a variable the namespaces lack, or is not a valid template."""


def _finalize(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return value


_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, finalize=_finalize)


@lru_cache(maxsize=1024)
def _compiled(template: str) -> Any:
    return _ENV.from_string(template)


def render(template: str, namespaces: Mapping[str, Any]) -> str:
    """`template` with its variables from `namespaces` (item, sample)."""
    if "{" not in template:  # no template syntax: the common literal reference
        return template
    try:
        return str(_compiled(template).render(**namespaces))
    except UndefinedError as exc:
        raise TemplateVariableError(f"template {template[:80]!r}: {exc.message}") from exc
    except TemplateError as exc:
        raise TemplateVariableError(f"template {template[:80]!r} is invalid: {exc}") from exc
    except Exception as exc:  # the sandbox refusing an attribute, a failing filter
        raise TemplateVariableError(
            f"template {template[:80]!r} failed: {type(exc).__name__}: {exc}"
        ) from exc


def check(template: str) -> None:
    """Parse only (validate): TemplateVariableError for a template that cannot compile."""
    if "{" not in template:
        return
    try:
        _compiled(template)
    except (TemplateError, RecursionError) as exc:
        raise TemplateVariableError(f"template {template[:80]!r} is invalid: {exc}") from exc
