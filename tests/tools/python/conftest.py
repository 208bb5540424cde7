"""Fixtures of the python tool's tests: a working sandbox (or a skip) and kernel pools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from bwrap_setup import ensure_bwrap

from openchatml.tools.python import KernelLimits, Sandbox, SandboxUnavailableError

TEST_LIMITS = KernelLimits(cpu_seconds=60, memory_bytes=1024**3, processes=32, file_bytes=16 * 1024**2)


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    """A bubblewrap sandbox with small limits; the test is skipped when none can be made."""
    if ensure_bwrap() is None:
        pytest.skip("bwrap is not installed and cannot be installed here (needs root on Debian)")
    try:
        return Sandbox(TEST_LIMITS)
    except SandboxUnavailableError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def sandbox_with() -> Callable[[KernelLimits], Sandbox]:
    """A factory of sandboxes with other limits (after the session's check)."""

    def make(limits: KernelLimits) -> Sandbox:
        if ensure_bwrap() is None:
            pytest.skip("bwrap is not installed")
        try:
            return Sandbox(limits)
        except SandboxUnavailableError as exc:
            pytest.skip(str(exc))

    return make


@pytest.fixture
def pool_root(tmp_path: Path) -> Path:
    """A folder for a pool's working folders."""
    root = tmp_path / "kernels"
    root.mkdir()
    return root
