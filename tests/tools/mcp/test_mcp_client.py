"""McpConnection and McpTool against a real MCP server (the SDK's MCPServer) on loopback."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from openchatml.core.errors import ToolTimeoutError
from openchatml.tools import HostedCall, ToolRouter
from openchatml.tools.mcp import (
    McpConnection,
    McpEndpoint,
    McpTool,
    McpToolError,
    McpToolSpec,
    McpUnavailableError,
    SecretHeaders,
    TransportKind,
    open_connection,
    redact_tool_echo,
)

if TYPE_CHECKING:
    from conftest import RunningServer

TRANSPORTS: list[tuple[str, TransportKind]] = [("http_url", "streamable_http"), ("sse_url", "sse")]


def endpoint(
    server: RunningServer, attr: str = "http_url", headers: dict[str, str] | None = None
) -> McpEndpoint:
    return McpEndpoint(
        "calc", getattr(server, attr), SecretHeaders(server.auth if headers is None else headers)
    )


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(main)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(("attr", "transport"), TRANSPORTS)
def test_lists_and_calls_tools(mcp_server: RunningServer, attr: str, transport: TransportKind) -> None:
    async def main() -> None:
        async with open_connection(endpoint(mcp_server, attr), transport=transport) as connection:
            assert connection.transport_used == transport
            tools = {tool.name: tool for tool in await connection.list_tools()}
            assert set(tools) == {"add", "slow", "fail"}
            add = tools["add"]
            assert add.description == "Add two numbers."
            assert add.read_only is True and tools["slow"].read_only is None
            assert add.input_schema is not None and set(add.input_schema["properties"]) == {"a", "b"}
            assert add.to_dict()["annotations"] == {"readOnlyHint": True}
            result = await connection.call_tool("add", {"a": 2, "b": 40})
            assert result.text == "42"
            assert result.structured == {"result": 42}
        assert not connection.connected

    run(main)


@pytest.mark.parametrize(("attr", "transport"), TRANSPORTS)
def test_tool_error_is_typed(mcp_server: RunningServer, attr: str, transport: TransportKind) -> None:
    async def main() -> None:
        async with open_connection(endpoint(mcp_server, attr), transport=transport) as connection:
            with pytest.raises(McpToolError) as raised:
                await connection.call_tool("fail", {"message": "the disk is on fire"})
            assert raised.value.code == "E-TOOL-FAILED"
            assert "the disk is on fire" in raised.value.output
            with pytest.raises(McpToolError, match="nope"):
                await connection.call_tool("nope", {})
            # the connection stays usable after a failed call
            assert (await connection.call_tool("add", {"a": 1, "b": 1})).text == "2"

    run(main)


@pytest.mark.parametrize(("attr", "transport"), TRANSPORTS)
def test_deadline_times_out_and_cancels_the_call(
    mcp_server: RunningServer, attr: str, transport: TransportKind
) -> None:
    before = mcp_server.stats()

    async def main() -> float:
        async with open_connection(endpoint(mcp_server, attr), transport=transport) as connection:
            start = time.monotonic()
            with pytest.raises(ToolTimeoutError) as raised:
                await connection.call_tool("slow", {"seconds": 30}, deadline_s=0.3)
            elapsed = time.monotonic() - start
            assert raised.value.code == "E-TOOL-TIMEOUT"
            # still usable afterwards
            assert (await connection.call_tool("add", {"a": 1, "b": 2})).text == "3"
            return elapsed

    assert run(main) < 3
    deadline = time.monotonic() + 5
    while mcp_server.stats()["slow_cancelled"] == before["slow_cancelled"] and time.monotonic() < deadline:
        time.sleep(0.05)
    after = mcp_server.stats()
    assert after["slow_started"] == before["slow_started"] + 1
    assert after["slow_cancelled"] == before["slow_cancelled"] + 1


@pytest.mark.parametrize(("attr", "transport"), TRANSPORTS)
def test_headers_reach_the_server_and_no_log(
    mcp_server: RunningServer, attr: str, transport: TransportKind, caplog: pytest.LogCaptureFixture
) -> None:
    before = mcp_server.stats()

    async def main() -> None:
        async with open_connection(endpoint(mcp_server, attr), transport=transport) as connection:
            await connection.list_tools()
            assert (await connection.call_tool("add", {"a": 3, "b": 4})).text == "7"
        with pytest.raises(McpUnavailableError) as raised:
            wrong = {"Authorization": "Bearer wrong-token-a9b8"}
            async with open_connection(endpoint(mcp_server, attr, wrong), transport=transport):
                pass
        assert "HTTP 401" in raised.value.message
        assert "wrong-token-a9b8" not in str(raised.value)

    with caplog.at_level(logging.DEBUG):
        run(main)
    after = mcp_server.stats()
    assert after["authorized"] > before["authorized"]
    assert after["unauthorized"] > before["unauthorized"]
    logged = "\n".join(
        f"{record.getMessage()} {record.args!r} {record.exc_text or ''}" for record in caplog.records
    )
    assert caplog.records, "the SDK and httpx log at DEBUG: the check must see their records"
    assert mcp_server.token not in logged
    assert "wrong-token-a9b8" not in logged


def test_headers_never_show_in_reprs_or_the_echo(mcp_server: RunningServer) -> None:
    target = endpoint(mcp_server)
    assert mcp_server.token not in repr(target)
    assert mcp_server.token not in repr(target.headers) + str(target.headers)
    assert dict(target.headers) == {"authorization": f"Bearer {mcp_server.token}"}
    tool = {
        "type": "mcp",
        "server_label": "calc",
        "server_url": mcp_server.http_url,
        "headers": mcp_server.auth,
        "authorization": "oauth-token-55",
    }
    echo = redact_tool_echo(tool)
    assert mcp_server.token not in repr(echo) and "oauth-token-55" not in repr(echo)
    assert echo["headers"] == {"Authorization": "<redacted>"}
    assert echo["server_url"] == mcp_server.http_url
    spec = McpToolSpec.from_request({**tool, "authorization": None})
    assert mcp_server.token not in repr(spec)


def test_unreachable_server_fails_fast() -> None:
    async def main() -> None:
        url = f"http://127.0.0.1:{free_port()}/mcp"
        start = time.monotonic()
        with pytest.raises(McpUnavailableError) as raised:
            async with open_connection(McpEndpoint("gone", url), connect_timeout_s=5):
                pass
        assert time.monotonic() - start < 2
        assert raised.value.code == "E-TOOL-FAILED"
        assert raised.value.http_status == 424
        assert "connection failed" in raised.value.message

    run(main)


def test_silent_server_times_out_the_handshake() -> None:
    async def main() -> None:
        with SilentListener() as port:
            start = time.monotonic()
            with pytest.raises(McpUnavailableError, match=r"no handshake within 0\.5 s"):
                async with open_connection(
                    McpEndpoint("mute", f"http://127.0.0.1:{port}/mcp"), connect_timeout_s=0.5
                ):
                    pass
            assert time.monotonic() - start < 3

    run(main)


class SilentListener:
    """A listening socket that accepts connections and never answers."""

    def __enter__(self) -> int:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


def test_auto_falls_back_to_sse(mcp_server: RunningServer) -> None:
    async def main() -> None:
        async with open_connection(endpoint(mcp_server, "sse_url")) as connection:
            assert connection.transport_used == "sse"
            assert (await connection.call_tool("add", {"a": 5, "b": 5})).text == "10"
        async with open_connection(endpoint(mcp_server, "http_url")) as connection:
            assert connection.transport_used == "streamable_http"

    run(main)


def test_connection_owned_by_a_long_lived_task_group(mcp_server: RunningServer) -> None:
    """Opened in one task, used from others, closed from yet another: the owner task holds it."""

    async def main() -> None:
        async with anyio.create_task_group() as group:
            connection = McpConnection(endpoint(mcp_server))
            await connection.start(group)
            answers: list[str] = []

            async def use(a: int) -> None:
                answers.append((await connection.call_tool("add", {"a": a, "b": 1})).text)

            async with anyio.create_task_group() as users:
                for a in range(5):
                    users.start_soon(use, a)
            assert sorted(answers) == ["1", "2", "3", "4", "5"]

            async def close() -> None:
                await connection.aclose()

            group.start_soon(close)
        assert not connection.connected
        with pytest.raises(McpUnavailableError, match="closed"):
            await connection.call_tool("add", {"a": 1, "b": 1})

    run(main)


def mcp_tool_spec(server: RunningServer, **fields: Any) -> McpToolSpec:
    return McpToolSpec.from_request(
        {
            "type": "mcp",
            "server_label": "calc",
            "server_url": server.http_url,
            "headers": server.auth,
            **fields,
        }
    )


def test_mcp_tool_through_the_router(mcp_server: RunningServer) -> None:
    spec = mcp_tool_spec(
        mcp_server,
        allowed_tools=["add", "slow", "fail"],
        require_approval={"never": {"read_only": True}},
        server_description="Numbers.",
    )

    async def main() -> None:
        async with open_connection(endpoint(mcp_server)) as connection:
            tool = McpTool(spec, connection, await connection.list_tools())
            assert tool.namespace.name == "calc" and tool.namespace.description == "Numbers."
            assert [t.name for t in tool.namespace.tools] == ["add", "slow", "fail"]
            assert not tool.requires_approval("add") and tool.requires_approval("slow")
            router = ToolRouter()
            router.register(tool)
            calls = [
                HostedCall("calc.add", "c1", '{"a": 20, "b": 22}'),
                HostedCall("calc.fail", "c2", '{"message": "no"}'),
                HostedCall("calc.slow", "c3", '{"seconds": 30, "deadline_ms": 300}', deadline_ms=300),
                HostedCall("calc.missing", "c4", "{}"),
            ]
            added, failed, slow, missing = await router.run(calls)
            assert added.ok and added.content == "42"
            assert added.provenance is not None and added.provenance.source == "mcp:calc/add"
            assert (
                failed.error is not None and failed.error.code == "E-TOOL-FAILED" and "no" in failed.content
            )
            assert slow.error is not None and slow.error.code == "E-TOOL-TIMEOUT"
            assert missing.error is not None and missing.error.code == "E-CALL-SCHEMA"

    run(main)


def test_mcp_tool_filters_tools_and_cancels(mcp_server: RunningServer) -> None:
    spec = mcp_tool_spec(mcp_server, allowed_tools={"tool_names": ["add", "slow"]})

    async def main() -> None:
        async with open_connection(endpoint(mcp_server)) as connection:
            tool = McpTool(spec, connection, await connection.list_tools())
            assert [t.name for t in tool.tools] == ["add", "slow"]
            refused = await tool.call(HostedCall("calc.fail", "x1", '{"message": "m"}'))
            assert refused.error is not None and refused.error.code == "E-CALL-SCHEMA"
            results = []

            async def slow_call() -> None:
                results.append(await tool.call(HostedCall("calc.slow", "x2", '{"seconds": 30}')))

            async with anyio.create_task_group() as group:
                group.start_soon(slow_call)
                await anyio.sleep(0.3)
                await tool.cancel("x2", "the user stopped it")
                await tool.cancel("x2", "twice is fine")
            assert results[0].error is not None and results[0].error.code == "E-TOOL-CANCELLED"

    run(main)
