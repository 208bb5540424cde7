"""What the model sees: pages wrapped to 80 columns, numbered ``L{n}: …``, shown in windows.

A display reads ``[{cursor}] {title} ({url})``, then ``**viewing lines [a - b] of n**``,
a blank line and the numbered lines — gpt-oss's browser format. A window holds
``num_lines`` lines, or when none is asked as many as fit in ``view_tokens`` o200k tokens.
Search results and find matches are pages too, built here in the same format.
"""

from __future__ import annotations

import functools
import itertools
import re
import textwrap
from collections.abc import Sequence
from typing import Final
from urllib.parse import quote, unquote

from openchatml.core.encoding import load_encoding

from .backend import SearchResult, truncate
from .page_text import clean_special_chars, domain_of
from .state import Page, PageKind

WRAP_WIDTH: Final = 80
FIND_CONTEXT_LINES: Final = 4
FIND_MAX_RESULTS: Final = 50

_PARTIAL_INITIAL_LINK: Final = re.compile(r"^[^【】]*】")
_PARTIAL_FINAL_LINK: Final = re.compile(r"【\d*(?:†(?P<content>[^†】]*)(?:†[^†】]*)?)?$")
_LINK: Final = re.compile(r"【\d+†(?P<content>[^†】]+)(?:†[^†】]+)?】")


@functools.lru_cache(maxsize=64)
def wrap_lines(text: str, width: int = WRAP_WIDTH) -> tuple[str, ...]:
    """``text`` split into lines, long ones wrapped at ``width`` (whitespace kept, empty lines too)."""
    wrapped = itertools.chain.from_iterable(
        textwrap.wrap(line, width=width, replace_whitespace=False, drop_whitespace=False) if line else [""]
        for line in text.split("\n")
    )
    return tuple(wrapped)


def numbered(lines: Sequence[str], offset: int = 0) -> str:
    """``lines`` joined, each prefixed ``L{n}: `` counting from ``offset``."""
    return "\n".join(f"L{number}: {line}" for number, line in enumerate(lines, start=offset))


@functools.cache
def _longest_token_chars() -> int:
    """An upper bound on the characters of one o200k token (its byte length)."""
    return max(len(raw) for raw in load_encoding().token_bytes)


def window_end(lines: Sequence[str], loc: int, num_lines: int, view_tokens: int) -> int:
    """The line after the last one shown from ``loc``: ``num_lines`` lines when positive,
    else the lines whose numbered text fits in ``view_tokens`` tokens (a partly fitting
    line counts as shown)."""
    total = len(lines)
    if num_lines > 0:
        return min(loc + num_lines, total)
    text = numbered(lines[loc:], offset=loc)
    if len(text) <= view_tokens:  # a token holds at least one character
        return total
    encoding = load_encoding()
    tokens = encoding.encode_ordinary(text[: (view_tokens + 1) * _longest_token_chars()])
    if len(tokens) <= view_tokens:
        return total
    shown = encoding.decode(tokens[:view_tokens])
    return min(loc + shown.count("\n") + 1, total)


def render_window(page: Page, cursor: int, loc: int, end: int) -> str:
    """The display of ``page`` at ``cursor``, lines ``loc`` to ``end - 1``."""
    lines = wrap_lines(page.text)
    header = page.title
    if location := truncate(unquote(page.url)):
        header += f" ({location})"
    scrollbar = f"viewing lines [{loc} - {end - 1}] of {len(lines) - 1}"
    return f"[{cursor}] {header}\n**{scrollbar}**\n\n{numbered(lines[loc:end], offset=loc)}"


def strip_links(text: str) -> str:
    """``text`` with every ``【id†text†domain】`` mark (also cut ones at the ends) reduced to its text."""
    text = _PARTIAL_INITIAL_LINK.sub("", text)
    text = _PARTIAL_FINAL_LINK.sub(lambda match: match.group("content") or "", text)
    return _LINK.sub(lambda match: match.group("content"), text)


def _one_line(text: str) -> str:
    return " ".join(clean_special_chars(text).split())


def search_page(query: str, results: Sequence[SearchResult]) -> Page:
    """The search results page for ``query``: one ``  * 【id†title†domain】 snippet`` line each."""
    items = []
    for link_id, result in enumerate(results):
        title = _one_line(result.title).replace("†", "‡") or result.url
        domain = domain_of(result.url)
        mark = f"【{link_id}†{title}†{domain}】" if domain else f"【{link_id}†{title}】"
        items.append(f"  * {mark} {_one_line(result.snippet)}".rstrip())
    text = "\nURL: \n# Search Results\n\n" + "\n".join(items)
    return Page(url="", title=query, text=text, kind=PageKind.SEARCH, links=tuple(r.url for r in results))


def find_page(pattern: str, page: Page) -> Page:
    """The matches of ``pattern`` (case-insensitive, exact text, link marks read as their text)
    in ``page``: up to 50 snippets of 4 lines, each a link ``# 【n†match at L{line}】``."""
    lines = strip_links("\n".join(wrap_lines(page.text))).split("\n")
    needle = pattern.lower()
    chunks: list[str] = []
    starts: list[int] = []
    line = 0
    while line < len(lines) and len(chunks) < FIND_MAX_RESULTS:
        if needle not in lines[line].lower():
            line += 1
            continue
        snippet = "\n".join(lines[line : line + FIND_CONTEXT_LINES])
        chunks.append(f"# 【{len(chunks)}†match at L{line}】\n{snippet}")
        starts.append(line)
        line += FIND_CONTEXT_LINES
    text = "\n\n".join(chunks) if chunks else f"No `find` results for pattern: `{pattern}`"
    return Page(
        url=f"{page.url}/find?pattern={quote(pattern)}",
        title=f"Find results for text: `{pattern}` in `{page.title}`",
        text=text,
        kind=PageKind.FIND,
        links=tuple(page.url for _ in chunks),
        link_lines=tuple(starts),
        cite_url=page.cite_url,
        cite_title=page.cite_title,
    )
