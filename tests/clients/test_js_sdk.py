"""The official JavaScript SDK (``openai`` from npm) against a live server:
``client.responses.create`` and ``client.responses.stream`` in a node script
(``js/responses.cjs``), whose answers and events come back as JSON lines."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from live import ScriptedEngine, completion
from recorder import RecordedServer

from codex_harness import NodeClients, run_js
from openchatml import Message

pytestmark = pytest.mark.clients

THINK = Message.assistant("The user greets me.", channel="analysis")
ANSWER = "Hello there, from the JavaScript SDK's server!"


def collapse(kinds: list[str]) -> list[str]:
    """Event types with each run of the same ``….delta`` type shown once."""
    return [k for n, k in enumerate(kinds) if not (k.endswith(".delta") and n and kinds[n - 1] == k)]


def test_create_and_stream(
    node_clients: NodeClients, recorded_server: Callable[[ScriptedEngine], RecordedServer]
) -> None:
    served = recorded_server(ScriptedEngine(completion(THINK, Message.assistant(ANSWER))))
    done = run_js(node_clients, "responses.cjs", [f"{served.url}/v1", served.engine.info.id, "Say hello"])
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{served.report()}"
    steps: dict[str, list[Any]] = {}
    for line in lines:
        steps.setdefault(line["step"], []).append(line)

    [created] = steps["create"]
    assert created["output_text"] == ANSWER
    response = created["response"]
    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == ["reasoning", "message"]
    assert response["output"][0]["content"] == [{"type": "reasoning_text", "text": "The user greets me."}]

    events = [line["event"] for line in steps["event"]]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert collapse([e["type"] for e in events]) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert deltas == ANSWER
    [text_done] = [e for e in events if e["type"] == "response.output_text.done"]
    assert text_done["text"] == ANSWER
    assert events[-1]["response"]["usage"]["output_tokens"] > 0

    [final] = steps["final"]
    assert final["output_text"] == ANSWER
    assert final["response"]["id"] == events[-1]["response"]["id"]
    assert [r.status for r in served.responses_requests()] == [200, 200]
    assert all("x-stainless-lang" in r.headers for r in served.responses_requests())
