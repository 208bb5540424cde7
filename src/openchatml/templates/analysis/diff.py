"""Text diffing for template analysis: common prefixes and suffixes that never cut a
marker in two, and the split of a text into markers and plain text.

A *marker* (a "tag") is ``<…>`` without ``<``, ``>`` or a line break inside (``<think>``,
``<|im_end|>``, ``<｜tool▁sep｜>``, ``<parameter name="k">``), or ``[…]`` holding a word
(``[TOOL_CALLS]``, ``[/INST]``, ``[BEGIN FINAL RESPONSE]``); JSON brackets are not markers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MARKER = re.compile(r"<[^<>\n]{1,200}>|\[/?[A-Za-z][A-Za-z0-9_ ]{0,60}\]")
_OPEN_BRACKET = re.compile(r"\[/?[A-Za-z]")


@dataclass(frozen=True, slots=True)
class TextSegment:
    """A piece of text: a marker or the plain text between markers."""

    text: str
    marker: bool


@dataclass(frozen=True, slots=True)
class DiffSplit:
    """``a == prefix + left + suffix`` and ``b == prefix + right + suffix``."""

    prefix: str
    left: str
    right: str
    suffix: str


def segments(text: str) -> list[TextSegment]:
    """``text`` cut into markers and the plain text around them (in order, nothing lost)."""
    out: list[TextSegment] = []
    pos = 0
    for m in MARKER.finditer(text):
        if m.start() > pos:
            out.append(TextSegment(text[pos : m.start()], False))
        out.append(TextSegment(m.group(), True))
        pos = m.end()
    if pos < len(text):
        out.append(TextSegment(text[pos:], False))
    return out


def markers(text: str) -> list[str]:
    """The markers in ``text``, in order."""
    return [m.group() for m in MARKER.finditer(text)]


def is_marker(text: str) -> bool:
    """Whether ``text`` is exactly one marker."""
    return MARKER.fullmatch(text) is not None


def has_marker(text: str) -> bool:
    """Whether ``text`` holds a marker."""
    return MARKER.search(text) is not None


def common_prefix(texts: Sequence[str]) -> int:
    """The length of the longest common prefix of ``texts``."""
    if not texts:
        return 0
    first = texts[0]
    n = min(len(t) for t in texts)
    for other in texts[1:]:
        i = 0
        limit = min(n, len(other))
        while i < limit and first[i] == other[i]:
            i += 1
        n = i
        if n == 0:
            break
    return n


def common_suffix(texts: Sequence[str], limit: int | None = None) -> int:
    """The length of the longest common suffix of ``texts`` (at most ``limit``)."""
    if not texts:
        return 0
    first = texts[0]
    n = min(len(t) for t in texts)
    if limit is not None:
        n = min(n, limit)
    for other in texts[1:]:
        i = 0
        while i < n and first[-1 - i] == other[-1 - i]:
            i += 1
        n = i
        if n == 0:
            break
    return n


def fix_prefix_end(text: str, end: int) -> int:
    """Move ``end`` back so that ``text[:end]`` does not stop inside a marker."""
    head = text[:end]
    lt = head.rfind("<")
    if lt != -1 and head.rfind(">") < lt and MARKER.match(text, lt) is not None:
        end = lt
        head = text[:end]
    lb = head.rfind("[")
    if lb != -1 and head.rfind("]") < lb and _OPEN_BRACKET.match(text, lb) is not None:
        m = MARKER.match(text, lb)
        if m is not None and m.end() > end:
            end = lb
    return end


def fix_suffix_start(text: str, start: int) -> int:
    """Move ``start`` forward so that ``text[start:]`` does not begin inside a marker."""
    for m in MARKER.finditer(text, max(0, start - 202), min(len(text), start + 202)):
        if m.start() < start < m.end():
            return m.end()
    return start


def diff_split(a: str, b: str) -> DiffSplit:
    """The longest common prefix and suffix of ``a`` and ``b``, never cutting a marker,
    and what is left of each in between."""
    p = lcp_marker_safe([a, b])
    s = lcs_marker_safe([a[p:], b[p:]])
    return DiffSplit(a[:p], a[p : len(a) - s], b[p : len(b) - s], a[len(a) - s :])


def lcp_marker_safe(texts: Sequence[str]) -> int:
    """:func:`common_prefix` moved back so that it ends inside no marker of any text."""
    if not texts:
        return 0
    n = common_prefix(texts)
    while True:
        m = min(fix_prefix_end(t, n) for t in texts)
        if m == n:
            return n
        n = m


def lcs_marker_safe(texts: Sequence[str], limit: int | None = None) -> int:
    """:func:`common_suffix` shortened so that it begins inside no marker of any text."""
    if not texts:
        return 0
    n = common_suffix(texts, limit)
    while n > 0:
        m = min(len(t) - fix_suffix_start(t, len(t) - n) for t in texts)
        if m == n:
            return n
        n = m
    return 0


def last_marker_match(text: str) -> re.Match[str] | None:
    """The last marker in ``text`` (as a match), or ``None``."""
    last = None
    for m in MARKER.finditer(text):
        last = m
    return last


def first_marker(text: str) -> str:
    """The first marker in ``text``, or ``""``."""
    m = MARKER.search(text)
    return m.group() if m else ""


def last_marker(text: str) -> str:
    """The last marker in ``text``, or ``""``."""
    m = last_marker_match(text)
    return m.group() if m else ""


def open_tag_tail(text: str) -> int:
    """Where an unclosed ``<…`` at the end of ``text`` begins (``<function=``), or -1."""
    lt = text.rfind("<")
    if lt == -1 or ">" in text[lt:] or "\n" in text[lt:]:
        return -1
    return lt


def overlap(text: str, prompt: str) -> str:
    """The longest start of ``prompt`` that ``text`` ends with (``""`` if none)."""
    for k in range(min(len(text), len(prompt)), 0, -1):
        if text.endswith(prompt[:k]):
            return prompt[:k]
    return ""
