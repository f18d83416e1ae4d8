"""Where grader code runs: the command that starts a worker (worker.py) inside a sandbox, and its limits.

Two isolations (JUDGE_CODE_SANDBOX):

- `bubblewrap` (the default): the worker runs under Debian's `bwrap` in namespaces of its own. It sees a
  read-only view of the Python installation, the service's package and the grader's own module, a private
  /tmp of `file_mb`, a /proc that shows only its own processes, and no network (unless the grader's settings
  allow it). Its environment holds only what the grader's settings name. When the worker ends, or the
  service does, the kernel ends every process in its PID namespace, however it was detached. The worker runs
  as a user of its own: an unprivileged user namespace when the service is not root; when it is root, a
  numbered user of its own per live worker (setpriv inside the sandbox), because the kernel applies the
  process cap to no process that is root outside.
- `process`: the same environment and hard limits in a plain child process, without namespaces: it can read
  what the service's user can read, open sockets and signal the service's processes. For hosts where
  bwrap cannot start (a container without user namespaces); the operator chooses it knowingly.

The hard limits (address space, processes, file size, CPU time) are set by the worker itself before it
reads a message, so before any grader code is imported; a grader can lower them, never lift them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.machinery
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

WORKER_MODULE = "judge_service.judging.code.worker"
# The numbered users a root service gives its workers, one per live worker, so that one worker's
# processes never count against another's process cap.
ROOT_UID_BASE = 200_000
ROOT_UID_SPAN = 4096
# What a worker may read of /etc: the loader's cache and time zones, and with network, name resolution
# and certificates. Nothing else of the host's configuration (keys files, other services' settings).
_ETC_ALWAYS = ("/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group")
_ETC_NETWORK = ("/etc/resolv.conf", "/etc/hosts", "/etc/gai.conf", "/etc/ssl", "/etc/ca-certificates")


class Isolation(StrEnum):
    BUBBLEWRAP = "bubblewrap"
    PROCESS = "process"


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot start here; the message says why and which setting accepts weaker isolation."""


@dataclass(frozen=True)
class WorkerLimits:
    """What one worker may use; hard limits, set before any grader code runs."""

    memory_mb: int = 512  # address space the worker may add after it starts, its imports included
    processes: int = 32  # processes and threads, the worker's own included
    file_mb: int = 64  # the largest file it may write, and the size of its /tmp
    cpu_s: int = 3600  # CPU seconds over the worker's life (it retires at half, pool.py)
    network: bool = False
    env: tuple[str, ...] = ()  # names of the service's environment variables the grader is given

    def as_argument(self) -> str:
        return f"{self.memory_mb},{self.processes},{self.file_mb},{self.cpu_s}"


