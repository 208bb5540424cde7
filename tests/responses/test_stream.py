"""EventBuilder: sampled ids → typed events, valid in both wire dialects whatever the model
samples (the Open Responses OpenAPI document; the OpenAI SDK's types)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from openapi import known, validate, validate_event
from sdk import validate_openai_event

from openchatml import Message, Renderer, load_encoding
from openchatml.engines.base import TokenLogprob
from openchatml.responses.crypto import Sealer
from openchatml.responses.input import REASONING_KIND
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import EventBuilder
from openchatml.responses.wire.dialects import WireDialect
from openchatml.responses.wire.event_base import StreamEvent
from openchatml.responses.wire.events import load_event, respell
from openchatml.responses.wire.resource import ErrorPayload

SEALER = Sealer(bytes(32))
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]


def completion(*messages: Message) -> list[int]:
    renderer = Renderer()
    ids = [t for m in messages for t in renderer.message_tokens(m)]
    return ids[2:]


def scores(ids: list[int], top: int) -> list[TokenLogprob]:
    """A record per id whose log probability is minus its position, so a test can tell
    which sampled token a ``LogProb`` stands for."""
    return [
        TokenLogprob(t, -float(n), tuple((t + j, -float(n) - j) for j in range(top)))
        for n, t in enumerate(ids)
    ]


def typed_run(
    ids: list[int],
    chunks: list[int] | None = None,
    reason: str = "stop",
    logprobs: list[TokenLogprob] | None = None,
    **body: Any,
) -> list[StreamEvent]:
    """The typed events of ``ids`` fed in pieces cut at ``chunks``, ending for ``reason``."""
    request = parse_request({"model": "m", "input": "hi", **body})
    stream = EventBuilder(ResponseState("resp_1", request, "m"), prompt_tokens=7, sealer=SEALER)
    events = stream.begin()
    cuts = [0, *(chunks or []), len(ids)]
    for a, b in itertools.pairwise(cuts):
        events += stream.feed(ids[a:b], None if logprobs is None else logprobs[a:b])
    return events + stream.finish(reason)


def run(*args: Any, **body: Any) -> list[dict[str, Any]]:
    """:func:`typed_run`'s events as JSON (Open Responses), each also checked in ``openai``."""
    events = typed_run(*args, **body)
    for event in events:
        validate_openai_event(event.to_json(WireDialect.OPENAI))
    return [event.to_json() for event in events]


