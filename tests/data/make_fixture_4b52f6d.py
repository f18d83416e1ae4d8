"""Writes tests/data/judgements-4b52f6d.sqlite3 with the code at 4b52f6d (schema by PRAGMA user_version)."""
import sys
from pathlib import Path
from fastapi.testclient import TestClient
from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings
import time

out = Path(sys.argv[1])
out.unlink(missing_ok=True)
settings = Settings(backend="fake", home_dir=out.parent, db_path=out)
group = lambda n, **kw: {"conversation": [{"role": "user", "content": "How do I share the report?"}],
    "reference": "Open the report, click Share and pick the client.",
    "answers": [{"id": f"a{i}", "text": f"Answer {i}: click Share."} for i in range(n)], **kw}
with TestClient(create_app(settings, backend=FakeBackend())) as c:
    while c.get("/readyz").status_code != 200:
        time.sleep(0.01)
    r1 = c.post("/v1/judge", json=group(4, run_id="fixture-run", step=0, group_key="g0"), headers={"Idempotency-Key": "fixture-key-1"})
    r2 = c.post("/v1/judge", json=group(3, run_id="fixture-run", step=1, grader="judge+similarity", orders=2))
    r3 = c.post("/v1/judge/batch", json={"groups": [group(2, run_id="fixture-run", step=1, grader="similarity")]}, headers={"Idempotency-Key": "fixture-batch"})
    print(r1.json()["judgement_id"], r1.json()["grader_fingerprint"], r2.json()["judgement_id"], r2.json()["grader_fingerprint"], r3.json()["results"][0]["judgement"]["judgement_id"], r3.json()["results"][0]["judgement"]["grader_fingerprint"])
