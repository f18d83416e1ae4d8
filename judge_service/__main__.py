import sys

from judge_service.cli import main

# The guard matters: vLLM's engine starts worker processes that re-import the main module.
if __name__ == "__main__":
    sys.exit(main())
