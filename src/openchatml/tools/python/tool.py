"""gpt-oss's built-in ``python`` tool for one conversation: :class:`PythonTool`.

The body of a call to ``python`` is the code of one cell; it runs in the conversation's
kernel of a shared :class:`~.pool.KernelPool`, so variables and imports persist from
call to call, and files written to ``/mnt/data`` stay for the conversation. The prompt
shows the description gpt-oss was trained with, with the tool's own time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

from ...core.content import ToolNamespaceConfig
from ...core.errors import ToolTimeoutError
from ..base import FileOutput, HostedCall, ImageOutput, LogOutput, Provenance, ToolOutput, ToolResult
from ..errors import ToolFailedError
from .images import image_url
from .pool import KernelPool
from .result import PythonResult
from .sandbox import MOUNT_POINT

DEFAULT_TIMEOUT = 120.0
"""The seconds a cell may run, as the trained description says."""


def python_namespace(timeout: float = DEFAULT_TIMEOUT) -> ToolNamespaceConfig:
    """The ``python`` namespace gpt-oss was trained with, saying ``timeout`` seconds."""
    trained = ToolNamespaceConfig.python()
    if timeout == DEFAULT_TIMEOUT or trained.description is None:
        return trained
    described = trained.description.replace(f"{DEFAULT_TIMEOUT} seconds", f"{float(timeout)} seconds")
    return replace(trained, description=described)


class PythonTool:
    """The ``python`` tool of conversation ``key``, running cells in ``pool``.

    A call's ``deadline_ms`` shortens its time limit; past it the kernel is killed and
    the result is an ``E-TOOL-TIMEOUT`` failure carrying what the cell printed. An
    exception in the code is an ordinary result (its traceback is the output); a kernel
    that dies is an ``E-TOOL-FAILED`` failure.
    """

    def __init__(self, pool: KernelPool, key: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.pool = pool
        self.key = key
        self.timeout = timeout
        self._running: dict[str, asyncio.Task[PythonResult]] = {}

    @property
    def namespace(self) -> ToolNamespaceConfig:
        """The ``python`` namespace, as the prompt shows it."""
        return python_namespace(self.timeout)

    async def call(self, request: HostedCall) -> ToolResult:
        """Run ``request.body`` as the next cell of the conversation's kernel."""
        timeout = self.timeout
        if request.deadline_ms is not None:
            timeout = min(timeout, request.deadline_ms / 1000)
        task = asyncio.ensure_future(self.pool.run(self.key, request.body, timeout=timeout))
        self._running[request.call_id] = task
        try:
            result = await task
        except asyncio.CancelledError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise
        finally:
            self._running.pop(request.call_id, None)
        work_dir = self.pool.work_dir(self.key)
        images = await asyncio.to_thread(lambda: [image_url(work_dir, name) for name in result.images])
        return tool_result(result, timeout, images=tuple(url for url in images if url is not None))

    async def cancel(self, call_id: str, reason: str) -> None:
        """Stop call ``call_id`` if it still runs: its kernel is killed, its state lost."""
        task = self._running.pop(call_id, None)
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def tool_result(result: PythonResult, timeout: float, *, images: tuple[str, ...] = ()) -> ToolResult:
    """The :class:`ToolResult` of a cell's result: its logs, the files of its images and,
    as ``images`` gives them (``data:`` URLs), the images themselves."""
    content = result.text()
    outputs: list[ToolOutput] = []
    logs = "\n".join(text for text in (result.stdout, result.stderr) if text)
    if logs:
        outputs.append(LogOutput(logs))
    outputs += [FileOutput(f"{MOUNT_POINT}/{name}", "image/png") for name in result.images]
    outputs += [ImageOutput(url) for url in images]
    provenance = Provenance.now("python")
    if result.timed_out:
        error = ToolTimeoutError(f"the python cell ran past {timeout:g} s; the kernel was restarted")
        return ToolResult.failed(error, content=content, provenance=provenance, outputs=tuple(outputs))
    if result.state_lost:
        failure = ToolFailedError(result.error or "the python kernel stopped")
        return ToolResult.failed(failure, content=content, provenance=provenance, outputs=tuple(outputs))
    return ToolResult(content=content, provenance=provenance, outputs=tuple(outputs))
