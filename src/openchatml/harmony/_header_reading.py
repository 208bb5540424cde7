"""Reading a message header as openai-harmony 0.0.8 reads it, in strict mode.

Theory of operation. openai-harmony decodes the header's ids to text (special ids become
their spelling) and reads that text in four steps:

1. the first ``<|channel|>`` and the word after it (up to whitespace or ``<``) are the
   channel, cut out of the text; an empty word is an error;
2. a space goes in front of every ``<|constrain|>``;
3. the text is split at ASCII whitespace; without a known role the first word is the
   role (an unknown one followed by more words is a tool's name), and a word equal to
   the role is dropped;
4. from the end: ``to=x`` is the recipient; a lone word is the recipient; otherwise the
   last word is the content type and the one before it the recipient. Any word left is
   an error (``unexpected tokens remaining in message header``).

Everything else, special spellings included, is kept as words. Where openai-harmony
misreads a header it renders itself, the core's reading is taken instead (the README's
list): a named user, assistant, system or developer (``user:alice``); a tool reply with
no recipient (``functions.f``), both "Unknown role" errors there; and a lone content
type after the channel or the constrain marker (``<|channel|>final <|constrain|>json``),
read there as the recipient. Those exemptions apply only to headers a renderer writes:
no special token in them but ``<|channel|>`` and ``<|constrain|>``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from ..core.errors import HeaderError, Position
from ..core.events import Header
from ..core.headers import CHANNEL_MARK, CONSTRAIN_MARK, parse_header
from ..core.messages import Author, Role

UNICODE_SPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
"""The characters Rust's ``char::is_whitespace`` and ``str::trim`` treat as whitespace."""
_ASCII_SPACE_RE: Final = re.compile("[\t\n\x0c\r ]+")
_ROLES: Final[dict[str, Role]] = {r.value: r for r in Role}
_UNKNOWN_ROLE: Final = "Unknown role: "
_DEBUG_ESCAPES: Final = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"', "\0": "\\0"}


@dataclass(frozen=True, slots=True)
class ReferenceReading:
    """What openai-harmony reads in a header: ``role_word`` is the word read as the role
    (``None`` when the role was known); ``content_type`` keeps its ``<|constrain|>``."""

    author: Author
    channel: str | None
    recipient: str | None
    content_type: str | None
    role_word: str | None


def _grapheme_extend(char: str) -> bool:
    """Whether ``char`` extends a grapheme (Rust escapes these in ``{:?}``)."""
    code = ord(char)
    return (
        unicodedata.category(char) in ("Mn", "Me")
        or code == 0x200C
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
    )


def rust_debug(text: str) -> str:
    """``text`` quoted as Rust's ``{:?}`` writes a string."""
    out = []
    for char in text:
        escaped = _DEBUG_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif _grapheme_extend(char) or not char.isprintable():
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _cut_channel(text: str) -> tuple[str, str | None]:
    """``text`` without its first channel marker and channel word, and that word."""
    at = text.find(CHANNEL_MARK)
    if at < 0:
        return text, None
    after = text[at + len(CHANNEL_MARK) :]
    end = next((i for i, char in enumerate(after) if char == "<" or char in UNICODE_SPACE), len(after))
    if end == 0:
        raise HeaderError("channel marker present but no channel value found in header")
    return text[:at] + after[end:], after[:end]


def reference_reading(text: str, role: Role | None, where: Position | None = None) -> ReferenceReading:
    """The header ``text`` as openai-harmony reads it; ``role`` is the role already known.

    Raises :class:`HeaderError` with openai-harmony's words where it raises.
    """
    try:
        text, channel = _cut_channel(text)
    except HeaderError as exc:
        raise HeaderError(exc.message, position=where) from None
    text = text.strip(UNICODE_SPACE)
    if CONSTRAIN_MARK in text:
        text = text.replace(CONSTRAIN_MARK, " " + CONSTRAIN_MARK).strip(UNICODE_SPACE)
    parts = [part for part in _ASCII_SPACE_RE.split(text) if part]
    role_word = None
    if role is None:
        if not parts:
            raise HeaderError("message header did not contain a role", position=where)
        role_word = parts[0]
        role = _ROLES.get(role_word)
        if role is None:
            if len(parts) == 1 and not role_word.startswith("to="):
                raise HeaderError(_UNKNOWN_ROLE + role_word, position=where)
            del parts[0]
            role = Role.TOOL
    if parts and parts[0] == role.value:
        del parts[0]
    recipient = content_type = None
    if parts:
        count = len(parts)
        last = parts.pop()
        if last.startswith("to="):
            recipient = last[3:]
        elif count == 1:
            recipient = last
        else:
            content_type = last
            if parts:
                word = parts.pop()
                recipient = word[3:] if word.startswith("to=") else word
        if parts:
            left = rust_debug(" ".join(parts))
            raise HeaderError(f"unexpected tokens remaining in message header: Some({left})", position=where)
    author = Author(role, role_word if role is Role.TOOL else None)
    return ReferenceReading(author, channel, recipient, content_type, role_word)


def _header_of(reading: ReferenceReading) -> Header:
    content_type = reading.content_type
    constrained = content_type is not None and content_type.startswith(CONSTRAIN_MARK)
    if constrained:
        assert content_type is not None
        content_type = content_type[len(CONSTRAIN_MARK) :]
    return Header(reading.author, reading.channel, reading.recipient, content_type, constrained)


def _core_reading(text: str, role: Role | None) -> Header | None:
    """The core's strict reading of ``text``, or ``None`` if it refuses it."""
    try:
        return parse_header(text, role, strict=True)
    except HeaderError:
        return None


def _is_named_role(word: str) -> bool:
    head, sep, name = word.partition(":")
    return bool(sep and name) and head in _ROLES and head != Role.TOOL.value


def _misread_content_type(reading: ReferenceReading, core: Header) -> bool:
    """Whether openai-harmony read as the recipient what the core reads as the content type."""
    content_type = core.content_type
    if core.constrained:
        content_type = CONSTRAIN_MARK + (content_type or "")
    return (
        reading.content_type is None
        and core.recipient is None
        and content_type == reading.recipient
        and (core.author, core.channel) == (reading.author, reading.channel)
    )


def read_header(text: str, role: Role | None, *, rendered: bool, where: Position | None = None) -> Header:
    """The header ``text`` read as openai-harmony does, but for its documented misreadings.

    ``rendered``: the header holds no special token but the channel and constrain markers,
    as a renderer writes it; only then may the core's reading replace openai-harmony's.
    Raises :class:`HeaderError` with openai-harmony's words where it raises.
    """
    try:
        reading = reference_reading(text, role, where)
    except HeaderError as exc:
        if rendered and role is None and exc.message.startswith(_UNKNOWN_ROLE):
            core = _core_reading(text, role)
            if core is not None:
                return core
        raise
    if rendered:
        if reading.role_word is not None and _is_named_role(reading.role_word):
            core = _core_reading(text, role)
            if core is not None:
                return core
        elif reading.recipient is not None and reading.content_type is None:
            core = _core_reading(text, role)
            if core is not None and _misread_content_type(reading, core):
                return core
    return _header_of(reading)
