"""Wrote tests/data/judgements-reasons.sqlite3 with the build that added marks-only judging and reasons on
demand: a marks-only group (group decoding, expected marks) whose reasons were then written on demand (a
row of explained_reasons), a marks-only per-answer group with a canary, groups judged with reasons
"sample" (some drew reasons, some not), and a group with reasons inline. Later builds must keep loading
these documents and reasons (tests/store/test_stored_forms.py).

Run from the repository root:
    python tests/data/make_fixture_reasons.py tests/data/judgements-reasons.sqlite3
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
        "conversation": [{"role": "user", "content": "How do I export the quarterly report as a PDF?"}],
        "reference": "Open the report, click Export and pick PDF.",
        "answers": [
            {"id": "a1", "text": "Click Export, then PDF."},
            {"id": "a2", "text": "Open it, choose Export in the menu and select PDF as the format."},
            {"id": "a3", "text": "Print it to paper and scan it."},
        ],
        "run_id": "reasons-fixture",
        "step": 0,
        **extra,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out, reason_sample_rate=0.5)
    with TestClient(create_app(settings, backend=FakeBackend())) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        made = [
            c.post("/v1/judge", json=group(reasons="none", score_from="expected")).json(),
            c.post("/v1/judge", json=group(reasons="none", decoding="per_answer", canaries="on")).json(),
            *(c.post("/v1/judge", json=group(reasons="sample")).json() for _ in range(4)),
            c.post("/v1/judge", json=group(reasons="inline")).json(),
        ]
        explained = c.post(f"/v1/judgements/{made[0]['judgement_id']}/reasons").json()
        for judgement in made:
            print(judgement["judgement_id"], judgement["reasons"], judgement["grader_fingerprint"])
        print("explained", sorted(explained["answers"]))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
