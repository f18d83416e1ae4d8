"""A support answer checked in code against its task row (docs/graders/code.md).

The task row carries grader fields the policy never sees: the facts a right answer states, and claims it
must not make. The service calls `grade(sample, item)` per answer, in a worker process, with the request's
`item`; the judge's tone score is blended on top by the request's `terms`.
"""

from __future__ import annotations

from typing import Any


def grade(sample: dict[str, Any], item: dict[str, Any]) -> float:
    text = sample["output_text"].casefold()
    if any(claim.casefold() in text for claim in item.get("forbidden", [])):
        return 0.0  # a wrong promise outweighs every right fact
    facts = item["facts"]
    return sum(fact.casefold() in text for fact in facts) / len(facts)
