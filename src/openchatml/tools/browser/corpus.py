"""A folder of local documents, searched with SQLite FTS5: :class:`CorpusBackend`.

Files ending in ``.html``/``.htm``, ``.md``/``.markdown``, ``.txt`` and ``.pdf`` (its text,
page by page, read by ``pypdf``) are read, up to :data:`MAX_FILE_BYTES` each; a link, or a
file whose real path leaves the folder, is not followed, and a PDF that cannot be read
gives no text. Each file's url is ``corpus://{name}/{relative path}``
(percent-encoded), so that relative links between corpus files resolve and the model
never sees the server's file system. The index lives in one SQLite file; every call first
compares the folder (paths, sizes, modification times) with the index and re-reads only
the files that changed, were added or were removed. Search ranks with BM25 (title weighted
10×) over Porter-stemmed words; any word of the query may match.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Final, TypeVar
from urllib.parse import quote, unquote, urlsplit

from pypdf import PdfReader

from .backend import BackendError, Document, SearchResult, split_view_source
from .page_text import PageText, page_text

CORPUS_SCHEME: Final = "corpus"
FORMATS: Final = {
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".pdf": "pdf",
}
"""File suffix → how the file is read."""
MAX_FILE_BYTES: Final = 32 * 1024 * 1024
"""The largest file of the folder that is read."""

T = TypeVar("T")

_WORD: Final = re.compile(r"\w+")
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS documents (
    url TEXT PRIMARY KEY, path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    title TEXT NOT NULL, text TEXT NOT NULL, links TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
    url UNINDEXED, title, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


def fts_query(query: str) -> str:
    """``query`` as an FTS5 expression: its words, each quoted, joined by ``OR``."""
    return " OR ".join(f'"{word}"' for word in _WORD.findall(query))


class CorpusBackend:
    """Searches and serves the documents under ``folder``; the index is kept at ``index_path``."""

    def __init__(self, folder: str | os.PathLike[str], index_path: str | os.PathLike[str], *,
                 name: str = "local", snippet_words: int = 24) -> None:  # fmt: skip
        self.folder = Path(folder).resolve()
        self.index_path = Path(index_path)
        self.name = name
        self.snippet_words = snippet_words
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        """``corpus:{name}``: what the tool description names as the source."""
        return f"{CORPUS_SCHEME}:{self.name}"

    def url_of(self, relative: str) -> str:
        """The url of the corpus file at ``relative`` (a POSIX path below the folder)."""
        return f"{CORPUS_SCHEME}://{self.name}/{quote(relative)}"

    def _relative_of(self, url: str) -> str | None:
        parts = urlsplit(url)
        if parts.scheme != CORPUS_SCHEME or parts.netloc != self.name:
            return None
        return unquote(parts.path).lstrip("/")

    async def search(self, query: str, topn: int) -> list[SearchResult]:
        """The ``topn`` best documents for ``query`` (BM25), with a snippet of matching text."""
        expression = fts_query(query)
        if not expression:
            raise BackendError(f"The query `{query}` has no words to search for.")
        return await self._run(self._search, expression, topn)

    async def fetch(self, url: str) -> Document:
        """The corpus document at ``url``; ``view-source:`` gives the file's raw text."""
        target, view_source = split_view_source(url)
        relative = self._relative_of(target)
        if relative is None:
            raise BackendError(f"`{target}` is not in the {self.source} corpus.")
        document = await self._run(self._fetch, target, relative, view_source)
        if document is None:
            raise BackendError(f"No document at `{target}` in the {self.source} corpus.")
        return document

    async def refresh(self) -> int:
        """Bring the index up to date with the folder; the number of files re-read."""
        return await asyncio.to_thread(self._in_connection, self._refresh, False)

    async def _run(self, work: Callable[..., T], *args: object) -> T:
        return await asyncio.to_thread(self._in_connection, lambda connection: work(connection, *args))

    def _in_connection(self, work: Callable[[sqlite3.Connection], T], refresh: bool = True) -> T:
        """``work`` run on a connection to the index (brought up to date first when ``refresh``)."""
        try:
            with self._lock:
                self.index_path.parent.mkdir(parents=True, exist_ok=True)
                with closing(sqlite3.connect(self.index_path)) as connection:
                    connection.executescript(_SCHEMA)
                    if refresh:
                        self._refresh(connection)
                    return work(connection)
        except (sqlite3.Error, OSError) as exc:
            raise BackendError(f"The {self.source} corpus cannot be read: {exc}") from exc

    def _files(self) -> Iterator[tuple[str, Path, os.stat_result]]:
        """The readable files of the folder: known suffix, no link, inside the folder,
        at most :data:`MAX_FILE_BYTES`."""
        for path in sorted(self.folder.rglob("*")):
            if path.suffix.lower() not in FORMATS or path.is_symlink() or not path.is_file():
                continue
            if not path.resolve().is_relative_to(self.folder):
                continue  # a linked folder on the way leads elsewhere
            stat = path.stat()
            if stat.st_size <= MAX_FILE_BYTES:
                yield path.relative_to(self.folder).as_posix(), path, stat

    def _refresh(self, connection: sqlite3.Connection) -> int:
        known = {
            row[0]: (row[1], row[2])
            for row in connection.execute("SELECT path, size, mtime_ns FROM documents")
        }
        changed = 0
        with connection:
            for relative, path, stat in self._files():
                if known.pop(relative, None) == (stat.st_size, stat.st_mtime_ns):
                    continue
                self._store(connection, relative, path, stat)
                changed += 1
            for relative in known:
                self._remove(connection, self.url_of(relative))
                changed += 1
        return changed

    def _store(self, connection: sqlite3.Connection, relative: str, path: Path, stat: os.stat_result) -> None:
        url = self.url_of(relative)
        self._remove(connection, url)
        kind = FORMATS[path.suffix.lower()]
        page = page_text(_file_text(path, kind), url, "text" if kind == "pdf" else kind)
        title = page.title if page.title != self.name else path.stem
        connection.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?)",
            (url, relative, stat.st_size, stat.st_mtime_ns, title, page.text, json.dumps(page.links)),
        )
        connection.execute("INSERT INTO passages VALUES (?, ?, ?)", (url, title, _searchable(page)))

    @staticmethod
    def _remove(connection: sqlite3.Connection, url: str) -> None:
        connection.execute("DELETE FROM documents WHERE url = ?", (url,))
        connection.execute("DELETE FROM passages WHERE url = ?", (url,))

    def _search(self, connection: sqlite3.Connection, expression: str, topn: int) -> list[SearchResult]:
        rows = connection.execute(
            "SELECT url, title, snippet(passages, 2, '', '', '…', ?) FROM passages "
            "WHERE passages MATCH ? ORDER BY bm25(passages, 0.0, 10.0, 1.0) LIMIT ?",
            (self.snippet_words, expression, max(topn, 0)),
        ).fetchall()
        return [
            SearchResult(url=url, title=title, snippet=" ".join(snippet.split()))
            for url, title, snippet in rows
        ]

    def _fetch(
        self, connection: sqlite3.Connection, url: str, relative: str, view_source: bool
    ) -> Document | None:
        row = connection.execute(
            "SELECT path, title, text, links FROM documents WHERE url = ?", (url,)
        ).fetchone()
        if row is None:
            return None
        path, title, text, links = row
        if view_source:
            file = self.folder / path
            raw = _file_text(file, FORMATS.get(file.suffix.lower(), "text"))
            return Document(url=url, title=title, text=raw)
        return Document(url=url, title=title, text=text, links=tuple(json.loads(links)))


def _file_text(path: Path, kind: str) -> str:
    """The text of the file at ``path``: as it is (UTF-8, bad bytes replaced), or for a PDF
    the text of its pages (none where the PDF cannot be read: it is kept as an empty
    document, so that it is not read again until it changes)."""
    if kind != "pdf":
        return path.read_text(encoding="utf-8", errors="replace")
    try:
        reader = PdfReader(path)
        return "\n\n".join(page.extract_text() or "" for page in reader.pages)
    except Exception:  # a damaged or hostile PDF gives no text, whatever the reader raised
        return ""


def _searchable(page: PageText) -> str:
    """The page text without link marks' ids and domains: only the words a reader sees."""
    return re.sub(r"【\d+†([^†】]*)(?:†[^†】]*)?】", r"\1", page.text)
