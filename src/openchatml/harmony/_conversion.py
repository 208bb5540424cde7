"""The pydantic models to the core's frozen dataclasses and back, without re-validation.

A ``content_type`` of ``"<|constrain|>json"`` is the core's ``content_type="json",
constrained=True``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ..core import content as core_content
from ..core import messages as core_messages
from ..core.errors import RenderError
from .content import (
    ChannelConfig,
    Content,
    DeveloperContent,
    ReasoningEffort,
    SystemContent,
    TextContent,
    ToolNamespaceConfig,
    namespace_from_core,
)
from .messages import CONSTRAIN_MARKER, Author, Conversation, Message, Role

_CORE_ROLE: Final[dict[str, core_messages.Role]] = {r.value: r for r in core_messages.Role}
ROLE_OF_CORE: Final[dict[core_messages.Role, Role]] = {core_messages.Role(r.value): r for r in Role}
"""The pydantic role of each core role."""
_CORE_EFFORT: Final[dict[str, core_content.ReasoningEffort]] = {
    **{e.value: core_content.ReasoningEffort(e.value.lower()) for e in ReasoningEffort},
    **{e.value: e for e in core_content.ReasoningEffort},
}


def to_core_role(role: Role | str) -> core_messages.Role:
    """The core role named by ``role``; ``ValueError`` for an unknown one."""
    found = _CORE_ROLE.get(role)
    if found is None:
        raise ValueError(f"Unknown role: {role!r}")
    return found


def _core_effort(effort: ReasoningEffort | str) -> core_content.ReasoningEffort:
    found = _CORE_EFFORT.get(effort)
    if found is None:
        raise RenderError(f"unknown reasoning effort {effort!r}")
    return found


def _core_namespace(ns: ToolNamespaceConfig) -> core_content.ToolNamespaceConfig:
    return core_content.ToolNamespaceConfig(
        ns.name,
        ns.description,
        tuple(core_content.ToolDescription(t.name, t.description, t.parameters) for t in ns.tools),
    )


def _core_tools(
    tools: dict[str, ToolNamespaceConfig] | None,
) -> dict[str, core_content.ToolNamespaceConfig] | None:
    if tools is None:
        return None
    return {key: _core_namespace(ns) for key, ns in tools.items()}


def _core_part(part: Content) -> core_content.Content:
    if isinstance(part, TextContent):
        return core_content.TextContent(part.text)
    if isinstance(part, SystemContent):
        effort = part.reasoning_effort
        channels = part.channel_config
        return core_content.SystemContent(
            model_identity=part.model_identity,
            reasoning_effort=None if effort is None else _core_effort(effort),
            conversation_start_date=part.conversation_start_date,
            knowledge_cutoff=part.knowledge_cutoff,
            channel_config=(
                None
                if channels is None
                else core_content.ChannelConfig(tuple(channels.valid_channels), channels.channel_required)
            ),
            tools=_core_tools(part.tools),
        )
    if isinstance(part, DeveloperContent):
        return core_content.DeveloperContent(instructions=part.instructions, tools=_core_tools(part.tools))
    raise RenderError(f"cannot render a content part of type {type(part).__name__}")


def to_core_message(msg: Message) -> core_messages.Message:
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
    return core_messages.Message(
        core_messages.Author(role, author.name),
        tuple(map(_core_part, msg.content)),
        msg.channel,
        msg.recipient,
        content_type,
        constrained,
    )


def to_core_messages(conversation: Conversation | Iterable[Message]) -> list[core_messages.Message]:
    """The core messages of ``conversation`` (or of a list of messages)."""
    messages = conversation.messages if isinstance(conversation, Conversation) else conversation
    return list(map(to_core_message, messages))


def from_core_message(msg: core_messages.Message) -> Message:
    """The pydantic message for a parsed core message (no validation)."""
    content_type = msg.content_type
    if msg.constrained:
        content_type = CONSTRAIN_MARKER + (content_type or "")
    parts: list[Content] = [
        TextContent.model_construct(text=p.text)
        if isinstance(p, core_content.TextContent)
        else _part_from_core(p)
        for p in msg.content
    ]
    author = msg.author
    return Message.model_construct(
        author=Author.model_construct(role=ROLE_OF_CORE[author.role], name=author.name),
        content=parts,
        channel=msg.channel,
        recipient=msg.recipient,
        content_type=content_type,
    )


def _part_from_core(part: core_content.Content) -> Content:
    if isinstance(part, core_content.TextContent):
        return TextContent(text=part.text)
    tools = None if part.tools is None else {key: namespace_from_core(ns) for key, ns in part.tools.items()}
    if isinstance(part, core_content.SystemContent):
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
