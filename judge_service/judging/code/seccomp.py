"""A seccomp filter for the workers that run grader code: the system calls a grader has no use for, and
that would let it take memory its limits do not count or reach parts of the kernel it does not need, fail
with EPERM. Installed by the worker on itself (worker.py) before any grader code runs; its descendants
inherit it and cannot remove it.

Denied: memory outside the address-space limit (memfd_create, memfd_secret, SysV shared memory and
message queues, POSIX message queues: the kernel holds such memory for no process, so RLIMIT_AS never
sees it); new namespaces (unshare, setns, and clone with a namespace flag), mounts, ptrace and
process_vm_*, the kernel's keyrings, bpf, perf events, userfaultfd, io_uring, and loading kernels or
modules. clone3 answers ENOSYS, so the C library falls back to clone, whose flags the filter can read.

Plain stdlib (ctypes): the filter is a short classic-BPF program, written out here for x86_64 and
aarch64, the two architectures the service is built for; elsewhere the worker runs without it and says so.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

# Each name -> (x86_64 number, aarch64 number), from the kernel's unistd tables.
DENIED = {
    "memfd_create": (319, 279),
    "memfd_secret": (447, 447),
    "shmget": (29, 194),
    "msgget": (68, 186),
    "mq_open": (240, 180),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "move_mount": (429, 429),
    "open_tree": (428, 428),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "kexec_load": (246, 104),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
}
_CLONE = (56, 220)
_CLONE3 = (435, 435)
_ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}  # machine -> (column, AUDIT_ARCH_*)
_X32_BIT = 0x40000000  # x86_64's x32 calls: the same numbers with this bit; refused whole
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

# Classic BPF, as seccomp reads it (linux/filter.h, linux/seccomp.h).
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE, _JSET = 0x15, 0x35, 0x45  # BPF_JMP | BPF_{JEQ,JGE,JSET} | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0's low word, little-endian)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def program(machine: str | None = None) -> list[tuple[int, int, int, int]] | None:
    """The filter for `machine` (this one's by default) as (code, jt, jf, k) instructions; None where the
    architecture has no table here."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    column, audit_arch = arch
    denied = sorted({numbers[column] for numbers in DENIED.values()})
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    # Layout: header, one test per denied call, clone and clone3, allow, then the three endings below.
    body: list[tuple[int, int, int, int]] = [(_LD_ABS, 0, 0, _ARCH)]
    tests = len(denied) + 2
    deny_at = 4 + tests + 1  # index of the EPERM return: after the header (4), the tests and ALLOW
    body.append((_JEQ, 1, 0, audit_arch))
    body.append((_RET, 0, 0, eperm))  # another architecture's calls (i386 on x86_64): refused
    body.append((_LD_ABS, 0, 0, _NR))
    if column == 0:
        deny_at += 1  # one more test before it
        body.append((_JGE, deny_at - len(body) - 1, 0, _X32_BIT))
    for number in denied:
        body.append((_JEQ, deny_at - len(body) - 1, 0, number))
    clone_at = deny_at + 2  # after EPERM and ENOSYS
    body.append((_JEQ, clone_at - len(body) - 1, 0, _CLONE[column]))
    body.append((_JEQ, deny_at + 1 - len(body) - 1, 0, _CLONE3[column]))
    body.append((_RET, 0, 0, _ALLOW))
    assert len(body) == deny_at
    body.append((_RET, 0, 0, eperm))
    body.append((_RET, 0, 0, enosys))
    body.append((_LD_ABS, 0, 0, _ARG0))  # clone: refused with a namespace flag
    body.append((_JSET, 1, 0, _NAMESPACE_FLAGS))
    body.append((_RET, 0, 0, _ALLOW))
    body.append((_RET, 0, 0, eperm))
    return body


def install() -> bool:
    """Filter this process (and what it starts from now on); False where this architecture has no
    filter here. OSError when the kernel refuses it."""
    instructions = program()
    if instructions is None:
        return False
    packed = b"".join(struct.pack("=HBBI", *instruction) for instruction in instructions)
    buffer = ctypes.create_string_buffer(packed, len(packed))

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = _Program(len(instructions), ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    # No new privileges first: the kernel allows an unprivileged filter only then.
    for call in (
        (_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
        (_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0),
    ):
        if libc.prctl(*(ctypes.c_ulong(value) for value in call)) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"prctl{call[:2]}: {errno.errorcode.get(code, code)}")
    return True
