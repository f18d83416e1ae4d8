"""Which groups get reasons with their marks (`reasons`): all ("inline"), none ("none"), or with
"sample" a share drawn per judgement id, so the run page always has some groups to read while the rest
pay for marks only. The draw is a hash of the id (salted apart from the canary's draw): the same
judgement id always draws the same way."""

from __future__ import annotations

import hashlib

from judge_service.schemas import Reasons


def writes_reasons(reasons: Reasons, judgement_id: str, sample_rate: float) -> bool:
    """Whether the judge writes reasons for this group."""
    if reasons != "sample":
        return reasons == "inline"
    return sample_draw(judgement_id) < sample_rate


def sample_draw(judgement_id: str) -> float:
    """A number in [0, 1) fixed by the judgement id."""
    digest = hashlib.sha256(f"{judgement_id}/reasons".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
