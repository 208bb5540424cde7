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
        channel_at = text.find(CHANNEL_MARK, pos)
        constrain_at = text.find(CONSTRAIN_MARK, pos)
        found = [
            (at, mark) for at, mark in ((channel_at, CHANNEL_MARK), (constrain_at, CONSTRAIN_MARK)) if at >= 0
        ]
        if not found:
            out.append((kind, text[pos:]))
            return out
        at, mark = min(found)
        out.append((kind, text[pos:at]))
        kind = "channel" if mark == CHANNEL_MARK else "constrain"
        pos = at + len(mark)


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


class _HeaderReader:
    """One header being read, segment by segment: its attributes, bare words, channel
    and content type so far, and where its problems go (raised, or noted)."""

    __slots__ = (
        "attrs",
        "author",
        "bare_after",
        "bare_start",
        "channel",
        "constrained",
        "content_type",
        "notes",
        "role",
        "strict",
    )

    def __init__(self, role: Role | None, strict: bool, notes: HeaderNotes | None) -> None:
        self.role = role
        self.strict = strict
        self.notes = notes
        self.attrs: dict[str, str] = {}
        self.bare_start: list[str] = []
        self.bare_after: list[str] = []
        self.channel: str | None = None
        self.content_type: str | None = None
        self.constrained = False
        self.author: Author | None = None

    def problem(self, kind: RepairKind, detail: str) -> None:
        """Raise :class:`HeaderError` (strict) or note ``(kind, detail)`` (lenient)."""
        if self.strict:
            raise HeaderError(detail)
        if self.notes is not None:
            self.notes.items.append((kind, detail))

    def set_attribute(self, key: str, value: str) -> None:
        """Record ``key=value``; an unknown key, empty value or contradiction is a problem."""
        if key not in KNOWN_ATTRIBUTES:
            self.problem(RepairKind.UNKNOWN_ATTRIBUTE, f"unknown header attribute {key!r}")
            return
        if not value:
            self.problem(RepairKind.BROKEN_HEADER, f"empty value for {key}=")
            return
        if key in self.attrs and self.attrs[key] != value:
            self.problem(RepairKind.BROKEN_HEADER, f"{key}= given twice")
            return
        self.attrs[key] = value

    def take_words(self, words: list[str], bare: list[str]) -> None:
        """``key=value`` words become attributes; the other words go to ``bare``."""
        for word in words:
            key, eq, value = word.partition("=")
            if eq and key.isidentifier():
                self.set_attribute(key, value)
            else:
                bare.append(word)

    def read_role(self, segment: str) -> None:
        """The first segment: the role word (unless the role is known) and attributes."""
        words = segment.split()
        if self.role is not None:
            if words and words[0] == self.role.value:
                words = words[1:]
            self.author = Author(self.role)
        elif words:
            first = words[0]
            found = _role_of(first)
            if found is not None:
                words = words[1:]
            elif "=" in first:
                self.problem(RepairKind.BROKEN_HEADER, "header has no role")
                found = (Role.ASSISTANT, None)
            else:
                # Harmony: an unknown role followed by attributes is a tool's name
                if len(words) == 1:
                    self.problem(RepairKind.BROKEN_HEADER, f"unknown role {first!r}")
                found = (Role.TOOL, first)
                words = words[1:]
            self.author = Author(*found)
        self.take_words(words, self.bare_start)

    def read_channel(self, segment: str) -> None:
        """A segment after ``<|channel|>``: the channel name, then attributes or bare words."""
        if self.channel is not None:  # repaired: the channel nearest the body is the one meant
            self.problem(RepairKind.BROKEN_HEADER, "more than one channel")
        if not segment or segment[0].isspace():
            self.problem(RepairKind.BROKEN_HEADER, "channel marker without a channel name")
            self.take_words(segment.split(), self.bare_after)
            return
        words = segment.split()
        self.channel = words[0]
        self.take_words(words[1:], self.bare_after)

    def read_constraint(self, segment: str) -> None:
        """A segment after ``<|constrain|>``: the content type (empty when none follows)."""
        if self.constrained:
            self.problem(RepairKind.BROKEN_HEADER, "more than one constrain marker")
            return
        self.constrained = True
        if segment and not segment[0].isspace():
            words = segment.split()
            self.content_type = words[0]
            self.take_words(words[1:], self.bare_after)
        else:
            self.content_type = ""
            self.take_words(segment.split(), self.bare_after)

    def recipient_and_content_type(self) -> tuple[str | None, str | None]:
        """The recipient and content type, from the attributes and the bare words.

        Bare words are read from the end as Harmony does: a content type (always, after
        the channel; after the role only when a recipient is already known), then a
        recipient.
        """
        recipient = self.attrs.get("to")
        content_type = self.content_type
        bare = self.bare_start + self.bare_after
        if bare and content_type is None and (self.bare_after or recipient is not None or len(bare) > 1):
            content_type = bare.pop()
        if bare and recipient is None:
            recipient = bare.pop()
        if bare:
            self.problem(RepairKind.BROKEN_HEADER, f"unexpected words in header: {bare}")
        if "content_type" in self.attrs:
            if content_type is None:
                content_type = self.attrs["content_type"]
            elif content_type != self.attrs["content_type"]:
                self.problem(RepairKind.BROKEN_HEADER, "two different content types")
        return recipient, content_type

    def role_author(self) -> Author:
        """The author the role word gave; a header without one is a problem (lenient:
        the known role, else ``assistant``)."""
        if self.author is not None:
            return self.author
        if self.role is None:
            self.problem(RepairKind.BROKEN_HEADER, "header has no role")
        return Author(self.role or Role.ASSISTANT)

    def named_author(self, author: Author) -> Author:
        """``author`` with ``name=`` applied; a tool without a name is a problem."""
        name = self.attrs.get("name")
        if name is not None:
            if author.name is not None and author.name != name:
                self.problem(RepairKind.BROKEN_HEADER, f"name={name} contradicts role {author.name}")
            else:
                author = Author(author.role, name)
        if author.role is Role.TOOL and author.name is None:
            self.problem(RepairKind.BROKEN_HEADER, "a tool message needs a name (name=functions.x)")
            author = Author(Role.TOOL, UNKNOWN_TOOL)
        return author


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
    reader = _HeaderReader(role, strict, notes)
    for kind, segment in _segments(text):
        if kind == "":
            reader.read_role(segment)
        elif kind == "channel":
            reader.read_channel(segment)
        else:
            reader.read_constraint(segment)
    author = reader.role_author()
    recipient, content_type = reader.recipient_and_content_type()
    author = reader.named_author(author)
    return Header(
        author=author,
        channel=reader.channel,
        recipient=recipient,
        content_type=content_type,
        constrained=reader.constrained,
        call_id=reader.attrs.get("call_id"),
        intent=reader.attrs.get("intent"),
    )
