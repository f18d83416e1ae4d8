"""Wrote tests/data/judgements-code-graders.sqlite3 with the build that added graders written as code:
groups with the task row's `item`, a verl-signature code grader's explanation fields (`details` of a
term), a code grader that failed (unscored), and a code grader blended with the judge. Later builds must
keep loading these documents (tests/store/test_stored_forms.py).

Run from the repository root:
    python tests/data/make_fixture_code_graders.py tests/data/judgements-code-graders.sqlite3
"""

import json
import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings

SPECS = [
    {
        "name": "verl-match",
        "target": "tests.code_graders:verl_match",
        "signature": "verl",
        "score_range": [-1, 1],
    },
    {"name": "fact", "target": "tests.code_graders:mentions_fact"},
    {"name": "raises", "target": "tests.code_graders:raises"},
]


def group(texts: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "Which plan includes SSO?"}],
        "reference": "The Business plan includes SSO.",
        "answers": [{"id": f"a{i}", "text": text} for i, text in enumerate(texts)],
        "run_id": "code-fixture",
        **extra,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out, code_graders=json.dumps(SPECS))
    with TestClient(create_app(settings, backend=FakeBackend())) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        item = {"data_source": "support", "fact": "business"}
        texts = ["The Business plan includes SSO.", "No idea."]
        made = [
            c.post("/v1/judge", json=group(texts, step=0, grader="verl-match", item=item)).json(),
            c.post("/v1/judge", json=group(["fine", "boom"], step=0, grader="raises")).json(),
            c.post(
                "/v1/judge",
                json=group(
                    texts,
                    step=1,
                    item=item,
                    terms=[{"grader": "fact", "weight": 0.7}, {"grader": "judge", "weight": 0.3}],
                ),
            ).json(),
        ]
        for judgement in made:
            print(judgement["judgement_id"], judgement["status"], judgement["grader_fingerprint"])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
