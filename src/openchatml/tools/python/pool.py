"""Kernels by conversation: :class:`KernelPool`.

Each key (a conversation id) gets its own kernel and working folder under the pool's
root, started on its first cell. Kernels idle longer than ``idle_timeout`` seconds are
stopped (by a background task, and before every cell), and when ``max_kernels`` are
running the least recently used idle one makes room. A stopped kernel's working folder
stays until :meth:`KernelPool.close`; the next cell of its key runs in a fresh kernel and
its result says so. :meth:`KernelPool.close` kills every kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import shutil
import tempfile
import time
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path

from .kernel import Kernel, KernelStartError
from .result import PythonResult
from .sandbox import Sandbox


class KernelPool:
    """Kernels by key, each confined by ``sandbox``, in folders under ``root``.

    ``root`` defaults to a fresh temporary folder the pool removes on :meth:`close`.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        root: Path | None = None,
        max_kernels: int = 16,
        idle_timeout: float | None = 600.0,
    ) -> None:
        self.sandbox = sandbox
        self.max_kernels = max_kernels
        self.idle_timeout = idle_timeout
        self._owns_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="openchatml-python-")) if root is None else root
        self._kernels: OrderedDict[str, Kernel] = OrderedDict()
        self._lost: set[str] = set()
        self._starting = asyncio.Lock()
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False

    def __len__(self) -> int:
        return len(self._kernels)

    def __contains__(self, key: object) -> bool:
        return key in self._kernels

    def kernel(self, key: str) -> Kernel | None:
        """The running kernel of ``key``, if any."""
        return self._kernels.get(key)

    def work_dir(self, key: str) -> Path:
        """The host folder ``key``'s kernel sees as ``/mnt/data``."""
        return self.root / hashlib.sha256(key.encode()).hexdigest()[:24]

    async def run(self, key: str, code: str, *, timeout: float) -> PythonResult:
        """Run ``code`` as the next cell of ``key``'s kernel, starting one if need be.

        Cancelling the call kills the kernel (its state is lost) and re-raises.
        """
        if self._closed:
            raise RuntimeError("the kernel pool is closed")
        self._start_reaper()
        await self.reap_idle()
        try:
            kernel = await self._kernel_for(key)
        except KernelStartError as exc:
            return PythonResult(error=str(exc), state_lost=True)
        restarted = key in self._lost
        self._lost.discard(key)
        try:
            result = await kernel.execute(code, timeout)
        except asyncio.CancelledError:
            self._forget(key, kernel)
            raise
        if not kernel.alive:
            self._forget(key, kernel)
        if restarted:
            return replace(result, restarted=True)
        return result

    async def _kernel_for(self, key: str) -> Kernel:
        async with self._starting:
            kernel = self._kernels.get(key)
            if kernel is not None and kernel.alive:
                self._kernels.move_to_end(key)
                return kernel
            if kernel is not None:
                self._forget(key, kernel)
            await self._make_room()
            work_dir = self.work_dir(key)
            work_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            kernel = await Kernel.start(self.sandbox, work_dir)
            self._kernels[key] = kernel
            return kernel

    async def _make_room(self) -> None:
        """Stop least recently used idle kernels until a new one fits."""
        while len(self._kernels) >= self.max_kernels:
            idle = next((key for key, kernel in self._kernels.items() if not kernel.lock.locked()), None)
            if idle is None:
                return
            await self.stop(idle)

    def _forget(self, key: str, kernel: Kernel) -> None:
        if self._kernels.get(key) is kernel:
            del self._kernels[key]
        self._lost.add(key)

    async def stop(self, key: str) -> bool:
        """Kill ``key``'s kernel, even mid-cell (that cell reports the loss); whether one ran."""
        kernel = self._kernels.pop(key, None)
        if kernel is None:
            return False
        self._lost.add(key)
        await kernel.kill()
        return True

    async def reap_idle(self) -> int:
        """Stop the kernels idle for longer than ``idle_timeout``; how many were stopped."""
        if self.idle_timeout is None:
            return 0
        now = time.monotonic()
        stale = [
            key
            for key, kernel in self._kernels.items()
            if not kernel.lock.locked() and now - kernel.last_used > self.idle_timeout
        ]
        for key in stale:
            await self.stop(key)
        return len(stale)

    def _start_reaper(self) -> None:
        if self.idle_timeout is None or (self._reaper is not None and not self._reaper.done()):
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap_forever(self.idle_timeout))

    async def _reap_forever(self, idle_timeout: float) -> None:
        while True:
            await asyncio.sleep(max(idle_timeout / 2, 0.5))
            await self.reap_idle()

    async def close(self) -> None:
        """Kill every kernel; remove the root folder when the pool made it."""
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for key in list(self._kernels):
            await self.stop(key)
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)
