"""The python tool's kernels: state, output capture, pools, time limits and cancellation."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from openchatml.tools.base import HostedCall
from openchatml.tools.python import (
    KernelPool,
    PythonTool,
    Sandbox,
    SandboxUnavailableError,
    python_namespace,
)

T = TypeVar("T")


def with_pool(
    sandbox: Sandbox, root: Path, body: Callable[[KernelPool], Awaitable[T]], **options: float
) -> T:
    """Run ``body`` with a fresh pool on its own event loop; the pool is closed after."""

    async def main() -> T:
        pool = KernelPool(sandbox, root=root, **options)  # type: ignore[arg-type]
        try:
            return await body(pool)
        finally:
            await pool.close()

    return asyncio.run(main())


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def tagged_processes(tag: str) -> list[int]:
    """The host processes whose command line holds ``tag``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if tag.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_state_persists_across_cells(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> list[str | None]:
        first = await pool.run("conv", "import math\nx = 41", timeout=10)
        second = await pool.run("conv", "x + 1", timeout=10)
        third = await pool.run("conv", "math.sqrt(16)", timeout=10)
        return [first.value, second.value, third.value]

    assert with_pool(sandbox, pool_root, body) == [None, "42", "4.0"]


def test_output_value_and_traceback(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        printed = await pool.run(
            "k", "import sys\nprint('out')\nprint('err', file=sys.stderr)\n'v'", timeout=10
        )
        assert (printed.stdout, printed.stderr, printed.value, printed.error) == (
            "out\n",
            "err\n",
            "'v'",
            None,
        )
        assert printed.ok
        failed = await pool.run("k", "def f():\n    return 1 / 0\nf()", timeout=10)
        assert failed.error is not None and not failed.ok
        assert "ZeroDivisionError: division by zero" in failed.error
        assert 'File "<cell 2>", line 2, in f' in failed.error
        assert "runner" not in failed.error and "_execute" not in failed.error
        syntax = await pool.run("k", "def (:", timeout=10)
        assert syntax.error is not None and "SyntaxError" in syntax.error
        assert not syntax.state_lost
        silent = await pool.run("k", "y = 1", timeout=10)
        assert silent.text() == "[no output; use print() to see values]"
        c_level = await pool.run("k", "import os\nos.write(1, b'raw\\n')", timeout=10)
        assert c_level.stdout == "raw\n"
        exited = await pool.run("k", "raise SystemExit(2)", timeout=10)
        assert exited.error is not None and "SystemExit" in exited.error
        assert (await pool.run("k", "y", timeout=10)).value == "1"

    with_pool(sandbox, pool_root, body)


def test_long_output_is_cut(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        result = await pool.run("k", "print('x' * 100_000)", timeout=10)
        assert len(result.stdout) == sandbox.limits.output_chars
        assert result.stdout_dropped == 100_001 - sandbox.limits.output_chars
        assert "more bytes not shown" in result.text()

    with_pool(sandbox, pool_root, body)


def test_new_key_gets_a_fresh_kernel(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        await pool.run("a", "x = 1", timeout=10)
        other = await pool.run("b", "x", timeout=10)
        assert other.error is not None and "NameError" in other.error
        kernel_a, kernel_b = pool.kernel("a"), pool.kernel("b")
        assert kernel_a is not None and kernel_b is not None and kernel_a.pid != kernel_b.pid
        assert pool.work_dir("a") != pool.work_dir("b")

    with_pool(sandbox, pool_root, body)


def test_files_persist_in_the_work_dir(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        await pool.run("a", "open('/mnt/data/note.txt', 'w').write('kept')", timeout=10)
        assert (pool.work_dir("a") / "note.txt").read_text() == "kept"
        assert (await pool.run("a", "import os\nos.getcwd()", timeout=10)).value == "'/mnt/data'"

    with_pool(sandbox, pool_root, body)


def test_idle_kernels_are_stopped(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        await pool.run("a", "x = 1", timeout=10)
        kernel = pool.kernel("a")
        assert kernel is not None
        await asyncio.sleep(1.5)
        assert "a" not in pool and process_gone(kernel.pid)
        again = await pool.run("a", "x", timeout=10)
        assert again.restarted and again.error is not None and "NameError" in again.error
        assert again.text().startswith("[the kernel was restarted")

    with_pool(sandbox, pool_root, body, idle_timeout=0.5)


def test_least_recently_used_kernel_makes_room(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        for key in ("a", "b"):
            await pool.run(key, f"name = {key!r}", timeout=10)
        await pool.run("a", "name", timeout=10)  # "b" is now the least recently used
        evicted = pool.kernel("b")
        assert evicted is not None
        await pool.run("c", "name = 'c'", timeout=10)
        assert len(pool) == 2 and "b" not in pool and "a" in pool
        assert process_gone(evicted.pid)
        assert (await pool.run("a", "name", timeout=10)).value == "'a'"

    with_pool(sandbox, pool_root, body, max_kernels=2)


def test_time_limit_kills_the_kernel(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        await pool.run("k", "x = 1", timeout=10)
        kernel = pool.kernel("k")
        assert kernel is not None
        started = time.monotonic()
        result = await pool.run("k", "while True:\n    pass", timeout=1)
        assert time.monotonic() - started < 5
        assert result.timed_out and result.state_lost and not result.ok
        assert process_gone(kernel.pid) and not tagged_processes(kernel.tag)
        after = await pool.run("k", "x", timeout=10)
        assert after.restarted and after.error is not None and "NameError" in after.error

    with_pool(sandbox, pool_root, body)


def test_cancellation_kills_the_kernel(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        await pool.run("k", "import time\nx = 1", timeout=10)
        kernel = pool.kernel("k")
        assert kernel is not None and tagged_processes(kernel.tag)
        task = asyncio.create_task(pool.run("k", "time.sleep(60)", timeout=120))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - started < 2
        assert process_gone(kernel.pid) and not tagged_processes(kernel.tag)
        assert "k" not in pool
        after = await pool.run("k", "x", timeout=10)
        assert after.restarted and after.error is not None and "NameError" in after.error

    with_pool(sandbox, pool_root, body)


def test_close_kills_every_kernel(sandbox: Sandbox, pool_root: Path) -> None:
    async def body() -> list[str]:
        pool = KernelPool(sandbox, root=pool_root)
        await pool.run("a", "1", timeout=10)
        await pool.run("b", "1", timeout=10)
        tags = [kernel.tag for kernel in (pool.kernel("a"), pool.kernel("b")) if kernel is not None]
        await pool.close()
        return tags

    tags = asyncio.run(body())
    assert len(tags) == 2
    assert not any(tagged_processes(tag) for tag in tags)


def test_tool_answers_calls_and_times_out(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        tool = PythonTool(pool, "conversation-1")
        assert tool.namespace.name == "python"
        assert "stateful Jupyter notebook" in (tool.namespace.description or "")
        done = await tool.call(HostedCall("python", "call_1", body="print(6 * 7)"))
        assert done.ok and done.content == "42"
        late = await tool.call(HostedCall("python", "call_2", body="while True: pass", deadline_ms=500))
        assert not late.ok and late.error is not None and late.error.code == "E-TOOL-TIMEOUT"

    with_pool(sandbox, pool_root, body)


def test_tool_cancel_stops_a_running_call(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        tool = PythonTool(pool, "conversation-1")
        await tool.call(HostedCall("python", "call_1", body="import time"))
        kernel = pool.kernel("conversation-1")
        assert kernel is not None
        task = asyncio.create_task(tool.call(HostedCall("python", "call_2", body="time.sleep(60)")))
        await asyncio.sleep(0.5)
        await tool.cancel("call_2", "asked")
        await tool.cancel("call_2", "asked")
        with pytest.raises(asyncio.CancelledError):
            await task
        assert process_gone(kernel.pid)

    with_pool(sandbox, pool_root, body)


def test_namespace_states_the_time_limit() -> None:
    assert "after 120.0 seconds" in (python_namespace().description or "")
    assert "after 30.0 seconds" in (python_namespace(30).description or "")


def test_missing_bwrap_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailableError, match="needs bubblewrap"):
        Sandbox()
    assert Sandbox(unsafe=True).unsafe


def test_unsafe_kernel_runs_with_rlimits_only(pool_root: Path) -> None:
    async def body(pool: KernelPool) -> None:
        result = await pool.run(
            "k", "import resource\nresource.getrlimit(resource.RLIMIT_NOFILE)", timeout=10
        )
        limit = pool.sandbox.limits.open_files
        assert result.value == f"({limit}, {limit})"

    with_pool(Sandbox(unsafe=True), pool_root, body)
