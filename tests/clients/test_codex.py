"""The Codex CLI against a live server: ``codex exec``, ``codex exec resume``, and a
command the model asks Codex to run in its read-only sandbox.

Codex is pointed at the server by a ``config.toml`` (``codex_harness.codex_config``); a
scripted engine says exactly what the model answers, and every request Codex sends is
recorded, so each test checks both what Codex printed and what it sent. One test runs
``openchatml serve --model tiny-random`` as a user starts it, where only the protocol is
checked (the random-weight model says nothing meaningful).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_server import CliServer
from live import ScriptedEngine, completion
from recorder import RecordedServer, check_every_response_completed

from codex_harness import CodexHome, CodexRun, NodeClients, codex_config
from openchatml import Message, load_encoding

pytestmark = pytest.mark.clients

CONTEXT = 131072
"""The scripted model's context window: gpt-oss's, room for Codex's long instructions."""
THINK = Message.assistant("The user wants a greeting.", channel="analysis")
SUMMARY = "Wants a greeting."
HELLO = "Hello from openchatml!"
AGAIN = "Hello again, as asked."
FILE_TEXT = "file content 42"
COMMAND = "cat hello.txt"


def replies(*rules: tuple[str, list[int]], otherwise: list[int]) -> Callable[[Sequence[int]], list[int]]:
    """A script that answers a prompt whose last message holds ``rules[i][0]`` with
    ``rules[i][1]`` (the first rule that matches), and any other prompt (the server's own,
    such as the request for a reasoning summary) with ``otherwise``."""
    encoding = load_encoding()

    def script(prompt: Sequence[int]) -> list[int]:
        last = encoding.decode(list(prompt)).rsplit("<|message|>", 1)[-1]
        return next((ids for needle, ids in rules if needle in last), otherwise)

    return script


def text_of(item: dict[str, Any]) -> str:
    """The text of an input message item (a string, or its parts' texts joined)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def messages(body: dict[str, Any], role: str) -> list[str]:
    """The texts of the ``role`` messages of a request body's input."""
    return [text_of(i) for i in body["input"] if i.get("type", "message") == "message" and i["role"] == role]


def greeter() -> ScriptedEngine:
    """A model that thinks, then says :data:`HELLO` to "Say hello" and :data:`AGAIN` to
    "Say it again"; :data:`SUMMARY` is its summary of its reasoning."""
    script = replies(
        ("Say hello", completion(THINK, Message.assistant(HELLO))),
        ("Say it again", completion(Message.assistant(AGAIN))),
        otherwise=completion(Message.assistant(SUMMARY)),
    )
    return ScriptedEngine(script, context_length=CONTEXT)


def check_ran(run: CodexRun, served: RecordedServer | None = None) -> None:
    """Codex exited 0 and printed no ``ERROR:`` line."""
    context = f"{run}\n--- requests\n{served.report()}" if served is not None else str(run)
    assert run.returncode == 0, context
    assert not run.error_lines(), context


@pytest.fixture
def codex_at(
    node_clients: NodeClients, recorded_server: Callable[[ScriptedEngine], RecordedServer], tmp_path: Path
) -> Callable[[ScriptedEngine], tuple[CodexHome, RecordedServer]]:
    """``codex_at(engine)``: a live server over ``engine`` and a Codex home pointed at it."""

    def start(engine: ScriptedEngine) -> tuple[CodexHome, RecordedServer]:
        served = recorded_server(engine)
        codex = CodexHome(node_clients, tmp_path / "codex", f"{served.url}/v1", engine.info.id)
        return codex, served

    return start


def test_exec_then_resume(codex_at: Callable[[ScriptedEngine], tuple[CodexHome, RecordedServer]]) -> None:
    engine = greeter()
    codex, served = codex_at(engine)

    first = codex.exec("Say hello")
    check_ran(first, served)
    assert first.stdout.strip() == HELLO
    [request] = served.responses_requests()
    body = request.json()
    assert request.status == 200 and body["stream"] is True
    assert messages(body, "user")[-1] == "Say hello"
    assert any(p.endswith("Say hello<|end|><|start|>assistant") for p in served.prompt_texts())

    second = codex.resume_last("Say it again")
    check_ran(second, served)
    assert second.stdout.strip() == AGAIN
    assert [r.status for r in served.responses_requests()] == [200, 200]
    body = served.responses_requests()[1].json()
    assert messages(body, "assistant") == [HELLO]
    assert messages(body, "user")[-2:] == ["Say hello", "Say it again"]
    [prompt] = [p for p in served.prompt_texts() if p.endswith("Say it again<|end|><|start|>assistant")]
    assert prompt.index("Say hello") < prompt.index(HELLO) < prompt.index("Say it again")


