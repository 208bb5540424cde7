"""Who may be connected to: URL prefixes, configured labels, headers as credentials."""

from __future__ import annotations

import pytest

from openchatml.tools.mcp import (
    REDACTED,
    McpPolicy,
    McpRequestError,
    McpServerConfig,
    McpServerNotAllowedError,
    SecretHeaders,
    redact_tool_echo,
)
from openchatml.tools.mcp.policy import ServerAddress, check_headers

PREFIX = "https://mcp.example.com/tools"
POLICY = McpPolicy([PREFIX, "http://127.0.0.1:8931/"])


@pytest.mark.parametrize(
    "url",
    [
        "https://mcp.example.com/tools",
        "https://mcp.example.com/tools/",
        "https://mcp.example.com/tools/mcp",
        "https://mcp.example.com/tools/a/b?x=1",
        "https://MCP.Example.COM/tools/mcp",
        "https://mcp.example.com./tools/mcp",
        "https://mcp.example.com:443/tools/mcp",
        "HTTPS://mcp.example.com/tools/mcp",
        "https://mcp.example.com/%74ools/mcp",
        "http://127.0.0.1:8931/mcp",
        "http://127.0.0.1:8931",
    ],
)
def test_allowed(url: str) -> None:
    endpoint = POLICY.resolve("docs", url, SecretHeaders())
    assert endpoint.url == url and endpoint.label == "docs"


@pytest.mark.parametrize(
    "url",
    [
        "https://mcp.example.com/toolsx",  # not on a segment boundary
        "https://mcp.example.com/tool",
        "https://mcp.example.com/",
        "https://mcp.example.com",
        "http://mcp.example.com/tools",  # scheme
        "https://mcp.example.com:8443/tools",  # port
        "https://mcp.example.com.evil.net/tools",  # host suffix trick
        "https://evil.net/mcp.example.com/tools",
        "https://evilmcp.example.com/tools",
        "https://sub.mcp.example.com/tools",
        "https://mcp.example.com@evil.net/tools",  # userinfo trick
        "https://user:pw@mcp.example.com/tools",  # credentials in the URL
        "https://evil.net\\@mcp.example.com/tools",
        "https://evil.net#@mcp.example.com/tools",
        "https://mcp.example.com/tools/../admin",  # dot segments
        "https://mcp.example.com/tools/%2e%2e/admin",
        "https://mcp.example.com/tools/%2E%2E/admin",
        "https://mcp.example.com/tools/./x",
        "https://mcp.example.com/tools%2f..%2fadmin",  # encoded slash
        "https://mcp.example.com/tools//x",  # empty segment
        "https://mcp.example.com/tools\\..\\admin",
        "https://mcp.exa\tmple.com/tools",  # urlsplit drops tabs: refused before
        "https://mcp.example.com /tools",
        "https://mcp.exаmple.com/tools",  # Cyrillic a
        "https://mcp.example.com:99999/tools",
        "https://mcp.example.com:x/tools",
        "ftp://mcp.example.com/tools",
        "file:///etc/passwd",
        "//mcp.example.com/tools",
        "mcp.example.com/tools",
        "",
        "http://127.0.0.1:8932/mcp",
        "http://127.0.0.2:8931/mcp",
        "http://localhost:8931/mcp",
        "http://[::1]:8931/mcp",
        "http://2130706433:8931/mcp",  # 127.0.0.1 as a number
    ],
)
def test_refused(url: str) -> None:
    with pytest.raises(McpServerNotAllowedError) as raised:
        POLICY.resolve("docs", url, SecretHeaders())
    assert raised.value.param == "server_url"
    assert raised.value.code == "E-TOOL-NOT-ALLOWED"
    assert raised.value.http_status == 400 and raised.value.fault == "caller"


def test_deny_by_default() -> None:
    policy = McpPolicy()
    assert not policy.allows_any
    with pytest.raises(McpServerNotAllowedError, match="not allowed"):
        policy.resolve("docs", "https://mcp.example.com/tools", SecretHeaders())
    with pytest.raises(McpServerNotAllowedError) as raised:
        policy.resolve("docs", None, SecretHeaders())
    assert raised.value.param == "server_label"


def test_refusal_message_hides_query_and_credentials() -> None:
    with pytest.raises(McpServerNotAllowedError) as raised:
        POLICY.resolve(
            "docs", "https://other.example.com/mcp?key=k3y-123", SecretHeaders({"X-Key": "hdr-456"})
        )
    assert "k3y-123" not in str(raised.value) and "hdr-456" not in str(raised.value)
    assert "https://other.example.com:443/mcp" in raised.value.message
    with pytest.raises(McpServerNotAllowedError) as raised:
        POLICY.resolve("docs", "https://me:pw-789@mcp.example.com/tools", SecretHeaders())
    assert "pw-789" not in str(raised.value)


