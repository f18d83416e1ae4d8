"""judge-service: a group-wise LLM judge and rule graders for reinforcement fine-tuning (GRPO).

The house, top to bottom: app.py wires everything; api/ is HTTP; service.py runs one group; judging/
grades it (rule graders and the LLM judge behind one interface); backends/ talk to the judge model;
store/ keeps judgements. Beside them: client/ (the typed client), tools/ (offline commands on the client),
quality/ (reports), schemas.py (every wire model), config.py, metrics.py, errors.py.
"""
