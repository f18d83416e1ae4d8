"""judge-service: a group-wise LLM judge and rule graders for reinforcement fine-tuning (GRPO).

The house, top to bottom: app.py wires everything; api/ is HTTP; service.py runs one group; judging/
grades it (rule graders and the LLM judge behind one interface); backends/ talk to the judge model;
store/ keeps judgements; assembly.py gathers groups whose answers arrive one request each; readiness.py
says whether the judge can judge. Beside them: client/ (the typed client), adapters/ (trainers, on the
client), compat/ (trainer protocols the service serves), tools/ (offline commands on the client),
quality/ (reports), schemas.py (every wire model), config.py, metrics.py, errors.py.
"""
