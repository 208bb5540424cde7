"""openai-harmony's own test suite, run against ``openchatml.harmony``.

The ``openai-harmony==0.0.8`` sdist holds ``tests/test_harmony.py`` and its
``test-data/``. It is fetched once from the package index pip uses (its simple page, as
pip reads it: the configured ``index-url`` and ``extra-index-url``, else PyPI), checked
against a pinned sha256, and cached under ``$OPENCHATML_HOME/reference/``. The test file is
extracted with its data, its ``from openai_harmony import`` becomes ``from
openchatml.harmony import``, and pytest runs it in a child process: every test must pass.
Where no index can be reached and nothing is cached, the test is skipped with the reason.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Final

import pytest

from engine_process import locked, openchatml_home

SDIST: Final = "openai_harmony-0.0.8.tar.gz"
SDIST_SHA256: Final = "6e43f98e6c242fa2de6f8ea12eab24af63fa2ed3e89c06341fb9d92632c5cbdf"
PROJECT: Final = "openai-harmony"
TESTS: Final = 42
"""How many tests the suite holds (its parametrised cases counted one by one)."""
IMPORT: Final = "from openai_harmony import ("


def _pip_settings(name: str) -> str | None:
    """pip's configured value of ``name`` (environment first, then ``download``,
    ``install`` and ``global`` sections), or ``None``."""
    try:
        from pip._internal.configuration import Configuration

        config = Configuration(isolated=False)
        config.load()
    except Exception:  # pip's internals moved: the environment and the default remain
        return None
    for section in (":env:", "download", "install", "global"):
        try:
            return str(config.get_value(f"{section}.{name}"))
        except Exception:  # pip raises ConfigurationError for a missing key
            continue
    return None


def index_urls() -> list[str]:
    """The simple-index URLs pip would read, in its order: ``index-url``, then the extras."""
    main = os.environ.get("PIP_INDEX_URL") or _pip_settings("index-url")
    if not main:
        try:
            from pip._internal.models.index import PyPI

            main = PyPI.simple_url
        except ImportError:
            main = "https://pypi.org/simple"
    extras = os.environ.get("PIP_EXTRA_INDEX_URL") or _pip_settings("extra-index-url") or ""
    return [main, *extras.split()]


def _sdist_url(index: str) -> str | None:
    """The URL of :data:`SDIST` on the simple page of :data:`PROJECT` in ``index``."""
    page = index.rstrip("/") + f"/{PROJECT}/"
    if page.startswith("file:"):
        folder = Path(urllib.request.url2pathname(urllib.parse.urlparse(page).path))
        found = folder / SDIST
        return found.as_uri() if found.is_file() else None
    with urllib.request.urlopen(page, timeout=30) as reply:
        html = reply.read().decode("utf-8", "replace")
    for href in re.findall(r'href="([^"]+)"', html):
        if href.split("#", 1)[0].endswith("/" + SDIST) or href.split("#", 1)[0] == SDIST:
            return urllib.parse.urljoin(page, href.split("#", 1)[0])
    return None


def fetch_sdist(cache: Path) -> Path:
    """The sdist, from the cache or the first index that has it; skips if none answers."""
    target = cache / SDIST
    with locked(cache / ".lock"):
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == SDIST_SHA256:
            return target
        problems: list[str] = []
        for index in index_urls():
            try:
                url = _sdist_url(index)
                if url is None:
                    problems.append(f"{index}: no {SDIST}")
                    continue
                with urllib.request.urlopen(url, timeout=60) as reply:
                    data = reply.read()
            except (OSError, urllib.error.URLError) as exc:
                problems.append(f"{index}: {exc}")
                continue
            digest = hashlib.sha256(data).hexdigest()
            assert digest == SDIST_SHA256, f"{url}: sha256 {digest}, expected {SDIST_SHA256}"
            target.write_bytes(data)
            return target
    pytest.skip(f"{SDIST} could not be fetched from any package index: {'; '.join(problems)}")


def extract_suite(sdist: Path, folder: Path) -> Path:
    """The suite's test file (import switched) and data under ``folder``; returns the file."""
    root = f"{SDIST.removesuffix('.tar.gz')}/"
    with tarfile.open(sdist) as archive:
        members = [
            m
            for m in archive.getmembers()
            if m.isfile()
            and (m.name == root + "tests/test_harmony.py" or m.name.startswith(root + "test-data/"))
        ]
        for member in members:
            out = folder / member.name.removeprefix(root)
            out.parent.mkdir(parents=True, exist_ok=True)
            reader = archive.extractfile(member)
            assert reader is not None
            out.write_bytes(reader.read())
    test_file = folder / "tests" / "test_harmony.py"
    source = test_file.read_text()
    assert source.count(IMPORT) == 1, "the suite's import of openai_harmony changed"
    source = source.replace(IMPORT, "from openchatml.harmony import (")
    assert "openai_harmony" not in source.replace("openai_harmony.", "")
    test_file.write_text(source)
    (folder / "pytest.ini").write_text("[pytest]\n")
    return test_file


def test_reference_suite_passes_against_the_drop_in(tmp_path: Path) -> None:
    sdist = fetch_sdist(openchatml_home() / "reference")
    test_file = extract_suite(sdist, tmp_path)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(test_file),
            "-c",
            str(tmp_path / "pytest.ini"),
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert re.search(rf"\b{TESTS} passed\b", run.stdout), run.stdout[-2000:]
