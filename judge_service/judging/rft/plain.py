"""The fast path: a template that is text and lookups only (`{{ item.a.b }}`, `{{ sample.output_json['x'] }}`,
`{{ item.list[0] }}`) renders in the service's process, without Jinja2 parsing or compiling it.

Why not Jinja2's parser for this: parsing and compiling cost tens of microseconds per token on the event
loop (a 20,000-character template, the longest a config may hold, took 0.5 s), and one request may carry
thousands of templates. Recognising a plain template is one regular expression per tag, and rendering it
one lookup per variable: microseconds. Anything else (filters, `{% %}`, operators, whitespace control) is
not plain and renders in a render process (template_pool.py).

It renders exactly as Jinja2 would: newlines in the text normalised to `\n` and one trailing newline
dropped (Jinja2's defaults), names resolved from the namespaces, every step through the sandbox's own
getattr and getitem (so a private attribute is refused and a missing key is the same StrictUndefined
error), and each value through the same finalize and str.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jinja2.sandbox import SandboxedEnvironment

from judge_service.judging.rft.budget import finalize

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_STEP = rf"\.{_NAME}|\[(?:0|[1-9][0-9]*|'[^'\\\n]*'|\"[^\"\\\n]*\")\]"
_TAG = re.compile(rf"\{{\{{\s*((?:item|sample)(?:{_STEP})*)\s*\}}\}}")
_STEPS = re.compile(_STEP)
_OPENING = re.compile(r"\{[{%#]")  # where Jinja2 starts a tag or a comment
_NEWLINE = re.compile(r"\r\n|\r|\n")

Step = tuple[bool, Any]  # (an attribute, not an item; its name or key)


@dataclass(frozen=True)
class Lookup:
    name: str
    steps: tuple[Step, ...]

    def value(self, env: SandboxedEnvironment, namespaces: Mapping[str, Any]) -> Any:
        value = namespaces[self.name] if self.name in namespaces else env.undefined(name=self.name)
        for is_attribute, key in self.steps:
            value = env.getattr(value, key) if is_attribute else env.getitem(value, key)
        return value


@dataclass(frozen=True)
class PlainTemplate:
    pieces: tuple[str | Lookup, ...]

    def generate(self, env: SandboxedEnvironment, namespaces: Mapping[str, Any]) -> Iterator[str]:
        for piece in self.pieces:
            yield piece if isinstance(piece, str) else str(finalize(piece.value(env, namespaces)))


@lru_cache(maxsize=4096)
def parse(template: str) -> PlainTemplate | None:
    """The template as text and lookups, or None when it is anything more."""
    source = _NEWLINE.sub("\n", template)
    if source.endswith("\n"):
        source = source[:-1]
    pieces: list[str | Lookup] = []
    position = 0
    while (opening := _OPENING.search(source, position)) is not None:
        tag = _TAG.match(source, opening.start())
        if tag is None:
            return None
        if opening.start() > position:
            pieces.append(source[position : opening.start()])
        pieces.append(_lookup(tag.group(1)))
        position = tag.end()
    if position < len(source):
        pieces.append(source[position:])
    return PlainTemplate(tuple(pieces))


def _lookup(path: str) -> Lookup:
    name = "item" if path.startswith("item") else "sample"
    steps: list[Step] = []
    for step in _STEPS.findall(path, len(name)):
        if step.startswith("."):
            steps.append((True, step[1:]))
        elif step[1] in "'\"":
            steps.append((False, step[2:-2]))
        else:
            steps.append((False, int(step[1:-1])))
    return Lookup(name, tuple(steps))
