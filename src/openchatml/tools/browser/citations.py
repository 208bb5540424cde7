"""The model's citations ``【cursor†L9-L11】`` → links in the text and ``url_citation`` annotations.

A citation names a page of the :class:`BrowserState` by its cursor, and lines of it. It
becomes `` ([domain](url))`` (``([title](url))`` off the web) — a Markdown link, as OpenAI's
hosted web search writes its citations — preceded by a space unless the text before it
ends in whitespace (or there is none). Its :class:`UrlCitation` spans the parenthesised
link: ``text[start_index:end_index]`` is ``([domain](url))``, offsets counted in
characters (code points) of the cleaned text. A document page cites itself, a find page
the document it searched, a search results page the first result link on the cited lines.
A citation that resolves to nothing (an unknown cursor) stays in the text as written,
without annotation.

:func:`cite` does a whole text; :class:`CitationStream` is the same, sans-IO, for text that
arrives in pieces: it holds back a ``【…`` that may still become a citation (at most
:data:`MAX_CITATION_CHARS` characters) and gives out the cleaned text and annotations so
far. Fed any split of a text, it gives the same result as :func:`cite` on the whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from .display import wrap_lines
from .page_text import domain_of
from .state import BrowserState, PageKind

CITATION: Final = re.compile(r"【(\d{1,9})†([^†】\n]{1,100})(?:†([^†】\n]{1,100}))?】")
"""``【cursor†content】`` or ``【cursor†content†extra】``; content ``L9-L11`` or ``L3``."""

CITATION_PREFIX: Final = re.compile(r"【(?:\d{1,9}(?:†(?:[^†】\n]{1,100}(?:†[^†】\n]{0,100})?)?)?)?")
"""A full match is exactly the text that :data:`CITATION` may still match once extended."""

MAX_CITATION_CHARS: Final = 213
"""The longest text :data:`CITATION` matches (the most a stream ever holds back)."""

_LINE_RANGE: Final = re.compile(r"L(\d+)(?:-L?(\d+))?")
_LINK_MARK: Final = re.compile(r"【(\d+)†([^†】]+)(?:†[^†】]+)?】")


@dataclass(frozen=True, slots=True)
class UrlCitation:
    """An Open Responses ``url_citation``: ``text[start_index:end_index]`` cites ``url``."""

    url: str
    title: str
    start_index: int
    end_index: int

    def to_json(self) -> dict[str, Any]:
        """The annotation as the Open Responses schema writes it."""
        return {
            "type": "url_citation",
            "url": self.url,
            "title": self.title,
            "start_index": self.start_index,
            "end_index": self.end_index,
        }


@dataclass(frozen=True, slots=True)
class CitedText:
    """Cleaned text and the annotations in it (offsets from the start of the whole text)."""

    text: str
    annotations: tuple[UrlCitation, ...] = ()


def cited_source(state: BrowserState, cursor: int, content: str) -> tuple[str, str] | None:
    """The ``(url, title)`` that ``【cursor†content】`` cites in ``state``, if any."""
    if not 0 <= cursor < len(state.pages):
        return None
    page = state.pages[cursor]
    if page.kind is not PageKind.SEARCH:
        return (page.cite_url, page.cite_title) if page.cite_url else None
    lines = _LINE_RANGE.fullmatch(content.strip())
    if lines is None:
        return None
    first = int(lines.group(1))
    last = int(lines.group(2) or first)
    for line in wrap_lines(page.text)[first : last + 1]:
        for mark in _LINK_MARK.finditer(line):
            link = int(mark.group(1))
            if link < len(page.links):
                return page.links[link], mark.group(2)
    return None


def citation_link(url: str, title: str) -> str:
    """``([domain](url))`` (for a url without a web domain, ``([title](url))``): how a
    citation reads in the cleaned text."""
    web = url.startswith(("http://", "https://"))
    label = (domain_of(url) if web else "") or title or url
    label = " ".join(label.split()).replace("[", "\\[").replace("]", "\\]")
    target = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return f"([{label}]({target}))"


class CitationStream:
    """Cleans text fed in pieces: :meth:`feed` each delta, then :meth:`finish` once."""

    def __init__(self, state: BrowserState) -> None:
        self.state = state
        self._pending = ""
        self._emitted = 0
        self._last_char = ""

    def feed(self, delta: str) -> CitedText:
        """The cleaned text and annotations that ``delta`` completes (maybe none yet)."""
        return self._drain(self._pending + delta, final=False)

    def finish(self) -> CitedText:
        """The rest: text held back as a possible citation comes out as written."""
        return self._drain(self._pending, final=True)

    def _drain(self, buffer: str, *, final: bool) -> CitedText:
        parts: list[str] = []
        annotations: list[UrlCitation] = []
        while buffer:
            start = buffer.find("【")
            if start < 0:
                self._write(parts, buffer)
                buffer = ""
                break
            self._write(parts, buffer[:start])
            buffer = buffer[start:]
            match = CITATION.match(buffer)
            if match is not None:
                self._cite(parts, annotations, match)
                buffer = buffer[match.end() :]
            elif not final and CITATION_PREFIX.fullmatch(buffer):
                break
            else:
                self._write(parts, buffer[0])
                buffer = buffer[1:]
        self._pending = buffer
        return CitedText("".join(parts), tuple(annotations))

    def _write(self, parts: list[str], text: str) -> None:
        if text:
            parts.append(text)
            self._emitted += len(text)
            self._last_char = text[-1]

    def _cite(self, parts: list[str], annotations: list[UrlCitation], match: re.Match[str]) -> None:
        source = cited_source(self.state, int(match.group(1)), match.group(2))
        if source is None:
            self._write(parts, match.group(0))
            return
        url, title = source
        if self._last_char and not self._last_char.isspace():
            self._write(parts, " ")
        link = citation_link(url, title)
        annotations.append(UrlCitation(url, title, self._emitted, self._emitted + len(link)))
        self._write(parts, link)


def cite(text: str, state: BrowserState) -> CitedText:
    """``text`` with every citation resolved in ``state`` replaced, and its annotations."""
    parts: list[str] = []
    annotations: list[UrlCitation] = []
    length = 0
    position = 0
    for match in CITATION.finditer(text):
        parts.append(text[position : match.start()])
        position = match.end()
        source = cited_source(state, int(match.group(1)), match.group(2))
        if source is None:
            parts.append(match.group(0))
            continue
        length = sum(map(len, parts))
        previous = next((part[-1] for part in reversed(parts) if part), "")
        if previous and not previous.isspace():
            parts.append(" ")
            length += 1
        link = citation_link(*source)
        annotations.append(UrlCitation(source[0], source[1], length, length + len(link)))
        parts.append(link)
    parts.append(text[position:])
    return CitedText("".join(parts), tuple(annotations))
