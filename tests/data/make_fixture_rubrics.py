"""Wrote tests/data/judgements-rubrics.sqlite3 with the build that added checklist rubrics: a group judged on
a rubric the judge wrote for its prompt (rubric "generate", expected met probabilities), one on that rubric
after an edit (version 2), a marks-only per-answer group on mixed criteria (a 1-5 criterion beside
checklist items and a pitfall), and a regrade of the first. The rubric rows (table rubrics) come with them.
Later builds must keep loading these documents (tests/store/test_stored_forms.py).

Run from the repository root:
    python tests/data/make_fixture_rubrics.py tests/data/judgements-rubrics.sqlite3
"""

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import MARK_ANSWER, FakeBackend
from judge_service.config import Settings

MIXED = [
    {"name": "style", "description": "Reads well", "mark_1": "hard to follow", "mark_5": "clear"},
    {"name": "total", "description": "Gives 18 apples", "scale": "binary", "kind": "essential"},
    {"name": "steps", "description": "Shows 5 + 13", "scale": "binary", "kind": "important", "weight": 0.5},
    {"name": "wrong", "description": "Gives 17", "scale": "binary", "kind": "pitfall"},
]


def group(**extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "Tom has 5 apples and buys 13 more. How many has he?"}],
        "reference": "5 + 13 = 18. He has 18 apples.",
        "answers": [
            {"id": "a1", "text": f"{MARK_ANSWER.format(5)} 5 + 13 = 18 apples."},
            {"id": "a2", "text": f"{MARK_ANSWER.format(3)} About 18."},
            {"id": "a3", "text": f"{MARK_ANSWER.format(1)} 17 apples."},
        ],
        "run_id": "rubrics-fixture",
        "step": 0,
        **extra,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out, rubric_items=5)
    with TestClient(create_app(settings, backend=FakeBackend())) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        generated = c.post("/v1/judge", json=group(rubric="generate", score_from="expected")).json()
        rubric = generated["rubric"]["id"]
        items = c.get(f"/v1/rubrics/{rubric}").json()["criteria"][:3]
        c.put(f"/v1/rubrics/{rubric}", json={"criteria": items, "note": "three items are enough"})
        made = [
            generated,
            c.post("/v1/judge", json=group(rubric=rubric)).json(),
            c.post("/v1/judge", json=group(criteria=MIXED, reasons="none", decoding="per_answer")).json(),
            c.post("/v1/regrade", json={"judgement_ids": [generated["judgement_id"]]}).json()["results"][0][
                "judgement"
            ],
        ]
        for judgement in made:
            print(judgement["judgement_id"], judgement["rubric"], judgement["grader_fingerprint"])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
