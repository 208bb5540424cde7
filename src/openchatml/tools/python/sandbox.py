"""Where a kernel runs: a bubblewrap sandbox plus resource limits.

:class:`Sandbox` turns a kernel's command line into one that runs under ``bwrap`` with
every namespace unshared (no network, its own process ids, no host user ids), a fresh
``/tmp``, the conversation's working folder read-write at ``/mnt/data``, the Python
installation and system libraries read-only and nothing else of the host: no ``/etc``
beyond the dynamic loader's cache and the time zone, no home folder, no server data.
All capabilities are dropped, nested user namespaces are disabled, the kernel gets its
own session, and it dies with its parent. :class:`KernelLimits` become rlimits set
before ``bwrap`` starts; root is exempt from ``RLIMIT_NPROC``, so under root a seccomp
filter forbids new processes instead (threads still work).

When ``bwrap`` is missing or cannot make a sandbox here, :class:`Sandbox` raises
:class:`SandboxUnavailableError` — unless it was made with ``unsafe=True``, which keeps
the rlimits and drops the confinement.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from . import seccomp

MOUNT_POINT = "/mnt/data"
"""Where a kernel sees its working folder inside the sandbox."""

_SYSTEM_ROOTS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")


class SandboxUnavailableError(RuntimeError):
    """The python tool cannot confine its kernels here (``bwrap`` missing or refused)."""


@dataclass(frozen=True, slots=True)
class KernelLimits:
    """The resources one kernel may use.

    ``cpu_seconds`` is CPU time over the kernel's whole life; ``memory_bytes`` its
    address space; ``processes`` the processes its user may have; ``file_bytes`` the
    largest file it may write; ``open_files`` its open descriptors; ``output_chars`` the
    characters of stdout and of stderr a result keeps.
    """

    cpu_seconds: int = 600
    memory_bytes: int = 2 * 1024**3
    processes: int = 64
    file_bytes: int = 256 * 1024**2
    open_files: int = 256
    output_chars: int = 20_000

    def apply(self) -> None:
        """Set these limits on the calling process (run in the child before ``exec``)."""
        for which, value in (
            (resource.RLIMIT_CPU, self.cpu_seconds),
            (resource.RLIMIT_AS, self.memory_bytes),
            (resource.RLIMIT_NPROC, self.processes),
            (resource.RLIMIT_FSIZE, self.file_bytes),
            (resource.RLIMIT_NOFILE, self.open_files),
            (resource.RLIMIT_CORE, 0),
        ):
            resource.setrlimit(which, (value, value))


def _python_roots() -> list[str]:
    """The folders the interpreter and its packages live in, outside ``/usr``."""
    roots: set[str] = set()
    executable = Path(sys.executable)
    for path in (
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        executable.parent,
        executable.resolve().parent,
    ):
        resolved = os.path.realpath(path)
        if resolved != "/usr" and not resolved.startswith("/usr/"):
            roots.add(resolved)
        if str(path) != resolved and not str(path).startswith("/usr/"):
            roots.add(str(path))
    return sorted(root for root in roots if not any(root.startswith(other + "/") for other in roots))


def _system_mounts() -> list[str]:
    """``bwrap`` arguments for ``/usr``, the top-level system folders and a little of ``/etc``."""
    args = ["--ro-bind", "/usr", "/usr"]
    for root in _SYSTEM_ROOTS:
        if os.path.islink(root):
            args += ["--symlink", os.readlink(root), root]
        elif os.path.isdir(root):
            args += ["--ro-bind", root, root]
    for path in _ETC_FILES:
        args += ["--ro-bind-try", path, path]
    for root in _python_roots():
        args += ["--ro-bind", root, root]
    return args


def kernel_environment(home: str) -> dict[str, str]:
    """The environment a kernel starts with: no variable of the server's."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/matplotlib" if home == MOUNT_POINT else f"{home}/.matplotlib",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


