"""Wrote tests/data/judgements-juries.sqlite3 with the build that added juries and cascades: a jury group
judged by three fake judges (mean), an escalating one whose first two judges agreed (the third not called),
one whose first two disagreed (the third called), one with a judge down (its error recorded, the others
decide), and two cascade groups (numbers -> judge on ties: one the rule decided, one the judge did). Each
answer holds each judge's score (`jury`) or what scored it (`scored_by`), each jury judgement a record
per judge (`jury`). Later builds must keep loading these documents (tests/store/test_stored_forms.py).

Run from the repository root:
    python -m tests.data.make_fixture_juries tests/data/judgements-juries.sqlite3
"""

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import MARK_BY_MODEL, FakeBackend
from judge_service.config import Settings
from tests.scaleout.processes import FakeEngine, free_port

MODELS = ("judge-a", "judge-b", "judge-c")


def group(texts: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How many clips did Natalia sell?"}],
        "reference": "Natalia sold 72 clips.",
        "answers": [{"id": f"a{i}", "text": text} for i, text in enumerate(texts)],
        "run_id": "jury-fixture",
        "step": 0,
        **extra,
    }


def marked(*marks: int) -> str:
    return "72 clips. " + " ".join(MARK_BY_MODEL.format(m, n) for m, n in zip(MODELS, marks, strict=True))


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    workdir = Path(tempfile.mkdtemp())
    engines = [FakeEngine(workdir, model, latency_s=0.0, model=model) for model in MODELS]
    try:
        judges = [
            {"name": name, "base_url": f"{e.url}/v1", "model": e_model}
            for name, e, e_model in zip("abc", engines, MODELS, strict=True)
        ]
        judges.append({"name": "down", "base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "nobody"})
        settings = Settings(
            backend="fake",
            home_dir=out.parent,
            db_path=out,
            jury=json.dumps(judges),
            openai_transport_retries=0,
        )
        with TestClient(create_app(settings, backend=FakeBackend())) as c:
            while c.get("/readyz").status_code != 200:
                time.sleep(0.01)
            three = {"judges": ["a", "b", "c"]}
            made = [
                c.post(
                    "/v1/judge", json=group([marked(5, 3, 1), marked(4, 4, 2)], grader="jury", jury=three)
                ),
                c.post(
                    "/v1/judge",
                    json=group([marked(4, 4, 1)], grader="jury", jury={**three, "escalate": 1}),
                ),
                c.post(
                    "/v1/judge",
                    json=group([marked(5, 2, 1)], grader="jury", jury={**three, "escalate": 1}),
                ),
                c.post(
                    "/v1/judge", json=group([marked(4, 2, 2)], grader="jury", jury={"judges": ["a", "down"]})
                ),
                c.post("/v1/judge", json=group(["72", "71"], cascade={"rule": "numbers", "judge": "ties"})),
                c.post("/v1/judge", json=group(["72", "72!"], cascade={"rule": "numbers", "judge": "ties"})),
            ]
            for response in made:
                judgement = response.json()
                print(judgement["judgement_id"], judgement["status"], judgement["grader_fingerprint"])
    finally:
        for engine in engines:
            engine.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
