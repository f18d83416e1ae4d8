"""Wrote tests/data/judgements-11ef8eb.sqlite3 with the code at 11ef8eb, the last build whose stored
document was the wire model itself (the stored form, judge_service/store/stored_form/, came after it and
must write the same documents). Beside the groups of make_fixture_4b52f6d.py it stores what builds since
added: per-answer decoding, expected marks, a regrade, custom criteria with weights, human labels.

Run at that commit: python tests/data/make_fixture_11ef8eb.py tests/data/judgements-11ef8eb.sqlite3
"""

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings

CRITERIA = [
    {"name": "correctness", "description": "Right?", "mark_1": "wrong", "mark_5": "right", "weight": 3},
    {"name": "brevity", "description": "Short?", "mark_1": "rambles", "mark_5": "to the point"},
]


def group(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "Wie teile ich den Bericht? Größe: 1.250 €"}],
        "reference": "Open the report, click Share and pick the client.",
        "answers": [{"id": f"a{i}", "text": f"Answer {i}: click Share. ✓"} for i in range(n)],
        **extra,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out)
    with TestClient(create_app(settings, backend=FakeBackend())) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        made = [
            c.post(
                "/v1/judge",
                json=group(4, run_id="fixture-run", step=0, group_key="g0"),
                headers={"Idempotency-Key": "fixture-key-1"},
            ).json(),
            c.post(
                "/v1/judge", json=group(3, run_id="fixture-run", step=1, grader="judge+similarity", orders=2)
            ).json(),
            c.post(
                "/v1/judge",
                json=group(3, run_id="fixture-run", step=1, decoding="per_answer", score_from="expected"),
            ).json(),
            c.post(
                "/v1/judge", json=group(2, run_id="fixture-run", step=2, criteria=CRITERIA, seed=7)
            ).json(),
            c.post("/v1/judge", json=group(2, run_id="fixture-run", step=2, grader="numbers")).json(),
        ]
        regrade = c.post(
            "/v1/regrade", json={"judgement_ids": [made[0]["judgement_id"]], "grader": "similarity"}
        )
        made.append(regrade.json()["results"][0]["judgement"])
        labels = {"human": {"a0": 5, "a1": 2}, "kind": "score", "scale": [1, 5], "labeler": "ada"}
        assert c.put(f"/v1/judgements/{made[0]['judgement_id']}/labels", json=labels).status_code == 200
        for judgement in made:
            print(judgement["judgement_id"], judgement["status"], judgement["grader_fingerprint"])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
