"""Trainer-protocol routes: requests in a trainer's own reward-client shape (openrlhf.py: the protocol's
models and translation), turned into member requests of group assembly and answered in the trainer's shape
(router.py: the routes)."""
