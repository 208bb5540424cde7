"""A request's ``mcp`` tool, checked: which server, which of its tools, which need approval.

The shape is the OpenAI API's (``openai.types.responses.tool.Mcp``)::

    {"type": "mcp", "server_label": "docs", "server_url": "https://…/mcp",
     "headers": {"Authorization": "Bearer …"}, "authorization": "…",
     "allowed_tools": ["search"] | {"tool_names": […], "read_only": true},
     "require_approval": "always" | "never" | {"always": {…}, "never": {…}},
     "server_description": "…"}

``authorization`` (an OAuth access token) becomes an ``Authorization: Bearer`` header.
``connector_id`` and ``tunnel_id`` are refused: only servers by URL or by configured
label are served. Fields this module does not use (``defer_loading``,
``allowed_callers``) are left to the caller.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..router import BUILTIN_NAMESPACES, CLIENT_NAMESPACES
from .errors import McpRequestError
from .policy import SecretHeaders, check_headers

_LABEL: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
RESERVED_LABELS: Final = BUILTIN_NAMESPACES | CLIENT_NAMESPACES | {"container", "multi_tool_use"}
"""Namespaces the prompt already uses: a server may not take one as its label."""


@dataclass(frozen=True, slots=True)
class ToolFilter:
    """A set of tools: by name, by the server's read-only hint, or both (all must hold).

    An empty filter (neither given) matches no tool.
    """

    tool_names: frozenset[str] | None = None
    read_only: bool | None = None

    @property
    def empty(self) -> bool:
        """Whether the filter names no criterion."""
        return self.tool_names is None and self.read_only is None

    def matches(self, name: str, read_only_hint: bool | None) -> bool:
        """Whether tool ``name``, with the server's ``readOnlyHint``, is in the set."""
        if self.empty:
            return False
        if self.tool_names is not None and name not in self.tool_names:
            return False
        return self.read_only is None or bool(read_only_hint) == self.read_only

    @classmethod
    def parse(cls, value: Any, *, param: str) -> ToolFilter:
        """A filter from a list of names or a ``{tool_names, read_only}`` object (``None``: empty)."""
        if value is None:
            return cls()
        if isinstance(value, list):
            return cls(tool_names=_names(value, param=param))
        if not isinstance(value, Mapping):
            raise McpRequestError(
                "expected a list of tool names or a {tool_names, read_only} object", param=param
            )
        names = value.get("tool_names")
        read_only = value.get("read_only")
        if read_only is not None and not isinstance(read_only, bool):
            raise McpRequestError("read_only must be a boolean", param=f"{param}.read_only")
        tool_names = None if names is None else _names(names, param=f"{param}.tool_names")
        return cls(tool_names=tool_names, read_only=read_only)


def _names(value: Any, *, param: str) -> frozenset[str]:
    """A list of tool names as a set."""
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise McpRequestError("expected a list of tool names", param=param)
    return frozenset(value)


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """Which tools need the user's approval before a call: those ``always`` matches, else
    not those ``never`` matches, else ``default`` (approval needed unless ``"never"``)."""

    default: bool = True
    always: ToolFilter = field(default_factory=ToolFilter)
    never: ToolFilter = field(default_factory=ToolFilter)

    def requires_approval(self, name: str, read_only_hint: bool | None = None) -> bool:
        """Whether a call of tool ``name`` needs approval first."""
        if self.always.matches(name, read_only_hint):
            return True
        if self.never.matches(name, read_only_hint):
            return False
        return self.default

    @classmethod
    def parse(cls, value: Any) -> ApprovalPolicy:
        """The policy ``require_approval`` gives (``None``: every call needs approval)."""
        param = "require_approval"
        if value is None or value == "always":
            return cls(default=True)
        if value == "never":
            return cls(default=False)
        if not isinstance(value, Mapping):
            raise McpRequestError('expected "always", "never" or an {always, never} object', param=param)
        filters: dict[str, ToolFilter] = {}
        for key in ("always", "never"):
            given = value.get(key)
            if given is not None and not isinstance(given, Mapping):
                raise McpRequestError("expected a {tool_names, read_only} object", param=f"{param}.{key}")
            filters[key] = ToolFilter.parse(given, param=f"{param}.{key}")
        return cls(default=True, always=filters["always"], never=filters["never"])


@dataclass(frozen=True, slots=True)
class McpToolSpec:
    """A request's ``mcp`` tool, checked. ``headers`` are credentials (never shown)."""

    server_label: str
    server_url: str | None = None
    headers: SecretHeaders = field(default_factory=SecretHeaders, repr=False)
    allowed_tools: ToolFilter = field(default_factory=ToolFilter)
    require_approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    server_description: str | None = None

    def allows(self, name: str, read_only_hint: bool | None = None) -> bool:
        """Whether the request lets the model see and call tool ``name``."""
        return self.allowed_tools.empty or self.allowed_tools.matches(name, read_only_hint)

    @classmethod
    def from_request(cls, tool: Mapping[str, Any]) -> McpToolSpec:
        """The spec of a request's tool object; raises :class:`McpRequestError` naming the field."""
        if tool.get("type") != "mcp":
            raise McpRequestError('an MCP tool has "type": "mcp"', param="type")
        label = tool.get("server_label")
        if not isinstance(label, str) or not _LABEL.fullmatch(label):
            raise McpRequestError(
                "server_label must be 1-64 letters, digits, '_' or '-', not starting with a digit or '-'",
                param="server_label",
            )
        if label in RESERVED_LABELS:
            raise McpRequestError(
                f"server_label {label!r} is a namespace the prompt reserves", param="server_label"
            )
        for unsupported in ("connector_id", "tunnel_id"):
            if tool.get(unsupported) is not None:
                raise McpRequestError(
                    f"{unsupported} is not supported: give server_url or a configured server_label",
                    param=unsupported,
                )
        url = tool.get("server_url")
        if url is not None and not isinstance(url, str):
            raise McpRequestError("server_url must be a string", param="server_url")
        description = tool.get("server_description")
        if description is not None and not isinstance(description, str):
            raise McpRequestError("server_description must be a string", param="server_description")
        return cls(
            server_label=label,
            server_url=url,
            headers=_request_headers(tool),
            allowed_tools=ToolFilter.parse(tool.get("allowed_tools"), param="allowed_tools"),
            require_approval=ApprovalPolicy.parse(tool.get("require_approval")),
            server_description=description,
        )


def _request_headers(tool: Mapping[str, Any]) -> SecretHeaders:
    """The tool's ``headers``, with ``authorization`` as a bearer ``Authorization`` header."""
    headers = check_headers(tool.get("headers"))
    token = tool.get("authorization")
    if token is None:
        return headers
    if not isinstance(token, str) or not token or any(ch in token for ch in "\r\n\0"):
        raise McpRequestError("authorization must be a non-empty string on one line", param="authorization")
    if "authorization" in headers:
        raise McpRequestError("give authorization or an Authorization header, not both", param="headers")
    return headers.merged({"authorization": f"Bearer {token}"})
