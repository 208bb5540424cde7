"""Debian's ``bubblewrap`` for the python tool's tests.

When ``bwrap`` is missing and this is root on Debian, the package is installed first
(``apt-get update`` and a second try if the first install fails); otherwise the tests
that need it are skipped, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess


def _apt_get(*args: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(
        ["apt-get", *args],
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=600,
    )


def ensure_bwrap() -> str | None:
    """The path of ``bwrap``, installing Debian's package as root if need be."""
    found = shutil.which("bwrap")
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        _apt_get("install", "-y", "-q", "bubblewrap")
        if shutil.which("bwrap") is None:
            _apt_get("update", "-q")
            _apt_get("install", "-y", "-q", "bubblewrap")
        found = shutil.which("bwrap")
    return found
