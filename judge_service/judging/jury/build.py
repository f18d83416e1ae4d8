"""The jury of JUDGE_JURY as the service runs it: each judge's backend, readiness and LLM judge.

A judge on an endpoint gets a backend of its own (backends/openai_http.py) with the service's HTTP
settings and its own endpoint, model, key and timeout, and a readiness of its own that app.py follows as
it follows the service's backend. The local judge runs on the service's own backend and readiness. Every
judge's caller is built from the service's settings with what its entry overrides (temperature, prompt
template); an endpoint's judge does not inherit the thinking settings the operator gave for the service's
own model (its thinking profile comes from its model's name, as backend=openai's does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judge_service.backends.base import JudgeBackend
from judge_service.backends.factory import build_backend
from judge_service.backends.readiness import Readiness
from judge_service.config import Settings
from judge_service.judging.jury.grader import JURY, Juror, JuryGrader
from judge_service.judging.jury.spec import JurorSpec, parse_jury
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.caller import JudgeCaller
from judge_service.judging.llm.judge import LLMJudge
from judge_service.metrics import JudgeMetrics

# The service's settings about its own model, which an endpoint's judge does not take over.
_OWN_MODEL_SETTINGS = (
    "thinking_switch",
    "thinking_template_kwarg",
    "reasoning_parser",
    "reasoning_parser_plugin",
    "thinking_special_markers",
    "chat_template",
    "max_model_len",
)


@dataclass(frozen=True)
class Endpoint:
    """A jury judge on an endpoint: its backend and readiness, which app.py starts, follows and closes."""

    name: str
    backend: JudgeBackend
    readiness: Readiness


@dataclass(frozen=True)
class Jury:
    grader: JuryGrader
    endpoints: list[Endpoint]


def build_jury(
    settings: Settings,
    metrics: JudgeMetrics,
    *,
    local_backend: JudgeBackend,
    local_readiness: Readiness,
    admission: GroupAdmission,
) -> Jury | None:
    """The jury of JUDGE_JURY, or None without one. ValueError says what to fix in the setting."""
    if settings.jury is None:
        return None
    specs = parse_jury(settings.jury)
    if settings.jury_quorum > len(specs):
        raise ValueError(
            f"JUDGE_JURY_QUORUM is {settings.jury_quorum}, and JUDGE_JURY names {len(specs)} judge(s): no "
            "answer could ever be scored; lower the quorum or add judges"
        )
    jurors: list[Juror] = []
    endpoints: list[Endpoint] = []
    for spec in specs:
        # No admission of its own: the jury holds one slot for the whole group.
        judge, endpoint = judge_of(
            spec, settings, metrics, local_backend=local_backend, local_readiness=local_readiness, role=JURY
        )
        if endpoint is not None:
            endpoints.append(endpoint)
        jurors.append(Juror(spec.name, judge, spec.weight))
    grader = JuryGrader(jurors, admission=admission, metrics=metrics, quorum=settings.jury_quorum)
    return Jury(grader, endpoints)


def judge_of(
    spec: JurorSpec,
    settings: Settings,
    metrics: JudgeMetrics,
    *,
    local_backend: JudgeBackend,
    local_readiness: Readiness,
    role: str,
) -> tuple[LLMJudge, Endpoint | None]:
    """One judge entry as an LLM judge without admission of its own (a jury's, the audit's), named
    `<role>:<name>`, and its endpoint (backend and readiness, for app.py to follow) unless it is local."""
    own = juror_settings(settings, spec)
    endpoint = None
    if spec.local:
        backend, readiness = local_backend, local_readiness
    else:
        backend = build_backend(own, metrics)
        label = spec.name if role == JURY else f"{role}:{spec.name}"  # the jury's judges keep their label
        readiness = Readiness(metrics, backend="openai", juror=label)
        endpoint = Endpoint(spec.name, backend, readiness)
    judge = LLMJudge(
        JudgeCaller.configured(backend, metrics, own, own),
        admission=None,
        metrics=metrics,
        readiness=readiness,
        name=f"{role}:{spec.name}",
    )
    return judge, endpoint


def juror_settings(settings: Settings, spec: JurorSpec) -> Settings:
    """The service's settings with what a judge's entry sets."""
    update: dict[str, Any] = {}
    if spec.temperature is not None:
        update["temperature"] = spec.temperature
    if spec.prompt_template is not None:
        update["prompt_template"] = spec.prompt_template
    if not spec.local:
        update |= {name: Settings.model_fields[name].default for name in _OWN_MODEL_SETTINGS}
        update |= {
            "backend": "openai",
            "openai_base_url": spec.base_url,
            "served_model_name": spec.model,
            "openai_api_key": spec.api_key,
            "openai_timeout_s": spec.timeout_s or settings.openai_timeout_s,
        }
    return settings.model_copy(update=update)
