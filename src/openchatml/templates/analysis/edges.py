"""The edges of names and values in a rendered tool call: where the text before a name,
after a name and after a value splits into markers that belong to the name or value and
the text that belongs to what surrounds it.

Each function takes plain strings and returns a pair whose concatenation is its input
(``before + name_prefix == head`` …)."""

from __future__ import annotations

from .diff import MARKER, last_marker_match, open_tag_tail


def split_after_first_marker(text: str) -> tuple[str, str]:
    """``text`` cut after its first marker and the whitespace after it (``(text, "")``
    without a marker)."""
    m = MARKER.search(text)
    if m is None:
        return text, ""
    end = m.end()
    while end < len(text) and text[end].isspace():
        end += 1
    return text[:end], text[end:]


def split_name_prefix(head: str) -> tuple[str, str]:
    """The text before a name as ``(before, name_prefix)``: the prefix is an unclosed
    ``<…`` (``<function=``, ``<invoke name="``) or the word glued to the name after the
    last marker (``functions.``, ``call:``, ``>>>``)."""
    lt = open_tag_tail(head)
    if lt != -1:
        return head[:lt], head[lt:]
    last = last_marker_match(head)
    start = last.end() if last else 0
    rest = head[start:]
    if rest.strip() and not rest[-1].isspace():
        word = rest.lstrip()
        if "\n" not in word:
            return head[: len(head) - len(word)], word
    return head, ""


def split_name_suffix(name_prefix: str, text: str) -> tuple[str, str]:
    """The text after a name as ``(name_suffix, rest)``: the suffix closes what the prefix
    opened (``>`` for ``<function=``, ``">`` for ``<invoke name="``) and takes the
    whitespace after it; without an opened prefix it is empty."""
    lt = name_prefix.rfind("<")
    if lt != -1 and ">" not in name_prefix[lt:]:
        gt = text.find(">")
        if gt != -1 and "<" not in text[:gt]:
            end = gt + 1
            while end < len(text) and text[end].isspace():
                end += 1
            return text[:end], text[end:]
    if name_prefix.endswith('"') and text.startswith('"'):
        return '"', text[1:]
    return "", text


def split_value_suffix(text: str) -> tuple[str, str]:
    """The text between a value and the next argument's name prefix as
    ``(value_suffix, separator)``: the suffix runs to the end of its last marker (or
    takes a closing quote)."""
    last = last_marker_match(text)
    if last is None:
        rest = text.lstrip()
        if rest.startswith('"'):
            return text[: len(text) - len(rest) + 1], rest[1:]
        return "", text
    return text[: last.end()], text[last.end() :]
