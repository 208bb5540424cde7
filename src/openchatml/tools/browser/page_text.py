"""Documents → the browser's page text: plain lines with numbered link marks.

A link becomes ``【{id}†{text}】`` (``【{id}†{text}†{domain}】`` when it leaves the page's
domain), an image ``[Image {n}: {alt}]``, a heading ``# …``, a list item ``  * …`` — the
page format gpt-oss's browser shows. The brackets ``【】`` in a document's own text become
``〖〗`` so that only the browser's marks use them. HTML is read with the stdlib
``html.parser``; Markdown keeps its text and has its links and images rewritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Final
from urllib.parse import urljoin, urlsplit, urlunsplit

_SPECIAL_CHARS: Final = str.maketrans({"【": "〖", "】": "〗", "◼": "◾", "\u200b": ""})
_WHITESPACE: Final = re.compile(r"\s+")
_EXTRA_NEWLINES: Final = re.compile(r"\n(\s*\n)+")
_MARKDOWN_LINK: Final = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_MARKDOWN_TITLE: Final = re.compile(r"^#\s+(.+?)\s*#*\s*$", flags=re.MULTILINE)

_SKIPPED_TAGS: Final = frozenset({"script", "style", "head", "noscript", "template", "svg", "math"})
_BLOCK_TAGS: Final = frozenset(
    {
        "p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "table",
        "tr", "ul", "ol", "dl", "dt", "dd", "blockquote", "pre", "figure", "figcaption", "hr",
        "form", "h1", "h2", "h3", "h4", "h5", "h6", "body", "html",
    }
)  # fmt: skip
_HEADINGS: Final = {f"h{level}": "#" * level for level in range(1, 7)}
_VOID_TAGS: Final = frozenset({"br", "img", "hr", "meta", "link", "input", "wbr", "source"})


@dataclass(frozen=True, slots=True)
class PageText:
    """A document as the browser shows it: ``text`` with link marks, ``links[id]`` the url."""

    title: str
    text: str
    links: tuple[str, ...]


def clean_special_chars(text: str) -> str:
    """``text`` with ``【】`` turned into ``〖〗`` (and zero-width spaces removed)."""
    return text.translate(_SPECIAL_CHARS)


def domain_of(url: str) -> str:
    """The host part of ``url`` (``example.com``), or ``""`` when it has none."""
    try:
        return urlsplit(url).netloc
    except ValueError:
        return ""


def join_url(base: str, href: str) -> str:
    """``href`` resolved against ``base``; also for schemes urllib does not know (``corpus:``)."""
    parts = urlsplit(base)
    if not parts.scheme or parts.scheme in ("http", "https", "file", "ftp"):
        return urljoin(base, href)
    if urlsplit(href).scheme:
        return href
    joined = urlsplit(urljoin(urlunsplit(parts._replace(scheme="http")), href))
    return urlunsplit(joined._replace(scheme=parts.scheme))


class _LinkTable:
    """Link ids in order of first appearance; one id per distinct url."""

    def __init__(self, page_url: str) -> None:
        self.page_url = page_url
        self.page_domain = domain_of(page_url)
        self.urls: list[str] = []
        self._ids: dict[str, int] = {}

    def mark(self, href: str, text: str) -> str | None:
        """The ``【id†text】`` mark for a link, or ``None`` when it is no link to follow."""
        href = href.strip()
        text = text.replace("†", "‡").strip()
        if not text or href.startswith(("mailto:", "javascript:", "#")) or not href:
            return None
        try:
            url = join_url(self.page_url, href)
        except ValueError:
            return None
        domain = domain_of(url)
        if not domain:
            return None
        link_id = self._ids.get(url)
        if link_id is None:
            link_id = self._ids[url] = len(self.urls)
            self.urls.append(url)
        if domain == self.page_domain:
            return f"【{link_id}†{text}】"
        return f"【{link_id}†{text}†{domain}】"


class _HtmlReader(HTMLParser):
    """Collects the visible text of an HTML document, with link and image marks."""

    def __init__(self, links: _LinkTable) -> None:
        super().__init__(convert_charrefs=True)
        self.links = links
        self.title = ""
        self.parts: list[str] = []
        self._skipping = 0
        self._in_title = False
        self._preformatted = 0
        self._anchor: tuple[str, list[str]] | None = None
        self._images = 0

    def _last_char(self) -> str:
        source = self._anchor[1] if self._anchor is not None and self._anchor[1] else self.parts
        return source[-1][-1:] if source else "\n"

    def _emit(self, text: str) -> None:
        if not self._preformatted:
            text = _WHITESPACE.sub(" ", text)
            if self._last_char() in (" ", "\n"):
                text = text.lstrip(" ")
        if not text:
            return
        if self._anchor is not None:
            self._anchor[1].append(text)
        else:
            self.parts.append(text)

    def _break(self, prefix: str = "") -> None:
        self.parts.append("\n\n" + prefix)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "title":
            self._in_title = True
        elif tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif self._skipping:
            return
        elif tag == "a" and "href" in values and self._anchor is None:
            self._anchor = (values["href"], [])
        elif tag == "img":
            alt = values.get("alt") or values.get("title") or ""
            self._emit(f"[Image {self._images}: {alt}]" if alt else f"[Image {self._images}]")
            self._images += 1
        elif tag == "br":
            self.parts.append("\n")
        elif tag == "li":
            self.parts.append("\n  * ")
        elif tag in _HEADINGS:
            self._break(_HEADINGS[tag] + " ")
        elif tag in _BLOCK_TAGS:
            if tag == "pre":
                self._preformatted += 1
            self._break()
        elif tag in ("td", "th"):
            self._emit(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif self._skipping:
            return
        elif tag == "a" and self._anchor is not None:
            href, texts = self._anchor
            self._anchor = None
            text = _WHITESPACE.sub(" ", "".join(texts)).strip()
            mark = self.links.mark(href, text)
            self.parts.append(mark if mark is not None else text)
        elif tag in _BLOCK_TAGS and tag not in _VOID_TAGS:
            if tag == "pre" and self._preformatted:
                self._preformatted -= 1
            self._break()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skipping:
            self._emit(data)


def _tidy(text: str) -> str:
    """Trailing spaces and runs of empty lines removed."""
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _EXTRA_NEWLINES.sub("\n\n", text).strip("\n")


def html_page_text(html: str, url: str, title: str = "") -> PageText:
    """An HTML document at ``url`` as page text; ``title`` wins over the document's ``<title>``."""
    links = _LinkTable(url)
    reader = _HtmlReader(links)
    reader.feed(clean_special_chars(html))
    reader.close()
    text = _tidy("".join(reader.parts))
    found_title = _WHITESPACE.sub(" ", reader.title).strip()
    return PageText(title=title or found_title or domain_of(url), text=text, links=tuple(links.urls))


