"""The judge shares the trainer's GPUs: woken before a step's rewards, put to sleep right after them.

The rewards of a step are the only time a trainer needs its judge; the backward pass and the optimizer
step after them want the GPU memory. A reward function made with `share_gpus=<level>` wakes the judge
before it judges (a no-op when it is awake) and, once every rank's rewards are in, puts it to sleep at
that level (docs/operations/sharing-gpus.md). In a multi-rank run every rank calls the reward function
at the same point of the step: each waits at a barrier (torch.distributed, when it is initialised) after
its own groups are judged, then rank 0 alone asks for the sleep, so no rank's groups arrive at a
sleeping judge. A wake whose check found the judge marking its probe groups otherwise than before
raises: training on a judge that now judges otherwise would be worse than stopping. The key needs the
`judge` and `admin` scopes.
"""

from __future__ import annotations

from typing import Any

from judge_service.client import AsyncJudgeClient, JudgeClient
from judge_service.schemas import EngineStatusView


class JudgeWokeWrong(RuntimeError):
    """The judge's engine is not awake after a wake: its wake check failed, or the wake did."""


def _checked(status: EngineStatusView) -> None:
    if status.state != "awake":
        raise JudgeWokeWrong(
            f"the judge is {status.state} after its wake ({status.error or status.last_check}); it judges "
            "nothing until woken again: see docs/operations/sharing-gpus.md"
        )


def _rank_and_barrier() -> int:
    """This process's rank, after every rank got here (torch.distributed when initialised; else 0)."""
    try:
        import torch.distributed as dist
    except ImportError:
        return 0
    if not (dist.is_available() and dist.is_initialized()):
        return 0
    dist.barrier()
    return int(dist.get_rank())


class GpuSharing:
    def __init__(self, level: int) -> None:
        if level not in (1, 2):
            raise ValueError(f"share_gpus is vLLM's sleep level, 1 or 2, not {level!r}")
        self.level = level

    async def wake(self, client: AsyncJudgeClient) -> None:
        _checked(await client.engine_wake())

    async def sleep(self, client: AsyncJudgeClient) -> None:
        if _rank_and_barrier() == 0:
            await client.engine_sleep(self.level)

    def wake_sync(self, client: JudgeClient) -> None:
        _checked(client.engine_wake())

    def sleep_sync(self, client: JudgeClient) -> None:
        if _rank_and_barrier() == 0:
            client.engine_sleep(self.level)


def sharing(level: Any) -> GpuSharing | None:
    """The reward functions' `share_gpus` argument: None (the judge has GPUs of its own) or a level."""
    return None if level is None else GpuSharing(level)
