"""Thin adapters that let trainers take their rewards from this service: TRL (trl.py), OpenPipe ART
(art.py), slime (slime.py), verl (verl.py) and NeMo Gym (nemo_gym.py). Each turns the trainer's own call
into groups (groups.py), sends them through the typed client, and maps results back in the trainer's
order, with the trainer's rule for an answer the judge could not score (never a silent 0). Trainer
packages are optional extras, imported only inside the adapter that needs them; the service never
imports this package, and it imports only the client and schemas."""
