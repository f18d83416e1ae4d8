"""Renders a group into the judge's chat messages from the Jinja2 templates in prompts/<name>/.

Every value from the caller is HTML-escaped (autoescape), so no answer, reference or message can close
its <answer>/<reference> block or open a new one: the prompt's structure is fixed by the template alone.

Two decodings (judging/llm/caller.py), each with its own pair of templates and its own version:
- `group`: system.j2 + user.j2, one prompt asking for every answer's marks.
- `per_answer`: per_answer_system.j2 + per_answer_user.j2, one prompt per answer. The whole group is
  shown in each and only the closing instruction names the answer to mark (`target`), so the N prompts
  share every token up to it and the engine's prefix cache computes the group once.
A template folder without the per_answer files serves the group decoding only.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import jinja2

from judge_service.schemas import Answer, ChatMessage, Criterion, Decoding

_PARTS: dict[Decoding, tuple[str, str]] = {
    "group": ("system.j2", "user.j2"),
    "per_answer": ("per_answer_system.j2", "per_answer_user.j2"),
}


REASON_LANGUAGE_LINE = "Write every reason in {}."


@dataclass(frozen=True)
class GroupContent:
    """What a prompt shows: the group in the order the judge sees it, the rubric and the reason bound."""

    conversation: list[ChatMessage]
    reference: str
    answers: list[Answer]
    criteria: list[Criterion]
    reason_max_chars: int
    reason_language: str | None = None  # a language's English name: "Write every reason in German."


@dataclass(frozen=True)
class RenderedPrompt:
    messages: list[dict[str, str]]
    version: str  # "<template>@<sha256 prefix of the template files>"


class PromptRenderer:
    def __init__(self, prompts_dir: Path, template: str) -> None:
        folder = prompts_dir / template
        missing = [p for p in _PARTS["group"] if not (folder / p).is_file()]
        if missing:
            raise FileNotFoundError(f"prompt template {folder} lacks {', '.join(missing)}")
        self._folder = folder
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(folder),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
        )
        self._versions: dict[Decoding, str] = {}
        self._templates: dict[Decoding, tuple[jinja2.Template, jinja2.Template]] = {}
        for decoding, parts in _PARTS.items():
            if all((folder / p).is_file() for p in parts):
                digest = hashlib.sha256()
                for part in parts:
                    digest.update((folder / part).read_bytes())
                self._versions[decoding] = f"{template}@{digest.hexdigest()[:12]}"
                system, user = (self._env.get_template(p) for p in parts)
                self._templates[decoding] = (system, user)
        self.version = self._versions["group"]
        # The system message depends only on the rubric, which most groups share.
        self._system_for = functools.lru_cache(maxsize=256)(self._render_system)

    def version_of(self, decoding: Decoding) -> str:
        if decoding not in self._versions:
            parts = ", ".join(_PARTS[decoding])
            raise FileNotFoundError(f"prompt template {self._folder.name} lacks {parts}")
        return self._versions[decoding]

    def render(self, group: GroupContent) -> RenderedPrompt:
        """The group decoding's prompt: every answer, marked in one reply."""
        system = self._system_for(
            "group", tuple(group.criteria), group.reason_max_chars, group.reason_language
        )
        user = self._templates["group"][1].render(
            conversation=group.conversation,
            reference=group.reference,
            answers=group.answers,
            criteria=group.criteria,
        )
        return RenderedPrompt(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            version=self.version,
        )

    def render_per_answer(self, group: GroupContent) -> list[RenderedPrompt]:
        """The per-answer decoding's prompts, one per answer in the order shown, each naming its answer."""
        version = self.version_of("per_answer")
        system = self._system_for(
            "per_answer", tuple(group.criteria), group.reason_max_chars, group.reason_language
        )
        user = self._templates["per_answer"][1]
        shown = {
            "conversation": group.conversation,
            "reference": group.reference,
            "answers": group.answers,
            "criteria": group.criteria,
        }
        return [
            RenderedPrompt(
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": user.render(**shown, target=target.id)},
                ],
                version=version,
            )
            for target in group.answers
        ]

    def _render_system(
        self,
        decoding: Decoding,
        criteria: tuple[Criterion, ...],
        reason_max_chars: int,
        reason_language: str | None,
    ) -> str:
        system = self._templates[decoding][0].render(criteria=criteria, reason_max_chars=reason_max_chars)
        # Added by code, not the templates: without a language the prompt (and its version) is as before.
        return f"{system}\n\n{REASON_LANGUAGE_LINE.format(reason_language)}" if reason_language else system
