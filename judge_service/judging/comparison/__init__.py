"""Comparison grading: the judge compares answers two at a time and the verdicts become scores
(docs/graders/comparison.md). strength.py turns verdicts into scores, schedule.py says which answers meet,
grader.py runs the `pairwise` and `knockout` graders."""
