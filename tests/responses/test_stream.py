"""ResponseStream: sampled ids → schema-valid events, whatever the model samples."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from openapi import validate, validate_event

from openchatml import Message, Renderer
from openchatml.responses.crypto import Sealer
from openchatml.responses.input import REASONING_KIND
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import ResponseStream

SEALER = Sealer(bytes(32))
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]


def completion(*messages: Message) -> list[int]:
    renderer = Renderer()
    ids = [t for m in messages for t in renderer.message_tokens(m)]
    return ids[2:]


def run(
    ids: list[int], chunks: list[int] | None = None, reason: str = "stop", **body: Any
) -> list[dict[str, Any]]:
    request = parse_request({"model": "m", "input": "hi", **body})
    stream = ResponseStream(ResponseState("resp_1", request, "m"), prompt_tokens=7, sealer=SEALER)
    events = stream.begin()
    cuts = [0, *(chunks or []), len(ids)]
    for a, b in itertools.pairwise(cuts):
        events += stream.feed(ids[a:b])
    return events + stream.finish(reason)


def check(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Schema, numbering and per-item lifecycle; returns the final snapshot."""
    open_items: dict[int, str] = {}
    for n, event in enumerate(events):
        validate_event(event)
        assert event["sequence_number"] == n
        kind = event["type"]
        if kind == "response.output_item.added":
            assert event["output_index"] not in open_items and event["item"]["status"] == "in_progress"
            open_items[event["output_index"]] = event["item"]["id"]
        elif kind == "response.output_item.done":
            assert open_items.pop(event["output_index"]) == event["item"]["id"]
        elif "item_id" in event:
            assert open_items[event["output_index"]] == event["item_id"]
    assert not open_items
    final = events[-1]["response"]
    validate(final, "ResponseResource")
    return final


THINK = Message.assistant("Paris is in France.", channel="analysis")
CALL = Message.tool_call("functions.get_weather", '{"city":"Paris"}')
PREAMBLE = Message.assistant("Checking the weather.", channel="commentary")
ANSWER = Message.assistant("It is sunny.", channel="final")


def test_items_by_header() -> None:
    final = check(run(completion(THINK, PREAMBLE, CALL), tools=TOOLS))
    kinds = [(i["type"], i.get("phase")) for i in final["output"]]
    assert kinds == [("reasoning", None), ("message", "commentary"), ("function_call", None)]
    call = final["output"][2]
    assert (call["name"], call["arguments"]) == ("get_weather", '{"city":"Paris"}')
    assert call["call_id"].startswith("call_") and call["status"] == "completed"
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == len(completion(THINK))


def test_encrypted_reasoning_opens_to_the_thought() -> None:
    final = check(run(completion(THINK, ANSWER), include=["reasoning.encrypted_content"]))
    sealed = final["output"][0]["encrypted_content"]
    assert SEALER.open(REASONING_KIND, sealed) == {"text": "Paris is in France."}
    assert "encrypted_content" not in check(run(completion(THINK, ANSWER)))["output"][0]


def test_cut_short_is_incomplete() -> None:
    ids = completion(THINK, ANSWER)
    final = check(run(ids[:-4], reason="length"))
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][-1]["status"] == "incomplete"
    assert final["output"][0]["status"] == "completed"


def test_engine_failure_is_error_then_failed() -> None:
    request = parse_request({"model": "m", "input": "hi"})
    stream = ResponseStream(ResponseState("resp_1", request, "m"))
    events = stream.begin() + stream.feed(completion(THINK)[:5])
    error = {"type": "model_error", "code": "model_error", "message": "boom", "param": None}
    events += stream.finish("error", error=error)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert check(events)["error"] == {"code": "model_error", "message": "boom"}


@given(st.data())
def test_split_points_do_not_matter(data: st.DataObject) -> None:
    ids = completion(THINK, PREAMBLE, CALL)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=8)))
    whole = check(run(ids, tools=TOOLS))
    split = check(run(ids, cuts, tools=TOOLS))

    def strip(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in i.items() if k not in ("id", "call_id")} for i in output]

    assert strip(split["output"]) == strip(whole["output"])
    assert split["usage"] == whole["usage"]


# random ids: specials (ids 199998–201087) are frequent, so headers, channels and
# terminators appear in every odd order
_ids = st.one_of(st.integers(0, 201087), st.sampled_from(list(range(199998, 200019))))


@given(st.lists(_ids, max_size=120), st.sampled_from(["stop", "length", "cancelled"]))
def test_random_completions_give_valid_responses(ids: list[int], reason: str) -> None:
    final = check(run(ids, [len(ids) // 3, len(ids) // 2], reason=reason))
    assert final["usage"]["output_tokens"] == len(ids)
    assert final["status"] in ("completed", "incomplete", "cancelled")
