"""When the client retries, and how long it waits: one policy for the sync and the async client.

Retried: 429 (overloaded), 502, 503 and 504, and transport errors (connection refused or reset, a read
timeout). A wait is the service's Retry-After when it sends one (seconds or an HTTP date), else
exponential backoff (backoff_s, 2 x backoff_s, ...); either is capped at max_wait_s. `retries` bounds
the extra attempts, and `deadline_s` the whole call, waits included: no wait is begun that would end past
it, and each attempt's timeout is cut to what is left.
"""

from __future__ import annotations

import email.utils
import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4
    backoff_s: float = 1.0
    max_wait_s: float = 30.0
    deadline_s: float | None = None  # for the whole call; None: only the per-attempt timeout bounds it
    timeout_s: float = 600.0  # per attempt

    def attempts(self) -> Attempts:
        return Attempts(self)


def retry_after_s(header: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds a Retry-After header asks for (seconds or an HTTP date); None when absent or unreadable.
    The one parser of the header: the client reads the service's, backends/openai_http.py an endpoint's."""
    if header is None:
        return None
    header = header.strip()
    try:  # delta-seconds; a fraction ("1.5") is accepted too, as servers send it
        seconds = float(header)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass
class Attempts:
    """One call's attempts: the timeout of the next one, and whether and how long to wait after a failure."""

    policy: RetryPolicy
    made: int = 0
    started: float = field(default_factory=time.monotonic)

    def timeout(self) -> float:
        left = self._left()
        return self.policy.timeout_s if left is None else max(0.001, min(self.policy.timeout_s, left))

    def wait_after(self, response: httpx.Response | None) -> float | None:
        """Seconds to wait before the next attempt after this failure (a response with a retryable status,
        or None for a transport error); None when the call must give up now."""
        self.made += 1
        if response is not None and response.status_code not in RETRY_STATUSES:
            return None
        if self.made > self.policy.retries:
            return None
        asked = retry_after_s(response.headers.get("retry-after")) if response is not None else None
        backoff = self.policy.backoff_s * 2 ** (self.made - 1)
        wait = min(asked if asked is not None else backoff, self.policy.max_wait_s)
        left = self._left()
        if left is not None and wait >= left:
            return None
        return wait

    def out_of_time(self) -> bool:
        left = self._left()
        return left is not None and left <= 0

    def _left(self) -> float | None:
        if self.policy.deadline_s is None:
            return None
        return self.policy.deadline_s - (time.monotonic() - self.started)
