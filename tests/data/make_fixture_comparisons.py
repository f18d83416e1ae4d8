"""Wrote tests/data/judgements-comparisons.sqlite3 with the build that added comparison grading: a
pairwise group (Bradley-Terry, both orders), a knockout group with byes and a drawn match replayed, and a
pairwise group in which one answer's comparisons all failed (left out, the answer unscored). Each answer
holds its tally (`comparison`), each judgement every comparison it made (`comparisons`). Later builds must
keep loading these documents (tests/store/test_stored_forms.py).

Run from the repository root:
    python tests/data/make_fixture_comparisons.py tests/data/judgements-comparisons.sqlite3
"""

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import MARK_ANSWER, REFUSE_COMPARISONS, FakeBackend
from judge_service.config import Settings


def group(marks: list[int], grader: str, *, refuse: int | None = None) -> dict[str, Any]:
    answers = [{"id": f"a{i}", "text": f"Answer {i} {MARK_ANSWER.format(m)}"} for i, m in enumerate(marks)]
    if refuse is not None:
        answers[refuse]["text"] += f" {REFUSE_COMPARISONS}"
    return {
        "conversation": [{"role": "user", "content": "Which plan includes SSO?"}],
        "reference": "The Business plan includes SSO.",
        "answers": answers,
        "grader": grader,
        "run_id": "comparison-fixture",
        "step": 0,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out)
    with TestClient(create_app(settings, backend=FakeBackend())) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        made = [
            c.post("/v1/judge", json=group([5, 2, 4], "pairwise")).json(),
            c.post("/v1/judge", json=group([3, 3, 1, 5, 2], "knockout")).json(),
            c.post("/v1/judge", json=group([5, 1, 3], "pairwise", refuse=2)).json(),
        ]
        for judgement in made:
            print(judgement["judgement_id"], judgement["status"], judgement["grader_fingerprint"])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