def markdown_page_text(markdown: str, url: str, title: str = "") -> PageText:
    """A Markdown document at ``url`` as page text; its title is ``title`` or its first ``# ``."""
    links = _LinkTable(url)
    images = 0

    def rewrite(match: re.Match[str]) -> str:
        nonlocal images
        bang, text, href = match.groups()
        if bang:
            images += 1
            return f"[Image {images - 1}: {text}]" if text else f"[Image {images - 1}]"
        mark = links.mark(href, text)
        return mark if mark is not None else text

    cleaned = clean_special_chars(markdown)
    text = _MARKDOWN_LINK.sub(rewrite, cleaned)
    heading = _MARKDOWN_TITLE.search(cleaned)
    found_title = heading.group(1) if heading else ""
    text = _EXTRA_NEWLINES.sub("\n\n", text).strip("\n")
    return PageText(title=title or found_title or domain_of(url), text=text, links=tuple(links.urls))


def plain_page_text(text: str, url: str, title: str = "") -> PageText:
    """Plain text at ``url`` as page text (no links)."""
    return PageText(title=title or domain_of(url), text=clean_special_chars(text).strip("\n"), links=())


def page_text(content: str, url: str, content_format: str, title: str = "") -> PageText:
    """``content`` read as ``content_format`` (``html``, ``markdown`` or ``text``)."""
    if content_format == "html":
        return html_page_text(content, url, title)
    if content_format == "markdown":
        return markdown_page_text(content, url, title)
    return plain_page_text(content, url, title)
