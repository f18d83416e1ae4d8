"""A verifiers taskset for the adapter tests: support questions with reference answers. vf-eval imports a
taskset by its id as a top-level module, so the tests put tests/adapters on its path and name it
`vf-support-tasks`. The second question carries the fake judge's marker that leaves one answer of its
group unscored (judge_service.backends.fake.LEAVE_ONE_UNSCORED; this environment does not import the
service's backends)."""

from __future__ import annotations

from collections.abc import Iterator

import verifiers.v1 as vf

LEAVE_ONE_UNSCORED = "[fake judge: leave one answer unscored]"
QUESTIONS = [
    ("How do I share the report?", "Open the report and click Share."),
    (f"How do I export a report? {LEAVE_ONE_UNSCORED}", "Use Export."),
]


class SupportData(vf.TaskData):
    answer: str


class SupportTask(vf.Task[SupportData]):
    pass


class SupportTaskset(vf.Taskset[SupportTask]):
    def load(self) -> Iterator[SupportTask]:
        for prompt, answer in QUESTIONS:
            yield SupportTask(
                SupportData(prompt=prompt, answer=answer, system_prompt="Be brief."), self.config.task
            )


__all__ = ["SupportTaskset"]
