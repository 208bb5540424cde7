"""A real headless browser for the tests: Debian's ``chromium`` driven by Selenium
through Debian's ``chromedriver``.

When the binaries are missing and this is root on Debian, the packages are installed
first (``apt-get update`` and a second try if the first install fails); otherwise
:func:`chromium_or_skip` skips the test, saying why. Selenium never downloads a browser
or a driver here: both paths are given.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def _apt_get(*args: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(
        ["apt-get", *args],
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=900,
    )


def _installed() -> bool:
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


def ensure_chromium() -> str | None:
    """``None`` when chromium and its driver are there (installed as root on Debian if need
    be); else why they are not."""
    if not _installed() and os.geteuid() == 0 and shutil.which("apt-get"):
        _apt_get("install", "-y", "-q", "chromium", "chromium-driver")
        if not _installed():
            _apt_get("update", "-q")
            _apt_get("install", "-y", "-q", "chromium", "chromium-driver")
    if _installed():
        return None
    return "Debian's chromium and chromium-driver are not installed and cannot be installed here (not root)"


def chromium_or_skip(width: int = 1400, height: int = 1000) -> Any:
    """A headless chromium under Selenium, its window ``width`` × ``height``; skips the
    test when the browser or Selenium is missing."""
    reason = ensure_chromium()
    if reason is not None:
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # as root in a container
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
