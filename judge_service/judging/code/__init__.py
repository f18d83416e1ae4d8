"""Graders written as code: Python functions named in JUDGE_CODE_GRADERS, run in worker processes.

- spec.py: the setting's entries (name, target, signature, limits) and their parsing;
- worker.py: the worker process (standard library only): imports and calls the functions, with a memory cap;
- pool.py: the worker processes seen from the service: per-call timeouts, lost workers replaced;
- grader.py: a code grader as a Grader: arguments per signature, results checked and scaled, pinned by
  the hash of its source.
"""
