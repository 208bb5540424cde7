"""A drop-in for the ``openai_harmony`` package, on top of the openchatml core.

Code written for openai-harmony runs unchanged after one import is changed::

    from openchatml.harmony import load_harmony_encoding, HarmonyEncodingName, Role, ...

The public names, signatures and results are those of ``openai-harmony`` 0.0.8: pydantic
models (``Message``, ``Conversation``, ``SystemContent`` … with their fluent ``with_*``
builders and ``to_dict``/``from_dict``), ``HarmonyEncoding`` (render, parse, encode,
decode, stop tokens) and ``StreamableParser``. Rendering a conversation gives the same
token ids, and parsing well-formed tokens gives the same messages, token by token the
same streaming state.

The models are converted to the core's frozen dataclasses at the edges, without
re-validation: a ``content_type`` of ``"<|constrain|>json"`` is the core's
``content_type="json", constrained=True``; ``RenderConversationConfig(auto_drop_analysis=
True)`` (also the default) is :attr:`~openchatml.core.render.CoTPolicy.AUTO_DROP`, ``False``
is ``KEEP``; the profile is always Harmony. ``StreamableParser.process`` only feeds the
core :class:`~openchatml.core.parse.StreamParser`; parsed messages become pydantic models when
``messages`` is read (built once each, with ``model_construct``, and shared by later
reads).

Errors. :class:`HarmonyError` derives from :class:`~openchatml.core.errors.OCMError` (and from
``RuntimeError``, like the reference's). A core error raised through this API is an
instance of both its own class and ``HarmonyError``: ``except HarmonyError``,
``except HeaderError`` and ``except OCMError`` all catch it, and its ``code`` and
``position`` are kept. Misuse that the reference answers with ``ValueError`` or a pydantic
``ValidationError`` (an unknown encoding name, a model built from wrong types) raises the
same here.

Where this differs from openai-harmony (only on malformed input or odd values):

* Malformed tokens raise a typed error when ``strict`` (a
  :class:`~openchatml.core.errors.ParseError` that is also a ``HarmonyError``) and are
  repaired otherwise, where the reference raises an untyped ``HarmonyError`` even when
  not strict, or returns something odd. The error may come at another token, with
  another message: ``<|end|>`` before ``<|message|>`` raises
  :class:`~openchatml.core.errors.HeaderError` at the ``<|end|>``, where the reference raises
  at the next ``<|message|>``.
* Read where the reference cannot: ``<|start|>user:bob`` is a user message named
  ``bob``; ``<|start|>functions.f<|message|>`` (a tool reply with no recipient or
  channel) is a message from the tool ``functions.f``; whitespace between messages is
  skipped. A content type after ``<|constrain|>`` with no recipient
  (``<|channel|>final <|constrain|>json``) is a content type, as openai-harmony's own
  test suite expects; its 0.0.8 build reads it as a recipient.
* A special token other than a terminator inside a body: the reference keeps its text
  (``"<|start|>"``); here ``<|start|>`` ends the message and starts another, and any
  other raises :class:`~openchatml.core.errors.UnexpectedTokenError` (kept as text when not
  strict).
* End of input inside a header, or before the header a prompt opened: strict, a
  :class:`~openchatml.core.errors.StreamTruncatedError`; not strict, the unfinished header
  is dropped (the reference raises in both modes).
* Invalid UTF-8 in a body: the reference holds the text after a bad sequence until the
  next token (sometimes never reporting it in ``last_content_delta``); here it is
  reported at once. The finished message is the same.
* Header values are sanitised when rendered, as everywhere in openchatml: whitespace
  becomes ``_``, ``<|`` loses its ``|`` and an empty value is ``_``, so that a header
  always parses back. The reference renders them as given (``to=a b``).
* Rendering errors are ``HarmonyError`` (a ``RuntimeError``); the reference raises a
  plain ``RuntimeError``. ``decode``/``decode_utf8`` raise ``HarmonyError`` for a
  negative id (the reference: ``OverflowError``).
* ``stop_tokens()`` lists are sorted (the reference's order is arbitrary).
* Parsed messages are shared between reads of ``StreamableParser.messages``.
"""

