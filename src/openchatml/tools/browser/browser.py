"""gpt-oss's ``browser`` tool: ``search``, ``open`` and ``find`` over a :class:`SearchBackend`.

Theory of operation. Every action that succeeds pushes one page on the
:class:`BrowserState` and shows a window of it (:mod:`.display`):

* ``search(query, topn)`` pushes the results page; its link ``【i†title†domain】`` opens
  result ``i``.
* ``open(id, cursor, loc, num_lines, view_source)``: ``id`` a number follows that link of
  the page at ``cursor`` (a page already open is not fetched again); ``id`` a string
  fetches that URL afresh; no ``id`` scrolls the page at ``cursor`` to ``loc``. Without
  ``loc`` a find match opens 4 lines above the match, anything else at line 0.
* ``find(pattern, cursor)`` pushes a page of the case-insensitive exact matches in the page
  at ``cursor``; its link ``n`` opens the document at match ``n``.

A failed action pushes nothing (a page whose window cannot be shown is taken off again)
and comes back as a :class:`BrowserResult` with ``error`` set and the message as text;
no exception escapes :meth:`Browser.call`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any, Final

from openchatml.core.content import BROWSER_NAMESPACE, ToolNamespaceConfig

from .backend import VIEW_SOURCE_PREFIX, BackendError, Document, SearchBackend, split_view_source, truncate
from .display import find_page, render_window, search_page, window_end, wrap_lines
from .result import BrowserError, BrowserErrorKind, BrowserResult
from .state import BrowserState, Page, PageKind

logger = logging.getLogger(__name__)

ACTIONS: Final = ("search", "open", "find")
FIND_LEAD_LINES: Final = 4
"""A find match opens this many lines above the matching line."""


def browser_namespace(source: str = "web") -> ToolNamespaceConfig:
    """The ``browser`` namespace gpt-oss was trained with, its ``sources=`` line naming ``source``."""
    description = BROWSER_NAMESPACE.description or ""
    head, _, _ = description.rpartition("\nsources=")
    return dataclasses.replace(BROWSER_NAMESPACE, description=f"{head}\nsources={source} (default: {source})")


class Browser:
    """The browser's actions over ``backend``; the page stack is the caller's ``state``.

    ``view_tokens`` is the size of a window opened without ``num_lines``;
    ``max_search_results`` caps ``topn``.
    """

    def __init__(
        self, backend: SearchBackend, *, view_tokens: int = 1024, max_search_results: int = 20
    ) -> None:
        self.backend = backend
        self.view_tokens = view_tokens
        self.max_search_results = max_search_results

    @property
    def namespace(self) -> ToolNamespaceConfig:
        """The ``browser`` namespace for the prompt, with the backend's source."""
        return browser_namespace(self.backend.source)

    async def call(self, action: str, args: Mapping[str, Any], state: BrowserState) -> BrowserResult:
        """Run ``browser.{action}`` with ``args`` (the call's JSON object) on ``state``."""
        try:
            if not isinstance(args, Mapping):
                raise BrowserError(BrowserErrorKind.BAD_ARGUMENTS, "The arguments must be a JSON object.")
            if action == "search":
                return await self.search(
                    state,
                    _text(args, "query"),
                    topn=_number(args, "topn", _number(args, "top_n", 10)),
                )
            if action == "open":
                return await self.open(
                    state,
                    link=_link(args),
                    cursor=_number(args, "cursor", -1),
                    loc=_number(args, "loc", -1),
                    num_lines=_number(args, "num_lines", -1),
                    view_source=_flag(args, "view_source"),
                )
            if action == "find":
                return await self.find(state, _text(args, "pattern"), cursor=_number(args, "cursor", -1))
            raise BrowserError(
                BrowserErrorKind.UNKNOWN_ACTION,
                f"Unknown function `{action}`: use one of {', '.join(ACTIONS)}.",
            )
        except BrowserError as exc:
            return BrowserResult(text=exc.message, error=exc.kind)

    async def search(self, state: BrowserState, query: str, *, topn: int = 10) -> BrowserResult:
        """Search for ``query`` and show its results page; raises :class:`BrowserError`."""
        count = max(1, min(topn, self.max_search_results))
        try:
            results = await self.backend.search(query, count)
        except Exception as exc:  # a backend's failure is the model's to read, whatever it is
            raise _backend_error(f"Error during search for `{query}`", exc) from exc
        if not results:
            raise BrowserError(BrowserErrorKind.NO_RESULTS, f"No results for `{truncate(query, 200)}`.")
        return self._show(state, search_page(query, results[:count]), loc=0)

    async def open(
        self,
        state: BrowserState,
        *,
        link: int | str = -1,
        cursor: int = -1,
        loc: int = -1,
        num_lines: int = -1,
        view_source: bool = False,
    ) -> BrowserResult:
        """Follow link ``link`` of the page at ``cursor``, open the URL ``link``, or scroll the
        page at ``cursor`` (``link`` < 0); raises :class:`BrowserError`."""
        hint = 0
        if isinstance(link, str):
            page = await self._fetch(link if not view_source else VIEW_SOURCE_PREFIX + link)
        else:
            current = state.page(cursor)
            if link >= 0:
                if link >= len(current.links):
                    raise BrowserError(BrowserErrorKind.UNKNOWN_LINK, f"Invalid link id `{link}`.")
                url = current.links[link]
                if link < len(current.link_lines):
                    hint = max(current.link_lines[link] - FIND_LEAD_LINES, 0)
                page = await self._follow(state, url, view_source)
            elif view_source:
                page = await self._fetch(VIEW_SOURCE_PREFIX + current.url)
            else:
                page = current
        return self._show(state, page, loc=hint if loc < 0 else loc, num_lines=num_lines)

    async def find(self, state: BrowserState, pattern: str, *, cursor: int = -1) -> BrowserResult:
        """Show the matches of ``pattern`` in the page at ``cursor``; raises :class:`BrowserError`."""
        if not pattern:
            raise BrowserError(BrowserErrorKind.BAD_ARGUMENTS, "`pattern` must not be empty.")
        page = state.page(cursor)
        if page.kind is not PageKind.DOCUMENT:
            raise BrowserError(
                BrowserErrorKind.NOT_SEARCHABLE,
                "Cannot run `find` on search results page or find results page",
            )
        return self._show(state, find_page(pattern.lower(), page), loc=0)

    async def _follow(self, state: BrowserState, url: str, view_source: bool) -> Page:
        if view_source:
            return await self._fetch(VIEW_SOURCE_PREFIX + url)
        cached = state.find_document(url)
        return cached if cached is not None else await self._fetch(url)

    async def _fetch(self, url: str) -> Page:
        try:
            document = await self.backend.fetch(url)
        except Exception as exc:  # a backend's failure is the model's to read, whatever it is
            raise _backend_error(f"Error fetching URL `{truncate(split_view_source(url)[0])}`", exc) from exc
        return document_page(document)

    def _show(self, state: BrowserState, page: Page, *, loc: int, num_lines: int = -1) -> BrowserResult:
        """Push ``page`` and show its window from ``loc``; an impossible window pushes nothing."""
        lines = wrap_lines(page.text)
        if loc >= len(lines):
            raise BrowserError(
                BrowserErrorKind.BAD_LOCATION,
                f"Invalid location parameter: `{loc}`. Cannot exceed page maximum of {len(lines) - 1}.",
            )
        cursor = state.push(page)
        end = window_end(lines, loc, num_lines, self.view_tokens)
        return BrowserResult(
            text=render_window(page, cursor, loc, end), cursor=cursor, url=page.url, title=page.title
        )


