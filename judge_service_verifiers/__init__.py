"""The verifiers judge plugin `judge-service-verifiers`: verifiers imports a judge plugin by its id as a
top-level module, so this module names the judge that lives in judge_service.adapters.verifiers.

    [[env.taskset.task.judges]]
    id = "judge-service-verifiers"
    judge_service_url = "http://judge:8000"
    group_size = 8
"""

from judge_service.adapters.verifiers import JudgeServiceJudge

__all__ = ["JudgeServiceJudge"]
