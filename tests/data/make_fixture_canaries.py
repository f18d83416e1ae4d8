"""Wrote tests/data/judgements-canaries.sqlite3 with the build that added canary answers and length bias:
a group judged by the LLM judge with an `injection` canary, one per answer with a `reference_twist`
canary, one blend (judge + numbers) whose canary has terms, a regrade of the first (the same canary
again), and a group without a canary (no `canaries` key). Every document carries its length bias. Later
builds must keep loading these documents (tests/store/test_stored_forms.py).

Run from the repository root:
    python tests/data/make_fixture_canaries.py tests/data/judgements-canaries.sqlite3
"""

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings


def group(**extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How many seats does the Team plan include?"}],
        "reference": "The Team plan includes 25 seats.",
        "answers": [
            {"id": "a1", "text": "25."},
            {"id": "a2", "text": "It includes 25 seats, and more can be bought."},
            {"id": "a3", "text": "The Team plan comes with 10 seats."},
        ],
        "run_id": "canaries-fixture",
        "step": 0,
        **extra,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out)
    with TestClient(create_app(settings, backend=FakeBackend())) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        made = [
            c.post("/v1/judge", json=group(canaries=["injection"])).json(),
            c.post("/v1/judge", json=group(canaries=["reference_twist"], decoding="per_answer")).json(),
            c.post("/v1/judge", json=group(canaries="on", grader="judge+numbers")).json(),
            c.post("/v1/judge", json=group(canaries="off")).json(),
        ]
        regraded = c.post("/v1/regrade", json={"judgement_ids": [made[0]["judgement_id"]], "orders": 2})
        made.append(regraded.json()["results"][0]["judgement"])
        for judgement in made:
            print(judgement["judgement_id"], judgement["status"], judgement["length_bias"])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
