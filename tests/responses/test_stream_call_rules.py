"""The event builder holds the model to the request's calls: a call the request does not
allow, or whose arguments or input break it, never reaches the client as a valid call, and
the response says so (``failed``, ``invalid_tool_call``) — whether the engine enforced the
grammar (calls streamed) or not (calls held until checked)."""

from __future__ import annotations

from typing import Any

import pytest
from test_stream import check

from openchatml import Message, Renderer
from openchatml.responses.call_rules import CallRules
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import EventBuilder

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
PIN = {
    "type": "custom",
    "name": "pin",
    "format": {"type": "grammar", "syntax": "regex", "definition": "[0-9]{4}"},
}
THINK = Message.assistant("Let me look.", channel="analysis")
ANSWER = Message.assistant("Sunny.", channel="final")


def completion(*messages: Message) -> list[int]:
    renderer = Renderer()
    ids = [t for m in messages for t in renderer.message_tokens(m)]
    return ids[2:]


def call(name: str, payload: str) -> Message:
    return Message.tool_call(f"functions.{name}", payload)


def run(ids: list[int], *, hold: bool, chunk: int = 3, **body: Any) -> list[dict[str, Any]]:
    request = parse_request({"model": "m", "input": "hi", "tools": [WEATHER, TIME, PIN], **body})
    stream = EventBuilder(ResponseState("resp_1", request, "m"), rules=CallRules.of(request), hold_calls=hold)
    events = stream.begin()
    for start in range(0, len(ids), chunk):
        events += stream.feed(ids[start : start + chunk])
    return [event.to_json() for event in events + stream.finish("stop")]


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


@pytest.mark.parametrize("hold", [True, False])
def test_a_valid_call_passes(hold: bool) -> None:
    events = run(
        completion(THINK, call("get_weather", '{"city": "Paris"}')), hold=hold, tool_choice="required"
    )
    final = check(events)
    assert final["status"] == "completed"
    assert [item["type"] for item in final["output"]] == ["reasoning", "function_call"]
    assert final["output"][1]["arguments"] == '{"city": "Paris"}'
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert "".join(d["delta"] for d in deltas) == '{"city": "Paris"}'
    assert len(deltas) == 1 if hold else len(deltas) > 1  # held: one delta, once checked


@pytest.mark.parametrize("hold", [True, False])
def test_a_call_outside_the_choice_never_shows(hold: bool) -> None:
    ids = completion(THINK, call("get_weather", '{"city": "Paris"}'))
    events = run(ids, hold=hold, tool_choice={"type": "function", "name": "get_time"})
    final = check(events)
    assert "function_call" not in str(kinds(events))
    assert [item["type"] for item in final["output"]] == ["reasoning"]
    assert final["status"] == "failed"
    assert final["error"]["code"] == "invalid_tool_call"
    assert "'get_weather'" in final["error"]["message"]


def test_none_never_calls() -> None:
    final = check(run(completion(call("get_time", "{}")), hold=True, tool_choice="none"))
    assert final["status"] == "failed" and "'none'" in final["error"]["message"]
    assert final["output"] == []


@pytest.mark.parametrize("hold", [True, False])
def test_arguments_that_break_the_schema(hold: bool) -> None:
    ids = completion(call("get_weather", '{"town": "Paris"}'))
    events = run(ids, hold=hold, tool_choice="required")
    final = check(events)  # every item added is done: the lifecycle holds
    assert final["status"] == "failed" and "schema" in final["error"]["message"]
    if hold:  # never shown
        assert final["output"] == [] and "response.function_call_arguments.delta" not in kinds(events)
    else:  # streamed by an engine that should have enforced it: it ends incomplete
        assert [(i["type"], i["status"]) for i in final["output"]] == [("function_call", "incomplete")]


@pytest.mark.parametrize(("text", "ok"), [("1234", True), ("12a4", False)])
def test_a_custom_tools_input_follows_its_grammar(text: str, ok: bool) -> None:
    final = check(run(completion(call("pin", text)), hold=True, tool_choice="required"))
    assert (final["status"] == "completed") is ok
    if ok:
        assert final["output"][0]["type"] == "openai:custom_tool_call"  # the Open Responses spelling
        assert final["output"][0]["input"] == text
    else:
        assert final["output"] == [] and "regex grammar" in final["error"]["message"]


def test_a_forced_call_that_never_comes() -> None:
    final = check(run(completion(THINK, ANSWER), hold=True, tool_choice="required"))
    assert final["status"] == "failed" and "requires a call" in final["error"]["message"]
    # under auto, an answer is fine
    assert check(run(completion(THINK, ANSWER), hold=True))["status"] == "completed"


@pytest.mark.parametrize("chunk", [1, 2, 5, 1000])
def test_split_points_do_not_matter(chunk: int) -> None:
    ids = completion(THINK, call("get_weather", '{"city": "Oslo"}'))
    outputs = [
        check(run(ids, hold=hold, chunk=chunk, tool_choice="required"))["output"] for hold in (True, False)
    ]
    for output in outputs:
        for item in output:
            item.pop("id", None)
            item.pop("call_id", None)
    assert outputs[0] == outputs[1] and outputs[0][-1]["arguments"] == '{"city": "Oslo"}'


SCHEMA_FORMAT = {
    "type": "json_schema",
    "name": "n",
    "strict": True,
    "schema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}, "required": ["n"]},
}


@pytest.mark.parametrize(
    ("fmt", "answer", "ok"),
    [
        (SCHEMA_FORMAT, '{"n": 3}', True),
        (SCHEMA_FORMAT, '{"n": 30}', False),
        (SCHEMA_FORMAT, '{"n": 3', False),
        ({"type": "json_object"}, '{"any": [1]}', True),
        ({"type": "json_object"}, "[1]", False),
        ({"type": "json_schema", "name": "n", "schema": {"type": "object"}}, "not JSON", True),  # loose
    ],
)
def test_the_answer_is_held_to_text_format(fmt: dict[str, Any], answer: str, ok: bool) -> None:
    final_answer = Message.assistant(answer, channel="final")
    request = parse_request({"model": "m", "input": "hi", "text": {"format": fmt}})
    rules = CallRules.of(request)
    stream = EventBuilder(ResponseState("resp_1", request, "m"), rules=rules, hold_calls=True)
    events = stream.begin() + stream.feed(completion(THINK, final_answer)) + stream.finish("stop")
    final = check([event.to_json() for event in events])
    assert (final["status"] == "completed") is ok
    if not ok:
        assert final["error"]["code"] == "invalid_output" and "text.format" in final["error"]["message"]
