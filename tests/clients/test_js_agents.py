"""The OpenAI Agents SDK for JavaScript (``@openai/agents`` from npm) against a live server,
with its defaults (the Responses API over HTTP): a node script (``js/agents.cjs``) runs an
agent with a tool whose parameters are a zod schema, plainly and streamed, then an agent
with a zod ``outputType``, and prints what it got as JSON lines."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from live import ScriptedEngine, completion
from recorder import RecordedServer

from codex_harness import NodeClients, run_js
from openchatml import Message, load_encoding

pytestmark = pytest.mark.clients

QUESTION = "What is the weather in Paris?"
THINK = Message.assistant("The user asks for the weather in Paris.", channel="analysis")
CALL = Message.tool_call("functions.get_weather", json.dumps({"city": "Paris"}))
WEATHER = "sunny, 21 C in Paris"
ANSWER = "It is sunny and 21 C in Paris."
JSON_QUESTION = "Report the weather in Paris as JSON."
REPORT = {"city": "Paris", "celsius": 21}
TURN_ITEMS = ["reasoning_item", "tool_call_item", "tool_call_output_item", "message_output_item"]


def scripted_model() -> ScriptedEngine:
    """A model that thinks and calls ``get_weather`` for :data:`QUESTION`, answers
    :data:`ANSWER` from the tool's output and :data:`REPORT` (as JSON) to :data:`JSON_QUESTION`."""
    encoding = load_encoding()

    def script(prompt: Sequence[int]) -> list[int]:
        last = encoding.decode(list(prompt)).rsplit("<|message|>", 1)[-1]
        if WEATHER in last:
            return completion(Message.assistant(ANSWER))
        if JSON_QUESTION in last:
            return completion(Message.assistant(json.dumps(REPORT)))
        return completion(THINK, CALL)

    return ScriptedEngine(script)


def test_run_streamed_run_and_structured_output(
    node_clients: NodeClients, recorded_server: Callable[[ScriptedEngine], RecordedServer]
) -> None:
    served = recorded_server(scripted_model())
    args = [f"{served.url}/v1", served.engine.info.id, QUESTION, JSON_QUESTION]
    done = run_js(node_clients, "agents.cjs", args)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{served.report()}"
    steps: dict[str, list[Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            steps.setdefault(record["step"], []).append(record)

    assert [tool["city"] for tool in steps["tool"]] == ["Paris", "Paris"]
    [ran] = steps["run"]
    assert ran["final_output"] == ANSWER and ran["items"] == TURN_ITEMS
    [streamed] = steps["streamed"]
    assert streamed["final_output"] == ANSWER and streamed["items"] == TURN_ITEMS
    [structured] = steps["structured"]
    assert structured["final_output"] == REPORT

    events = [record["event"] for record in steps["event"]]
    raw = [e["raw_type"] for e in events if e["type"] == "raw_model_stream_event" and e["raw_type"]]
    assert raw.count("response.created") == raw.count("response.completed") == 2
    assert "response.function_call_arguments.done" in raw
    deltas = [e["delta"] for e in events if e["type"] == "raw_model_stream_event" and e["delta"]]
    assert "".join(deltas) == ANSWER
    items = [e["name"] for e in events if e["type"] == "run_item_stream_event"]
    assert items == ["reasoning_item_created", "tool_called", "tool_output", "message_output_created"]

    requests = served.responses_requests()
    assert [r.status for r in requests] == [200] * 5, served.report()
    assert all(r.headers["user-agent"].startswith("Agents/JavaScript") for r in requests)
    bodies = [r.json() for r in requests]
    assert [b["stream"] for b in bodies] == [False, False, True, True, False]
    for first, second in (bodies[0:2], bodies[2:4]):
        assert [t["name"] for t in first["tools"]] == ["get_weather"]
        assert first["tools"][0]["parameters"]["required"] == ["city"]
        [call] = [i for i in second["input"] if i.get("type") == "function_call"]
        [output] = [i for i in second["input"] if i.get("type") == "function_call_output"]
        assert json.loads(call["arguments"]) == {"city": "Paris"}
        assert output["call_id"] == call["call_id"] and output["output"] == WEATHER
        [reasoning] = [i for i in second["input"] if i.get("type") == "reasoning"]
        assert reasoning["content"] == [{"type": "reasoning_text", "text": THINK.text}]
    text_format = bodies[4]["text"]["format"]
    assert text_format["type"] == "json_schema" and text_format["strict"] is True
    prompts = [p for p in served.prompt_texts() if WEATHER in p]
    assert len(prompts) == 2
    assert all(p.index(THINK.text) < p.index("<|call|>") < p.index(WEATHER) for p in prompts)
