"""A seccomp filter that lets a process start threads but no new processes.

The kernel exempts root from ``RLIMIT_NPROC``, so a kernel started by root gets this
filter (through ``bwrap --seccomp``) instead: ``fork`` and ``vfork`` fail with
``EAGAIN``, ``clone`` without ``CLONE_THREAD`` too, and ``clone3`` with ``ENOSYS`` (the
C library then falls back to ``clone`` for threads). Any other architecture's system
calls (32-bit compatibility, x32) end the process. The program is classic BPF, built here
for x86-64 and AArch64.
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

_LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JUMP_ANY_BIT = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_FAIL = 0x00050000  # SECCOMP_RET_ERRNO, the errno in the low 16 bits

_NUMBER_OFFSET = 0  # struct seccomp_data: nr, arch, instruction_pointer, args[6]
_ARCH_OFFSET = 4
_FIRST_ARGUMENT_OFFSET = 16  # the low 32 bits on a little-endian machine

_CLONE_THREAD = 0x00010000
_X32_BIT = 0x40000000


@dataclass(frozen=True, slots=True)
class _Architecture:
    """What the filter needs of an architecture: its audit id and system call numbers."""

    audit: int
    clone: int
    clone3: int
    forks: tuple[int, ...]


_ARCHITECTURES = {
    "x86_64": _Architecture(0xC000003E, clone=56, clone3=435, forks=(57, 58)),
    "aarch64": _Architecture(0xC00000B7, clone=220, clone3=435, forks=()),
}


def _instruction(code: int, value: int, *, true: int = 0, false: int = 0) -> bytes:
    return struct.pack("=HBBI", code, true, false, value)


def supported() -> bool:
    """Whether a filter can be built for this machine's architecture."""
    return platform.machine() in _ARCHITECTURES


def no_new_processes() -> bytes:
    """The filter program (``struct sock_filter`` array) for this machine.

    Raises :class:`NotImplementedError` on an architecture it is not built for.
    """
    arch = _ARCHITECTURES.get(platform.machine())
    if arch is None:
        raise NotImplementedError(f"no seccomp filter for {platform.machine()}")
    program = [
        _instruction(_LOAD_WORD, _ARCH_OFFSET),
        _instruction(_JUMP_EQUAL, arch.audit, true=1),
        _instruction(_RETURN, _KILL_PROCESS),
        _instruction(_LOAD_WORD, _NUMBER_OFFSET),
        _instruction(_JUMP_AT_LEAST, _X32_BIT, false=1),
        _instruction(_RETURN, _KILL_PROCESS),
        _instruction(_JUMP_EQUAL, arch.clone3, false=1),
        _instruction(_RETURN, _FAIL | errno.ENOSYS),
    ]
    for number in arch.forks:
        program.append(_instruction(_JUMP_EQUAL, number, false=1))
        program.append(_instruction(_RETURN, _FAIL | errno.EAGAIN))
    program += [
        _instruction(_JUMP_EQUAL, arch.clone, true=1),
        _instruction(_RETURN, _ALLOW),
        _instruction(_LOAD_WORD, _FIRST_ARGUMENT_OFFSET),
        _instruction(_JUMP_ANY_BIT, _CLONE_THREAD, false=1),
        _instruction(_RETURN, _ALLOW),
        _instruction(_RETURN, _FAIL | errno.EAGAIN),
    ]
    return b"".join(program)
