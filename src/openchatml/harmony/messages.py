"""Messages and conversations, as openai-harmony's pydantic models."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from enum import Enum
from typing import Any, Final

from pydantic import BaseModel, Field

from .content import Content, DeveloperContent, SystemContent, TextContent

CONSTRAIN_MARKER: Final = "<|constrain|>"
"""The prefix of a ``content_type`` that openai-harmony renders as ``<|constrain|>``."""


class Role(str, Enum):  # noqa: UP042 - str() and format() as in openai-harmony
    """Who speaks: ``user``, ``assistant``, ``system``, ``developer`` or ``tool``."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    DEVELOPER = "developer"
    TOOL = "tool"

    @classmethod
    def _missing_(cls, value: object) -> Role:
        raise ValueError(f"Unknown role: {value!r}")


class Author(BaseModel):
    """A role and an optional name (a tool's name, such as ``functions.get_weather``)."""

    role: Role
    name: str | None = None

    @classmethod
    def new(cls, role: Role, name: str) -> Author:
        """An author with ``role`` and ``name``."""
        return cls(role=role, name=name)


class Message(BaseModel):
    """One message: author, content parts, and the channel, recipient and content type.

    The ``with_*`` and ``adding_content`` builders change the message in place and
    return it.
    """

    author: Author
    content: list[Content] = Field(default_factory=list)
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None

    @classmethod
    def from_author_and_content(cls, author: Author, content: str | Content) -> Message:
        """A message from ``author`` with one part (a string is text)."""
        if isinstance(content, str):
            content = TextContent(text=content)
        return cls(author=author, content=[content])

    @classmethod
    def from_role_and_content(cls, role: Role, content: str | Content) -> Message:
        """A message from ``role`` with one part (a string is text)."""
        return cls.from_author_and_content(Author(role=role), content)

    @classmethod
    def from_role_and_contents(cls, role: Role, contents: Sequence[Content]) -> Message:
        """A message from ``role`` with the parts ``contents``."""
        return cls(author=Author(role=role), content=list(contents))

    def adding_content(self, content: str | Content) -> Message:
        """Append a part (a string is text)."""
        if isinstance(content, str):
            content = TextContent(text=content)
        self.content.append(content)
        return self

    def with_channel(self, channel: str) -> Message:
        """Set the channel."""
        self.channel = channel
        return self

    def with_recipient(self, recipient: str) -> Message:
        """Set the recipient (``functions.get_weather``, ``assistant`` …)."""
        self.recipient = recipient
        return self

    def with_content_type(self, content_type: str) -> Message:
        """Set the content type (``<|constrain|>json`` for constrained JSON)."""
        self.content_type = content_type
        return self

    def to_dict(self) -> dict[str, Any]:
        """``role``, ``name``, ``content`` (a list of part dicts) and the header fields that are set."""
        out: dict[str, Any] = {**self.author.model_dump(), "content": [c.to_dict() for c in self.content]}
        if self.channel is not None:
            out["channel"] = self.channel
        if self.recipient is not None:
            out["recipient"] = self.recipient
        if self.content_type is not None:
            out["content_type"] = self.content_type
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """The message ``data`` describes; ``content`` may be a list of part dicts or a string.

        Raises ``ValueError`` for a part of unknown type.
        """
        author = Author(role=Role(data["role"]), name=data.get("name"))
        raw_content = data["content"]
        if isinstance(raw_content, str):
            raw_content = [{"type": "text", "text": raw_content}]
        parts: list[Content] = []
        for raw in raw_content:
            kind = raw.get("type")
            if kind == "text":
                parts.append(TextContent(**raw))
            elif kind == "system_content":
                parts.append(SystemContent(**raw))
            elif kind == "developer_content":
                parts.append(DeveloperContent(**raw))
            else:
                raise ValueError(f"Unknown content variant: {raw}")
        msg = cls(author=author, content=parts)
        msg.channel = data.get("channel")
        msg.recipient = data.get("recipient")
        msg.content_type = data.get("content_type")
        return msg


class Conversation(BaseModel):
    """An ordered list of messages."""

    messages: list[Message] = Field(default_factory=list)

    @classmethod
    def from_messages(cls, messages: Sequence[Message]) -> Conversation:
        """A conversation of ``messages``."""
        return cls(messages=list(messages))

    def __iter__(self) -> Iterator[Message]:  # type: ignore[override]
        return iter(self.messages)

    def to_dict(self) -> dict[str, Any]:
        """``{"messages": [message dicts]}``."""
        return {"messages": [m.to_dict() for m in self.messages]}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, payload: str) -> Conversation:
        """The conversation the JSON text ``payload`` (a :meth:`to_json` result) describes."""
        data = json.loads(payload)
        return cls(messages=[Message.from_dict(m) for m in data["messages"]])
