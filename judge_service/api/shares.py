"""Fair shares between keys: each key's groups in flight and groups per minute, per replica.

Without them one trainer can take every admission slot and another gets 429 for as long as the first
keeps its load up. With them each key holds at most its own share, so the others always find room:
`max_groups_in_flight` caps the groups a key has being judged at once, and `groups_per_minute` is a
token bucket that holds a minute's worth (a burst of a full minute's groups, then the steady rate).

Groups are what is counted, not requests: a batch of 32 counts 32, and a member request counts 1/size of
its group (its group is judged once, for all its members). A request that cannot be admitted now gets 429
`over_share` with Retry-After (the seconds until the bucket holds enough, or 1 for in-flight); one that no
wait can admit (a batch larger than the key's whole share) gets 422 saying to send smaller batches.

While a key's groups wait for the judge, they wait in the key's own turn (judging/llm/admission.py): a
freed judge slot goes to each key with groups waiting in turn, so a key sending a few groups is not
queued behind another key's many. Their RFT templates wait for a render process in the key's turn the
same way (judging/rft/template_pool.py).

Limits hold per replica and per worker process, with no coordination (no database round trip per
request): behind a load balancer over R replicas a key gets up to R times its limits. Keys off (no
principal): nothing is counted.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from judge_service.api.middleware.keys import Principal
from judge_service.errors import InvalidGroupError, OverloadedError
from judge_service.judging.llm.admission import ADMISSION_KEY

EPSILON = 1e-9  # member shares are fractions; sums of them must not miss a whole by rounding


class OverShareError(OverloadedError):
    code = "over_share"


@dataclass
class _KeyState:
    in_flight: float = 0.0
    tokens: float = 0.0
    refilled_at: float = 0.0


class KeyShares:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._keys: dict[str, _KeyState] = {}

    @asynccontextmanager
    async def hold(self, principal: Principal | None, groups: float) -> AsyncIterator[None]:
        """Hold `groups` of the principal's share while the body runs; OverShareError (429) now if the
        share cannot take them. The groups wait for the judge in the key's own turn (admission.py)."""
        if principal is None:
            yield
            return
        limited = principal.limits.max_groups_in_flight is not None or principal.limits.groups_per_minute
        state = self._admit(principal, groups) if limited else None
        turn = ADMISSION_KEY.set(principal.name)
        try:
            yield
        finally:
            ADMISSION_KEY.reset(turn)
            if state is not None:
                state.in_flight = max(0.0, state.in_flight - groups)

    def in_flight(self, name: str) -> float:
        state = self._keys.get(name)
        return state.in_flight if state is not None else 0.0

    def _admit(self, principal: Principal, groups: float) -> _KeyState:
        limits = principal.limits
        now = self._clock()
        state = self._keys.get(principal.name)
        if state is None:
            state = self._keys[principal.name] = _KeyState(
                tokens=float(limits.groups_per_minute or 0), refilled_at=now
            )
        cap = limits.max_groups_in_flight
        if cap is not None:
            if groups > cap + EPSILON:
                raise _too_large(principal, groups, cap, "max_groups_in_flight")
            if state.in_flight + groups > cap + EPSILON:
                raise OverShareError(
                    f"the key {principal.name!r} has {state.in_flight:g} groups being judged, its limit is "
                    f"{cap} (max_groups_in_flight); retry when some are answered",
                    retry_after_s=1,
                    details={"key": principal.name, "limit": "max_groups_in_flight", "value": cap},
                )
        rate = limits.groups_per_minute
        if rate is not None:
            if groups > rate + EPSILON:
                raise _too_large(principal, groups, rate, "groups_per_minute")
            per_s = rate / 60.0
            state.tokens = min(float(rate), state.tokens + (now - state.refilled_at) * per_s)
            state.refilled_at = now
            if state.tokens + EPSILON < groups:
                wait = math.ceil((groups - state.tokens) / per_s)
                raise OverShareError(
                    f"the key {principal.name!r} has used its {rate} groups per minute; retry in {wait} s",
                    retry_after_s=max(1, wait),
                    details={"key": principal.name, "limit": "groups_per_minute", "value": rate},
                )
            state.tokens -= groups
        state.in_flight += groups
        return state


def _too_large(principal: Principal, groups: float, limit: int, name: str) -> InvalidGroupError:
    return InvalidGroupError(
        f"this request holds {groups:g} groups, more than the key {principal.name!r} may ever have at once "
        f"({name} = {limit}); send batches of at most {limit} groups",
        details={"key": principal.name, "limit": name, "value": limit, "groups": groups},
    )
