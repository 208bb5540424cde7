"""One running kernel: a confined child Python that keeps its namespace between cells.

:meth:`Kernel.start` launches the runner (:mod:`.runner`) through a
:class:`~.sandbox.Sandbox` and waits for its ready frame; :meth:`Kernel.execute` sends a
cell and waits for its reply at most ``timeout`` seconds. A cell past its time, a kernel
that dies, and a cancelled :meth:`Kernel.execute` all end the kernel: its process group
is killed and the result says the state is lost. Cells of one kernel run one at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import sys
import time
from pathlib import Path
from typing import Any

from . import runner
from .result import PythonResult
from .sandbox import Sandbox

_RUNNER_SOURCE = Path(runner.__file__).read_text(encoding="utf-8")
_START_TIMEOUT = 30.0


class KernelStartError(RuntimeError):
    """A kernel did not come up (its sandbox or interpreter failed)."""


class Kernel:
    """A kernel process, its working folder and when it was last used."""

    def __init__(self, process: asyncio.subprocess.Process, work_dir: Path, tag: str) -> None:
        self.process = process
        self.work_dir = work_dir
        self.tag = tag
        """A random word on the kernel's command line (to find its processes)."""
        self.last_used = time.monotonic()
        self.lock = asyncio.Lock()

    @classmethod
    async def start(cls, sandbox: Sandbox, work_dir: Path) -> Kernel:
        """A ready kernel working in ``work_dir``. Raises :class:`KernelStartError`."""
        tag = f"openchatml-kernel-{secrets.token_hex(8)}"
        argv = [sys.executable, "-I", "-c", _RUNNER_SOURCE, tag, str(sandbox.limits.output_chars)]
        filter_fd = sandbox.filter_descriptor()
        log_path = work_dir.parent / f"{work_dir.name}.log"
        try:
            with open(log_path, "wb") as log:
                process = await asyncio.create_subprocess_exec(
                    *sandbox.command(work_dir, argv, filter_fd),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=log,
                    **sandbox.spawn_options(work_dir, filter_fd),
                )
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        kernel = cls(process, work_dir, tag)
        try:
            ready = await asyncio.wait_for(kernel._receive(), _START_TIMEOUT)
        except (TimeoutError, asyncio.IncompleteReadError, ValueError):
            ready = None
        if not ready or ready.get("ready") is not True:
            await kernel.kill()
            reason = log_path.read_text(errors="replace").strip().splitlines()
            raise KernelStartError(
                "the python kernel did not start: " + (reason[-1] if reason else "no reply")
            )
        return kernel

    @property
    def pid(self) -> int:
        """The host process id of the kernel's outermost process (``bwrap`` or Python)."""
        return self.process.pid

    @property
    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.returncode is None

    async def _receive(self) -> dict[str, Any]:
        """The next frame from the kernel. Raises on a short read or a bad frame."""
        assert self.process.stdout is not None
        header = await self.process.stdout.readexactly(runner.HEADER.size)
        (length,) = runner.HEADER.unpack(header)
        if length > runner.MAX_FRAME:
            raise ValueError(f"kernel frame of {length} bytes")
        message = json.loads(await self.process.stdout.readexactly(length))
        if not isinstance(message, dict):
            raise ValueError("kernel frame is not an object")
        return message

    async def execute(self, code: str, timeout: float) -> PythonResult:
        """Run ``code`` as the next cell; at most ``timeout`` seconds, else the kernel ends."""
        async with self.lock:
            self.last_used = time.monotonic()
            try:
                return await self._exchange(code, timeout)
            except asyncio.CancelledError:
                await asyncio.shield(self.kill())
                raise
            finally:
                self.last_used = time.monotonic()

    async def _exchange(self, code: str, timeout: float) -> PythonResult:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(runner.encode_frame({"code": code}))
            await self.process.stdin.drain()
            reply = await asyncio.wait_for(self._receive(), timeout)
        except TimeoutError:
            await self.kill()
            return PythonResult(
                error=f"the cell ran past its {timeout:g} s limit and was stopped; "
                "the kernel was restarted and its state is lost",
                timed_out=True,
                state_lost=True,
            )
        except (OSError, asyncio.IncompleteReadError, ValueError):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), 2.0)
            note = self._death_note()
            await self.kill()
            return PythonResult(error=note, state_lost=True)
        return PythonResult(
            stdout=str(reply.get("stdout", "")),
            stderr=str(reply.get("stderr", "")),
            value=reply.get("value"),
            error=reply.get("error"),
            images=tuple(str(name) for name in reply.get("images", ())),
            stdout_dropped=int(reply.get("stdout_dropped", 0)),
            stderr_dropped=int(reply.get("stderr_dropped", 0)),
        )

    def _death_note(self) -> str:
        status = self.process.returncode
        number = -status if status is not None and status < 0 else (status or 0) - 128
        if status is None:
            how = "stopped answering"
        elif number in signal.valid_signals():
            how = f"was killed by {signal.Signals(number).name}"
        else:
            how = f"exited (status {status})"
        return f"the kernel {how} (a resource limit, or the code ended it); its state is lost"

    async def kill(self) -> None:
        """End the kernel and everything it started; wait until it is gone."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()
