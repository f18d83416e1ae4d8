"""Watching a live run for reward hacking: canary answers planted in groups (canaries.py, built by
canary_kinds.py) and the length-bias figure of every judgement (length_bias.py)."""
