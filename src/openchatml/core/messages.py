"""The canonical data model: roles, channels, authors, messages and conversations.

Everything here is an immutable, slotted dataclass. A :class:`Conversation` of
:class:`Message` s is the one form in the middle; Harmony text and tokens, OpenChatML
2.2 text, the JSON interchange of OCM §10 and Open Responses items are projections of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from .content import Content, DeveloperContent, SystemContent, TextContent


class Role(StrEnum):
    """Who speaks. Instruction hierarchy: system > developer > user > assistant > tool."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Channel(StrEnum):
    """The three standard channels; any other channel name is kept as a plain string."""

    ANALYSIS = "analysis"
    COMMENTARY = "commentary"
    FINAL = "final"


class Intent(StrEnum):
    """The ``intent=`` values of OCM §6."""

    PREAMBLE = "preamble"
    STATUS = "status"
    DEBUG = "debug"


@dataclass(frozen=True, slots=True)
class Author:
    """A role and an optional name (a tool's name, or a display name such as ``alice``)."""

    role: Role
    name: str | None = None


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Message:
    """One message: its header attributes and its content parts.

    ``recipient`` is the ``to=`` destination (``functions.get_weather``); ``content_type``
    is the body type, declared with ``<|constrain|>`` when ``constrained`` is true;
    ``call_id`` ties a tool call to its reply; ``intent`` is ``preamble``, ``status`` or
    ``debug``. An assistant message with a recipient is a tool call and ends in
    ``<|call|>``.
    """

    author: Author
    content: tuple[Content, ...] = ()
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None
    constrained: bool = False
    call_id: str | None = None
    intent: str | None = None

    # --- constructors ---------------------------------------------------------------

    @classmethod
    def from_role(
        cls, role: Role | str, content: str | Content | Iterable[Content] = "", **attrs: Any
    ) -> Message:
        """A message from ``role`` with ``content`` (text, one part, or several) and attributes."""
        name = attrs.pop("name", None)
        parts: tuple[Content, ...]
        if isinstance(content, str):
            parts = (TextContent(content),)
        elif isinstance(content, TextContent | SystemContent | DeveloperContent):
            parts = (content,)
        else:
            parts = tuple(content)
        return cls(Author(Role(role), name), parts, **attrs)

    @classmethod
    def system(cls, content: str | SystemContent | None = None) -> Message:
        """A system message; the default is ``SystemContent()`` (Harmony's standard prompt)."""
        return cls.from_role(Role.SYSTEM, SystemContent() if content is None else content)

    @classmethod
    def developer(cls, content: str | DeveloperContent) -> Message:
        """A developer message (instructions, function tools, response formats)."""
        return cls.from_role(Role.DEVELOPER, content)

    @classmethod
    def user(cls, text: str, *, name: str | None = None) -> Message:
        """A user message."""
        return cls.from_role(Role.USER, text, name=name)

    @classmethod
    def assistant(cls, text: str, *, channel: str | None = "final", **attrs: Any) -> Message:
        """An assistant message on ``channel`` (``final`` unless told)."""
        return cls.from_role(Role.ASSISTANT, text, channel=channel, **attrs)

    @classmethod
    def tool_call(
        cls,
        recipient: str,
        arguments: str,
        *,
        call_id: str | None = None,
        channel: str = "commentary",
        content_type: str | None = "json",
        constrained: bool = True,
    ) -> Message:
        """An assistant call of tool ``recipient`` with JSON ``arguments`` (ends in ``<|call|>``)."""
        return cls.from_role(
            Role.ASSISTANT,
            arguments,
            channel=channel,
            recipient=recipient,
            content_type=content_type,
            constrained=constrained if content_type is not None else False,
            call_id=call_id,
        )

    @classmethod
    def tool_result(
        cls,
        name: str,
        output: str,
        *,
        call_id: str | None = None,
        channel: str | None = "commentary",
        recipient: str | None = "assistant",
    ) -> Message:
        """A tool's reply: ``name`` is the tool (``functions.get_weather``)."""
        return cls.from_role(
            Role.TOOL, output, name=name, call_id=call_id, channel=channel, recipient=recipient
        )

    # --- accessors ------------------------------------------------------------------

    @property
    def role(self) -> Role:
        """The author's role."""
        return self.author.role

    @property
    def name(self) -> str | None:
        """The author's name (for a tool reply, the tool's name)."""
        return self.author.name

    @property
    def text(self) -> str:
        """The concatenated text of the text parts."""
        return "".join(p.text for p in self.content if isinstance(p, TextContent))

    @property
    def is_tool_call(self) -> bool:
        """Whether this is an assistant message addressed to a tool (ends in ``<|call|>``)."""
        return self.author.role is Role.ASSISTANT and self.recipient is not None

    def with_(self, **changes: Any) -> Message:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class TranscriptHeader:
    """The OCM §2 YAML document header; unknown keys are kept in ``extra`` and ignored."""

    version: str = "2.2"
    model: str | None = None
    generation_settings: Mapping[str, Any] = field(default_factory=_empty)
    capabilities: Mapping[str, Any] = field(default_factory=_empty)
    profiles: Mapping[str, Any] = field(default_factory=_empty)
    extra: Mapping[str, Any] = field(default_factory=_empty)

    @property
    def major(self) -> int:
        """The major version (``2`` for ``2.2``); 0 if it is not a number."""
        head = self.version.split(".", 1)[0]
        return int(head) if head.isdigit() else 0


@dataclass(frozen=True, slots=True)
class Conversation:
    """An ordered sequence of messages, with the transcript header if one was given."""

    messages: tuple[Message, ...] = ()
    header: TranscriptHeader | None = None

    @classmethod
    def from_messages(
        cls, messages: Iterable[Message], header: TranscriptHeader | None = None
    ) -> Conversation:
        """A conversation of ``messages``."""
        return cls(tuple(messages), header)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, index: int) -> Message:
        return self.messages[index]

    def append(self, *messages: Message) -> Conversation:
        """A new conversation with ``messages`` added at the end."""
        return replace(self, messages=self.messages + messages)

    @property
    def has_function_tools(self) -> bool:
        """Whether a developer message declares a non-empty ``functions`` namespace."""
        return any(
            isinstance(part, DeveloperContent) and part.function_tools
            for msg in self.messages
            for part in msg.content
        )