from __future__ import annotations

import codecs
import functools
import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from enum import Enum, StrEnum
from typing import Any, Final, Literal, cast

from pydantic import BaseModel, Field

from .core import content as _c
from .core import messages as _m
from .core.encoding import Encoding, load_encoding
from .core.errors import BY_CODE, OCMError, Position, RenderError, StreamTruncatedError
from .core.parse import StreamParser
from .core.render import CoTPolicy, Profile, RenderConfig, Renderer
from .core.tokens import MESSAGE_ID, START_ID

__all__ = [
    "Author",
    "ChannelConfig",
    "Content",
    "Conversation",
    "DeveloperContent",
    "HarmonyEncoding",
    "HarmonyEncodingName",
    "HarmonyError",
    "Message",
    "ReasoningEffort",
    "RenderConversationConfig",
    "RenderOptions",
    "Role",
    "StreamState",
    "StreamableParser",
    "SystemContent",
    "TextContent",
    "ToolDescription",
    "ToolNamespaceConfig",
    "load_harmony_encoding",
]

CONSTRAIN_MARKER: Final = "<|constrain|>"
"""The prefix of a ``content_type`` that openai-harmony renders as ``<|constrain|>``."""


# --- errors ---------------------------------------------------------------------------


class HarmonyError(OCMError, RuntimeError):
    """An error raised through the openai-harmony API.

    Raised as is for this module's own checks (text naming a disallowed special token
    in :meth:`HarmonyEncoding.encode`, ids that do not decode); core errors raised here
    are instances of their own class and of this one.
    """

    code = "E-HARMONY"
    fault = "caller"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_error, (self.code, self.message, self.position))


_AS_HARMONY: dict[type[OCMError], type[HarmonyError]] = {}


def _harmony_class(cls: type[OCMError]) -> type[HarmonyError]:
    """``cls`` mixed with :class:`HarmonyError`, keeping ``cls``'s code, fault and status."""
    if issubclass(cls, HarmonyError):
        return cls
    mixed = _AS_HARMONY.get(cls)
    if mixed is None:
        attrs = {
            "__module__": __name__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
            "code": cls.code,
            "fault": cls.fault,
            "http_status": cls.http_status,
            "error_type": cls.error_type,
        }
        mixed = _AS_HARMONY[cls] = cast(type[HarmonyError], type(cls.__name__, (cls, HarmonyError), attrs))
    return mixed


def _as_harmony(exc: OCMError) -> HarmonyError:
    """``exc`` as an instance of its own class and of :class:`HarmonyError`."""
    if isinstance(exc, HarmonyError):
        return exc
    out = _harmony_class(type(exc))(exc.message, position=exc.position)
    return out.with_traceback(exc.__traceback__)


def _restore_error(code: str, message: str, position: Position | None) -> HarmonyError:
    """Rebuild a pickled :class:`HarmonyError` from its code, message and position."""
    base = BY_CODE.get(code)
    cls = _harmony_class(base) if base is not None else HarmonyError
    return cls(message, position=position)


# --- the data model (pydantic, as openai-harmony) -------------------------------------


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


class Content(BaseModel):
    """Base of the content parts of a message."""

    def to_dict(self) -> dict[str, Any]:
        """The part as a JSON-ready dict with its ``type``."""
        raise NotImplementedError


