"""The Codex CLI against a live server over the Responses API's WebSocket mode
(``codex_config(…, websockets=True)``): ``codex exec``, ``codex exec resume``, and a
command run in the sandbox, each Codex run on one connection.

Codex opens the connection with a warm-up (``response.create`` with ``generate: false``:
its instructions and tools, nothing sampled) and chains the turn to it with
``previous_response_id``, sending only the items that follow; the request after a
command chains to the response that called it the same way. Codex sends ``stream: true``
in every ``response.create``, which WebSocket mode accepts. A socket recorder keeps what
each connection carried, so each test checks that nothing went over HTTPS (Codex falls
back to it when the socket fails), that every frame the server sent was text JSON, and
that no ``error`` event was sent.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from live import LiveServer, ScriptedEngine, completion, make_service
from recorder import ASGIApp, Message, Receive, RecordedRequest, RecordedServer, RequestRecorder, Scope, Send
from test_codex import (
    AGAIN,
    COMMAND,
    CONTEXT,
    FILE_TEXT,
    HELLO,
    SUMMARY,
    check_ran,
    greeter,
    messages,
    replies,
)

from codex_harness import WEBSOCKET_FEATURE, CodexHome, CodexRun, NodeClients, codex_config
from openchatml import Message as ChatMessage

pytestmark = pytest.mark.clients

FALLBACK = "Falling back from WebSockets to HTTPS"
"""What Codex prints when it gives up on the socket."""


@dataclass
class SocketLog:
    """One WebSocket connection: its handshake's headers, the messages it got (each
    text frame's JSON) and the frames it was sent (a text frame's JSON, a binary
    frame's bytes)."""

    headers: dict[str, str]
    received: list[Any] = field(default_factory=list)
    sent: list[Any] = field(default_factory=list)

    def creates(self) -> list[dict[str, Any]]:
        """The ``response.create`` messages, in order."""
        return [m for m in self.received if isinstance(m, dict) and m.get("type") == "response.create"]

    def completed(self) -> list[dict[str, Any]]:
        """The responses of the ``response.completed`` events sent, in order."""
        done = [e for e in self.sent if isinstance(e, dict) and e.get("type") == "response.completed"]
        return [e["response"] for e in done]

    def faults(self) -> list[Any]:
        """The frames sent that were binary, or ``error`` events."""
        return [e for e in self.sent if not isinstance(e, dict) or e.get("type") == "error"]

    def summary(self) -> str:
        """One line per message in and event out, for an assertion's message."""
        lines = [
            f"in {m.get('type')} generate={m.get('generate')} previous={m.get('previous_response_id')}"
            for m in self.creates()
        ]
        lines += [f"out {e.get('type') if isinstance(e, dict) else 'BINARY'}" for e in self.sent]
        return "\n".join(lines)


class SocketRecorder:
    """ASGI middleware: records each WebSocket connection into ``log``, then passes it on."""

    def __init__(self, app: ASGIApp, log: list[SocketLog]) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        record = SocketLog(headers)
        self.log.append(record)

        async def listen() -> Message:
            message = await receive()
            if message["type"] == "websocket.receive" and message.get("text") is not None:
                record.received.append(json.loads(message["text"]))
            return message

        async def watch(message: Message) -> None:
            if message["type"] == "websocket.send":
                text = message.get("text")
                record.sent.append(json.loads(text) if text is not None else message.get("bytes", b""))
            await send(message)

        await self.app(scope, listen, watch)


@dataclass
class SocketServer:
    """A live server with every HTTP request and WebSocket connection it got."""

    served: RecordedServer
    sockets: list[SocketLog]

    def report(self) -> str:
        """The HTTP requests and each connection's traffic, for an assertion's message."""
        connections = "\n".join(f"--- connection {n}\n{s.summary()}" for n, s in enumerate(self.sockets))
        return f"{self.served.report()}\n{connections or '(no WebSocket connection)'}"


@pytest.fixture
def codex_ws_at(
    node_clients: NodeClients, tmp_path: Path
) -> Iterator[Callable[[ScriptedEngine], tuple[CodexHome, SocketServer]]]:
    """``codex_ws_at(engine)``: a live server over ``engine`` (SQLite store) recording its
    HTTP requests and WebSocket connections, and a Codex home pointed at it in WebSocket mode."""
    servers: list[LiveServer] = []

    def start(engine: ScriptedEngine) -> tuple[CodexHome, SocketServer]:
        requests: list[RecordedRequest] = []
        sockets: list[SocketLog] = []
        server = LiveServer(make_service(engine, tmp_path / "store.sqlite3"))
        server.app.add_middleware(RequestRecorder, log=requests)
        server.app.add_middleware(SocketRecorder, log=sockets)
        servers.append(server.__enter__())
        served = RecordedServer(server, engine, requests)
        url = f"{server.url}/v1"
        codex = CodexHome(node_clients, tmp_path / "codex", url, engine.info.id, websockets=True)
        return codex, SocketServer(served, sockets)

    yield start
    for server in servers:
        server.__exit__()


def check_over_socket(run: CodexRun, server: SocketServer) -> None:
    """Codex exited 0 with no ``ERROR:`` line, and did its turns over the WebSocket:
    no response was asked for over HTTPS, and the server sent text frames only, none of
    them an ``error``."""
    context = f"{run}\n--- traffic\n{server.report()}"
    check_ran(run)
    assert FALLBACK not in run.stdout + run.stderr, context
    assert server.served.responses_requests() == [], context
    assert server.sockets, context
    assert all(not s.faults() for s in server.sockets), context


