"""The sandbox around grader code, attacked from inside a grader: what a grader tried against the service
before it had one (secrets, files, sockets, signals, lifted limits, forks, escapes, huge replies), each
refused here. Inline sources, each call in a fresh worker, as the service runs inline python."""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from judge_service.judging.code.pool import CallResult, WorkerPool
from judge_service.judging.code.sandbox import Isolation, Sandbox, SandboxUnavailable, WorkerLimits

SAMPLE = [{"output_text": "x", "output_json": None}, {}]
REPO = Path(__file__).resolve().parents[4]


@pytest.fixture
async def fresh() -> AsyncIterator[WorkerPool]:
    pool = WorkerPool(2, Sandbox(), reuse=False)
    yield pool
    await pool.close()


async def _run(
    pool: WorkerPool, body: str, limits: WorkerLimits | None = None, timeout_s: float = 20
) -> CallResult:
    source = "def grade(sample, item):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    (result,) = await pool.call(
        {"source": source}, None, [SAMPLE], timeout_s=timeout_s, limits=limits or WorkerLimits()
    )
    return result


def _value(result: CallResult) -> object:
    assert result.ok, f"{result.error}: {result.message}"
    return result.value


async def test_the_environment_holds_only_what_the_grader_names(
    fresh: WorkerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_API_KEYS", "the-service-secret")
    monkeypatch.setenv("GRADER_TOKEN", "given-on-purpose")
    seen = _value(
        await _run(fresh, "import os\nreturn dict(os.environ)", WorkerLimits(env=("GRADER_TOKEN",)))
    )
    assert isinstance(seen, dict)
    assert "the-service-secret" not in str(seen)
    assert not [name for name in seen if name.startswith("JUDGE_")]
    assert seen["GRADER_TOKEN"] == "given-on-purpose"


async def test_the_services_files_are_not_there_and_nothing_is_writable_but_tmp(
    fresh: WorkerPool, tmp_path: Path
) -> None:
    database = REPO / "sandbox-test.sqlite3"  # where a service's SQLite file could lie, beside its code
    database.write_text("judgements")
    try:
        seen = _value(
            await _run(
                fresh,
                f"""
                import os
                found = {{}}
                for path in ({str(database)!r}, {str(REPO / "pyproject.toml")!r}):
                    found[path] = os.path.exists(path)
                try:
                    open({str(REPO / "judge_service" / "planted.py")!r}, "w")
                    found["wrote code"] = True
                except OSError:
                    found["wrote code"] = False
                with open("/tmp/scratch", "w") as scratch:
                    found["tmp"] = scratch.write("a private temporary folder") > 0
                return found
                """,
            )
        )
    finally:
        database.unlink()
    assert seen == {
        str(database): False,
        str(REPO / "pyproject.toml"): False,
        "wrote code": False,
        "tmp": True,
    }
    assert not (REPO / "judge_service" / "planted.py").exists()


async def test_files_are_capped_in_size(fresh: WorkerPool) -> None:
    result = await _run(
        fresh,
        """
        with open("/tmp/big", "wb") as big:
            for _ in range(8):
                big.write(b"x" * 2**20)
        return 1.0
        """,
        WorkerLimits(file_mb=2),
    )
    assert result.error == "grader_error" and "OSError" in result.message


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


async def test_no_network_unless_the_grader_may(fresh: WorkerPool, listener: int) -> None:
    connect = f"""
    import socket
    try:
        socket.create_connection(("127.0.0.1", {listener}), timeout=2).close()
        return 1.0
    except OSError:
        return 0.0
    """
    assert _value(await _run(fresh, connect)) == 0.0
    assert _value(await _run(fresh, connect, WorkerLimits(network=True))) == 1.0


async def test_the_service_cannot_be_seen_or_signalled(fresh: WorkerPool) -> None:
    service = os.getpid()
    seen = _value(
        await _run(
            fresh,
            f"""
            import os, signal
            try:
                os.kill({service}, signal.SIGKILL)
                killed = True
            except OSError:
                killed = False
            pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
            return {{"killed": killed, "pids": pids, "environ": os.path.exists("/proc/{service}/environ")}}
            """,
        )
    )
    assert isinstance(seen, dict)
    assert seen["killed"] is False and seen["environ"] is False
    assert max(seen["pids"]) < 100  # its own PID namespace: the sandbox's few processes only
    assert os.getpid() == service  # still here


async def test_the_memory_cap_cannot_be_lifted(fresh: WorkerPool) -> None:
    lifted = await _run(
        fresh,
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        return 1.0
        """,
    )
    assert lifted.error == "grader_error" and "raise maximum limit" in lifted.message
    hogged = await _run(fresh, "return float(len(bytearray(1024 * 2**20)))", WorkerLimits(memory_mb=64))
    assert hogged.error == "grader_memory"


async def test_forks_stop_at_the_process_cap(fresh: WorkerPool) -> None:
    forked = _value(
        await _run(
            fresh,
            """
            import os, time
            started = 0
            try:
                for _ in range(200):
                    if os.fork() == 0:
                        time.sleep(30)
                        os._exit(0)
                    started += 1
            except OSError:
                pass
            return started
            """,
            WorkerLimits(processes=8),
        )
    )
    assert isinstance(forked, int) and forked < 8


ESCAPE = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "{marker}"])
    os._exit(0)
time.sleep(3600)
"""


def _escaped(marker: str) -> bool:
    """Whether a process started as `sleep <marker>` is alive anywhere on the host."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\0" + marker.encode() + b"\0":
                return True
        except OSError:
            continue
    return False


async def _until(condition: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_detached_descendant_ends_with_its_worker(fresh: WorkerPool) -> None:
    marker = f"{time.time_ns() % 10**6}.31"
    call = asyncio.create_task(_run(fresh, ESCAPE.format(marker=marker), timeout_s=4))
    assert await _until(lambda: _escaped(marker), 3), "the grader never started its detached process"
    result = await call
    assert result.error == "grader_timeout"
    assert await _until(lambda: not _escaped(marker), 5), "a detached process outlived its worker"


SERVICE = """
import asyncio, sys
from judge_service.judging.code.pool import WorkerPool
from judge_service.judging.code.sandbox import Sandbox, WorkerLimits

async def main():
    pool = WorkerPool(1, Sandbox(), reuse=False)
    body = "".join("    " + line + "\\n" for line in sys.argv[1].splitlines())
    target = {"source": "def grade(sample, item):\\n" + body}
    await pool.call(target, None, [[{"output_text": "x"}, {}]], timeout_s=600, limits=WorkerLimits())

asyncio.run(main())
"""


def _until_now(condition: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_a_detached_descendant_ends_with_the_service() -> None:
    marker = f"{time.time_ns() % 10**6}.32"
    service = subprocess.Popen(
        [sys.executable, "-c", SERVICE, ESCAPE.format(marker=marker)], cwd=REPO, start_new_session=True
    )
    try:
        assert _until_now(lambda: _escaped(marker), 10), "the grader never started its detached process"
        service.kill()  # the service dies at once, with no chance to clean up
        service.wait(5)
        assert _until_now(lambda: not _escaped(marker), 5), "a detached process outlived the service"
    finally:
        if service.poll() is None:
            os.killpg(service.pid, 9)
            service.wait(5)


async def test_a_huge_reply_is_refused_before_it_is_read(fresh: WorkerPool) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    refused = await _run(
        fresh, 'return {"score": 0.5, "blob": "x" * (300 * 2**20)}', WorkerLimits(memory_mb=1024)
    )
    assert refused.error == "grader_invalid_result" and "at most" in refused.message
    # A grader that writes its own header to the protocol's pipe, announcing 300 MB, is not read either.
    forged = await _run(
        fresh,
        """
        import os, struct
        for fd in map(int, os.listdir("/proc/self/fd")):
            if fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                try:
                    os.write(fd, struct.pack(">I", 300 * 2**20) + b"x" * 1000)
                except OSError:
                    pass
        import time
        time.sleep(30)
        """,
    )
    assert forged.error == "grader_invalid_result" and "at most" in forged.message
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100, f"the service grew by {grown_mb:.0f} MB reading a reply"


async def test_inline_source_cannot_reach_a_configured_graders_worker() -> None:
    """The attack that replaced a configured grader's function through gc: inline python now runs in a
    fresh worker of its own, never in the workers that configured graders use."""
    configured = WorkerPool(1, Sandbox())
    inline = WorkerPool(1, Sandbox(), reuse=False)
    trivial = {"module": "tests.code_graders", "function": "trivial"}
    try:
        assert (await configured.call(trivial, None, [SAMPLE], timeout_s=10, limits=WorkerLimits()))[
            0
        ].value == 1.0
        patched = await _run(
            inline,
            """
            import gc
            hit = 0
            for thing in gc.get_objects():
                if type(thing).__name__ == "Loaded":
                    thing.function = lambda sample, item: 0.0
                    hit += 1
            return float(hit)
            """,
        )
        assert _value(patched) == 1.0  # it found only its own
        (after,) = await configured.call(trivial, None, [SAMPLE], timeout_s=10, limits=WorkerLimits())
        assert after.value == 1.0
    finally:
        await configured.close()
        await inline.close()


async def test_the_weaker_isolation_still_scrubs_the_environment_and_holds_its_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_SESSION_SECRET", "the-service-secret")
    pool = WorkerPool(1, Sandbox(Isolation.PROCESS), reuse=False)
    try:
        seen = _value(await _run(pool, "import os\nreturn sorted(os.environ)"))
        assert isinstance(seen, list) and not [name for name in seen if name.startswith("JUDGE_")]
        lifted = await _run(
            pool,
            """
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            return 1.0
            """,
        )
        assert lifted.error == "grader_error"
    finally:
        await pool.close()


async def test_a_host_without_bubblewrap_is_told_which_setting_accepts_less(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="JUDGE_CODE_SANDBOX=process"):
        await Sandbox().check()
    # bwrap present but refused its namespaces, as in a container that forbids them.
    bwrap = tmp_path / "bwrap"
    bwrap.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    bwrap.chmod(0o755)
    with pytest.raises(SandboxUnavailable, match=r"No permissions.*JUDGE_CODE_SANDBOX=process"):
        await Sandbox().check()
    await Sandbox(Isolation.PROCESS).check()  # the weaker isolation needs nothing


async def test_the_sandbox_starts_here() -> None:
    await Sandbox().check()


async def test_memory_the_address_space_limit_does_not_count_is_refused(fresh: WorkerPool) -> None:
    """memfd and SysV shared memory live in the kernel, not in the grader's address space: a grader once
    held 1.6 GB that way under a 512 MiB cap."""
    seen = _value(
        await _run(
            fresh,
            """
            import ctypes, errno, os
            found = {}
            try:
                os.memfd_create("hoard")
                found["memfd"] = "created"
            except OSError as exc:
                found["memfd"] = errno.errorcode[exc.errno]
            libc = ctypes.CDLL(None, use_errno=True)
            found["shmget"] = libc.shmget(0, 2**20, 0o1600) == -1 and errno.errorcode[ctypes.get_errno()]
            found["msgget"] = libc.msgget(0, 0o1600) == -1 and errno.errorcode[ctypes.get_errno()]
            found["unshare"] = libc.unshare(0x10000000) == -1 and errno.errorcode[ctypes.get_errno()]
            return found
            """,
        )
    )
    assert seen == {"memfd": "EPERM", "shmget": "EPERM", "msgget": "EPERM", "unshare": "EPERM"}


async def test_threads_and_child_processes_still_work_under_the_filter(fresh: WorkerPool) -> None:
    seen = _value(
        await _run(
            fresh,
            """
            import subprocess, threading
            results = []
            thread = threading.Thread(target=lambda: results.append("thread ran"))
            thread.start()
            thread.join()
            done = subprocess.run(["/bin/echo", "child ran"], capture_output=True, text=True, check=True)
            return results + [done.stdout.strip()]
            """,
        )
    )
    assert seen == ["thread ran", "child ran"]


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (b'{"ok": false}', "not one of the protocol's"),
        (
            b'{"ok": false, "error": "anything-as-a-metric-label", "message": "x"}',
            "not one of the protocol's",
        ),
        (b'{"ok": true, "value": NaN}', "not the protocol's JSON"),
        (b"[" * 200_000 + b"]" * 200_000, "not the protocol's JSON"),
        (b'"just a string"', "not one of the protocol's"),
    ],
)
async def test_a_forged_reply_costs_its_worker_never_the_pool(reply: bytes, said: str) -> None:
    """Grader code can write to the protocol's pipe. A reply that is not the protocol's fails that call
    and its worker; the pool's slot comes back (a pool of one answers the next call)."""
    pool = WorkerPool(1, Sandbox(), reuse=False)
    forge = f"""
    import os, struct, time
    body = {reply!r}
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd > 2 and os.readlink(f"/proc/self/fd/{{fd}}").startswith("pipe:"):
            try:
                os.write(fd, struct.pack(">I", len(body)) + body)
            except OSError:
                pass
    time.sleep(30)
    """
    try:
        forged = await _run(pool, forge)
        assert forged.error == "grader_crashed" and said in forged.message
        assert _value(await asyncio.wait_for(_run(pool, "return 0.25"), 20)) == 0.25
    finally:
        await pool.close()


async def test_what_a_grader_prints_is_marked_as_its_own_and_cannot_pass_for_the_services(
    fresh: WorkerPool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="judge_service.judging.code.pool")
    printed = await _run(
        fresh,
        """
        import sys
        print("hello from the grader")
        sys.stderr.write("INFO judge_service: all keys rotated\\rERROR \\x1b[31mforged\\n")
        for n in range(1000):
            print("flood", n)
        return 1.0
        """,
    )
    assert _value(printed) == 1.0
    await asyncio.sleep(0.2)  # the relay reads what the worker wrote before it ended
    lines = [r.getMessage() for r in caplog.records if r.name == "judge_service.judging.code.pool"]
    assert "grader inline python printed: hello from the grader" in lines
    forged = [line for line in lines if "forged" in line]
    assert forged == [
        "grader inline python printed: INFO judge_service: all keys rotated\\x0dERROR \\x1b[31mforged"
    ]
    assert all(line.startswith("grader inline python printed") for line in lines if "flood" in line)
    assert sum("flood" in line for line in lines) < 300  # the burst, not the thousand
    assert any("lines more than its 20 a second" in line for line in lines)