def check(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Schema (where the document has it), numbering and per-item lifecycle; returns the
    final snapshot."""
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
    validate(known(final), "ResponseResource")
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
    stream = EventBuilder(ResponseState("resp_1", request, "m"))
    typed = stream.begin() + stream.feed(completion(THINK)[:5])
    failure = ErrorPayload(type="model_error", code="model_error", message="boom")
    typed += stream.finish("error", error=failure)
    events = [e.to_json() for e in typed]
    error = {"type": "model_error", "code": "model_error", "message": "boom", "param": None}
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["error"] == error
    assert check(events)["error"] == {"code": "model_error", "message": "boom"}


def test_the_stored_json_of_a_stream_respells_to_the_typed_stream_in_either_dialect() -> None:
    """What the store keeps of each event (its Open Responses JSON) reads back to the same
    event, and respells into exactly the event's OpenAI JSON (how a stored stream is served)."""
    ids = completion(THINK, PREAMBLE, CALL)
    request = parse_request({"model": "m", "input": "hi", "tools": TOOLS})
    typed = EventBuilder(ResponseState("resp_1", request, "m", created_at=1))
    events = typed.begin() + typed.feed(ids) + typed.finish("stop")
    for event in events:
        stored = event.to_json()
        assert load_event(stored) == event
        assert respell(stored, WireDialect.OPENRESPONSES) == stored
        assert respell(stored, WireDialect.OPENAI) == event.to_json(WireDialect.OPENAI)
    assert typed.sequence_number == len(events)
    assert typed.usage().output_tokens == len(ids)


@pytest.mark.parametrize("reason", ["stop", "length", "cancelled", "error"])
def test_every_ending_is_valid_in_both_dialects(reason: str) -> None:
    ids = completion(THINK, ANSWER)
    events = typed_run(ids[: len(ids) if reason == "stop" else 9], reason=reason)
    final = check([e.to_json() for e in events])
    for event in events:
        validate_openai_event(event.to_json(WireDialect.OPENAI))
    assert final["status"] == {"stop": "completed", "length": "incomplete", "error": "failed"}.get(
        reason, "cancelled"
    )
    kinds = {e.to_json(WireDialect.OPENAI)["type"] for e in events}
    assert "response.reasoning_text.delta" in kinds and "response.reasoning.delta" not in kinds


def test_a_queued_response_opens_with_queued() -> None:
    request = parse_request({"model": "m", "input": "hi", "background": True})
    stream = EventBuilder(ResponseState("resp_1", request, "m", status="queued"))
    events = stream.begin() + stream.feed(completion(ANSWER)) + stream.finish("stop")
    assert [e.type for e in events[:3]] == ["response.created", "response.queued", "response.in_progress"]
    check([e.to_json() for e in events])
    for event in events:
        validate_openai_event(event.to_json(WireDialect.OPENAI))


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


LOGPROBS = ["message.output_text.logprobs"]
UNICODE = Message.assistant("Grüße 𝔘𝔫𝔦 🦩 ok", channel="final")


def message_logprobs(events: list[dict[str, Any]], final: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Each message's ``LogProb`` list, after checking that its deltas, ``output_text.done``,
    ``content_part.done``, ``output_item.done`` and the snapshot all agree; other items
    carry none."""
    found = []
    for index, item in enumerate(final["output"]):
        mine = [e for e in events if e.get("output_index") == index]
        if item["type"] != "message":
            assert all("logprobs" not in e and "logprobs" not in e.get("part", {}) for e in mine)
            continue
        deltas = [lp for e in mine if e["type"] == "response.output_text.delta" for lp in e["logprobs"]]
        (done,) = [e["logprobs"] for e in mine if e["type"] == "response.output_text.done"]
        (part,) = [e["part"]["logprobs"] for e in mine if e["type"] == "response.content_part.done"]
        (added,) = [e["part"]["logprobs"] for e in mine if e["type"] == "response.content_part.added"]
        (whole,) = [
            e["item"]["content"][0]["logprobs"] for e in mine if e["type"] == "response.output_item.done"
        ]
        assert deltas == done == part == whole == item["content"][0]["logprobs"]
        assert added == []
        found.append(deltas)
    return found


def test_logprobs_are_those_of_the_text_tokens() -> None:
    encoding = load_encoding()
    ids = completion(THINK, PREAMBLE, CALL)
    events = run(ids, [5, 17], logprobs=scores(ids, 2), include=LOGPROBS, top_logprobs=2, tools=TOOLS)
    final = check(events)
    (preamble,) = message_logprobs(events, final)
    body = encoding.encode_ordinary("Checking the weather.")
    start = len(completion(THINK)) + ids[len(completion(THINK)) :].index(200008) + 1
    assert [-int(lp["logprob"]) for lp in preamble] == list(range(start, start + len(body)))
    assert [lp["bytes"] for lp in preamble] == [list(encoding.token_bytes[t]) for t in body]
    assert "".join(lp["token"] for lp in preamble) == "Checking the weather."
    for lp, token in zip(preamble, body, strict=True):
        assert [alt["bytes"] for alt in lp["top_logprobs"]] == [
            list(encoding.token_bytes[token + j]) for j in range(2)
        ]
        assert [alt["logprob"] for alt in lp["top_logprobs"]] == [lp["logprob"], lp["logprob"] - 1]


def test_logprobs_of_cut_characters_follow_their_text() -> None:
    """A token cut inside a UTF-8 character goes with the first delta holding its text."""
    ids = completion(UNICODE)
    for cuts in ([], list(range(1, len(ids)))):
        events = run(ids, cuts, logprobs=scores(ids, 0), include=LOGPROBS)
        (logprobs,) = message_logprobs(events, check(events))
        assert b"".join(bytes(lp["bytes"]) for lp in logprobs).decode() == UNICODE.content[0].text
        text, raw = b"", b""
        for event in events:
            if event["type"] == "response.output_text.delta":
                assert event["logprobs"]
                last = bytes(event["logprobs"][-1]["bytes"])
                text += event["delta"].encode()
                raw += b"".join(bytes(lp["bytes"]) for lp in event["logprobs"])
                assert raw.startswith(text) and len(raw) - len(text) < 4
                assert len(raw) - len(last) < len(text)


def test_logprobs_only_when_included() -> None:
    ids = completion(PREAMBLE)
    for body in ({}, {"top_logprobs": 3}):
        final = check(run(ids, logprobs=scores(ids, 3), **body))
        assert final["output"][0]["content"][0]["logprobs"] == []
    with_none = check(run(ids, include=LOGPROBS))
    assert with_none["output"][0]["content"][0]["logprobs"] == []


@given(
    st.lists(_ids, max_size=120),
    st.lists(st.integers(0, 120), max_size=6),
    st.integers(0, 3),
    st.sampled_from(["stop", "length", "cancelled"]),
)
@example([200005, 17196, 200008, 13225, 200005, 0, 200002], [], 1, "stop")  # a stray control in a body
@example([200008, 43120, 200007, 200006, 200008, 43120], [2], 0, "length")  # cut characters, then the end
def test_random_logprobs_survive_the_lifecycle(
    ids: list[int], cuts: list[int], top: int, reason: str
) -> None:
    records = scores(ids, top)
    body = {"include": LOGPROBS, "top_logprobs": top}
    whole = check(events := run(ids, reason=reason, logprobs=records, **body))
    found = message_logprobs(events, whole)
    split_events = run(ids, sorted(c for c in cuts if c <= len(ids)), reason, records, **body)
    assert message_logprobs(split_events, check(split_events)) == found
    positions = [-int(lp["logprob"]) for lps in found for lp in lps]
    assert positions == sorted(set(positions))
    assert all(ids[n] < 199998 for n in positions)
    assert all(len(lp["top_logprobs"]) == top for lps in found for lp in lps)
