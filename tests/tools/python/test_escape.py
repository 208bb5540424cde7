"""Code that tries to get out of the python tool's sandbox: every attempt is contained.

Each case runs in a real ``bwrap`` sandbox (skipped when none can be made) and must end
as a tool error or a harmless result, with the test process — the server's stand-in —
unharmed and the host untouched.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from openchatml.tools.python import KernelLimits, KernelPool, PythonResult, Sandbox

T = TypeVar("T")


def run_cells(
    sandbox: Sandbox, root: Path, cells: list[tuple[str, str]], timeout: float = 20
) -> list[PythonResult]:
    """Run ``(key, code)`` cells in order in one fresh pool; their results."""

    async def main() -> list[PythonResult]:
        pool = KernelPool(sandbox, root=root)
        try:
            return [await pool.run(key, code, timeout=timeout) for key, code in cells]
        finally:
            await pool.close()

    return asyncio.run(main())


def with_pool(sandbox: Sandbox, root: Path, body: Callable[[KernelPool], Awaitable[T]]) -> T:
    async def main() -> T:
        pool = KernelPool(sandbox, root=root)
        try:
            return await body(pool)
        finally:
            await pool.close()

    return asyncio.run(main())


def test_no_network(sandbox: Sandbox, pool_root: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        code = (
            "import socket\n"
            f"for address in [('127.0.0.1', {port}), ('1.1.1.1', 80), ('8.8.8.8', 53)]:\n"
            "    try:\n"
            "        socket.create_connection(address, timeout=3)\n"
            "        print('connected', address)\n"
            "    except OSError as exc:\n"
            "        print('refused', address, type(exc).__name__)\n"
            "socket.if_nameindex()"
        )
        (result,) = run_cells(sandbox, pool_root, [("k", code)])
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert result.error is None, result.error
    assert "connected" not in result.stdout and result.stdout.count("refused") == 3
    assert result.value == "[(1, 'lo')]"


def test_no_host_secrets(
    sandbox: Sandbox, pool_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "secret.txt").write_text("server-secret")
    monkeypatch.setenv("OPENCHATML_HOME", str(data))
    monkeypatch.setenv("OPENCHATML_API_KEY", "api-secret")
    code = (
        "import os\n"
        f"for path in ['/etc/shadow', '/etc/passwd', {str(data / 'secret.txt')!r}, '/root/.bash_history']:\n"
        "    try:\n"
        "        print(open(path).read())\n"
        "    except OSError as exc:\n"
        "        print('denied', path, type(exc).__name__)\n"
        "sorted(k for k in os.environ if 'OPENCHATML' in k or 'KEY' in k)"
    )
    (result,) = run_cells(sandbox, pool_root, [("k", code)])
    assert result.error is None, result.error
    assert result.stdout.count("denied") == 4
    assert "server-secret" not in result.text() and "root:" not in result.stdout
    assert result.value == "[]"


def test_no_writes_outside_the_work_dir(sandbox: Sandbox, pool_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "escaped.txt"
    code = (
        "import os\n"
        f"for path in [{str(outside)!r}, '/usr/escaped.txt', '/escaped.txt', '/etc/escaped']:\n"
        "    try:\n"
        "        os.makedirs(os.path.dirname(path), exist_ok=True)\n"
        "        open(path, 'w').write('x')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('denied', path, type(exc).__name__)\n"
        "open('/tmp/scratch', 'w').write('ok')\n"
        "open('/mnt/data/kept', 'w').write('ok')"
    )
    (result,) = run_cells(sandbox, pool_root, [("k", code)])
    assert result.error is None, result.error
    # the test's own folder lies under /tmp, which the kernel has a private one of
    assert result.stdout.count("denied") == 3 and "wrote /usr" not in result.stdout
    assert (
        not outside.exists() and not Path("/usr/escaped.txt").exists() and not Path("/escaped.txt").exists()
    )
    assert [path.name for path in pool_root.rglob("kept")] == ["kept"]


def test_fork_bomb_is_contained(sandbox: Sandbox, pool_root: Path) -> None:
    bomb = "import os\nwhile True:\n    os.fork()"
    started = time.monotonic()
    bombed, after = run_cells(sandbox, pool_root, [("k", bomb), ("k", "'still here'")], timeout=20)
    assert time.monotonic() - started < 25
    assert not bombed.ok
    assert bombed.timed_out or (bombed.error is not None and "BlockingIOError" in bombed.error)
    assert after.value == "'still here'" or after.restarted


def test_memory_bomb_is_contained(sandbox: Sandbox, pool_root: Path) -> None:
    bombs = [
        "x = bytearray(64 * 1024**3)",
        "def grow():\n    chunks = []\n    while True:\n"
        "        chunks.append(bytearray(64 * 1024**2))\ngrow()",
    ]
    first, second, after = run_cells(sandbox, pool_root, [("k", bombs[0]), ("k", bombs[1]), ("k", "1 + 1")])
    for result in (first, second):
        assert result.error is not None and "MemoryError" in result.error
    assert after.value == "2"


def test_cpu_limit_ends_a_busy_kernel(
    sandbox_with: Callable[[KernelLimits], Sandbox], pool_root: Path
) -> None:
    busy = sandbox_with(KernelLimits(cpu_seconds=1))
    started = time.monotonic()
    (result,) = run_cells(busy, pool_root, [("k", "while True:\n    pass")], timeout=60)
    assert time.monotonic() - started < 15
    assert result.state_lost and not result.timed_out
    assert result.error is not None and "killed by SIG" in result.error


def test_infinite_loop_hits_the_wall_limit(sandbox: Sandbox, pool_root: Path) -> None:
    started = time.monotonic()
    (result,) = run_cells(
        sandbox, pool_root, [("k", "import time\nwhile True:\n    time.sleep(0.01)")], timeout=1
    )
    assert time.monotonic() - started < 5
    assert result.timed_out and result.state_lost


def test_killing_the_parent_is_harmless(sandbox: Sandbox, pool_root: Path) -> None:
    code = (
        "import os, signal\n"
        "parent = os.getppid()\n"
        "for number in (signal.SIGTERM, signal.SIGKILL):\n"
        "    try:\n"
        "        os.kill(parent, number)\n"
        "    except OSError as exc:\n"
        "        print(type(exc).__name__)\n"
        "parent"
    )
    attack, after = run_cells(sandbox, pool_root, [("k", code), ("k", "'alive'")])
    assert attack.value == "1" or attack.state_lost
    assert after.value == "'alive'" or after.restarted


def test_no_signals_to_host_processes(sandbox: Sandbox, pool_root: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:

        async def body(pool: KernelPool) -> list[PythonResult]:
            probe = await pool.run(
                "k", "import os\n(os.getpid(), os.getppid(), sorted(os.listdir('/proc'))[:0])", timeout=10
            )
            assert probe.value == "(2, 1, [])", probe
            targets = [sleeper.pid, os.getpid(), 1]
            code = (
                "import os, signal\n"
                f"for pid in {targets!r}:\n"
                "    try:\n"
                "        os.kill(pid, signal.SIGKILL)\n"
                "        print('sent', pid)\n"
                "    except OSError as exc:\n"
                "        print('refused', pid, type(exc).__name__)\n"
                "pids = [name for name in os.listdir('/proc') if name.isdigit()]\n"
                "if os.getpid() == 2 and len(pids) <= 3:\n"
                "    try:\n"
                "        os.kill(-1, signal.SIGKILL)\n"
                "    except ProcessLookupError:\n"
                "        print('nobody to signal')\n"
                "len(pids)"
            )
            return [probe, await pool.run("k", code, timeout=10)]

        _, attack = with_pool(sandbox, pool_root, body)
        assert sleeper.poll() is None
        assert f"sent {sleeper.pid}" not in attack.stdout and f"sent {os.getpid()}" not in attack.stdout
        assert attack.value is not None and int(attack.value) <= 3, attack
        assert "nobody to signal" in attack.stdout
    finally:
        sleeper.kill()
        sleeper.wait()


def test_no_access_to_another_conversation(sandbox: Sandbox, pool_root: Path) -> None:
    async def body(pool: KernelPool) -> PythonResult:
        await pool.run("alice", "open('/mnt/data/diary.txt', 'w').write('alice-secret')", timeout=10)
        alice_dir = pool.work_dir("alice")
        assert (alice_dir / "diary.txt").read_text() == "alice-secret"
        code = (
            "import os\n"
            f"for path in [{str(alice_dir / 'diary.txt')!r}, '/mnt/data/diary.txt', {str(pool.root)!r}]:\n"
            "    try:\n"
            "        print(os.listdir(path) if os.path.isdir(path) else open(path).read())\n"
            "    except OSError as exc:\n"
            "        print('denied', type(exc).__name__)\n"
        )
        return await pool.run("bob", code, timeout=10)

    result = with_pool(sandbox, pool_root, body)
    assert result.error is None, result.error
    assert result.stdout.count("denied") == 3 and "alice-secret" not in result.stdout
