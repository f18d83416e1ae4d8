"""Renders a group into the judge's chat messages from the Jinja2 templates in prompts/<name>/.

Every value from the caller is HTML-escaped (autoescape), so no answer, reference or message can close
its <answer>/<reference> block or open a new one: the prompt's structure is fixed by the template alone.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import jinja2

from judge_service.schemas import Answer, ChatMessage, Criterion

_PARTS = ("system.j2", "user.j2")


@dataclass(frozen=True)
class RenderedPrompt:
    messages: list[dict[str, str]]
    version: str  # "<template>@<sha256 prefix of the template files>"


class PromptRenderer:
    def __init__(self, prompts_dir: Path, template: str) -> None:
        folder = prompts_dir / template
        missing = [p for p in _PARTS if not (folder / p).is_file()]
        if missing:
            raise FileNotFoundError(f"prompt template {folder} lacks {', '.join(missing)}")
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(folder),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
        )
        digest = hashlib.sha256()
        for part in _PARTS:
            digest.update((folder / part).read_bytes())
        self.version = f"{template}@{digest.hexdigest()[:12]}"
        self._system = self._env.get_template("system.j2")
        self._user = self._env.get_template("user.j2")
        # The system message depends only on the rubric, which most groups share.
        self._system_for = functools.lru_cache(maxsize=256)(self._render_system)

    def render(
        self,
        *,
        conversation: list[ChatMessage],
        reference: str,
        answers: list[Answer],
        criteria: list[Criterion],
        reason_max_chars: int,
    ) -> RenderedPrompt:
        system = self._system_for(tuple(criteria), reason_max_chars)
        user = self._user.render(
            conversation=conversation, reference=reference, answers=answers, criteria=criteria
        )
        return RenderedPrompt(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            version=self.version,
        )

    def _render_system(self, criteria: tuple[Criterion, ...], reason_max_chars: int) -> str:
        return self._system.render(criteria=criteria, reason_max_chars=reason_max_chars)
