"""slime's `--group-rm` contract: `await fn(args, samples) -> list[float]`, one per sample, in order.
slime needs GPUs to import, so the samples here are a stand-in with the fields of slime's Sample
(slime/utils/types.py) that the function reads and writes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from judge_service.adapters.slime import judge_group_rm
from judge_service.backends.fake import LEAVE_ONE_UNSCORED
from tests.service_process import ServiceProcess


@dataclass
class Sample:  # the fields of slime.utils.types.Sample this adapter touches
    group_index: int | None = None
    index: int | None = None
    prompt: str | list[dict[str, str]] = ""
    response: str = ""
    label: str | None = None
    reward: float | dict[str, Any] | None = None
    remove_sample: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


def samples(prompt: str | list[dict[str, str]], responses: list[str], group: int = 0) -> list[Sample]:
    return [
        Sample(group_index=group, index=i, prompt=prompt, response=r, label="Click Share.")
        for i, r in enumerate(responses)
    ]


@pytest.fixture
def configured(service: ServiceProcess, monkeypatch: pytest.MonkeyPatch) -> ServiceProcess:
    monkeypatch.setenv("JUDGE_SERVICE_URL", service.url)
    monkeypatch.setenv("JUDGE_SERVICE_RUN_ID", "slime-run")
    monkeypatch.setenv("JUDGE_SERVICE_FALLBACK_REWARD", "-1")
    return service


def test_one_call_judges_the_group_and_rewards_each_sample(configured: ServiceProcess) -> None:
    group = samples(
        [{"role": "user", "content": "How do I share it?"}], ["Click Share.", "Share it.", "No.", "Print it."]
    )
    rewards = asyncio.run(judge_group_rm(SimpleNamespace(rollout_id=5), group))
    assert len(rewards) == 4 and all(0 <= r <= 1 for r in rewards)
    assert not any(s.remove_sample for s in group)
    # This rollout's step only: the module's service also holds the other tests' groups.
    stored = httpx.get(f"{configured.url}/v1/runs/slime-run/judgements", params={"step": 5}).json()["items"]
    assert [(j["step"], j["group_key"], len(j["answers"])) for j in stored] == [(5, "slime0-g0", 4)]


def test_unscored_samples_are_removed_not_rewarded_zero(configured: ServiceProcess) -> None:
    group = samples(f"How do I share it? {LEAVE_ONE_UNSCORED}", ["a", "b", "c", "d"], group=1)
    rewards = asyncio.run(judge_group_rm(SimpleNamespace(rollout_id=6), group))
    removed = [s for s in group if s.remove_sample]
    assert len(removed) == 1 and rewards[group.index(removed[0])] == -1.0
    assert removed[0].metadata["judge_error"].startswith("unscored:")
    assert all(0 <= r <= 1 for s, r in zip(group, rewards, strict=True) if not s.remove_sample)

    too_long = samples("How do I share it?", ["x" * 20_001, "fine"], group=2)  # the service refuses it
    assert asyncio.run(judge_group_rm(SimpleNamespace(), too_long)) == [-1.0, -1.0]
    assert all(s.remove_sample and "not sent to the judge" in s.metadata["judge_error"] for s in too_long)


def test_no_url_says_how_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGE_SERVICE_URL", raising=False)
    with pytest.raises(ValueError, match="JUDGE_SERVICE_URL"):
        asyncio.run(judge_group_rm(SimpleNamespace(), samples("q", ["a"])))


def test_request_options_come_from_the_environment(
    configured: ServiceProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_SERVICE_REQUEST_OPTIONS", '{"cascade": {"rule": "numbers", "judge": "ties"}}')
    monkeypatch.setenv("JUDGE_SERVICE_RUN_ID", "slime-options")
    group = samples("How many clips?", ["72 clips.", "50 clips."])
    for sample in group:
        sample.label = "Natalia sold 72 clips."
    rewards = asyncio.run(judge_group_rm(SimpleNamespace(rollout_id=3), group))
    assert rewards == [1.0, 0.0]
    page = httpx.get(f"{configured.url}/v1/runs/slime-options/judgements").json()
    assert [item["cascade"] for item in page["items"]] == ["rule_only"]
    monkeypatch.setenv("JUDGE_SERVICE_REQUEST_OPTIONS", '{"jury": {"aggregate": "max"}}')
    with pytest.raises(ValueError, match=r"jury\.aggregate"):
        asyncio.run(judge_group_rm(SimpleNamespace(rollout_id=4), group))
