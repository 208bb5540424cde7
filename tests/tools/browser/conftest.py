"""A small corpus (HTML, Markdown, text, a damaged PDF) in a temporary folder, and a
browser over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from openchatml.tools.browser import Browser, CorpusBackend

CATS_HTML = """<!doctype html>
<html><head><title>All About Cats</title><script>var x = "feline";</script></head>
<body>
<h1>Cats</h1>
<p>The domestic cat is a small <b>feline</b> with whiskers and retractable claws.
Read about <a href="../animals/dogs.md">our dogs</a> or the
<a href="https://en.wikipedia.org/wiki/Cat">encyclopedia article</a>.</p>
<ul><li>Purring</li><li>Kneading <img alt="a cat kneading"></li></ul>
<p>Contact <a href="mailto:cats@example.com">us</a>. Brackets 【kept apart】.</p>
</body></html>
"""

DOGS_MD = """# Dogs

Dogs are loyal canine companions. They bark, fetch and wag their tails.

See also [the cats page](cats.html) and [volcanoes](../notes/volcano.txt).
"""


def volcano_text() -> str:
    """Three hundred numbered lines about volcanoes; line 150 mentions the caldera."""
    lines = [f"Line {n}: magma rises and the volcano erupts with lava and ash." for n in range(300)]
    lines[150] = "Line 150: the Caldera collapsed after the eruption [a special (regex) char line]."
    return "Volcano notes\n" + "\n".join(lines) + "\n"


def write_corpus(folder: Path) -> Path:
    """Write the test corpus under ``folder``; the folder."""
    (folder / "animals").mkdir(parents=True)
    (folder / "notes").mkdir()
    (folder / "animals" / "cats.html").write_text(CATS_HTML, encoding="utf-8")
    (folder / "animals" / "dogs.md").write_text(DOGS_MD, encoding="utf-8")
    (folder / "notes" / "volcano.txt").write_text(volcano_text(), encoding="utf-8")
    (folder / "notes" / "damaged.pdf").write_bytes(b"%PDF-1.4 canine")
    return folder


@pytest.fixture
def corpus_folder(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def corpus(corpus_folder: Path, tmp_path: Path) -> CorpusBackend:
    return CorpusBackend(corpus_folder, tmp_path / "index" / "corpus.sqlite3")


@pytest.fixture
def browser(corpus: CorpusBackend) -> Browser:
    return Browser(corpus, view_tokens=256)
