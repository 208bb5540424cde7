"""A template format's markers as nodes. Whitespace at the edges of a marker, and around
its inner line breaks, is optional: models drop or add a newline there."""

from __future__ import annotations

import re

from .ir import EMPTY, LAYOUT, LiteralText, Node, concat


def marker_node(text: str, *, split: bool = True) -> Node:
    """The marker ``text`` with its leading and trailing whitespace optional (and, with
    ``split``, the whitespace of its inner line breaks: ``</function>\\n</tool_call>``)."""
    if not text:
        return EMPTY
    core = text.strip()
    if not core:
        return LAYOUT
    lines = re.split(r"\s*\n\s*", core) if split else [core]
    inner: list[Node] = []
    for i, line in enumerate(lines):
        inner += [LAYOUT, LiteralText(line)] if i else [LiteralText(line)]
    leading = LAYOUT if text[0].isspace() else EMPTY
    trailing = LAYOUT if text[-1].isspace() else EMPTY
    return concat(leading, *inner, trailing)


def strip_edge(text: str, char: str, *, end: bool) -> tuple[str, bool]:
    """``text`` without a ``char`` at its end (``end``) or start, whitespace beside it
    dropped, and whether it had one (``text`` unchanged if not)."""
    core = text.rstrip() if end else text.lstrip()
    if end and core.endswith(char):
        return core[: -len(char)], True
    if not end and core.startswith(char):
        return core[len(char) :], True
    return text, False


def split_whitespace(text: str) -> tuple[str, str, str]:
    """``text`` as (leading whitespace, the rest stripped, trailing whitespace), as the
    format's parser splits a marker; all whitespace is the leading part."""
    core = text.strip()
    if not core:
        return text, "", ""
    start = text.index(core)
    return text[:start], core, text[start + len(core) :]