class TextContent(Content):
    """Plain text."""

    text: str

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "text", "text": …}``."""
        return {"type": "text", "text": self.text}


class ToolDescription(BaseModel):
    """One tool: name, description and parameters as JSON Schema (or none)."""

    name: str
    description: str
    parameters: dict[str, Any] | None = None

    @classmethod
    def new(cls, name: str, description: str, parameters: dict[str, Any] | None = None) -> ToolDescription:
        """A tool description."""
        return cls(name=name, description=description, parameters=parameters)


class ReasoningEffort(str, Enum):  # noqa: UP042 - str() and format() as in openai-harmony
    """``Low``, ``Medium`` or ``High`` (rendered as ``Reasoning: low`` …)."""

    LOW = "Low"
    MEDIUM = "Medium"
    HIGH = "High"


class ChannelConfig(BaseModel):
    """The valid channels, and whether every message must name one."""

    valid_channels: list[str]
    channel_required: bool

    @classmethod
    def require_channels(cls, channels: list[str]) -> ChannelConfig:
        """``channels``, one of which every message must name."""
        return cls(valid_channels=channels, channel_required=True)


class ToolNamespaceConfig(BaseModel):
    """A namespace of tools (``functions``, ``browser``, ``python`` …)."""

    name: str
    description: str | None = None
    tools: list[ToolDescription]

    @staticmethod
    def browser() -> ToolNamespaceConfig:
        """The built-in ``browser`` namespace, as gpt-oss was trained on it."""
        return _compat_namespace(_c.BROWSER_NAMESPACE)

    @staticmethod
    def python() -> ToolNamespaceConfig:
        """The built-in ``python`` tool, as gpt-oss was trained on it."""
        return _compat_namespace(_c.PYTHON_NAMESPACE)


def _default_channels() -> ChannelConfig:
    return ChannelConfig.require_channels(["analysis", "commentary", "final"])


class SystemContent(Content):
    """The system prompt: identity, dates, reasoning effort, built-in tools, channels.

    The ``with_*`` builders change the content in place and return it.
    """

    model_identity: str | None = _c.DEFAULT_IDENTITY
    reasoning_effort: ReasoningEffort | None = ReasoningEffort.MEDIUM
    conversation_start_date: str | None = None
    knowledge_cutoff: str | None = "2024-06"
    channel_config: ChannelConfig | None = Field(default_factory=_default_channels)
    tools: dict[str, ToolNamespaceConfig] | None = None

    @classmethod
    def new(cls) -> SystemContent:
        """The default system content."""
        return cls()

    def with_model_identity(self, model_identity: str) -> SystemContent:
        """Set the identity line."""
        self.model_identity = model_identity
        return self

    def with_reasoning_effort(self, reasoning_effort: ReasoningEffort) -> SystemContent:
        """Set the reasoning effort."""
        self.reasoning_effort = reasoning_effort
        return self

    def with_conversation_start_date(self, conversation_start_date: str) -> SystemContent:
        """Set the ``Current date:`` line."""
        self.conversation_start_date = conversation_start_date
        return self

    def with_knowledge_cutoff(self, knowledge_cutoff: str) -> SystemContent:
        """Set the ``Knowledge cutoff:`` line."""
        self.knowledge_cutoff = knowledge_cutoff
        return self

    def with_channel_config(self, channel_config: ChannelConfig) -> SystemContent:
        """Set the channel configuration."""
        self.channel_config = channel_config
        return self

    def with_required_channels(self, channels: list[str]) -> SystemContent:
        """Require one of ``channels`` on every message."""
        self.channel_config = ChannelConfig.require_channels(channels)
        return self

    def with_tools(self, ns_config: ToolNamespaceConfig) -> SystemContent:
        """Add (or replace) the tool namespace ``ns_config.name``."""
        if self.tools is None:
            self.tools = {}
        self.tools[ns_config.name] = ns_config
        return self

    def with_browser_tool(self) -> SystemContent:
        """Add the built-in ``browser`` namespace."""
        return self.with_tools(ToolNamespaceConfig.browser())

    def with_python_tool(self) -> SystemContent:
        """Add the built-in ``python`` tool."""
        return self.with_tools(ToolNamespaceConfig.python())

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, and ``"type": "system_content"``."""
        out = self.model_dump(exclude_none=True)
        out["type"] = "system_content"
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SystemContent:
        """The content ``raw`` (a :meth:`to_dict` result) describes."""
        return cls(**raw)


