"""Where the browser's pages come from: the :class:`SearchBackend` protocol.

A backend answers two questions, both async: ``search(query, topn)`` → ranked
:class:`SearchResult` (url, title, snippet) and ``fetch(url)`` → a :class:`Document` (its
page text with numbered link marks, see :mod:`.page_text`). It reports every failure as
:class:`BackendError`, whose message is shown to the model. Two backends ship:
:class:`~.corpus.CorpusBackend` (local files in SQLite FTS5) and
:class:`~.web_search.HttpSearchBackend` (a web search API by URL).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

VIEW_SOURCE_PREFIX: Final = "view-source:"
"""``open(view_source=true)`` fetches ``view-source:{url}``: the document's raw text."""


class BackendError(Exception):
    """A search or fetch that failed; the message is shown to the model as is."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One search hit: where it is, its title, and a short snippet of matching text."""

    url: str
    title: str
    snippet: str


@dataclass(frozen=True, slots=True)
class Document:
    """A fetched document as page text: ``links[id]`` is the url of the mark ``【id†…】``."""

    url: str
    title: str
    text: str
    links: tuple[str, ...] = ()


@runtime_checkable
class SearchBackend(Protocol):
    """A search engine and document store for the browser tool."""

    @property
    def source(self) -> str:
        """What the backend searches, for the tool description's ``sources=`` line."""
        ...

    async def search(self, query: str, topn: int) -> list[SearchResult]:
        """At most ``topn`` results for ``query``, best first; raises :class:`BackendError`."""
        ...

    async def fetch(self, url: str) -> Document:
        """The document at ``url`` (``view-source:`` prefix: its raw text); raises
        :class:`BackendError`."""
        ...


def split_view_source(url: str) -> tuple[str, bool]:
    """``url`` without a ``view-source:`` prefix, and whether it had one."""
    if url.startswith(VIEW_SOURCE_PREFIX):
        return url[len(VIEW_SOURCE_PREFIX) :], True
    return url, False


def truncate(text: str, limit: int = 1024) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
