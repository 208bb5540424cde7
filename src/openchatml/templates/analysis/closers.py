"""Which marker closes which: ``</think>`` closes ``<think>``,
``<|tool_calls_section_end|>`` closes ``<|tool_calls_section_begin|>``, a bare
``<|end|>`` ends any block.

Markers are compared by their *core*: the words of the name without brackets and without
the words that open or close (``begin``, ``end``, ``start`` …)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .diff import MARKER

_WORDS = re.compile(r"[A-Za-z0-9]+")
_OPEN_CLOSE_WORDS = {"begin", "start", "end", "prefix", "suffix", "open", "close"}


def tag_core(tag: str) -> str:
    """A marker's name without brackets and open/close words
    (``<|tool_calls_section_begin|>`` → ``toolcallssection``)."""
    body = re.split(r"[=\s]", tag.strip("<>[]"), maxsplit=1)[0]
    words = [w.lower() for w in _WORDS.findall(body.replace("▁", "_"))]
    return "".join(w for w in words if w not in _OPEN_CLOSE_WORDS)


def closes(opening: str, closing: str) -> bool:
    """Whether marker ``closing`` closes marker ``opening`` (same core, other spelling)."""
    if not opening or not closing or opening == closing:
        return False
    core = tag_core(opening)
    return bool(core) and core == tag_core(closing)


def ends_block(opening: str, closing: str) -> bool:
    """Whether marker ``closing``, written after ``opening``, closes it: the same name
    (``<think>`` … ``</think>``, ``<|channel>`` … ``<channel|>``) or a bare end
    (``<|end|>``)."""
    if closes(opening, closing):
        return True
    words = {w.lower() for w in _WORDS.findall(closing)}
    return closing != opening and not tag_core(closing) and bool(words & {"end", "close"})


def closing_candidates(tag: str) -> list[str]:
    """Spellings of the marker that closes ``tag`` (``<think>`` → ``</think>``,
    ``<|START_THINKING|>`` → ``<|END_THINKING|>``)."""
    out: list[str] = []
    for lead in ("<|", "<｜", "<", "["):
        if tag.startswith(lead) and not tag.startswith(lead + "/"):
            out.append(lead + "/" + tag[len(lead) :])
    for a, b in (("START", "END"), ("start", "end"), ("BEGIN", "END"), ("begin", "end")):
        if a in tag:
            out.append(tag.replace(a, b))
    return out


def find_closer(openings: Sequence[str], text: str) -> re.Match[str] | None:
    """The first marker in ``text`` that closes one of ``openings``, or ``None``."""
    for m in MARKER.finditer(text):
        if any(closes(o, m.group()) for o in openings):
            return m
    return None