def test_exec_then_resume_over_the_websocket(
    codex_ws_at: Callable[[ScriptedEngine], tuple[CodexHome, SocketServer]],
) -> None:
    engine = greeter()
    codex, server = codex_ws_at(engine)

    first = codex.exec("Say hello")
    check_over_socket(first, server)
    assert first.stdout.strip() == HELLO
    [connection] = server.sockets
    warm_up, turn = connection.creates()
    warmed, answered = connection.completed()
    assert warm_up["generate"] is False and "generate" not in turn
    assert warmed["output"] == [] and warmed["usage"]["output_tokens"] == 0
    assert warmed["usage"]["input_tokens"] > 0
    assert turn["stream"] is True and turn["store"] is False
    assert turn["previous_response_id"] == warmed["id"]
    assert warm_up["input"][0] not in turn["input"]  # only what follows the warm-up's items
    assert messages(turn, "user")[-1] == "Say hello"
    assert answered["output"][-1]["content"][0]["text"] == HELLO
    [prompt] = [p for p in server.served.prompt_texts() if p.endswith("Say hello<|end|><|start|>assistant")]
    instructions = messages(warm_up, "developer")[0][:60]
    assert prompt.count(instructions) == 1  # the warm-up's items, once, before the turn's

    second = codex.resume_last("Say it again")
    check_over_socket(second, server)
    assert second.stdout.strip() == AGAIN
    assert len(server.sockets) == 2  # a new process: a new connection, warmed up again
    warm_up, turn = server.sockets[1].creates()
    warmed, _ = server.sockets[1].completed()
    assert warm_up["generate"] is False and turn["previous_response_id"] == warmed["id"]
    assert messages(turn, "assistant") == [HELLO]
    assert messages(turn, "user")[-2:] == ["Say hello", "Say it again"]
    [reasoning] = [i for i in turn["input"] if i.get("type") == "reasoning"]
    assert reasoning["encrypted_content"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": SUMMARY}]
    [prompt] = [p for p in server.served.prompt_texts() if p.endswith("it again<|end|><|start|>assistant")]
    assert prompt.index("Say hello") < prompt.index(HELLO) < prompt.index("Say it again")


def test_a_command_runs_over_the_websocket(
    codex_ws_at: Callable[[ScriptedEngine], tuple[CodexHome, SocketServer]],
) -> None:
    """The request that carries a command's output chains to the response that called the
    command, sending the output alone: the call comes from the connection's cache."""
    call = ChatMessage.tool_call("functions.exec_command", json.dumps({"cmd": COMMAND}))
    script = replies(
        (FILE_TEXT, completion(ChatMessage.assistant("The file says 42."))),
        ("What does hello.txt say?", completion(call)),
        otherwise=completion(ChatMessage.assistant(SUMMARY)),
    )
    engine = ScriptedEngine(script, context_length=CONTEXT)
    codex, server = codex_ws_at(engine)
    (codex.workdir / "hello.txt").write_text(FILE_TEXT + "\n")

    run = codex.exec("What does hello.txt say?", "--json")
    check_over_socket(run, server)
    items = [e["item"] for e in run.events() if e.get("type") == "item.completed"]
    assert [i["text"] for i in items if isinstance(i, dict) and i.get("type") == "agent_message"] == [
        "The file says 42."
    ]
    [connection] = server.sockets
    warm_up, asked, answered = connection.creates()
    warmed, called, _ = connection.completed()
    assert warm_up["generate"] is False and asked["previous_response_id"] == warmed["id"]
    [sent_call] = [i for i in called["output"] if i["type"] == "function_call"]
    assert answered["previous_response_id"] == called["id"]
    assert not [i for i in answered["input"] if i.get("type") == "function_call"]
    [output] = [i for i in answered["input"] if i.get("type") == "function_call_output"]
    assert output["call_id"] == sent_call["call_id"] and FILE_TEXT in output["output"]
    [prompt] = [p for p in server.served.prompt_texts() if FILE_TEXT in p]
    assert prompt.index("What does hello.txt say?") < prompt.index(COMMAND) < prompt.index(FILE_TEXT)


def test_the_documented_websocket_settings_are_the_tested_ones() -> None:
    """docs/server.md's Codex CLI section names the two settings that turn WebSocket mode
    on, which are what ``codex_config(…, websockets=True)`` adds."""
    text = (Path(__file__).parents[2] / "docs" / "server.md").read_text()
    section = text[text.index("\n### Codex CLI\n") :]
    section = section[: section.index("\n### ", 1)]
    plain = tomllib.loads(codex_config("http://127.0.0.1:8000/v1", "tiny"))
    socket = tomllib.loads(codex_config("http://127.0.0.1:8000/v1", "tiny", websockets=True))
    provider = socket["model_providers"]["openchatml"]
    assert socket["features"] == {**plain["features"], WEBSOCKET_FEATURE: True}
    assert provider == {**plain["model_providers"]["openchatml"], "supports_websockets": True}
    assert {k: v for k, v in socket.items() if k not in ("features", "model_providers")} == {
        k: v for k, v in plain.items() if k not in ("features", "model_providers")
    }
    assert f"`{WEBSOCKET_FEATURE} = true`" in section and "`supports_websockets = true`" in section
