"""judge-service: a group-wise LLM judge and rule graders for reinforcement fine-tuning (GRPO).

The house, top to bottom (each layer imports only those below it; pyproject.toml's import contracts check
it): cli.py and server/ run it; app.py wires everything; ui/ the run pages; api/ is HTTP; assembly/ gathers
groups whose answers arrive one request each; service/ runs one group; judging/ grades it (rule graders
and the LLM judge behind one interface); backends/ talk to the judge model and store/ keeps judgements.
Beside them: client/ (the typed client), adapters/ (trainers, on the client), tools/ (offline commands on
the client), quality/ (pure reports), and the shared modules schemas/ (every wire model), config.py,
metrics.py, errors.py.
"""
