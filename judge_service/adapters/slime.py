"""slime: a `--custom-rm-path` reward for `--group-rm`, so each call judges one whole group.

    --group-rm --custom-rm-path judge_service.adapters.slime.judge_group_rm
    JUDGE_SERVICE_URL=http://judge:8000   (also JUDGE_SERVICE_API_KEY, JUDGE_SERVICE_GRADER,
    JUDGE_SERVICE_RUN_ID, JUDGE_SERVICE_FALLBACK_REWARD, JUDGE_SERVICE_TIMEOUT_S, and
    JUDGE_SERVICE_REQUEST_OPTIONS: further request fields as a JSON object, e.g. {"jury": {"escalate": 1}})

slime calls `await judge_group_rm(args, samples)` with one prompt's samples and sets each sample's
reward from the list returned, in order. Each sample's `prompt` (text or chat messages) is the
conversation, `response` the answer, `label` the reference. slime needs a number for every sample: an
unscored one (or every sample of a group the judge failed) gets the fallback reward (default 0.0) and
`remove_sample = True`, so slime leaves it out of training instead of learning from a made-up 0; the
reason is in `sample.metadata["judge_error"]` and the log. The service being unreachable raises.
slime itself needs GPUs to import, so this function is tested against the shape of slime's Sample.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any

from judge_service.adapters.groups import (
    GroupOptions,
    judge_async,
    prepare,
    request_options,
    shared_clients,
)

log = logging.getLogger("judge_service.adapters.slime")


async def judge_group_rm(args: Any, samples: Sequence[Any]) -> list[float]:
    """One reward per sample of the group, in order (module docstring)."""
    url = getattr(args, "judge_service_url", None) or os.environ.get("JUDGE_SERVICE_URL")
    if not url:
        raise ValueError("set JUDGE_SERVICE_URL (or args.judge_service_url) to the judge service's URL")
    timeout_s = float(os.environ.get("JUDGE_SERVICE_TIMEOUT_S", "600"))
    fallback = float(os.environ.get("JUDGE_SERVICE_FALLBACK_REWARD", "0.0"))
    options = GroupOptions(
        grader=os.environ.get("JUDGE_SERVICE_GRADER") or None,
        run_id=os.environ.get("JUDGE_SERVICE_RUN_ID") or None,
        request=request_options(json.loads(os.environ.get("JUDGE_SERVICE_REQUEST_OPTIONS") or "{}")),
    )
    step = getattr(args, "rollout_id", None)
    group_index = getattr(samples[0], "group_index", None) if samples else None
    batch = prepare(
        [s.prompt for s in samples],
        [s.response for s in samples],
        [s.label for s in samples],
        num_generations=len(samples),
        options=options,
        step=step if isinstance(step, int) else None,
        scope=f"slime{group_index}-" if group_index is not None else "slime-",
    )
    client = shared_clients(url, os.environ.get("JUDGE_SERVICE_API_KEY") or None, timeout_s).get()
    results = await judge_async(client, batch)
    rewards = []
    for sample, score, reason in zip(samples, results.scores, results.reasons, strict=True):
        if score is None:
            sample.remove_sample = True
            sample.metadata["judge_error"] = reason
            rewards.append(fallback)
        else:
            rewards.append(score)
    return rewards
