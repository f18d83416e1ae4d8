"""An earlier commit's tree beside this one, for before/after runs in one process run (capacity_guard,
number_formats)."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from benchmarks import REPO_ROOT


@contextlib.contextmanager
def pinned_tree(ref: str) -> Iterator[Path]:
    """A detached worktree of `ref` in a temporary folder, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="bench-tree-"))
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "--force", str(folder), ref],
        check=True,
        capture_output=True,
    )
    try:
        yield folder
    finally:
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(folder)], capture_output=True
        )
