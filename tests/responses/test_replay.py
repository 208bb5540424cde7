"""Replay: a stored response replays to the events its live stream sent (each item's text
in one delta), valid in both wire dialects, the same from the typed response and from
its stored JSON."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sdk import validate_openai_event
from test_stream import ANSWER, CALL, LOGPROBS, PREAMBLE, THINK, TOOLS, check, completion, scores, typed_run

from openchatml.responses.replay import replay, replay_events
from openchatml.responses.wire.dialects import WireDialect
from openchatml.responses.wire.event_base import StreamEvent
from openchatml.responses.wire.resource import load_resource


def merged(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` with each run of deltas of one part joined into one (as a replay sends them)."""
    out: list[dict[str, Any]] = []
    for event in events:
        last = out[-1] if out else None
        if (
            last is not None
            and event["type"].endswith(".delta")
            and last["type"] == event["type"]
            and last["item_id"] == event["item_id"]
        ):
            out[-1] = {
                **last,
                "delta": last["delta"] + event["delta"],
                **({"logprobs": last["logprobs"] + event["logprobs"]} if "logprobs" in event else {}),
            }
            continue
        out.append(event)
    return [{k: v for k, v in e.items() if k != "sequence_number"} for e in out]


def live_and_replayed(typed: list[StreamEvent]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    live = [e.to_json() for e in typed]
    final = typed[-1].to_json()["response"]
    return live, replay_events(final)


def early(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first two events without the times a replay cannot know."""
    return [{**e, "response": {**e["response"], "created_at": 0}} for e in events[:2]]


@pytest.mark.parametrize("reason", ["stop", "length", "cancelled", "error"])
def test_a_stored_response_replays_to_its_live_events(reason: str) -> None:
    ids = completion(THINK, PREAMBLE, CALL)
    typed = typed_run(ids if reason == "stop" else ids[:-3], [3, 11, 20], reason, tools=TOOLS)
    live, replayed = live_and_replayed(typed)
    check(replayed)
    assert [e["sequence_number"] for e in replayed] == list(range(len(replayed)))
    assert merged(replayed)[2:] == merged(live)[2:]
    assert early(replayed) == early(live)


def test_logprobs_replay_in_one_delta() -> None:
    ids = completion(PREAMBLE, ANSWER)
    typed = typed_run(ids, [4, 9], logprobs=scores(ids, 1), include=LOGPROBS, top_logprobs=1)
    live, replayed = live_and_replayed(typed)
    assert merged(replayed)[2:] == merged(live)[2:]
    deltas = [e for e in replayed if e["type"] == "response.output_text.delta"]
    assert len(deltas) == 2 and all(d["logprobs"] for d in deltas)


def test_typed_and_stored_replays_agree_in_both_dialects() -> None:
    typed = typed_run(completion(THINK, ANSWER), reason="stop")
    snapshot = typed[-1].to_json()["response"]
    resource = load_resource(snapshot)
    assert resource.to_json() == snapshot
    for dialect in WireDialect:
        events = replay(resource)
        assert replay_events(snapshot, dialect=dialect) == [e.to_json(dialect) for e in events]
    for event in replay_events(snapshot, dialect=WireDialect.OPENAI):
        validate_openai_event(event)
    names = [e["type"] for e in replay_events(snapshot, dialect=WireDialect.OPENAI)]
    assert "response.reasoning_text.delta" in names and "response.reasoning.delta" not in names


@given(st.integers(-1, 40))
def test_starting_after_resumes(after: int) -> None:
    typed = typed_run(completion(THINK, ANSWER))
    snapshot = typed[-1].to_json()["response"]
    whole = replay_events(snapshot)
    assert replay_events(snapshot, starting_after=after) == whole[after + 1 :]


def test_a_failed_response_replays_its_error() -> None:
    typed = typed_run(completion(THINK)[:6], reason="error")
    replayed = replay_events(typed[-1].to_json()["response"])
    check(replayed)
    assert [e["type"] for e in replayed[-2:]] == ["error", "response.failed"]
    assert replayed[-2]["error"] == {
        "type": "server_error",
        "code": "server_error",
        "message": "generation failed",
        "param": None,
    }
