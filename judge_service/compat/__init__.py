"""Server-side trainer protocols: requests shaped by a trainer's own reward client, turned into member
requests of group assembly (assembly.py) and answered in the trainer's shape. Imports schemas and
assembly; imported by api/compat.py."""
