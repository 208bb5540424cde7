"""gpt-oss's built-in ``browser`` tool: a page stack with cursors, search backends, citations.

:class:`Browser` runs ``search`` / ``open`` / ``find`` on a :class:`BrowserState` over a
:class:`SearchBackend` — :class:`CorpusBackend` (local files in SQLite FTS5) or
:class:`HttpSearchBackend` (a web search API by URL); :class:`BrowserTool` serves it to the
tool router. :func:`cite` and :class:`CitationStream` turn the model's ``【cursor†L…】``
citations into links and ``url_citation`` annotations.
"""

from .backend import BackendError, Document, SearchBackend, SearchResult
from .browser import Browser, browser_namespace
from .citations import CitationStream, CitedText, UrlCitation, cite
from .corpus import CorpusBackend
from .result import BrowserError, BrowserErrorKind, BrowserResult
from .state import BrowserState, Page, PageKind
from .tool import BrowserTool
from .web_search import HttpSearchBackend

__all__ = [
    "BackendError",
    "Browser",
    "BrowserError",
    "BrowserErrorKind",
    "BrowserResult",
    "BrowserState",
    "BrowserTool",
    "CitationStream",
    "CitedText",
    "CorpusBackend",
    "Document",
    "HttpSearchBackend",
    "Page",
    "PageKind",
    "SearchBackend",
    "SearchResult",
    "UrlCitation",
    "browser_namespace",
    "cite",
]