@dataclass
class Sandbox:
    """Builds the command and environment of a worker, and hands out the numbered users of a root
    service."""

    isolation: Isolation = Isolation.BUBBLEWRAP
    _uids_in_use: set[int] = field(default_factory=set)
    _next_uid: int = 0

    @classmethod
    def from_setting(cls, setting: str) -> Sandbox:
        try:
            return cls(Isolation(setting))
        except ValueError as exc:
            choices = ", ".join(i.value for i in Isolation)
            raise ValueError(f"JUDGE_CODE_SANDBOX must be one of {choices}, got {setting!r}") from exc

    def launch(self, limits: WorkerLimits, modules: Iterable[str] = ()) -> Launch:
        """How to start one worker that may import `modules` (top-level names are enough)."""
        modules = tuple(modules)
        env = _worker_env(limits, self._python_path(modules))
        worker = [sys.executable, "-m", WORKER_MODULE, limits.as_argument()]
        if self.isolation is Isolation.PROCESS:
            return Launch(worker, env, uid=None)
        uid = self._take_uid() if os.geteuid() == 0 else None
        return Launch(self._bwrap(limits, modules, uid) + worker, env, uid)

    def release(self, launch: Launch) -> None:
        if launch.uid is not None:
            self._uids_in_use.discard(launch.uid)

    async def check(self) -> None:
        """Start a sandboxed interpreter once; SandboxUnavailable naming the way out when it cannot."""
        if self.isolation is Isolation.PROCESS:
            return
        if shutil.which("bwrap") is None:
            raise SandboxUnavailable(
                "graders written as code run in a bubblewrap sandbox, and `bwrap` is not installed (Debian "
                "package bubblewrap; scripts/install.sh installs it). Install it, or set "
                "JUDGE_CODE_SANDBOX=process to accept weaker isolation (no namespaces)."
            )
        launch = self.launch(WorkerLimits())  # a whole worker: its limits and filter, then no message
        try:
            process = await asyncio.create_subprocess_exec(
                *launch.command,
                env=launch.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            _, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
        finally:
            self.release(launch)
        if process.returncode != 0:
            said = stderr.decode(errors="replace").strip()[-500:]
            raise SandboxUnavailable(
                f"the bubblewrap sandbox for graders written as code cannot start here (exit "
                f"{process.returncode}: {said}); a container may forbid the namespaces it needs. Allow "
                "user namespaces, or set JUDGE_CODE_SANDBOX=process to accept weaker isolation (no "
                "namespaces)."
            )

    def _take_uid(self) -> int:
        for _ in range(ROOT_UID_SPAN):
            uid = ROOT_UID_BASE + self._next_uid
            self._next_uid = (self._next_uid + 1) % ROOT_UID_SPAN
            if uid not in self._uids_in_use:
                self._uids_in_use.add(uid)
                return uid
        raise RuntimeError(f"more than {ROOT_UID_SPAN} sandboxed workers at once")

    def _python_path(self, modules: Iterable[str]) -> list[str]:
        """The folders the worker imports from: the service's package and the graders' own modules (each
        where the service finds it), then the installation's own entries (site-packages)."""
        roots = [_import_root(name) for name in (WORKER_MODULE, *modules)]
        installed = [p for p in sys.path if p and _inside(p, _prefixes())]
        return list(dict.fromkeys([*(root for root, _ in roots), *installed]))

    def _bwrap(self, limits: WorkerLimits, modules: Iterable[str], uid: int | None) -> list[str]:
        shown = [*_prefixes(), *(origin for _, origin in map(_import_root, (WORKER_MODULE, *modules)))]
        etc = _ETC_ALWAYS + (_ETC_NETWORK if limits.network else ())
        bwrap = shutil.which("bwrap") or "bwrap"  # found on the service's PATH, not the worker's
        command = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
        command += ["--unshare-uts", "--unshare-cgroup-try"]
        if not limits.network:
            command.append("--unshare-net")
        if uid is None:
            command += ["--unshare-user", "--cap-drop", "ALL", "--disable-userns"]
        command += ["--proc", "/proc", "--dev", "/dev"]
        size = str(limits.file_mb * 2**20)
        command += ["--perms", "01777", "--size", size, "--tmpfs", "/tmp"]
        command += ["--perms", "01777", "--size", size, "--tmpfs", "/dev/shm"]
        # After /tmp: a grader's module may live under the host's /tmp, and shows through the private one.
        command += list(_system_mounts())
        command += list(_read_only(os.path.realpath(p) for p in [*shown, *etc] if os.path.exists(p)))
        command += ["--chdir", "/tmp"]
        if uid is not None:  # root outside: become a numbered user with no capabilities, then the worker
            command += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
            command += ["--", "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
            command += ["--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        else:
            command.append("--")
        return command


@dataclass(frozen=True)
class Launch:
    command: list[str]
    env: dict[str, str]
    uid: int | None


def _worker_env(limits: WorkerLimits, python_path: list[str]) -> dict[str, str]:
    """Nothing of the service's environment but what the grader's settings name."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join(python_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONUNBUFFERED": "1",
        # Numeric libraries start a thread per core, each with its own memory: one is enough for a grader.
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    passed: Mapping[str, str] = {name: os.environ[name] for name in limits.env if name in os.environ}
    env.update(passed)
    return env


def _prefixes() -> list[str]:
    """The Python installation: the virtual environment and the interpreter it was made from."""
    found = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
    return list(dict.fromkeys(os.path.realpath(p) for p in found))


def _inside(path: str, folders: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == f or real.startswith(f + os.sep) for f in folders)


def _import_root(dotted: str) -> tuple[str, str]:
    """(the sys.path folder a module's top-level package is found in, the package's own folder or file),
    found as the import system would, without running the package's code."""
    top = dotted.partition(".")[0]
    spec = importlib.machinery.PathFinder.find_spec(top, [p or os.getcwd() for p in sys.path])
    if spec is None:
        spec = _editable_spec(top)
    if spec is None or not (spec.submodule_search_locations or spec.origin):
        raise LookupError(f"No module named {top!r} where the service runs")
    if spec.submodule_search_locations:
        origin = os.path.realpath(next(iter(spec.submodule_search_locations)))
    else:
        origin = os.path.realpath(str(spec.origin))
    return os.path.dirname(origin), origin


def _editable_spec(top: str) -> importlib.machinery.ModuleSpec | None:
    """Packages installed in development mode are found by a finder on sys.meta_path, not on sys.path."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None or finder is importlib.machinery.PathFinder:
            continue
        with contextlib.suppress(Exception):
            spec = find(top, None)
            if spec is not None:
                return spec
    return None


def _system_mounts() -> Iterator[str]:
    """/usr read-only, and the top-level links a merged-/usr system has (/bin -> usr/bin)."""
    yield from ("--ro-bind", "/usr", "/usr")
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            yield from ("--symlink", os.readlink(name), name)
        elif os.path.isdir(name):
            yield from ("--ro-bind", name, name)


def _read_only(paths: Iterable[str]) -> Iterator[str]:
    """Each path shown read-only at its own place, with the folders above it made passable (bwrap makes
    missing parents private to root, which a numbered user could not enter)."""
    shown: list[str] = ["/usr"]
    made: set[str] = {"/"}
    for path in sorted(set(paths), key=lambda p: (p.count(os.sep), p)):
        if _inside(path, shown):
            continue  # already visible through a folder above it
        shown.append(path)
        for parent in map(str, reversed(Path(path).parents)):
            if parent not in made:
                made.add(parent)
                yield from ("--perms", "0755", "--dir", parent)
        yield from ("--ro-bind", path, path)