def test_reasoning_comes_back_encrypted(
    codex_at: Callable[[ScriptedEngine], tuple[CodexHome, RecordedServer]],
) -> None:
    """Codex stores nothing on the server (``store: false``) and asks for the reasoning's
    ``encrypted_content``; the next turn sends that reasoning item back, and it is accepted."""
    engine = greeter()
    codex, served = codex_at(engine)
    check_ran(codex.exec("Say hello"), served)
    check_ran(codex.resume_last("Say it again"), served)
    first, second = (r.json() for r in served.responses_requests())
    assert first["store"] is False
    assert "reasoning.encrypted_content" in first["include"]
    [reasoning] = [i for i in second["input"] if i.get("type") == "reasoning"]
    assert reasoning["encrypted_content"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": SUMMARY}]


def test_a_command_runs_in_the_sandbox(
    codex_at: Callable[[ScriptedEngine], tuple[CodexHome, RecordedServer]],
) -> None:
    """The model calls Codex's shell tool (``exec_command``); Codex runs it read-only and
    sends its output back as a ``function_call_output``, which reaches the model."""
    call = Message.tool_call("functions.exec_command", json.dumps({"cmd": COMMAND}))
    script = replies(
        (FILE_TEXT, completion(Message.assistant("The file says 42."))),
        ("What does hello.txt say?", completion(call)),
        otherwise=completion(Message.assistant(SUMMARY)),
    )
    engine = ScriptedEngine(script, context_length=CONTEXT)
    codex, served = codex_at(engine)
    (codex.workdir / "hello.txt").write_text(FILE_TEXT + "\n")

    run = codex.exec("What does hello.txt say?", "--json")
    check_ran(run, served)
    items = [e["item"] for e in run.events() if e.get("type") == "item.completed"]
    commands = [i for i in items if isinstance(i, dict) and i.get("type") == "command_execution"]
    assert len(commands) == 1, run
    assert COMMAND in commands[0]["command"] and commands[0]["exit_code"] == 0
    assert FILE_TEXT in commands[0]["aggregated_output"]
    assert [i["text"] for i in items if isinstance(i, dict) and i.get("type") == "agent_message"] == [
        "The file says 42."
    ]

    first, second = (r.json() for r in served.responses_requests())
    assert "exec_command" in [t.get("name") for t in first["tools"]]
    [sent_call] = [i for i in second["input"] if i.get("type") == "function_call"]
    [output] = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert sent_call["name"] == "exec_command" and json.loads(sent_call["arguments"]) == {"cmd": COMMAND}
    assert output["call_id"] == sent_call["call_id"]
    assert FILE_TEXT in output["output"]
    assert len([p for p in served.prompt_texts() if FILE_TEXT in p]) == 1


@pytest.fixture(scope="module")
def tiny_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    """``openchatml serve --model tiny-random`` (the random-weight gpt-oss)."""
    home = tmp_path_factory.mktemp("serve-tiny")
    server = CliServer(["--model", "tiny-random", "--device", "cpu"], home, timeout=600)
    yield server
    server.stop()


def test_exec_against_the_tiny_model(
    node_clients: NodeClients, tiny_server: CliServer, tmp_path: Path
) -> None:
    """Whatever the random weights say, Codex and the server agree on the protocol: the
    turn completes, and every request Codex sent was answered 200 with a completed response."""
    [model] = [m["id"] for m in httpx.get(f"{tiny_server.url}/v1/models", timeout=10).json()["data"]]
    codex = CodexHome(node_clients, tmp_path, f"{tiny_server.url}/v1", model)
    run = codex.exec("Say hello", "--json", timeout=600)
    check_ran(run)
    kinds = [event.get("type") for event in run.events()]
    assert "turn.completed" in kinds and "turn.failed" not in kinds, run
    check_every_response_completed(tiny_server.url)


def test_the_documented_config_is_the_tested_one() -> None:
    """The ``config.toml`` of docs/server.md's Clients section is the one these tests use."""
    text = (Path(__file__).parents[2] / "docs" / "server.md").read_text()
    section = text[text.index("\n## Clients\n") :]
    section = section[: section.index("\n## ", 1)]
    documented: dict[str, Any] = {}
    for block in section.split("```toml\n")[1:]:
        documented.update(tomllib.loads(block[: block.index("```")]))
    assert documented == tomllib.loads(codex_config("http://127.0.0.1:8000/v1", "tiny"))


def test_codex_shows_the_models_reasoning(
    codex_at: Callable[[ScriptedEngine], tuple[CodexHome, RecordedServer]],
) -> None:
    """Codex asks for a reasoning summary (``reasoning.summary: auto``) and shows it: its
    JSON events carry a reasoning item with the summary the model wrote."""
    engine = greeter()
    codex, served = codex_at(engine)
    run = codex.exec("Say hello", "--json")
    check_ran(run, served)
    items = [
        e["item"]
        for e in run.events()
        if e.get("type") == "item.completed" and isinstance(e.get("item"), dict)
    ]
    assert any(item.get("type") == "reasoning" and SUMMARY in str(item.get("text")) for item in items), run
    assert any(item.get("type") == "agent_message" and item.get("text") == HELLO for item in items), run
