"""Message content: text, and the structured system and developer contents.

``SystemContent`` renders to Harmony's system prompt (identity, knowledge cutoff,
current date, reasoning effort, built-in tools, valid channels and the ``functions``
commentary note); ``DeveloperContent`` to ``# Instructions``, the ``# Tools``
namespaces (JSON Schema as TypeScript) and ``# Response Formats``. The text is
token-exact with openai-harmony.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from ._json import frozen
from .typescript import json_value, schema_to_typescript


class ReasoningEffort(StrEnum):
    """How hard the model should think: ``Reasoning: low|medium|high``."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


@dataclass(frozen=True, slots=True)
class ToolDescription:
    """One tool: its name, a description, and its parameters as JSON Schema (or none)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolNamespaceConfig:
    """A namespace of tools (``functions``, ``browser``, ``python`` …)."""

    name: str
    description: str | None = None
    tools: tuple[ToolDescription, ...] = ()

    @staticmethod
    def browser() -> ToolNamespaceConfig:
        """The built-in ``browser`` namespace, as gpt-oss was trained on it."""
        return BROWSER_NAMESPACE

    @staticmethod
    def python() -> ToolNamespaceConfig:
        """The built-in ``python`` tool, as gpt-oss was trained on it."""
        return PYTHON_NAMESPACE


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    """The channels a model may use, and whether every message must name one."""

    valid_channels: tuple[str, ...] = ("analysis", "commentary", "final")
    channel_required: bool = True


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """A named JSON Schema for structured output (``# Response Formats``)."""

    name: str
    schema: Mapping[str, Any]
    description: str | None = None


@dataclass(frozen=True, slots=True)
class TextContent:
    """Plain text."""

    text: str


DEFAULT_IDENTITY: Final = "You are ChatGPT, a large language model trained by OpenAI."


@dataclass(frozen=True, slots=True)
class SystemContent:
    """The structured content of a Harmony system message. ``None`` leaves a line out."""

    model_identity: str | None = DEFAULT_IDENTITY
    reasoning_effort: ReasoningEffort | None = ReasoningEffort.MEDIUM
    conversation_start_date: str | None = None
    knowledge_cutoff: str | None = "2024-06"
    channel_config: ChannelConfig | None = ChannelConfig()
    tools: Mapping[str, ToolNamespaceConfig] | None = None

    def to_text(self, *, has_function_tools: bool = False) -> str:
        """The system prompt text; ``has_function_tools`` adds the commentary note."""
        sections: list[str] = []
        top: list[str] = []
        if self.model_identity is not None:
            top.append(self.model_identity)
        if self.knowledge_cutoff is not None:
            top.append(f"Knowledge cutoff: {self.knowledge_cutoff}")
        if self.conversation_start_date is not None:
            top.append(f"Current date: {self.conversation_start_date}")
        if top:
            sections.append("\n".join(top))
        if self.reasoning_effort is not None:
            sections.append(f"Reasoning: {ReasoningEffort(self.reasoning_effort).value}")
        if self.tools:
            sections.append(tools_section(self.tools))
        config = self.channel_config
        if config is not None and config.valid_channels:
            line = f"# Valid channels: {', '.join(config.valid_channels)}."
            if config.channel_required:
                line += " Channel must be included for every message."
            if has_function_tools:
                line += "\nCalls to these tools must go to the commentary channel: 'functions'."
            sections.append(line)
        return "\n\n".join(sections)


@dataclass(frozen=True, slots=True)
class DeveloperContent:
    """The structured content of a developer message: instructions, tools, response formats."""

    instructions: str | None = None
    tools: Mapping[str, ToolNamespaceConfig] | None = None
    response_formats: tuple[ResponseFormat, ...] = field(default=())

    @property
    def function_tools(self) -> tuple[ToolDescription, ...]:
        """The tools of the ``functions`` namespace, if any."""
        if not self.tools:
            return ()
        ns = self.tools.get("functions")
        return ns.tools if ns is not None else ()

    def to_text(self) -> str:
        """The developer prompt text."""
        sections: list[str] = []
        if self.instructions is not None:
            sections.append("# Instructions")
            sections.append(self.instructions)
        if self.tools:
            sections.append(tools_section(self.tools))
        if self.response_formats:
            sections.append(response_formats_section(self.response_formats))
        return "\n\n".join(sections)


Content = TextContent | SystemContent | DeveloperContent
"""One part of a message's content."""


def rust_lines(text: str) -> list[str]:
    """``text`` split into lines as Rust's ``str::lines`` does (``\\n``, optional ``\\r``)."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def tools_section(tools: Mapping[str, ToolNamespaceConfig]) -> str:
    """``# Tools`` followed by one ``## namespace`` block per namespace, sorted by name."""
    blocks = ["# Tools"]
    for key in sorted(tools):
        ns = tools[key]
        lines = [f"## {ns.name}\n"]
        if ns.description is not None:
            prefix = "// " if ns.tools else ""
            lines.extend(prefix + line for line in rust_lines(ns.description))
        if ns.tools:
            lines.append(f"namespace {ns.name} {{\n")
            for tool in ns.tools:
                lines.extend(f"// {line}" for line in rust_lines(tool.description))
                if tool.parameters is not None:
                    params = schema_to_typescript(tool.parameters, "")
                    lines.append(f"type {tool.name} = (_: {params}) => any;\n")
                else:
                    lines.append(f"type {tool.name} = () => any;\n")
            lines.append(f"}} // namespace {ns.name}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def response_formats_section(formats: tuple[ResponseFormat, ...]) -> str:
    """``# Response Formats`` with one ``## name`` block (description, compact schema) each."""
    blocks = ["# Response Formats"]
    for fmt in formats:
        lines = [f"## {fmt.name}", ""]
        if fmt.description:
            lines.extend(f"// {line}" for line in rust_lines(fmt.description))
        lines.append(json_value(fmt.schema))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


BROWSER_NAMESPACE: Final = ToolNamespaceConfig(
    name="browser",
    description=(
        "Tool for browsing.\n"
        "The `cursor` appears in brackets before each browsing display: `[{cursor}]`.\n"
        "Cite information from the tool using the following format:\n"
        "`【{cursor}†L{line_start}(-L{line_end})?】`, for example: `【6†L9-L11】` or `【8†L3】`.\n"
        "Do not quote more than 10 words directly from the tool output.\n"
        "sources=web (default: web)"
    ),
    tools=(
        ToolDescription(
            name="search",
            description="Searches for information related to `query` and displays `topn` results.",
            parameters=frozen(
                {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "topn": {"type": "number", "default": 10},
                        "source": {"type": "string"},
                    },
                    "required": ["query"],
                }
            ),
        ),
        ToolDescription(
            name="open",
            description=(
                "Opens the link `id` from the page indicated by `cursor` starting at line number "
                "`loc`, showing `num_lines` lines.\n"
                "Valid link ids are displayed with the formatting: `【{id}†.*】`.\n"
                "If `cursor` is not provided, the most recent page is implied.\n"
                "If `id` is a string, it is treated as a fully qualified URL associated with "
                "`source`.\n"
                "If `loc` is not provided, the viewport will be positioned at the beginning of "
                "the document or centered on the most relevant passage, if available.\n"
                "Use this function without `id` to scroll to a new location of an opened page."
            ),
            parameters=frozen(
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": ["number", "string"], "default": -1},
                        "cursor": {"type": "number", "default": -1},
                        "loc": {"type": "number", "default": -1},
                        "num_lines": {"type": "number", "default": -1},
                        "view_source": {"type": "boolean", "default": False},
                        "source": {"type": "string"},
                    },
                }
            ),
        ),
        ToolDescription(
            name="find",
            description=(
                "Finds exact matches of `pattern` in the current page, or the page given by `cursor`."
            ),
            parameters=frozen(
                {
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string"},
                        "cursor": {"type": "number", "default": -1},
                    },
                    "required": ["pattern"],
                }
            ),
        ),
    ),
)

PYTHON_NAMESPACE: Final = ToolNamespaceConfig(
    name="python",
    description=(
        "Use this tool to execute Python code in your chain of thought. The code will not be "
        "shown to the user. This tool should be used for internal reasoning, but not for code "
        "that is intended to be visible to the user (e.g. when creating plots, tables, or "
        "files).\n\n"
        "When you send a message containing Python code to python, it will be executed in a "
        "stateful Jupyter notebook environment. python will respond with the output of the "
        "execution or time out after 120.0 seconds. The drive at '/mnt/data' can be used to "
        "save and persist user files. Internet access for this session is UNKNOWN. Depends on "
        "the cluster."
    ),
)