class DeveloperContent(Content):
    """The developer prompt: instructions and tool namespaces (``functions`` …)."""

    instructions: str | None = None
    tools: dict[str, ToolNamespaceConfig] | None = None

    @classmethod
    def new(cls) -> DeveloperContent:
        """Empty developer content."""
        return cls()

    def with_instructions(self, instructions: str) -> DeveloperContent:
        """Set the ``# Instructions`` text."""
        self.instructions = instructions
        return self

    def with_tools(self, ns_config: ToolNamespaceConfig) -> DeveloperContent:
        """Add (or replace) the tool namespace ``ns_config.name``."""
        if self.tools is None:
            self.tools = {}
        self.tools[ns_config.name] = ns_config
        return self

    def with_function_tools(self, tools: Sequence[ToolDescription]) -> DeveloperContent:
        """Set the ``functions`` namespace to ``tools``."""
        return self.with_tools(ToolNamespaceConfig(name="functions", description=None, tools=list(tools)))

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, and ``"type": "developer_content"``."""
        out = self.model_dump(exclude_none=True)
        out["type"] = "developer_content"
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> DeveloperContent:
        """The content ``raw`` (a :meth:`to_dict` result) describes."""
        return cls(**raw)


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


class RenderConversationConfig(BaseModel):
    """``auto_drop_analysis``: drop earlier analysis once the last assistant message is final."""

    auto_drop_analysis: bool = True


class RenderOptions(BaseModel):
    """``conversation_has_function_tools``: add the ``functions`` note to a system message."""

    conversation_has_function_tools: bool = False


class HarmonyEncodingName(StrEnum):
    """The encodings :func:`load_harmony_encoding` knows."""

    HARMONY_GPT_OSS = "HarmonyGptOss"


class StreamState(Enum):
    """Where a :class:`StreamableParser` is: before a message, in its header, in its body."""

    EXPECT_START = "ExpectStart"
    HEADER = "Header"
    CONTENT = "Content"


# --- conversion to and from the core model ---------------------------------------------

_CORE_ROLE: Final[dict[str, _m.Role]] = {r.value: r for r in _m.Role}
_COMPAT_ROLE: Final[dict[_m.Role, Role]] = {_m.Role(r.value): r for r in Role}
_CORE_EFFORT: Final[dict[str, _c.ReasoningEffort]] = {
    **{e.value: _c.ReasoningEffort(e.value.lower()) for e in ReasoningEffort},
    **{e.value: e for e in _c.ReasoningEffort},
}
_STATES: Final[dict[str, StreamState]] = {
    "ExpectStart": StreamState.EXPECT_START,
    "Header": StreamState.HEADER,
    "Content": StreamState.CONTENT,
    "Literal": StreamState.CONTENT,
}


def _core_role(role: Role | str) -> _m.Role:
    found = _CORE_ROLE.get(role)
    if found is None:
        raise ValueError(f"Unknown role: {role!r}")
    return found


def _core_effort(effort: ReasoningEffort | str) -> _c.ReasoningEffort:
    found = _CORE_EFFORT.get(effort)
    if found is None:
        raise RenderError(f"unknown reasoning effort {effort!r}")
    return found


def _core_namespace(ns: ToolNamespaceConfig) -> _c.ToolNamespaceConfig:
    return _c.ToolNamespaceConfig(
        ns.name,
        ns.description,
        tuple(_c.ToolDescription(t.name, t.description, t.parameters) for t in ns.tools),
    )


def _core_tools(tools: dict[str, ToolNamespaceConfig] | None) -> dict[str, _c.ToolNamespaceConfig] | None:
    if tools is None:
        return None
    return {key: _core_namespace(ns) for key, ns in tools.items()}


def _core_content(part: Content) -> _c.Content:
    if isinstance(part, TextContent):
        return _c.TextContent(part.text)
    if isinstance(part, SystemContent):
        effort = part.reasoning_effort
        channels = part.channel_config
        return _c.SystemContent(
            model_identity=part.model_identity,
            reasoning_effort=None if effort is None else _core_effort(effort),
            conversation_start_date=part.conversation_start_date,
            knowledge_cutoff=part.knowledge_cutoff,
            channel_config=(
                None
                if channels is None
                else _c.ChannelConfig(tuple(channels.valid_channels), channels.channel_required)
            ),
            tools=_core_tools(part.tools),
        )
    if isinstance(part, DeveloperContent):
        return _c.DeveloperContent(instructions=part.instructions, tools=_core_tools(part.tools))
    raise RenderError(f"cannot render a content part of type {type(part).__name__}")


def _core_message(msg: Message) -> _m.Message:
    """The core message ``msg`` stands for (``<|constrain|>x`` → constrained ``x``)."""
    author = msg.author
    content_type = msg.content_type
    constrained = False
    if content_type is not None and content_type.startswith(CONSTRAIN_MARKER):
        content_type = content_type[len(CONSTRAIN_MARKER) :]
        constrained = True
    role = _CORE_ROLE.get(author.role)
    if role is None:
        raise RenderError(f"unknown role {author.role!r}")
    return _m.Message(
        _m.Author(role, author.name),
        tuple(map(_core_content, msg.content)),
        msg.channel,
        msg.recipient,
        content_type,
        constrained,
    )


def _core_messages(conversation: Conversation | Iterable[Message]) -> list[_m.Message]:
    messages = conversation.messages if isinstance(conversation, Conversation) else conversation
    return list(map(_core_message, messages))


def _thawed(value: Any) -> Any:
    """``value`` with every mapping made a plain ``dict`` (and every list copied)."""
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_thawed(v) for v in value]
    return value


def _compat_namespace(ns: _c.ToolNamespaceConfig) -> ToolNamespaceConfig:
    return ToolNamespaceConfig(
        name=ns.name,
        description=ns.description,
        tools=[
            ToolDescription(name=t.name, description=t.description, parameters=_thawed(t.parameters))
            for t in ns.tools
        ],
    )


def _compat_message(msg: _m.Message) -> Message:
    """The pydantic message for a parsed core message (no validation)."""
    content_type = msg.content_type
    if msg.constrained:
        content_type = CONSTRAIN_MARKER + (content_type or "")
    parts: list[Content] = [
        TextContent.model_construct(text=p.text) if isinstance(p, _c.TextContent) else _compat_part(p)
        for p in msg.content
    ]
    author = msg.author
    return Message.model_construct(
        author=Author.model_construct(role=_COMPAT_ROLE[author.role], name=author.name),
        content=parts,
        channel=msg.channel,
        recipient=msg.recipient,
        content_type=content_type,
    )


def _compat_part(part: _c.Content) -> Content:
    if isinstance(part, _c.TextContent):
        return TextContent(text=part.text)
    tools = None if part.tools is None else {key: _compat_namespace(ns) for key, ns in part.tools.items()}
    if isinstance(part, _c.SystemContent):
        channels = part.channel_config
        effort = part.reasoning_effort
        return SystemContent(
            model_identity=part.model_identity,
            reasoning_effort=None if effort is None else ReasoningEffort(effort.value.capitalize()),
            conversation_start_date=part.conversation_start_date,
            knowledge_cutoff=part.knowledge_cutoff,
            channel_config=(
                None
                if channels is None
                else ChannelConfig(
                    valid_channels=list(channels.valid_channels),
                    channel_required=channels.channel_required,
                )
            ),
            tools=tools,
        )
    return DeveloperContent(instructions=part.instructions, tools=tools)


# --- the encoding -----------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _special_regex(tokens: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(tokens, key=len, reverse=True))))


def _disallowed(token: str) -> HarmonyError:
    return HarmonyError(
        f"Encountered text corresponding to disallowed special token {token!r}. "
        "Pass it in allowed_special to encode it as a special token, or leave it out of "
        "disallowed_special (disallowed_special=() for none) to encode it as text."
    )


class HarmonyEncoding:
    """Renders conversations to token ids, parses completions, encodes and decodes text.

    Get one with :func:`load_harmony_encoding`. Rendering raises :class:`HarmonyError`
    (a :class:`~openchatml.core.errors.RenderError`) for a conversation that cannot be
    rendered, such as a tool message without a name.
    """

    def __init__(
        self, name: str = HarmonyEncodingName.HARMONY_GPT_OSS.value, encoding: Encoding | None = None
    ) -> None:
        self._name = name
        self._encoding = encoding if encoding is not None else load_encoding()
        self._drop = Renderer(RenderConfig(profile=Profile.HARMONY, cot=CoTPolicy.AUTO_DROP), self._encoding)
        self._keep = Renderer(RenderConfig(profile=Profile.HARMONY, cot=CoTPolicy.KEEP), self._encoding)
        self._specials = frozenset(self._encoding.special_tokens)
        self._all_specials_re = _special_regex(self._specials)

    @property
    def name(self) -> str:
        """``HarmonyGptOss``."""
        return self._name

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        """The text of every special token (``<|start|>``, ``<|reserved_200014|>`` …)."""
        return set(self._specials)

    # --- rendering -------------------------------------------------------------------

    def _renderer(self, config: RenderConversationConfig | None) -> Renderer:
        return self._drop if config is None or config.auto_drop_analysis else self._keep

    def render_conversation_for_completion(
        self,
        conversation: Conversation,
        next_turn_role: Role,
        config: RenderConversationConfig | None = None,
    ) -> list[int]:
        """Token ids of ``conversation`` followed by ``<|start|>{next_turn_role}``."""
        try:
            messages = _core_messages(conversation)
            return self._renderer(config).completion_tokens(messages, _core_role(next_turn_role))
        except OCMError as exc:
            raise _as_harmony(exc) from None

    def render_conversation(
        self, conversation: Conversation, config: RenderConversationConfig | None = None
    ) -> list[int]:
        """Token ids of ``conversation``, every message ended."""
        try:
            return self._renderer(config).tokens(_core_messages(conversation))
        except OCMError as exc:
            raise _as_harmony(exc) from None

    def render_conversation_for_training(
        self, conversation: Conversation, config: RenderConversationConfig | None = None
    ) -> list[int]:
        """Token ids of ``conversation``; a final assistant message at the end ends in ``<|return|>``."""
        try:
            return self._renderer(config).training_tokens(_core_messages(conversation))
        except OCMError as exc:
            raise _as_harmony(exc) from None

    def render(self, message: Message, render_options: RenderOptions | None = None) -> list[int]:
        """Token ids of one message."""
        has_tools = render_options is not None and render_options.conversation_has_function_tools
        try:
            return self._drop.message_tokens(_core_message(message), has_function_tools=has_tools)
        except OCMError as exc:
            raise _as_harmony(exc) from None

    # --- parsing ---------------------------------------------------------------------

    def parse_messages_from_completion_tokens(
        self, tokens: Sequence[int], role: Role | None = None, *, strict: bool = True
    ) -> list[Message]:
        """The messages a completion spells; ``role`` is the role its prompt opened.

        Input cut short inside a body gives that message as it stands. Raises
        :class:`HarmonyError` (a typed :class:`~openchatml.core.errors.ParseError`) on
        malformed tokens when ``strict``; otherwise repairs them.
        """
        parser = StreamParser(
            None if role is None else _core_role(role),
            strict=strict,
            check_constraints=False,
            allow_truncated=True,
            replace_invalid_utf8=True,
            encoding=self._encoding,
        )
        try:
            parser.feed_tokens(tokens)
            _end_of_input(parser, strict)
        except OCMError as exc:
            raise _as_harmony(exc) from None
        return [_compat_message(m) for m in parser.messages]

    # --- tokens ----------------------------------------------------------------------

    def _decode_bytes(self, tokens: Sequence[int]) -> bytes:
        encoding = self._encoding
        try:
            data = encoding.decode_bytes(tokens)
            if data and min(tokens) < 0:
                raise ValueError
            return data
        except (ValueError, TypeError):
            limit = encoding.n_vocab
            bad = next((t for t in tokens if not (isinstance(t, int) and 0 <= t < limit)), None)
            raise HarmonyError(f"Invalid token for decoding: {bad!r}") from None

    def decode_utf8(self, tokens: Sequence[int]) -> str:
        """The text of ``tokens``; raises :class:`HarmonyError` for an unknown id or invalid UTF-8."""
        data = self._decode_bytes(tokens)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HarmonyError(f"Invalid utf-8 sequence: {exc.reason} at byte {exc.start}") from None

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of ``tokens``, invalid UTF-8 handled per ``errors`` (replaced by default)."""
        return self._decode_bytes(tokens).decode("utf-8", errors=errors)

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[int]:
        """Token ids of ``text``.

        Special-token text becomes a special id only if it is in ``allowed_special``
        (``"all"``: every one). Text naming a special token that is in
        ``disallowed_special`` (``"all"``, the default: every one not allowed) raises
        :class:`HarmonyError`; ``disallowed_special=()`` encodes it as ordinary text.
        """
        allowed: AbstractSet[str] = self._specials if allowed_special == "all" else allowed_special
        disallowed: frozenset[str]
        if disallowed_special == "all":
            disallowed = self._specials.difference(allowed) if allowed else self._specials
        else:
            disallowed = frozenset(disallowed_special)
        if disallowed and "<|" in text:
            pattern = self._all_specials_re if disallowed is self._specials else _special_regex(disallowed)
            found = pattern.search(text)
            if found is not None:
                raise _disallowed(found.group())
        if not allowed:
            return self._encoding.encode_ordinary(text)
        if allowed is self._specials:
            return self._encoding.encode(text, allowed_special="all")
        return self._encoding.encode(text, allowed_special=frozenset(allowed))

    def is_special_token(self, token: int) -> bool:
        """Whether ``token`` is a special id (199998–201088)."""
        return self._encoding.is_special_token(token)

    def stop_tokens(self) -> list[int]:
        """``<|return|>``, ``<|end|>`` and ``<|call|>``, sorted."""
        return sorted(self._encoding.stop_tokens())

    def stop_tokens_for_assistant_actions(self) -> list[int]:
        """``<|return|>`` and ``<|call|>``, sorted: where sampling an assistant turn stops."""
        return sorted(self._encoding.stop_tokens_for_assistant_actions())


