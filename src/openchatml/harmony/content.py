"""The content parts of a message, as openai-harmony's pydantic models: text, tools,
system and developer content."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field

from ..core import content as core_content


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
        return namespace_from_core(core_content.BROWSER_NAMESPACE)

    @staticmethod
    def python() -> ToolNamespaceConfig:
        """The built-in ``python`` tool, as gpt-oss was trained on it."""
        return namespace_from_core(core_content.PYTHON_NAMESPACE)


def _default_channels() -> ChannelConfig:
    return ChannelConfig.require_channels(["analysis", "commentary", "final"])


class SystemContent(Content):
    """The system prompt: identity, dates, reasoning effort, built-in tools, channels.

    The ``with_*`` builders change the content in place and return it.
    """

    model_identity: str | None = core_content.DEFAULT_IDENTITY
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


def _thawed(value: Any) -> Any:
    """``value`` with every mapping made a plain ``dict`` (and every list copied)."""
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_thawed(v) for v in value]
    return value


def namespace_from_core(ns: core_content.ToolNamespaceConfig) -> ToolNamespaceConfig:
    """The pydantic namespace for a core one (its schemas as plain dicts)."""
    return ToolNamespaceConfig(
        name=ns.name,
        description=ns.description,
        tools=[
            ToolDescription(name=t.name, description=t.description, parameters=_thawed(t.parameters))
            for t in ns.tools
        ],
    )