class SpawnOptions(TypedDict):
    """How the process that runs a confined command is spawned (``Popen`` keywords)."""

    preexec_fn: Callable[[], None]
    start_new_session: bool
    close_fds: bool
    pass_fds: tuple[int, ...]
    env: dict[str, str]
    cwd: str


class Sandbox:
    """How kernels start: under ``bwrap`` (or, when ``unsafe``, bare) with ``limits``.

    Raises :class:`SandboxUnavailableError` when not ``unsafe`` and ``bwrap`` is missing
    or fails to start a Python inside a sandbox.
    """

    def __init__(self, limits: KernelLimits | None = None, *, unsafe: bool = False) -> None:
        self.limits = limits or KernelLimits()
        self.unsafe = unsafe
        self.no_forks = os.geteuid() == 0 and not unsafe
        self.bwrap = None if unsafe else shutil.which("bwrap")
        if not unsafe:
            self._check()

    def _check(self) -> None:
        """Start ``python -c pass`` in an empty sandbox; raise when that fails."""
        if self.bwrap is None:
            raise SandboxUnavailableError(
                "the python tool needs bubblewrap: install it (apt-get install bubblewrap) "
                "or start with unsafe=True (--python-unsafe: rlimits only, no confinement)"
            )
        if self.no_forks and not seccomp.supported():
            raise SandboxUnavailableError(
                "the python tool cannot limit processes of root on this architecture; "
                "run the server as another user"
            )
        try:
            with tempfile.TemporaryDirectory(prefix="openchatml-python-check-") as empty:
                completed = self.run_sync(Path(empty), [sys.executable, "-I", "-c", "pass"], timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailableError(f"bwrap failed to start: {exc}") from None
        if completed.returncode != 0:
            reason = completed.stderr.decode(errors="replace").strip().splitlines()
            raise SandboxUnavailableError(
                "bwrap cannot make a sandbox here (user namespaces disabled?): "
                + (reason[-1] if reason else f"exit status {completed.returncode}")
            )

    def run_sync(
        self, work_dir: Path, argv: list[str], *, timeout: float
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``argv`` confined, to completion (its output captured)."""
        read_end = self.filter_descriptor()
        try:
            return subprocess.run(
                self.command(work_dir, argv, read_end),
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                **self.spawn_options(work_dir, read_end),
            )
        finally:
            if read_end is not None:
                os.close(read_end)

    def filter_descriptor(self) -> int | None:
        """A pipe's read end holding the seccomp program, when one is needed."""
        if not self.no_forks:
            return None
        read_end, write_end = os.pipe()
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(seccomp.no_new_processes())
        return read_end

    def command(self, work_dir: Path, argv: list[str], filter_fd: int | None = None) -> list[str]:
        """The command line that runs ``argv`` confined, seeing ``work_dir`` at ``/mnt/data``."""
        if self.bwrap is None:
            return argv
        args = [
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--uid",
            "1000",
            "--gid",
            "1000",
            "--hostname",
            "python",
            "--clearenv",
        ]
        for name, value in kernel_environment(MOUNT_POINT).items():
            args += ["--setenv", name, value]
        args += _system_mounts()
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        args += ["--bind", str(work_dir), MOUNT_POINT, "--chdir", MOUNT_POINT, "--remount-ro", "/"]
        if filter_fd is not None:
            args += ["--seccomp", str(filter_fd)]
        return [*args, "--", *argv]

    def spawn_options(self, work_dir: Path, filter_fd: int | None = None) -> SpawnOptions:
        """Keyword arguments for the process that runs :meth:`command`."""
        return SpawnOptions(
            preexec_fn=self.limits.apply,
            start_new_session=True,
            close_fds=True,
            pass_fds=() if filter_fd is None else (filter_fd,),
            env={} if self.bwrap else kernel_environment(str(work_dir)),
            cwd=str(work_dir),
        )
