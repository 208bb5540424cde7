"""CorpusBackend: the FTS5 index, ranking, refresh on change, fetch."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from openchatml.tools.browser import BackendError, CorpusBackend


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("feline whiskers", "corpus://local/animals/cats.html"),
        ("loyal canine", "corpus://local/animals/dogs.md"),
        ("magma eruption", "corpus://local/notes/volcano.txt"),
        ("All About Cats", "corpus://local/animals/cats.html"),
        ("erupting volcanoes?!", "corpus://local/notes/volcano.txt"),  # stemmed, punctuation dropped
    ],
)
def test_search_ranks_the_right_document_first(corpus: CorpusBackend, query: str, first: str) -> None:
    results = asyncio.run(corpus.search(query, 5))
    assert results[0].url == first
    assert results[0].snippet


def test_search_results_have_titles_and_respect_topn(corpus: CorpusBackend) -> None:
    results = asyncio.run(corpus.search("cats dogs volcano", 2))
    assert len(results) == 2
    titles = {r.url: r.title for r in asyncio.run(corpus.search("cats dogs volcano", 10))}
    assert titles == {
        "corpus://local/animals/cats.html": "All About Cats",
        "corpus://local/animals/dogs.md": "Dogs",
        "corpus://local/notes/volcano.txt": "volcano",
    }


def test_a_pdf_that_cannot_be_read_gives_no_text(corpus: CorpusBackend) -> None:
    urls = [r.url for r in asyncio.run(corpus.search("canine", 10))]
    assert urls == ["corpus://local/animals/dogs.md"]  # its raw bytes are never searched


def test_query_without_words_is_a_backend_error(corpus: CorpusBackend) -> None:
    with pytest.raises(BackendError, match="no words"):
        asyncio.run(corpus.search("?! --", 5))


def test_index_is_built_once_and_follows_changes(corpus: CorpusBackend, corpus_folder: Path) -> None:
    assert asyncio.run(corpus.refresh()) == 4  # the damaged PDF too, as an empty document
    assert asyncio.run(corpus.refresh()) == 0
    assert corpus.index_path.exists()

    new = corpus_folder / "notes" / "birds.md"
    new.write_text("# Birds\n\nParrots and penguins.\n", encoding="utf-8")
    assert asyncio.run(corpus.search("penguins", 3))[0].url == "corpus://local/notes/birds.md"

    cats = corpus_folder / "animals" / "cats.html"
    cats.write_text("<title>Cats</title><p>Now about tigers only.</p>", encoding="utf-8")
    stat = cats.stat()
    os.utime(cats, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))
    assert [r.url for r in asyncio.run(corpus.search("tigers", 3))] == ["corpus://local/animals/cats.html"]
    assert asyncio.run(corpus.search("whiskers feline", 3)) == []

    new.unlink()
    assert asyncio.run(corpus.search("penguins", 3)) == []
    assert asyncio.run(corpus.refresh()) == 0


def test_a_second_backend_reuses_the_stored_index(corpus: CorpusBackend) -> None:
    asyncio.run(corpus.refresh())
    again = CorpusBackend(corpus.folder, corpus.index_path)
    assert asyncio.run(again.refresh()) == 0
    assert asyncio.run(again.search("feline", 1))[0].url.endswith("cats.html")


def test_fetch_gives_page_text_links_and_raw_source(corpus: CorpusBackend) -> None:
    document = asyncio.run(corpus.fetch("corpus://local/animals/cats.html"))
    assert document.title == "All About Cats"
    assert "【0†our dogs】" in document.text
    assert document.links == ("corpus://local/animals/dogs.md", "https://en.wikipedia.org/wiki/Cat")
    source = asyncio.run(corpus.fetch("view-source:corpus://local/animals/cats.html"))
    assert source.text.startswith("<!doctype html>")
    assert source.links == ()


@pytest.mark.parametrize(
    "url",
    [
        "corpus://local/animals/missing.html",
        "corpus://other/animals/cats.html",
        "corpus://local/../../etc/passwd",
        "file:///etc/passwd",
        "https://example.com/",
    ],
)
def test_fetch_outside_the_corpus_is_a_backend_error(corpus: CorpusBackend, url: str) -> None:
    with pytest.raises(BackendError):
        asyncio.run(corpus.fetch(url))


def test_a_custom_name_changes_urls_and_source(corpus_folder: Path, tmp_path: Path) -> None:
    backend = CorpusBackend(corpus_folder, tmp_path / "named.sqlite3", name="handbook")
    assert backend.source == "corpus:handbook"
    assert asyncio.run(backend.search("feline", 1))[0].url == "corpus://handbook/animals/cats.html"


def pdf_with_text(text: str) -> bytes:
    """A one-page PDF whose page shows ``text`` in Helvetica (offsets computed, so that
    readers need not repair it)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_pdf_files_are_read_and_searched(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "keeper.pdf").write_bytes(pdf_with_text("The lighthouse keeper climbs 212 steps"))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    corpus = CorpusBackend(folder, tmp_path / "index.sqlite3")
    [hit] = asyncio.run(corpus.search("lighthouse keeper", 5))
    assert hit.url == "corpus://local/keeper.pdf"
    page = asyncio.run(corpus.fetch(hit.url))
    assert "212 steps" in page.text
    assert asyncio.run(corpus.refresh()) == 0  # the broken one is indexed (empty), not read again


def test_links_and_huge_files_are_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret words")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "note.txt").write_text("ordinary words")
    (folder / "linked.txt").symlink_to(outside / "secret.txt")
    (folder / "tunnel").symlink_to(outside, target_is_directory=True)
    with (folder / "huge.txt").open("wb") as huge:
        huge.truncate(33 * 1024 * 1024)  # sparse: past the size the corpus reads
    corpus = CorpusBackend(folder, tmp_path / "index.sqlite3")
    assert asyncio.run(corpus.search("secret host", 5)) == []
    assert [r.url for r in asyncio.run(corpus.search("ordinary", 5))] == ["corpus://local/note.txt"]