def _end_of_input(parser: StreamParser, strict: bool) -> None:
    """Close ``parser``; strict, the end of input inside a header is an error.

    That includes a header that has not begun when the prompt opened ``<|start|>role``.
    """
    if strict and parser.state == "Header":
        where = Position(max(len(parser.tokens) - 1, 0), unit="token") if parser.tokens else None
        raise StreamTruncatedError("input ended inside a message header", position=where)
    parser.close()


def load_harmony_encoding(name: str | HarmonyEncodingName) -> HarmonyEncoding:
    """The encoding ``name`` (``HarmonyEncodingName.HARMONY_GPT_OSS``); ``ValueError`` for another."""
    key = str(name)
    if key != HarmonyEncodingName.HARMONY_GPT_OSS.value:
        raise ValueError(f"Invalid HarmonyEncodingName: {key}")
    return HarmonyEncoding(key, load_encoding())


# --- streaming --------------------------------------------------------------------------


class StreamableParser:
    """Parses completion tokens one at a time, exposing the message being read.

    ``role`` is the role the prompt opened (``<|start|>assistant``), or ``None`` to
    expect ``<|start|>`` first. :meth:`process` raises :class:`HarmonyError` (a typed
    :class:`~openchatml.core.errors.ParseError`) on malformed tokens when ``strict``;
    otherwise the parser repairs them.
    """

    __slots__ = ("_cache", "_encoding", "_inner", "_process", "_retired", "_retired_tokens", "_strict")

    def __init__(self, encoding: HarmonyEncoding, role: Role | None = None, *, strict: bool = True) -> None:
        self._encoding = encoding
        self._strict = strict
        self._inner = self._new_inner(None if role is None else _core_role(role))
        self._process = self._inner.process
        self._retired: list[_m.Message] = []
        self._retired_tokens: list[int] = []
        self._cache: list[Message] = []

    def _new_inner(self, role: _m.Role | None) -> StreamParser:
        return StreamParser(
            role,
            strict=self._strict,
            check_constraints=False,
            allow_truncated=True,
            record_tokens=True,
            replace_invalid_utf8=True,
            encoding=self._encoding._encoding,
        )

    def process(self, token: int) -> StreamableParser:
        """Feed one token id; returns the parser."""
        try:
            self._process(token)
        except OCMError as exc:
            raise _as_harmony(exc) from None
        return self

    def process_eos(self) -> StreamableParser:
        """Signal the end of input: a message cut short is completed as it stands.

        Raises :class:`HarmonyError` (``E-STREAM-TRUNCATED``) when ``strict`` and the
        input ended inside a header. Tokens fed afterwards start a new stream, expecting
        ``<|start|>``.
        """
        inner = self._inner
        try:
            _end_of_input(inner, self._strict)
        except OCMError as exc:
            raise _as_harmony(exc) from None
        self._retired += inner.messages
        self._retired_tokens += inner.tokens
        self._inner = self._new_inner(None)
        self._process = self._inner.process
        return self

    @property
    def current_content(self) -> str:
        """The body text of the message being read, so far."""
        return self._inner.current_content

    @property
    def current_role(self) -> Role | None:
        """The role of the message being read, or the role the prompt opened."""
        role = self._inner.current_role
        return None if role is None else _COMPAT_ROLE[role]

    @property
    def current_content_type(self) -> str | None:
        """The content type of the message being read (``<|constrain|>json`` if constrained)."""
        header = self._inner.current_header
        if header is None:
            return None
        if header.constrained:
            return CONSTRAIN_MARKER + (header.content_type or "")
        return header.content_type

    @property
    def current_recipient(self) -> str | None:
        """The recipient of the message being read."""
        return self._inner.current_recipient

    @property
    def current_channel(self) -> str | None:
        """The channel of the message being read."""
        return self._inner.current_channel

    @property
    def last_content_delta(self) -> str | None:
        """The body text the last token added (``None`` if it added none)."""
        return self._inner.last_content_delta

    @property
    def messages(self) -> list[Message]:
        """Every complete message so far (the objects are shared between reads)."""
        done = self._inner.messages
        if self._retired:
            done = self._retired + done
        cache = self._cache
        if len(cache) < len(done):
            cache.extend(map(_compat_message, done[len(cache) :]))
        return list(cache)

    @property
    def tokens(self) -> list[int]:
        """Every token id fed so far."""
        return self._retired_tokens + self._inner.tokens

    @property
    def state(self) -> StreamState:
        """``EXPECT_START``, ``HEADER`` or ``CONTENT``."""
        return _STATES[self._inner.state]

    @property
    def state_data(self) -> dict[str, Any]:
        """The state as openai-harmony reports it.

        ``{"state": "ExpectStart"}``; ``{"state": "Header", "header_tokens": [...]}``;
        or ``{"state": "Content", "header": {...}, "content_tokens": [...]}``, where the
        content tokens are the body text so far, encoded again one delta at a time.
        """
        inner = self._inner
        state = self.state
        tokens = inner.tokens
        if state is StreamState.EXPECT_START:
            return {"state": state.value}
        if state is StreamState.HEADER:
            return {"state": state.value, "header_tokens": tokens[_after_last(tokens, START_ID) :]}
        header = inner.current_header
        assert header is not None
        author: dict[str, Any] = {"role": header.author.role.value}
        if header.author.name is not None:
            author["name"] = header.author.name
        return {
            "state": state.value,
            "header": {
                "author": author,
                "recipient": header.recipient,
                "channel": header.channel,
                "content_type": self.current_content_type,
            },
            "content_tokens": self._content_tokens(tokens[_after_last(tokens, MESSAGE_ID) :]),
        }

    def _content_tokens(self, body: list[int]) -> list[int]:
        encoding = self._encoding._encoding
        table = encoding.token_bytes
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        out: list[int] = []
        for token in body:
            piece = decoder.decode(table[token]) if 0 <= token < len(table) else "\ufffd"
            if piece:
                out += encoding.encode_ordinary(piece)
        return out


def _after_last(tokens: list[int], token: int) -> int:
    """The index just after the last ``token`` in ``tokens`` (0 if there is none)."""
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] == token:
            return i + 1
    return 0
