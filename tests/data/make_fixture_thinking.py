"""Wrote tests/data/judgements-thinking.sqlite3 with the build that added thinking judges: a group judged
with a thinking budget (each attempt's thinking kept beside its raw output, reasoning tokens in the usage),
one whose thinking never ended (unscored `reasoning_truncated`, retried with a smaller budget), and one
whose reply came in the reasoning field (recovered). Later builds must keep loading these documents
(tests/store/test_stored_forms.py).

Run from the repository root:
    python tests/data/make_fixture_thinking.py tests/data/judgements-thinking.sqlite3
"""

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import (
    REPLY_IN_REASONING,
    THINK_PAST_BUDGET,
    FakeBackend,
    fake_thinking_profile,
)
from judge_service.backends.thinking_profile import ThinkingProfile
from judge_service.config import Settings


def group(question: str, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": question}],
        "reference": "The Business plan includes SSO.",
        "answers": [{"id": "a0", "text": "Business."}, {"id": "a1", "text": "The free plan."}],
        "run_id": "thinking-fixture",
        "step": 0,
        **extra,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out)
    backend = FakeBackend(thinking=fake_thinking_profile(ThinkingProfile(switch="toggle", parser="qwen3")))
    with TestClient(create_app(settings, backend=backend)) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        made = [
            c.post("/v1/judge", json=group("Which plan has SSO?", thinking={"budget": 6})).json(),
            c.post(
                "/v1/judge", json=group(f"Which plan? {THINK_PAST_BUDGET}", thinking={"budget": 8})
            ).json(),
            c.post(
                "/v1/judge", json=group(f"Which? {REPLY_IN_REASONING}", thinking="on", reasoning_effort="low")
            ).json(),
        ]
        for judgement in made:
            print(judgement["judgement_id"], judgement["status"], judgement["grader_fingerprint"])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
