"""A request's mcp tool: parsing, allowed tools, approvals, the prompt's namespace, the cache."""

from __future__ import annotations

from typing import Any

import pytest

from openchatml.core.content import DeveloperContent, tools_section
from openchatml.tools.mcp import (
    ApprovalPolicy,
    McpRequestError,
    McpToolInfo,
    McpToolSpec,
    ToolFilter,
    ToolListCache,
    ToolListKey,
    namespace_config,
    visible_tools,
)

ADD_SCHEMA = {
    "type": "object",
    "title": "addArguments",
    "properties": {
        "a": {"type": "integer", "title": "A", "description": "The first number."},
        "b": {"type": "integer", "title": "B"},
        "round_to": {"type": "integer", "title": "Round To", "default": 0},
        "unit": {"type": "string", "title": "The unit", "enum": ["m", "s"]},
    },
    "required": ["a", "b"],
}
TOOLS = (
    McpToolInfo("add", "Add two numbers.", ADD_SCHEMA, {"readOnlyHint": True}),
    McpToolInfo("ping", "Say pong.", {"type": "object", "properties": {}}),
    McpToolInfo(
        "delete_all", "Delete everything.", {"type": "object", "properties": {}}, {"readOnlyHint": False}
    ),
)


def spec(**fields: Any) -> McpToolSpec:
    return McpToolSpec.from_request(
        {"type": "mcp", "server_label": "calc", "server_url": "https://a.b/mcp", **fields}
    )


def test_parses_the_api_tool() -> None:
    parsed = spec(
        headers={"X-Key": "k1"},
        authorization="oauth-1",
        allowed_tools={"tool_names": ["add"], "read_only": True},
        require_approval={"never": {"tool_names": ["add"]}},
        server_description="A calculator.",
        defer_loading=False,
    )
    assert parsed.server_label == "calc" and parsed.server_url == "https://a.b/mcp"
    assert dict(parsed.headers) == {"x-key": "k1", "authorization": "Bearer oauth-1"}
    assert parsed.allowed_tools == ToolFilter(frozenset({"add"}), True)
    assert parsed.server_description == "A calculator."
    assert "k1" not in repr(parsed) and "oauth-1" not in repr(parsed)


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"type": "function"}, "type"),
        ({"server_label": ""}, "server_label"),
        ({"server_label": "has space"}, "server_label"),
        ({"server_label": "a.b"}, "server_label"),
        ({"server_label": "9lives"}, "server_label"),
        ({"server_label": "functions"}, "server_label"),
        ({"server_label": "browser"}, "server_label"),
        ({"server_url": 5}, "server_url"),
        ({"connector_id": "connector_gmail"}, "connector_id"),
        ({"tunnel_id": "t1"}, "tunnel_id"),
        ({"headers": {"Authorization": "Bearer a"}, "authorization": "b"}, "headers"),
        ({"authorization": "a\nb"}, "authorization"),
        ({"allowed_tools": "add"}, "allowed_tools"),
        ({"allowed_tools": {"tool_names": "add"}}, "allowed_tools.tool_names"),
        ({"allowed_tools": {"read_only": "yes"}}, "allowed_tools.read_only"),
        ({"require_approval": "sometimes"}, "require_approval"),
        ({"require_approval": {"never": ["add"]}}, "require_approval.never"),
        ({"server_description": 3}, "server_description"),
    ],
)
def test_refuses_a_malformed_tool(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(McpRequestError) as raised:
        spec(**fields)
    assert raised.value.param == param
    assert raised.value.http_status == 400 and raised.value.fault == "caller"


@pytest.mark.parametrize(
    ("allowed", "names"),
    [
        (None, ["add", "ping", "delete_all"]),
        ([], []),
        (["add", "ping", "nope"], ["add", "ping"]),
        ({"tool_names": ["ping"]}, ["ping"]),
        ({"read_only": True}, ["add"]),
        ({"read_only": False}, ["ping", "delete_all"]),
        ({"tool_names": ["add", "ping"], "read_only": True}, ["add"]),
        ({}, ["add", "ping", "delete_all"]),
    ],
)
def test_allowed_tools(allowed: Any, names: list[str]) -> None:
    assert [tool.name for tool in visible_tools(spec(allowed_tools=allowed), TOOLS)] == names


@pytest.mark.parametrize(
    ("require", "needs"),
    [
        (None, {"add": True, "ping": True, "delete_all": True}),
        ("always", {"add": True, "ping": True, "delete_all": True}),
        ("never", {"add": False, "ping": False, "delete_all": False}),
        ({"never": {"tool_names": ["ping"]}}, {"add": True, "ping": False, "delete_all": True}),
        ({"never": {"read_only": True}}, {"add": False, "ping": True, "delete_all": True}),
        ({"always": {"tool_names": ["delete_all"]}}, {"add": True, "ping": True, "delete_all": True}),
        (
            {"always": {"tool_names": ["ping"]}, "never": {"tool_names": ["ping", "add"]}},
            {"add": False, "ping": True, "delete_all": True},
        ),
    ],
)
def test_approval(require: Any, needs: dict[str, bool]) -> None:
    policy = ApprovalPolicy.parse(require)
    hints = {tool.name: tool.read_only for tool in TOOLS}
    assert {name: policy.requires_approval(name, hints[name]) for name in needs} == needs


def test_namespace_renders_as_typescript() -> None:
    namespace = namespace_config(
        spec(allowed_tools=["add", "ping"], server_description="A calculator."), TOOLS
    )
    assert namespace.name == "calc"
    assert [tool.name for tool in namespace.tools] == ["add", "ping"]
    assert namespace.tools[1].parameters is None
    text = tools_section({"calc": namespace})
    assert text == (
        "# Tools\n\n"
        "## calc\n\n"
        "// A calculator.\n"
        "namespace calc {\n\n"
        "// Add two numbers.\n"
        "type add = (_: {\n"
        "// The first number.\n"
        "a: number,\n"
        "b: number,\n"
        "round_to?: number, // default: 0\n"
        "// The unit\n"
        "//\n"
        'unit?: "m" | "s",\n'
        "}) => any;\n\n"
        "// Say pong.\n"
        "type ping = () => any;\n\n"
        "} // namespace calc"
    )
    assert "calc" in DeveloperContent(tools={"calc": namespace}).to_text()


def test_tool_list_cache_expires_and_is_bounded() -> None:
    now = [100.0]
    cache = ToolListCache(ttl_s=10, max_entries=2, clock=lambda: now[0])
    first, second, third = (ToolListKey("conv", label, f"https://{label}.example.com") for label in "abc")
    assert cache.get(first) is None
    cache.put(first, TOOLS)
    assert cache.get(first) == TOOLS
    assert cache.get(ToolListKey("other-conv", "a", "https://a.example.com")) is None
    assert cache.get(ToolListKey("conv", "a", "https://elsewhere.example.com")) is None
    now[0] += 9.9
    assert cache.get(first) == TOOLS
    now[0] += 0.1
    assert cache.get(first) is None and len(cache) == 0
    cache.put(first, TOOLS)
    cache.put(second, TOOLS[:1])
    assert cache.get(first) == TOOLS  # first is now the most recently used
    cache.put(third, ())
    assert cache.get(second) is None and cache.get(first) == TOOLS and cache.get(third) == ()
    cache.forget(first)
    assert cache.get(first) is None
