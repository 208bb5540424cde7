"""docs/cli.md shows what the commands print: every ``$ openchatml …`` example of its
``console`` blocks is run in a shell and its output (stdout and stderr as a terminal shows
them) compared with the lines below it; ``…`` in the document stands for any text."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "cli.md"

_CONSOLE = re.compile(r"```console\n(.*?)```", re.DOTALL)
_FILE = re.compile(r"`([\w.-]+)` (?:is|holds):?\n\n```text\n(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Example:
    """One ``$ command`` of the document and the output shown under it."""

    command: str
    output: str


def examples(doc: str) -> list[Example]:
    """Every ``$ …`` line of the ``console`` blocks, with the lines up to the next one
    (``$ echo $?`` goes with the command before it)."""
    found: list[Example] = []
    for block in _CONSOLE.findall(doc):
        command: str | None = None
        lines: list[str] = []
        for line in [*block.splitlines(), "$ "]:
            if not line.startswith("$ "):
                lines.append(line)
                continue
            if command is not None:
                output = "\n".join(lines).strip("\n")
                if command == "echo $?" and found:
                    last = found.pop()
                    command, output = f"{last.command}; echo $?", f"{last.output}\n{output}"
                found.append(Example(command, output))
            command, lines = line[2:], []
    return found


def example_files(doc: str) -> dict[str, str]:
    """The files the examples read: a ``text`` block after "`NAME` is" (its last newline is
    not part of the file)."""
    return {name: body.removesuffix("\n") for name, body in _FILE.findall(doc)}


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected`` where each ``…`` stands for any text."""
    pattern = "(?s:.*?)".join(re.escape(piece) for piece in expected.split("…"))
    return re.fullmatch(pattern, actual) is not None


DOC_TEXT = DOC.read_text(encoding="utf-8")
EXAMPLES = examples(DOC_TEXT)


def test_the_document_has_examples_and_their_files() -> None:
    assert len(EXAMPLES) >= 15
    assert {"broken.txt", "chat.txt", "call.harmony.txt"} <= set(example_files(DOC_TEXT))
    assert all(example.command.startswith(("openchatml ", "printf ", "echo ")) for example in EXAMPLES)


def test_the_matcher_holds_text_outside_the_ellipses() -> None:
    assert matches("a…c", "abbbc") and matches("a…c", "a\nb\nc") and matches("abc", "abc")
    assert not matches("a…c", "abd") and not matches("abc", "abcd") and not matches("…c", "cd")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the document's files, ``examples/`` and an ``openchatml`` command."""
    folder = tmp_path_factory.mktemp("cli-docs")
    shutil.copytree(ROOT / "examples", folder / "examples")
    for name, body in example_files(DOC_TEXT).items():
        (folder / name).write_text(body, encoding="utf-8")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    command = bin_dir / "openchatml"
    command.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c "
        '\'from openchatml.cli import main; main(prog_name="openchatml")\' "$@"\n',
        encoding="utf-8",
    )
    command.chmod(0o755)
    return folder


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.command[:60] for e in EXAMPLES])
def test_documented_example(workdir: Path, example: Example) -> None:
    env = {
        **os.environ,
        "PATH": f"{workdir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1",
    }
    done = subprocess.run(
        ["bash", "-c", f"{{ {example.command}; }} 2>&1"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    actual = done.stdout.rstrip("\n")
    assert matches(example.output, actual), (
        f"$ {example.command}\n--- documented\n{example.output}\n--- printed\n{actual}"
    )
