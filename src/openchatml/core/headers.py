"""Reading a message header: the text between ``<|start|>`` and ``<|message|>``.

Theory of operation. A header is the role word, then whitespace-separated attributes,
then optionally a channel tag and a constrain tag::

    assistant to=functions.f call_id=1<|channel|>commentary<|constrain|>json   (OCM 2.2)
    assistant<|channel|>commentary to=functions.f <|constrain|>json           (Harmony)
    functions.f to=assistant<|channel|>commentary                             (Harmony tool)
    tool name=functions.f call_id=1 to=assistant<|channel|>commentary         (OCM tool)

The header is split at the ``<|channel|>`` and ``<|constrain|>`` markers into segments.
The first segment holds the role (``user``, ``user:alice``, ``functions.x``, or none
when the caller already knows the role) and ``key=value`` attributes; the channel
segment starts with the channel name, the constrain segment with the content type. A
bare word after the channel is a plain content type (``commentary json``); a bare word
after the role is a recipient. Both attribute positions of OCM §6 and HIP-1 are
accepted. The same function reads headers from text and from decoded token ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from .errors import HeaderError
from .events import Header, RepairKind
from .messages import Author, Role

MAX_HEADER: Final = 4096
"""Most characters (text) or token ids (tokens) a message header may hold, from after
``<|start|>`` up to ``<|message|>``, markers included: the parser refuses a longer one
and the renderer never writes one."""

CHANNEL_MARK = "<|channel|>"
CONSTRAIN_MARK = "<|constrain|>"

ROLES: dict[str, Role] = {r.value: r for r in Role}
KNOWN_ATTRIBUTES = frozenset({"to", "call_id", "name", "intent", "content_type"})
BUILTIN_TOOL_ROLES = frozenset({"python", "browser"})
UNKNOWN_TOOL = "functions.unknown"
"""The name a lenient read gives a tool reply that names no tool."""


@dataclass(slots=True)
class HeaderNotes:
    """Problems a lenient read of a header got past: ``(kind, detail)`` pairs."""

    items: list[tuple[RepairKind, str]] = field(default_factory=list)


def _segments(text: str) -> list[tuple[str, str]]:
    """``text`` split at the markers: ``[("", first), ("channel", …), ("constrain", …)]``."""
    out: list[tuple[str, str]] = []
    kind = ""
    pos = 0
    while True:
        ci = text.find(CHANNEL_MARK, pos)
        ki = text.find(CONSTRAIN_MARK, pos)
        candidates = [(i, m) for i, m in ((ci, CHANNEL_MARK), (ki, CONSTRAIN_MARK)) if i >= 0]
        if not candidates:
            out.append((kind, text[pos:]))
            return out
        idx, mark = min(candidates)
        out.append((kind, text[pos:idx]))
        kind = "channel" if mark == CHANNEL_MARK else "constrain"
        pos = idx + len(mark)


def _role_of(word: str) -> tuple[Role, str | None] | None:
    """The role and name a role word names (``user``, ``user:bob``, ``functions.f``)."""
    role = ROLES.get(word)
    if role is not None:
        return role, None
    head, sep, name = word.partition(":")
    if sep and head in ROLES and name and ROLES[head] is not Role.TOOL:
        return ROLES[head], name
    if "." in word or word in BUILTIN_TOOL_ROLES:
        return Role.TOOL, word
    return None


def parse_header(
    text: str,
    role: Role | None = None,
    *,
    strict: bool = True,
    notes: HeaderNotes | None = None,
) -> Header:
    """The :class:`Header` that ``text`` spells; ``role`` is the role already known, if any.

    Raises :class:`HeaderError` when ``strict`` and the header is malformed; otherwise
    repairs what it can and records it in ``notes``.
    """

    def problem(kind: RepairKind, detail: str) -> None:
        if strict:
            raise HeaderError(detail)
        if notes is not None:
            notes.items.append((kind, detail))

    attrs: dict[str, str] = {}
    bare_start: list[str] = []
    bare_after: list[str] = []
    channel: str | None = None
    content_type: str | None = None
    constrained = False
    author: Author | None = None

    def set_attr(key: str, value: str) -> None:
        if key not in KNOWN_ATTRIBUTES:
            problem(RepairKind.UNKNOWN_ATTRIBUTE, f"unknown header attribute {key!r}")
            return
        if not value:
            problem(RepairKind.BROKEN_HEADER, f"empty value for {key}=")
            return
        if key in attrs and attrs[key] != value:
            problem(RepairKind.BROKEN_HEADER, f"{key}= given twice")
            return
        attrs[key] = value

    def take_words(words: list[str], bare: list[str]) -> None:
        for word in words:
            key, eq, value = word.partition("=")
            if eq and key.isidentifier():
                set_attr(key, value)
            else:
                bare.append(word)

    for kind, seg in _segments(text):
        if kind == "":
            words = seg.split()
            if role is not None:
                if words and words[0] == role.value:
                    words = words[1:]
                author = Author(role)
            elif words:
                first = words[0]
                found = _role_of(first)
                if found is not None:
                    words = words[1:]
                elif "=" in first:
                    problem(RepairKind.BROKEN_HEADER, "header has no role")
                    found = (Role.ASSISTANT, None)
                else:
                    # Harmony: an unknown role followed by attributes is a tool's name
                    if len(words) == 1:
                        problem(RepairKind.BROKEN_HEADER, f"unknown role {first!r}")
                    found = (Role.TOOL, first)
                    words = words[1:]
                author = Author(*found)
            take_words(words, bare_start)
        elif kind == "channel":
            if channel is not None:  # repaired: the channel nearest the body is the one meant
                problem(RepairKind.BROKEN_HEADER, "more than one channel")
            if not seg or seg[0].isspace():
                problem(RepairKind.BROKEN_HEADER, "channel marker without a channel name")
                take_words(seg.split(), bare_after)
                continue
            words = seg.split()
            channel = words[0]
            take_words(words[1:], bare_after)
        else:
            if constrained:
                problem(RepairKind.BROKEN_HEADER, "more than one constrain marker")
                continue
            constrained = True
            if seg and not seg[0].isspace():
                words = seg.split()
                content_type = words[0]
                take_words(words[1:], bare_after)
            else:
                content_type = ""
                take_words(seg.split(), bare_after)

    if author is None:
        if role is None:
            problem(RepairKind.BROKEN_HEADER, "header has no role")
        author = Author(role or Role.ASSISTANT)

    recipient = attrs.get("to")
    # Bare words, read from the end as Harmony does: a content type (always, after the
    # channel; after the role only when a recipient is already known), then a recipient.
    bare = bare_start + bare_after
    if bare and content_type is None and (bare_after or recipient is not None or len(bare) > 1):
        content_type = bare.pop()
    if bare and recipient is None:
        recipient = bare.pop()
    if bare:
        problem(RepairKind.BROKEN_HEADER, f"unexpected words in header: {bare}")
    if "content_type" in attrs:
        if content_type is None:
            content_type = attrs["content_type"]
        elif content_type != attrs["content_type"]:
            problem(RepairKind.BROKEN_HEADER, "two different content types")

    name = attrs.get("name")
    if name is not None:
        if author.name is not None and author.name != name:
            problem(RepairKind.BROKEN_HEADER, f"name={name} contradicts role {author.name}")
        else:
            author = Author(author.role, name)
    if author.role is Role.TOOL and author.name is None:
        problem(RepairKind.BROKEN_HEADER, "a tool message needs a name (name=functions.x)")
        author = Author(Role.TOOL, UNKNOWN_TOOL)

    return Header(
        author=author,
        channel=channel,
        recipient=recipient,
        content_type=content_type,
        constrained=constrained,
        call_id=attrs.get("call_id"),
        intent=attrs.get("intent"),
    )
