"""Conversation → Harmony / OpenChatML 2.2 text or token ids.

One renderer, two placements of the header attributes (:class:`Profile`):

* ``HARMONY`` — openai-harmony's canonical form, token for token:
  ``<|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>``,
  tool replies as ``<|start|>functions.f to=assistant<|channel|>…``, names as
  ``user:alice``. Harmony has no ``call_id`` or ``intent``; this profile leaves them out.
* ``OCM`` — OpenChatML 2.2 canonical form: every attribute in the ``<|start|>`` header
  in the order of §6 (``to= call_id= name= intent= content_type=``), then the channel,
  then ``<|constrain|>``; tool replies as ``tool name=functions.f``.

Token output encodes every piece of text as ordinary BPE, so no text becomes a control
token. Text output escapes body text (``<<|start|>``), so that parsing it gives the same
conversation back. Header values are sanitised (one word, no ``<|``) in both, and a
header longer than the parser's limit (``MAX_HEADER`` characters as text, token ids as
tokens) is refused with :class:`~openchatml.core.errors.RenderError`.

History: a message always ends in ``<|end|>`` (or ``<|call|>`` for an assistant message
to a tool), which normalises a stored ``<|return|>``; for training, a final assistant
message at the end ends in ``<|return|>``. Chain of thought follows :class:`CoTPolicy`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from .content import DeveloperContent, SystemContent, TextContent
from .encoding import Encoding, load_encoding
from .errors import RenderError
from .headers import MAX_HEADER
from .messages import Conversation, Message, Role
from .tokens import (
    CALL_ID,
    CHANNEL_ID,
    CONSTRAIN_ID,
    END_ID,
    MESSAGE_ID,
    RETURN_ID,
    START_ID,
    ControlToken,
    escape_text,
    sanitize_header_value,
)
from .transcript import render_transcript_header


class Profile(StrEnum):
    """Where header attributes go: Harmony's canonical form or OpenChatML 2.2's."""

    HARMONY = "harmony"
    OCM = "ocm"


class CoTPolicy(StrEnum):
    """Which ``analysis`` messages of earlier turns are rendered.

    * ``DROP_FINISHED`` — drop the analysis of every turn that ended in a ``final``
      message; keep the analysis of a turn still in progress (one that ended in a tool
      call). OCM §7 and HIP-1 §7.
    * ``AUTO_DROP`` — openai-harmony's ``auto_drop_analysis=True``, exactly: when the
      last assistant message is ``final``, drop analysis before the first ``final``.
    * ``KEEP`` — render everything (training on full traces, debugging).
    """

    DROP_FINISHED = "drop_finished"
    AUTO_DROP = "auto_drop"
    KEEP = "keep"


@dataclass(frozen=True, slots=True)
class RenderConfig:
    """How to render: the header ``profile``, the chain-of-thought ``cot`` policy, and
    for text output whether to write the transcript's YAML header and what to put
    between messages (``None``: nothing for Harmony, a newline for OCM)."""

    profile: Profile = Profile.HARMONY
    cot: CoTPolicy = CoTPolicy.DROP_FINISHED
    transcript_header: bool = True
    separator: str | None = None


DEFAULT_CONFIG: Final = RenderConfig()
OCM_CONFIG: Final = RenderConfig(profile=Profile.OCM)

_CONTROL_TEXT: Final = {
    START_ID: ControlToken.START.value,
    CHANNEL_ID: ControlToken.CHANNEL.value,
    MESSAGE_ID: ControlToken.MESSAGE.value,
    CONSTRAIN_ID: ControlToken.CONSTRAIN.value,
    END_ID: ControlToken.END.value,
    RETURN_ID: ControlToken.RETURN.value,
    CALL_ID: ControlToken.CALL.value,
}

_START_MESSAGE_LEN: Final = len(ControlToken.START.value) + len(ControlToken.MESSAGE.value)

Piece = int | str
"""A control token id, or header text."""


def _value(value: str) -> str:
    return sanitize_header_value(value)


def header_pieces(message: Message, profile: Profile) -> list[Piece]:
    """The header of ``message`` from ``<|start|>`` to ``<|message|>`` as pieces.

    Text pieces are split where openai-harmony splits them, so that encoding each piece
    alone gives its token ids exactly. Raises :class:`RenderError` for a tool message
    without a name. (The renderer also refuses a header longer than
    :data:`~openchatml.core.headers.MAX_HEADER` characters or tokens, which no parser reads.)
    """
    author = message.author
    role = author.role
    pieces: list[Piece] = [START_ID]
    if profile is Profile.HARMONY:
        if role is Role.TOOL:
            if not author.name:
                raise RenderError("a tool message needs the tool's name (Author.name)")
            pieces.append(_value(author.name))
        else:
            pieces.append(role.value)
            if author.name is not None:
                pieces.append(":" + _value(author.name))
        if message.recipient is not None and message.recipient != "all":
            pieces.append(" to=" + _value(message.recipient))
        if message.channel is not None:
            pieces += (CHANNEL_ID, _value(message.channel))
        if message.content_type is not None:
            if message.constrained:
                pieces += (" ", CONSTRAIN_ID)
                if message.content_type:
                    pieces.append(_value(message.content_type))
            else:
                pieces.append(" " + _value(message.content_type))
    else:
        if role is Role.TOOL and not author.name:
            raise RenderError("a tool message needs the tool's name (Author.name)")
        attrs = [role.value]
        if message.recipient is not None and message.recipient != "all":
            attrs.append("to=" + _value(message.recipient))
        if message.call_id is not None:
            attrs.append("call_id=" + _value(message.call_id))
        if author.name is not None:
            attrs.append("name=" + _value(author.name))
        if message.intent is not None:
            attrs.append("intent=" + _value(message.intent))
        if message.content_type is not None and not message.constrained:
            attrs.append("content_type=" + _value(message.content_type))
        pieces.append(" ".join(attrs))
        if message.channel is not None:
            pieces += (CHANNEL_ID, _value(message.channel))
        if message.content_type is not None and message.constrained:
            pieces.append(CONSTRAIN_ID)
            if message.content_type:
                pieces.append(_value(message.content_type))
    pieces.append(MESSAGE_ID)
    return pieces


_HEADER_FIELDS: Final = ("author name", "recipient", "channel", "content_type", "call_id", "intent")


def _header_too_long(message: Message, size: int, unit: str) -> RenderError:
    """The error for a header of ``size`` ``unit`` (characters or tokens), naming its
    longest value."""
    values = (
        message.author.name,
        message.recipient,
        message.channel,
        message.content_type,
        message.call_id,
        message.intent,
    )
    length, field = max((len(v or ""), f) for v, f in zip(values, _HEADER_FIELDS, strict=True))
    return RenderError(
        f"the message header would be {size} {unit}, more than the {MAX_HEADER} a parser reads "
        f"(its longest value is the {field}, {length} characters)"
    )


def _content_texts(message: Message, has_function_tools: bool) -> list[str]:
    out: list[str] = []
    role = message.author.role
    for part in message.content:
        if isinstance(part, TextContent):
            out.append(part.text)
        elif isinstance(part, SystemContent):
            if role is not Role.SYSTEM:
                raise RenderError(f"SystemContent may only appear in system messages, not {role}")
            out.append(part.to_text(has_function_tools=has_function_tools))
        elif isinstance(part, DeveloperContent):
            if role is not Role.DEVELOPER:
                raise RenderError(f"DeveloperContent may only appear in developer messages, not {role}")
            out.append(part.to_text())
        else:
            raise RenderError(f"unknown content part {type(part).__name__}")
    return out


def _terminator(message: Message) -> int:
    return CALL_ID if message.author.role is Role.ASSISTANT and message.recipient is not None else END_ID


def select_messages(messages: Sequence[Message], cot: CoTPolicy) -> list[Message]:
    """``messages`` less the ``analysis`` ones that ``cot`` drops."""
    if cot is CoTPolicy.KEEP:
        return list(messages)
    if cot is CoTPolicy.AUTO_DROP:
        last_assistant_final = False
        for msg in reversed(messages):
            if msg.author.role is Role.ASSISTANT:
                last_assistant_final = msg.channel == "final"
                break
        if not last_assistant_final:
            return list(messages)
        first_final = next((i for i, m in enumerate(messages) if m.channel == "final"), None)
        if first_final is None:
            return list(messages)
        return [m for i, m in enumerate(messages) if not (i < first_final and m.channel == "analysis")]
    # DROP_FINISHED: a turn runs from one user (or system/developer) message to the next;
    # its analysis goes once an assistant final message has closed it.
    drop: set[int] = set()
    turn: list[int] = []
    for i, msg in enumerate(messages):
        role = msg.author.role
        if role in (Role.USER, Role.SYSTEM, Role.DEVELOPER):
            turn = []
            continue
        if msg.channel == "analysis":
            turn.append(i)
        elif role is Role.ASSISTANT and msg.channel == "final" and msg.recipient is None:
            drop.update(turn)
            turn = []
    return [m for i, m in enumerate(messages) if i not in drop]


class Renderer:
    """Renders messages and conversations to token ids or text under one :class:`RenderConfig`.

    Token ids of header pieces are cached; rendering is otherwise stateless.
    """

    def __init__(self, config: RenderConfig = DEFAULT_CONFIG, encoding: Encoding | None = None) -> None:
        self.config = config
        self._encoding = encoding
        self._cache: dict[str, list[int]] = {}

    @property
    def encoding(self) -> Encoding:
        """The tokenizer (loaded on first use)."""
        if self._encoding is None:
            self._encoding = load_encoding()
        return self._encoding

    def _encode_piece(self, text: str) -> list[int]:
        ids = self._cache.get(text)
        if ids is None:
            if len(self._cache) > 8192:
                self._cache.clear()
            ids = self._cache[text] = self.encoding.encode_ordinary(text)
        return ids

    # --- tokens ---------------------------------------------------------------------

    def message_tokens(self, message: Message, *, has_function_tools: bool = False) -> list[int]:
        """Token ids of one message."""
        out: list[int] = []
        self._message_into(message, out, has_function_tools)
        return out

    def _message_into(self, message: Message, out: list[int], has_function_tools: bool) -> None:
        encode = self._encode_piece
        start = len(out)
        for piece in header_pieces(message, self.config.profile):
            if isinstance(piece, int):
                out.append(piece)
            else:
                out += encode(piece)
        size = len(out) - start - 2  # between <|start|> and <|message|>
        if size > MAX_HEADER:
            del out[start:]
            raise _header_too_long(message, size, "tokens")
        encode_text = self.encoding.encode_ordinary
        for text in _content_texts(message, has_function_tools):
            if text:
                out += encode_text(text)
        out.append(_terminator(message))

    def tokens(self, conversation: Conversation | Iterable[Message]) -> list[int]:
        """Token ids of a conversation as history (every message ended, CoT per policy)."""
        messages = _messages(conversation)
        has_tools = _has_function_tools(messages)
        out: list[int] = []
        for message in select_messages(messages, self.config.cot):
            self._message_into(message, out, has_tools)
        return out

    def completion_tokens(
        self, conversation: Conversation | Iterable[Message], next_role: Role = Role.ASSISTANT
    ) -> list[int]:
        """History followed by ``<|start|>{next_role}``: the prompt for sampling."""
        out = self.tokens(conversation)
        out.append(START_ID)
        out += self._encode_piece(Role(next_role).value)
        return out

    def training_tokens(self, conversation: Conversation | Iterable[Message]) -> list[int]:
        """History in which a final assistant message at the end ends in ``<|return|>``."""
        messages = _messages(conversation)
        out = self.tokens(messages)
        if _ends_in_final(messages) and out:
            out[-1] = RETURN_ID
        return out

    # --- text -----------------------------------------------------------------------

    def message_text(self, message: Message, *, has_function_tools: bool = False) -> str:
        """Text of one message (body text escaped, header values sanitised)."""
        parts: list[str] = []
        for piece in header_pieces(message, self.config.profile):
            parts.append(_CONTROL_TEXT[piece] if isinstance(piece, int) else piece)
        size = sum(map(len, parts)) - _START_MESSAGE_LEN
        if size > MAX_HEADER:
            raise _header_too_long(message, size, "characters")
        # escape the body as one text: two parts may join into a control token
        parts.append(escape_text("".join(_content_texts(message, has_function_tools))))
        parts.append(_CONTROL_TEXT[_terminator(message)])
        return "".join(parts)

    def _separator(self) -> str:
        if self.config.separator is not None:
            return self.config.separator
        return "\n" if self.config.profile is Profile.OCM else ""

    def text(self, conversation: Conversation | Iterable[Message]) -> str:
        """Text of a conversation as history, with its YAML header if it has one."""
        messages = _messages(conversation)
        has_tools = _has_function_tools(messages)
        body = self._separator().join(
            self.message_text(m, has_function_tools=has_tools)
            for m in select_messages(messages, self.config.cot)
        )
        header = conversation.header if isinstance(conversation, Conversation) else None
        if header is not None and self.config.transcript_header:
            return render_transcript_header(header) + body
        return body

    def completion_text(
        self, conversation: Conversation | Iterable[Message], next_role: Role = Role.ASSISTANT
    ) -> str:
        """History text followed by ``<|start|>{next_role}``."""
        body = self.text(conversation)
        sep = self._separator() if _messages(conversation) else ""
        return body + sep + ControlToken.START.value + Role(next_role).value

    def training_text(self, conversation: Conversation | Iterable[Message]) -> str:
        """History text in which a final assistant message at the end ends in ``<|return|>``."""
        messages = _messages(conversation)
        text = self.text(conversation)
        if _ends_in_final(messages):
            ending = _CONTROL_TEXT[_terminator(messages[-1])]
            text = text[: -len(ending)] + ControlToken.RETURN.value
        return text


def _messages(conversation: Conversation | Iterable[Message]) -> Sequence[Message]:
    if isinstance(conversation, Conversation):
        return conversation.messages
    if isinstance(conversation, Sequence):
        return conversation
    return list(conversation)


def _has_function_tools(messages: Sequence[Message]) -> bool:
    return any(
        isinstance(part, DeveloperContent) and part.function_tools for m in messages for part in m.content
    )


def _ends_in_final(messages: Sequence[Message]) -> bool:
    return bool(messages) and messages[-1].author.role is Role.ASSISTANT and messages[-1].channel == "final"


_default_renderers: dict[RenderConfig, Renderer] = {}


def renderer(config: RenderConfig = DEFAULT_CONFIG) -> Renderer:
    """The shared :class:`Renderer` for ``config``."""
    found = _default_renderers.get(config)
    if found is None:
        found = _default_renderers[config] = Renderer(config)
    return found


def render_conversation(
    conversation: Conversation | Iterable[Message], config: RenderConfig = DEFAULT_CONFIG
) -> list[int]:
    """Token ids of ``conversation`` as history."""
    return renderer(config).tokens(conversation)


def render_conversation_for_completion(
    conversation: Conversation | Iterable[Message],
    next_role: Role = Role.ASSISTANT,
    config: RenderConfig = DEFAULT_CONFIG,
) -> list[int]:
    """Token ids of ``conversation`` followed by ``<|start|>{next_role}``."""
    return renderer(config).completion_tokens(conversation, next_role)


def render_conversation_for_training(
    conversation: Conversation | Iterable[Message], config: RenderConfig = DEFAULT_CONFIG
) -> list[int]:
    """Token ids of ``conversation`` for training (a closing final ends in ``<|return|>``)."""
    return renderer(config).training_tokens(conversation)


def render_text(conversation: Conversation | Iterable[Message], config: RenderConfig = DEFAULT_CONFIG) -> str:
    """Text of ``conversation`` as history."""
    return renderer(config).text(conversation)


def render_message(message: Message, config: RenderConfig = DEFAULT_CONFIG) -> list[int]:
    """Token ids of one message."""
    return renderer(config).message_tokens(message)
