"""Juries: several LLM judges mark one group and their scores are aggregated (docs/graders/juries.md).

spec.py reads JUDGE_JURY; aggregate.py turns the judges' scores into one; grader.py is the `jury` grader;
build.py makes each judge's backend, readiness and LLM judge from the settings.
"""
