"""RFT grader configs (the hosted fine-tuning API's grader JSON), run as they are on open weights.

- models.py: the config types (string_check, text_similarity, score_model, label_model, multi, python);
- templates.py: {{item.x}} and {{sample.output_text}} in a sandboxed Jinja2, unknown variables an error,
  within a budget: plain.py (text and lookups, in-process), budget.py (the environment and its size
  checks), template_pool.py and template_worker.py (everything else, in render processes with a timeout);
- formula.py: a multi grader's calculate_output, parsed as arithmetic, never evaluated as code;
- similarity.py: the text_similarity metrics;
- model.py: score_model and label_model answered by the service's judge model;
- run.py: one config on one sample: reward, sub-rewards and the hosted API's error flags;
- grader.py: a config named in JUDGE_RFT_GRADERS as a Grader, run on every answer of a group.
"""
