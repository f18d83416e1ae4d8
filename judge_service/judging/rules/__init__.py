"""The rule graders: cheap per-answer checks against the reference, adapted to the Grader interface
(base.py). Imports judging.base and schemas only."""
