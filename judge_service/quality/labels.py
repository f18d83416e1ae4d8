"""A person's own labels for judged groups ("score it yourself"), and how well each grader agrees.

Labels are stored per (judgement, labeler) in the HumanLabels format `judge-service agreement` reads, so
a run's labels can be fetched as that file. A label names answers of its judgement only; ranks are
1..N, scores lie on their scale. Agreement is reported per grader fingerprint: a labelled group is
compared with its own judgement and with every regrade of it, each under its fingerprint, by the
existing agreement code (quality/agreement.py); the groups where grader and person disagree most
(lowest Kendall tau-b, then lowest pairwise accuracy) come first in `worst`.
"""

from __future__ import annotations

from collections.abc import Sequence

from judge_service.errors import ForbiddenError, InvalidGroupError
from judge_service.quality.agreement import agreement
from judge_service.schemas import FingerprintAgreement, HumanLabels, LabelsRequest, StoredJudgement

WORST_SHOWN = 5
ANONYMOUS = "anonymous"  # the labeler of labels sent without a name or an API key


def labeler_for(asked: str | None, key: str | None, *, admin: bool) -> str:
    """Who labels are stored under: the labeler asked for, else the API key's name (else anonymous: keys
    off). A key writes under its own name only, unless it is an admin key: labels under a name are that
    person's, and another key replacing them would be a forgery (ForbiddenError naming why). With keys
    off there is no name to hold a caller to."""
    if key is None:
        return asked or ANONYMOUS
    if asked is None or asked == key or admin:
        return asked or key
    raise ForbiddenError(
        f"the key {key!r} writes labels under its own name only; labels under {asked!r} need a key with the "
        f"admin scope (leave labeler out, or send {key!r})",
        details={"labeler": asked, "key": key, "scope": "admin"},
    )


def labels_for(judgement: StoredJudgement, request: LabelsRequest, *, labeler: str) -> HumanLabels:
    """The stored form of a person's labels; InvalidGroupError (422) saying what to fix."""
    ids = {a.id for a in judgement.answers}
    unknown = sorted(set(request.human) - ids)
    if unknown:
        raise InvalidGroupError(
            f"labels name answers this judgement does not have: {', '.join(unknown[:10])}; "
            f"its answers are {', '.join(sorted(ids)[:64])}"
        )
    values = list(request.human.values())
    if request.kind == "rank":
        bad = [v for v in values if not (float(v).is_integer() and 1 <= v <= len(ids))]
        if bad:
            raise InvalidGroupError(f"ranks must be whole numbers from 1 (best) to {len(ids)}; got {bad[:5]}")
    else:
        low, high = request.scale or (0.0, 1.0)
        if not low < high:
            raise InvalidGroupError(
                f"scale must be [lowest, highest] with lowest < highest, got {[low, high]}"
            )
        outside = [v for v in values if not low <= v <= high]
        if outside:
            raise InvalidGroupError(f"scores must lie on the scale {low:g}-{high:g}; got {outside[:5]}")
    return HumanLabels(
        judgement_id=judgement.judgement_id,
        labeler=labeler,
        human=dict(request.human),
        kind=request.kind,
        scale=request.scale,
    )


def agreement_by_fingerprint(
    labels: Sequence[HumanLabels], judgements: Sequence[StoredJudgement]
) -> list[FingerprintAgreement]:
    """Per fingerprint, the agreement of its judgements of the labelled groups (module docstring).
    `judgements`: the labelled judgements and their regrades."""
    by_group: dict[str, list[StoredJudgement]] = {}
    for judgement in judgements:
        by_group.setdefault(judgement.regrade_of or judgement.judgement_id, []).append(judgement)
    pairs: dict[str | None, list[tuple[HumanLabels, dict[str, float | None] | None]]] = {}
    for label in labels:
        for judgement in by_group.get(label.judgement_id or "", []):
            scores = {a.id: a.score for a in judgement.answers}
            keyed = label.model_copy(update={"judgement_id": judgement.judgement_id})
            pairs.setdefault(judgement.grader_fingerprint, []).append((keyed, scores))
    result = []
    for fingerprint, labelled in sorted(pairs.items(), key=lambda kv: (-len(kv[1]), kv[0] or "")):
        report = agreement(labelled)
        worst = sorted(
            report.per_group,
            key=lambda g: (
                g.kendall_tau_b if g.kendall_tau_b is not None else 2.0,
                g.pairwise_accuracy if g.pairwise_accuracy is not None else 2.0,
            ),
        )[:WORST_SHOWN]
        result.append(FingerprintAgreement(fingerprint=fingerprint, report=report, worst=worst))
    return result
