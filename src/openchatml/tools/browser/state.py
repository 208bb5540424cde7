"""The browser's memory within a conversation: a stack of pages, each with a cursor.

Every action pushes the page it shows; the page's position in the stack is its cursor,
the ``[n]`` the model sees before each display and cites as ``【n†L…】``. Scrolling pushes
the same page again at a new cursor. :class:`BrowserState` round-trips through JSON so it
can be kept with the conversation between turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from .result import BrowserError, BrowserErrorKind

MAX_PAGES: Final = 256
"""The most cursors a page stack holds (a conversation's whole browsing)."""
MAX_STACK_CHARS: Final = 16_000_000
"""The most text (characters of its distinct pages) a page stack holds."""


class PageKind(StrEnum):
    """What a page is: a fetched document, a list of search results, or find matches."""

    DOCUMENT = "document"
    SEARCH = "search"
    FIND = "find"


@dataclass(frozen=True, slots=True)
class Page:
    """One page: its text with ``【id†…】`` link marks, ``links[id]`` their urls.

    ``link_lines[id]`` is the line a link opens at (find matches), else empty.
    ``cite_url``/``cite_title`` is what a citation of the page points to: the document
    itself, for a find page the document searched, empty for search results (a citation
    of those resolves to the result links on the cited lines).
    """

    url: str
    title: str
    text: str
    kind: PageKind = PageKind.DOCUMENT
    links: tuple[str, ...] = ()
    link_lines: tuple[int, ...] = ()
    cite_url: str = ""
    cite_title: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the page."""
        return {
            "url": self.url,
            "title": self.title,
            "text": self.text,
            "kind": self.kind.value,
            "links": list(self.links),
            "link_lines": list(self.link_lines),
            "cite_url": self.cite_url,
            "cite_title": self.cite_title,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Page:
        """The page of :meth:`to_json`'s dict; raises ``KeyError``/``ValueError``/``TypeError``."""
        return cls(
            url=str(data["url"]),
            title=str(data["title"]),
            text=str(data["text"]),
            kind=PageKind(data["kind"]),
            links=tuple(str(link) for link in data["links"]),
            link_lines=tuple(int(line) for line in data["link_lines"]),
            cite_url=str(data["cite_url"]),
            cite_title=str(data["cite_title"]),
        )


@dataclass(slots=True)
class BrowserState:
    """The page stack: ``pages[cursor]`` is the page shown at ``cursor``."""

    pages: list[Page] = field(default_factory=list)

    @property
    def current_cursor(self) -> int:
        """The cursor of the newest page (``-1`` when no page is open)."""
        return len(self.pages) - 1

    def push(self, page: Page) -> int:
        """Put ``page`` on top of the stack; its cursor. Raises :class:`BrowserError`
        (``stack_full``) past :data:`MAX_PAGES` cursors or :data:`MAX_STACK_CHARS` of text."""
        shown = any(seen is page for seen in self.pages)
        size = sum(len(seen.text) for seen in {id(seen): seen for seen in self.pages}.values())
        if len(self.pages) >= MAX_PAGES or (not shown and size + len(page.text) > MAX_STACK_CHARS):
            raise BrowserError(
                BrowserErrorKind.STACK_FULL,
                f"The browser holds {len(self.pages)} pages, as many as one conversation may: "
                "answer from what was found, or start a new conversation.",
            )
        self.pages.append(page)
        return self.current_cursor

    def pop(self) -> Page:
        """Take the newest page off the stack (an action that failed to show it)."""
        return self.pages.pop()

    def page(self, cursor: int = -1) -> Page:
        """The page at ``cursor`` (``-1``: the newest); raises :class:`BrowserError`."""
        if not self.pages:
            raise BrowserError(BrowserErrorKind.NO_PAGE, "No pages to access!")
        if cursor == -1:
            return self.pages[-1]
        if not 0 <= cursor < len(self.pages):
            raise BrowserError(
                BrowserErrorKind.UNKNOWN_CURSOR,
                f"Cursor `{cursor}` is out of range. Available cursor indices: [0 - {self.current_cursor}].",
            )
        return self.pages[cursor]

    def find_document(self, url: str) -> Page | None:
        """The newest open document with ``url``, if any (a cache for following links)."""
        for page in reversed(self.pages):
            if page.kind is PageKind.DOCUMENT and page.url == url:
                return page
        return None

    def to_json(self) -> str:
        """The state as JSON; a page shown at several cursors is written once."""
        unique: dict[int, int] = {}
        pages: list[dict[str, Any]] = []
        stack: list[int] = []
        for page in self.pages:
            index = unique.get(id(page))
            if index is None:
                index = unique[id(page)] = len(pages)
                pages.append(page.to_json())
            stack.append(index)
        return json.dumps({"pages": pages, "stack": stack}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> BrowserState:
        """The state of :meth:`to_json`; raises :class:`BrowserError` (``bad_state``) when malformed."""
        try:
            data = json.loads(text)
            pages = [Page.from_json(page) for page in data["pages"]]
            stack = [pages[_index(index, len(pages))] for index in data["stack"]]
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise BrowserError(
                BrowserErrorKind.BAD_STATE, f"The browser state cannot be read: {exc}"
            ) from exc
        return cls(pages=stack)


def _index(value: object, size: int) -> int:
    """``value`` as an index into a list of ``size``; raises ``IndexError``/``TypeError``."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < size:
        raise IndexError(f"page index {value!r} out of range")
    return value