def document_page(document: Document) -> Page:
    """The page of a fetched document: ``URL: …`` on its second line, then its text."""
    return Page(
        url=document.url,
        title=document.title,
        text=f"\nURL: {document.url}\n{document.text}",
        links=document.links,
        cite_url=document.url,
        cite_title=document.title,
    )


def _backend_error(context: str, exc: Exception) -> BrowserError:
    if not isinstance(exc, BackendError):
        logger.warning("browser backend raised %s", type(exc).__name__, exc_info=exc)
    message = truncate(str(exc) or type(exc).__name__)
    return BrowserError(BrowserErrorKind.BACKEND, f"{context}: {message}")


def _bad(name: str, expected: str, value: object) -> BrowserError:
    return BrowserError(
        BrowserErrorKind.BAD_ARGUMENTS, f"`{name}` should be {expected}, not `{truncate(repr(value), 80)}`."
    )


def _text(args: Mapping[str, Any], name: str) -> str:
    """The required string argument ``name``."""
    if name not in args:
        raise BrowserError(BrowserErrorKind.BAD_ARGUMENTS, f"`{name}` is required.")
    value = args[name]
    if not isinstance(value, str):
        raise _bad(name, "a string", value)
    return value


def _number(args: Mapping[str, Any], name: str, default: int) -> int:
    """The integer argument ``name`` (a JSON number with no fraction), else ``default``."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise _bad(name, "an integer", value)


def _flag(args: Mapping[str, Any], name: str) -> bool:
    value = args.get(name, False)
    if not isinstance(value, bool):
        raise _bad(name, "a boolean", value)
    return value


def _link(args: Mapping[str, Any]) -> int | str:
    """``id``: a link number of a page, or a URL."""
    value = args.get("id")
    if isinstance(value, str):
        if not value:
            raise _bad("id", "a link number or a URL", value)
        return value
    return _number(args, "id", -1)
