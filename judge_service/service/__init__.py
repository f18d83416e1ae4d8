"""The service: one request's path from grading plan to stored judgement (service.py), at most one
judgement per Idempotency-Key (idempotency.py), and regrading stored groups under another configuration
(regrade.py). Imports judging/, the store protocol, schemas, errors and metrics; imported by assembly/,
api/, ui/ and app.py."""

from judge_service.service.service import JudgeService

__all__ = ["JudgeService"]