def test_prefix_root_and_ipv6() -> None:
    policy = McpPolicy(["https://[::1]:9000", "https://api.example.com"])
    assert (
        policy.resolve("a", "https://[0:0::1]:9000/x/y", SecretHeaders()).url == "https://[0:0::1]:9000/x/y"
    )
    assert policy.resolve("a", "https://api.example.com/anything", SecretHeaders())
    with pytest.raises(McpServerNotAllowedError):
        policy.resolve("a", "https://[::2]:9000/x", SecretHeaders())


@pytest.mark.parametrize(
    "prefix", ["https://mcp.example.com/tools?x=1", "mcp.example.com", "https://a@b.com/", "https://x/../y"]
)
def test_bad_prefix_is_a_configuration_error(prefix: str) -> None:
    with pytest.raises(ValueError):
        McpPolicy([prefix])


def test_configured_server_by_label() -> None:
    docs = McpServerConfig(
        "docs", "https://internal.example.com/mcp", SecretHeaders({"Authorization": "Bearer cfg"})
    )
    policy = McpPolicy(servers=[docs])
    assert policy.allows_any and policy.configured("docs") is docs
    by_label = policy.resolve("docs", None, SecretHeaders({"X-User": "u1"}))
    assert by_label.url == docs.url
    assert dict(by_label.headers) == {"authorization": "Bearer cfg", "x-user": "u1"}
    same_url = policy.resolve("docs", docs.url, SecretHeaders())
    assert dict(same_url.headers) == {"authorization": "Bearer cfg"}
    # the configured credentials never go to another URL, nor under another label
    with pytest.raises(McpServerNotAllowedError):
        policy.resolve("docs", "https://internal.example.com/mcp/other", SecretHeaders())
    with pytest.raises(McpServerNotAllowedError):
        policy.resolve("other", None, SecretHeaders())
    with pytest.raises(McpServerNotAllowedError):
        policy.resolve("other", docs.url, SecretHeaders())


def test_prefix_allowed_url_under_a_configured_label_gets_no_configured_headers() -> None:
    docs = McpServerConfig(
        "docs", "https://mcp.example.com/tools/a", SecretHeaders({"Authorization": "Bearer cfg"})
    )
    policy = McpPolicy([PREFIX], [docs])
    endpoint = policy.resolve("docs", "https://mcp.example.com/tools/b", SecretHeaders())
    assert dict(endpoint.headers) == {}


def test_secret_headers_hide_values() -> None:
    headers = SecretHeaders({"Authorization": "Bearer zz-top", "X-Api-Key": "k-99"})
    shown = repr(headers) + str(headers) + f"{headers}"
    assert "zz-top" not in shown and "k-99" not in shown
    assert "authorization" in shown
    assert headers["AUTHORIZATION"] == "Bearer zz-top"
    assert dict(headers.merged({"x-api-key": "k-100"})) == {
        "authorization": "Bearer zz-top",
        "x-api-key": "k-100",
    }
    docs = McpServerConfig("docs", "https://a.example.com/", headers)
    assert "zz-top" not in repr(docs)


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        ({"Bad Name": "v"}, "invalid header name"),
        ({"X-Token": "line\r\nInjected: 1"}, "'X-Token'"),
        ({"X-Token": 5}, "'X-Token'"),
        ({"Host": "evil.net"}, "'Host'"),
        ({"Mcp-Session-Id": "s"}, "'Mcp-Session-Id'"),
        (["not", "a", "mapping"], "object of strings"),
    ],
)
def test_bad_headers_are_refused_without_their_values(headers: object, fragment: str) -> None:
    with pytest.raises(McpRequestError) as raised:
        check_headers(headers)
    assert fragment in raised.value.message
    assert raised.value.param == "headers"
    assert "Injected" not in raised.value.message and "evil.net" not in raised.value.message


def test_redacted_echo() -> None:
    tool = {
        "type": "mcp",
        "server_label": "docs",
        "server_url": "https://me:pw@mcp.example.com/tools?x=1",
        "headers": {"Authorization": "Bearer abc", "X-Key": "def"},
        "authorization": "tok",
        "require_approval": "never",
    }
    echo = redact_tool_echo(tool)
    assert echo["headers"] == {"Authorization": REDACTED, "X-Key": REDACTED}
    assert echo["authorization"] == REDACTED
    assert echo["server_url"] == "https://mcp.example.com/tools?x=1"
    assert echo["require_approval"] == "never"
    assert tool["headers"] == {"Authorization": "Bearer abc", "X-Key": "def"}  # the request is untouched
    assert redact_tool_echo({"type": "mcp", "server_label": "a", "headers": None})["headers"] is None


def test_server_address_display() -> None:
    address = ServerAddress.parse("https://Mcp.Example.com/a/b/?k=v#f")
    assert address.display() == "https://mcp.example.com:443/a/b"
    assert address.has_query
