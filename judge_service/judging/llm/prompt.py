"""Renders a group into the judge's chat messages from the Jinja2 templates in prompts/<name>/.

Every value from the caller is HTML-escaped (autoescape), so no answer, reference or message can close
its <answer>/<reference> block or open a new one: the prompt's structure is fixed by the template alone.

Two decodings (judging/llm/caller.py), each with its own pair of templates and its own version:
- `group`: system.j2 + user.j2, one prompt asking for every answer's marks.
- `per_answer`: per_answer_system.j2 + per_answer_user.j2, one prompt per answer. The whole group is
  shown in each and only the closing instruction names the answer to mark (`target`), so the N prompts
  share every token up to it and the engine's prefix cache computes the group once.
A template folder without the per_answer files serves the group decoding only.

Comparison grading (judging/comparison/) takes compare_system.j2 + compare_user.j2: two answers, A and B,
after the conversation and reference, and a verdict per criterion (its own version).

Checklist rubrics (any binary criterion, docs/rubrics.md) take checklist_system.j2 for the system message in
both decodings, with and without reasons (its own version), and the user message of the decoding.

Marks only (reasons "none") swaps the system message for marks_system.j2 / per_answer_marks_system.j2:
same rules, no reasons asked. Reasons written afterwards (explain.py) continue that conversation: the
marks-only prompt, the judge's marks as its reply, then explain_user.j2 asking why; the prompt up to the
marks is the one judged, so a prefix cache still holding it serves it again.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2

from judge_service.judging.llm.parser import MAX_CITED_STEPS
from judge_service.judging.llm.turns import (
    DEFAULT_CUTS,
    Clean,
    ShownAnswer,
    ShownMessage,
    TrajectoryCuts,
    shown_answer,
    shown_conversation,
)
from judge_service.schemas import Answer, ChatMessage, Criterion, Decoding, Tool

# (decoding, reasons written inline) -> (system template, user template)
_PARTS: dict[tuple[Decoding, bool], tuple[str, str]] = {
    ("group", True): ("system.j2", "user.j2"),
    ("per_answer", True): ("per_answer_system.j2", "per_answer_user.j2"),
    ("group", False): ("marks_system.j2", "user.j2"),
    ("per_answer", False): ("per_answer_marks_system.j2", "per_answer_user.j2"),
}
EXPLAIN = "explain_user.j2"
CHECKLIST = "checklist_system.j2"
RUBRIC = ("rubric_system.j2", "rubric_user.j2")  # the rubric writer's (judging/llm/rubric_writer.py)
COMPARE = ("compare_system.j2", "compare_user.j2")  # comparison grading's (judging/llm/compare.py)
# A group without a reference takes the files of the same names in this subfolder: prompts that compare the
# answers with each other and the task and never mention a reference; the files above stay as they are,
# so a group with a reference gets the same prompt, byte for byte, and the same version.
NO_REFERENCE = "no_reference/"


REASON_LANGUAGE_LINE = "Write every reason in {}."
# Attribution (request `attribution: "steps"`): added by code, as the language line is, so prompts without
# it are as before. The schema holds the judge to step numbers the answer has (parser.attribution_schema).
ATTRIBUTION_LINE = (
    'Each answer given as a trajectory shows its turns as numbered steps (<step n="1">, ...). For every '
    'criterion, also write "steps": the numbers of the few steps (at most {}) your mark rests on, and '
    '"first_wrong_step": the number of the first step that went wrong for this criterion, or null if none '
    "did. An answer given as text has no steps: write [] and null."
)


@dataclass(frozen=True, eq=False)
class GroupContent:
    """What a prompt shows: the group in the order the judge sees it, the rubric and the reason bound."""

    conversation: list[ChatMessage]
    reference: str | None  # None: a group without a reference (the no_reference/ prompts)
    answers: list[Answer]
    criteria: list[Criterion]
    reason_max_chars: int
    reason_language: str | None = None  # a language's English name: "Write every reason in German."
    tools: Sequence[Tool] | None = None  # the tools the policy saw
    cuts: TrajectoryCuts = DEFAULT_CUTS  # how much of a trajectory is shown (turns.py)
    clean: Clean | None = None  # what the text inside turns goes through (a thinking judge's markers)
    attribution: bool = False  # the judge names the steps each mark rests on (ATTRIBUTION_LINE)

    @functools.cached_property
    def size(self) -> int:
        """About how many characters the group shows in one prompt: its texts, and every turn's calls."""
        turns = [*self.conversation, *(m for a in self.answers for m in a.messages or ())]
        calls = sum(len(c.function.arguments) for m in turns for c in m.tool_calls or ())
        texts = sum(len(m.content) for m in turns) + sum(len(a.text) for a in self.answers)
        return texts + calls + len(self.reference or "")

    @functools.cached_property
    def structured(self) -> bool:
        """Whether the group needs turns.py: tools, tool turns, or an answer's trajectory."""
        return (
            bool(self.tools)
            or any(a.messages is not None for a in self.answers)
            or any(m.structured for m in self.conversation)
        )

    def shown(self) -> tuple[Sequence[object], Sequence[object]]:
        """(conversation, answers) as the templates read them: the group's own for plain text (the
        templates escape it), else turns.py's markup, built once per group however many prompts show it
        (comparison grading shows every answer in many prompts)."""
        if not self.structured:
            return self.conversation, self.answers
        return self._turns[0], list(self._turns[1].values())

    def shown_answer(self, answer: Answer) -> object:
        """One answer's text as a template reads it (comparisons)."""
        if not self.structured:
            return answer.text
        found = self._turns[1].get(answer.id)
        return found.text if found is not None else self._shown_one(answer).text

    @functools.cached_property
    def _turns(self) -> tuple[list[ShownMessage], dict[str, ShownAnswer]]:
        clean = self.clean or _unchanged
        return (
            shown_conversation(self.conversation, self.tools, self.cuts, clean),
            {a.id: self._shown_one(a) for a in self.answers},
        )

    def _shown_one(self, answer: Answer) -> ShownAnswer:
        return shown_answer(answer, self.tools, self.cuts, self.clean or _unchanged)


