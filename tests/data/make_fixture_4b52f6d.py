"""Wrote tests/data/judgements-4b52f6d.sqlite3 with the code at 4b52f6d (schema by PRAGMA user_version).

Run at that commit: python tests/data/make_fixture_4b52f6d.py tests/data/judgements-4b52f6d.sqlite3
It prints the three judgement ids and their grader fingerprints (tests/store/test_sqlite.py and
tests/unit/judging/test_fingerprint_golden.py pin them).
"""

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings


def group(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How do I share the report?"}],
        "reference": "Open the report, click Share and pick the client.",
        "answers": [{"id": f"a{i}", "text": f"Answer {i}: click Share."} for i in range(n)],
        **extra,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out)
    with TestClient(create_app(settings, backend=FakeBackend())) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        keyed = {"Idempotency-Key": "fixture-key-1"}
        first = c.post(
            "/v1/judge", json=group(4, run_id="fixture-run", step=0, group_key="g0"), headers=keyed
        )
        blend = group(3, run_id="fixture-run", step=1, grader="judge+similarity", orders=2)
        second = c.post("/v1/judge", json=blend)
        rules = group(2, run_id="fixture-run", step=1, grader="similarity")
        batch = c.post(
            "/v1/judge/batch", json={"groups": [rules]}, headers={"Idempotency-Key": "fixture-batch"}
        )
        third = batch.json()["results"][0]["judgement"]
        for judgement in (first.json(), second.json(), third):
            print(judgement["judgement_id"], judgement["grader_fingerprint"])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
