"""Wrote tests/data/judgements-trajectories.sqlite3 with the build that added agent trajectories and
attribution: groups of trajectories with the tools the policy saw and no reference (group and per-answer
decoding), one judged with attribution "steps" (a step named as the first that went wrong, a text answer
with no steps), and one whose judge cited a step the answer lacks (that answer unscored). Later builds must
keep loading these documents (tests/store/test_stored_forms.py).

Run from the repository root:
    python tests/data/make_fixture_trajectories.py tests/data/judgements-trajectories.sqlite3
"""

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import STEP_OUT_OF_RANGE, WRONG_STEP, FakeBackend
from judge_service.config import Settings

TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]


def trajectory(result: str, final: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": result},
        {"role": "assistant", "content": final},
    ]


def group(**extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How warm is it in Paris?"}],
        "tools": TOOLS,
        "answers": [
            {"id": "t1", "messages": trajectory('{"temp_c": 21}', "21 C.")},
            {"id": "t2", "messages": trajectory(f'{{"temp_c": 35}} {WRONG_STEP}', "35 C.")},
            {"id": "t3", "text": "Warm."},
        ],
        "run_id": "trajectories-fixture",
        "step": 0,
        **extra,
    }


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    settings = Settings(backend="fake", home_dir=out.parent, db_path=out)
    with TestClient(create_app(settings, backend=FakeBackend())) as c:
        while c.get("/readyz").status_code != 200:
            time.sleep(0.01)
        lacking = group(attribution="steps")
        lacking["answers"][0]["messages"][2]["content"] = f"21 C. {STEP_OUT_OF_RANGE}"
        made = [
            c.post("/v1/judge", json=group()).json(),
            c.post("/v1/judge", json=group(decoding="per_answer")).json(),
            c.post("/v1/judge", json=group(attribution="steps", score_from="expected")).json(),
            c.post("/v1/judge", json=lacking).json(),
        ]
        for judgement in made:
            print(judgement["judgement_id"], judgement["status"], judgement["grader_fingerprint"])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