def _unchanged(text: str) -> str:
    return text


@dataclass(frozen=True)
class RenderedPrompt:
    messages: list[dict[str, str]]
    version: str  # "<template>@<sha256 prefix of the template files>"


PromptKind = tuple[Decoding, bool, bool, bool]  # (decoding, reasons inline, checklist, with a reference)


def is_checklist(criteria: list[Criterion] | tuple[Criterion, ...]) -> bool:
    return any(c.binary for c in criteria)


def _files(parts: tuple[str, ...], referenced: bool) -> tuple[str, ...]:
    return parts if referenced else tuple(NO_REFERENCE + part for part in parts)


def _missing(folder: Path, parts: tuple[str, ...]) -> str:
    """The message for a template folder that lacks `parts`; for the no_reference/ ones, what to do."""
    message = f"prompt template {folder.name} lacks {', '.join(parts)}"
    if parts and parts[0].startswith(NO_REFERENCE):
        message += ": it cannot judge a group without a reference; send a reference, or add those files"
    return message


class PromptRenderer:
    def __init__(self, prompts_dir: Path, template: str) -> None:
        folder = prompts_dir / template
        missing = [p for p in _PARTS["group", True] if not (folder / p).is_file()]
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
        self._versions: dict[PromptKind, str] = {}
        self._templates: dict[PromptKind, tuple[jinja2.Template, jinja2.Template]] = {}
        for (decoding, reasons), parts in _PARTS.items():
            for checklist, named in ((False, parts), (True, (CHECKLIST, parts[1]))):
                for referenced in (True, False):
                    used = _files(named, referenced)
                    if all((folder / p).is_file() for p in used):
                        kind = (decoding, reasons, checklist, referenced)
                        self._versions[kind] = self._version(template, used, referenced)
                        system, user = (self._env.get_template(p) for p in used)
                        self._templates[kind] = (system, user)
        self.version = self._versions["group", True, False, True]
        self._explain = self._env.get_template(EXPLAIN) if (folder / EXPLAIN).is_file() else None
        # The rubric writer's and comparison grading's pairs, with and without a reference.
        self._rubric = self._pair(template, RUBRIC)
        self._compare = self._pair(template, COMPARE)
        # The system message depends only on the rubric, which most groups share.
        self._system_for = functools.lru_cache(maxsize=256)(self._render_system)

    def _version(self, template: str, used: tuple[str, ...], referenced: bool) -> str:
        """ "<template>@<digest>"; without a reference "<template>/no_reference@<digest>"."""
        return (
            f"{template}{'' if referenced else '/' + NO_REFERENCE.rstrip('/')}@{_digest(self._folder, used)}"
        )

    def _pair(
        self, template: str, parts: tuple[str, ...]
    ) -> dict[bool, tuple[tuple[jinja2.Template, ...], str]]:
        found = {}
        for referenced in (True, False):
            used = _files(parts, referenced)
            if all((self._folder / p).is_file() for p in used):
                templates = tuple(self._env.get_template(p) for p in used)
                found[referenced] = (templates, self._version(template, used, referenced))
        return found

    def _chosen(
        self,
        pairs: dict[bool, tuple[tuple[jinja2.Template, ...], str]],
        parts: tuple[str, ...],
        referenced: bool,
    ) -> tuple[tuple[jinja2.Template, ...], str]:
        if referenced not in pairs:
            raise FileNotFoundError(_missing(self._folder, _files(parts, referenced)))
        return pairs[referenced]

    def version_of(
        self, decoding: Decoding, *, reasons: bool = True, checklist: bool = False, referenced: bool = True
    ) -> str:
        kind = (decoding, reasons, checklist, referenced)
        if kind not in self._versions:
            system, user = _PARTS[decoding, reasons]
            raise FileNotFoundError(
                _missing(self._folder, _files((CHECKLIST if checklist else system, user), referenced))
            )
        return self._versions[kind]

    def explain_version(self, decoding: Decoding, *, checklist: bool = False, referenced: bool = True) -> str:
        """The version of the prompt that asks for reasons afterwards: the marks-only prompt and the
        explain template (ExplainedReasons.prompt_version)."""
        if self._explain is None:
            raise FileNotFoundError(f"prompt template {self._folder.name} lacks {EXPLAIN}")
        marks = self.version_of(decoding, reasons=False, checklist=checklist, referenced=referenced)
        return f"{marks}+{_digest(self._folder, (EXPLAIN,))}"

    def render_explain(self, answer_ids: list[str] | None, reason_max_chars: int) -> str:
        """The message asking the judge why it gave its marks: for the answers named, or (None) for the one
        answer of a per-answer prompt."""
        if self._explain is None:
            raise FileNotFoundError(f"prompt template {self._folder.name} lacks {EXPLAIN}")
        return self._explain.render(answers=answer_ids or [], reason_max_chars=reason_max_chars)

    def rubric_version(self, *, referenced: bool = True) -> str:
        """The version of the rubric writer's prompt (part of every generated rubric's id)."""
        return self._chosen(self._rubric, RUBRIC, referenced)[1]

    def render_rubric(self, content: GroupContent, items: int, instructions: str | None) -> RenderedPrompt:
        """The prompt asking the judge to write a checklist of `items` items for a group's conversation."""
        (system, user), version = self._chosen(self._rubric, RUBRIC, content.reference is not None)
        shown = {"conversation": content.shown()[0], "reference": content.reference, "items": items}
        return RenderedPrompt(
            messages=[
                {"role": "system", "content": system.render(items=items)},
                {"role": "user", "content": user.render(**shown, instructions=instructions)},
            ],
            version=version,
        )

    def compare_version(self, *, referenced: bool = True) -> str:
        """The version of the comparison prompt (comparison grading's fingerprint and stored judgements)."""
        return self._chosen(self._compare, COMPARE, referenced)[1]

    def render_compare(self, group: GroupContent, first: Answer, second: Answer) -> RenderedPrompt:
        """Two answers of a group compared: the conversation and reference come first, so the comparisons
        of one group share that prefix in the engine's cache; the answers, as A and B, close the prompt."""
        (system_template, user), version = self._chosen(self._compare, COMPARE, group.reference is not None)
        system = system_template.render(criteria=group.criteria, reason_max_chars=group.reason_max_chars)
        system = _with_language(system, group.reason_language)
        conversation, _ = group.shown()
        shown = user.render(
            conversation=conversation,
            reference=group.reference,
            first=group.shown_answer(first),
            second=group.shown_answer(second),
            criteria=group.criteria,
        )
        return RenderedPrompt(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": shown}],
            version=version,
        )

    def render(self, group: GroupContent, *, reasons: bool = True) -> RenderedPrompt:
        """The group decoding's prompt: every answer, marked in one reply."""
        kind: PromptKind = ("group", reasons, is_checklist(group.criteria), group.reference is not None)
        version = self.version_of("group", reasons=reasons, checklist=kind[2], referenced=kind[3])
        system = self._system_for(
            kind, tuple(group.criteria), group.reason_max_chars, group.reason_language, group.attribution
        )
        conversation, answers = group.shown()
        user = self._templates[kind][1].render(
            conversation=conversation,
            reference=group.reference,
            answers=answers,
            criteria=group.criteria,
        )
        return RenderedPrompt(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            version=version,
        )

    def render_per_answer(self, group: GroupContent, *, reasons: bool = True) -> list[RenderedPrompt]:
        """The per-answer decoding's prompts, one per answer in the order shown, each naming its answer."""
        kind: PromptKind = ("per_answer", reasons, is_checklist(group.criteria), group.reference is not None)
        version = self.version_of("per_answer", reasons=reasons, checklist=kind[2], referenced=kind[3])
        system = self._system_for(
            kind, tuple(group.criteria), group.reason_max_chars, group.reason_language, group.attribution
        )
        user = self._templates[kind][1]
        conversation, answers = group.shown()
        shown = {
            "conversation": conversation,
            "reference": group.reference,
            "answers": answers,
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
        kind: PromptKind,
        criteria: tuple[Criterion, ...],
        reason_max_chars: int,
        reason_language: str | None,
        attribution: bool = False,
    ) -> str:
        system = self._templates[kind][0].render(
            criteria=criteria,
            reason_max_chars=reason_max_chars,
            per_answer=kind[0] == "per_answer",
            reasons=kind[1],
        )
        if attribution:
            system = f"{system}\n\n{ATTRIBUTION_LINE.format(MAX_CITED_STEPS)}"
        return _with_language(system, reason_language)


def _with_language(system: str, reason_language: str | None) -> str:
    """The system message asking for reasons in a language. Added by code, not the templates: without a
    language the prompt (and its version) is as before."""
    return f"{system}\n\n{REASON_LANGUAGE_LINE.format(reason_language)}" if reason_language else system


def _digest(folder: Path, parts: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update((folder / part).read_bytes())
    return digest.hexdigest()[:12]
