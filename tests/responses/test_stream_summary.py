"""Reasoning summaries in the event stream: each reasoning item waits for its summary.

With ``summaries`` the stream stops translating when a reasoning item's text is done:
``summary_due`` holds that text, nothing of the next item comes out, the summary's
pieces become ``reasoning_summary_*`` events, and ``summary_done()`` ends the item and
lets the held-back events out — whatever the split of the ids, with log probabilities
or not, and however the response ends.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from sdk import validate_openai_event
from test_stream import ANSWER, CALL, PREAMBLE, THINK, TOOLS, check, completion, scores

from openchatml import Message
from openchatml.responses.replay import replay_events
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import EventBuilder
from openchatml.responses.wire.dialects import WireDialect
from openchatml.responses.wire.event_base import StreamEvent

SUMMARY = ["The user ", "asked about ", "Paris."]
LATER = Message.assistant("Now the weather.", channel="analysis")


def summarised(
    ids: list[int], cuts: list[int] = (), *, reason: str = "stop", logprobs: bool = False, **body: Any
) -> tuple[list[dict[str, Any]], list[str]]:
    """Run ``ids`` in pieces cut at ``cuts``, writing SUMMARY for every due summary;
    the events and the reasoning texts that were summarised."""
    include = ["message.output_text.logprobs"] if logprobs else []
    request = parse_request(
        {"model": "m", "input": "hi", "reasoning": {"summary": "auto"}, "include": include, **body}
    )
    stream = EventBuilder(ResponseState("resp_1", request, "m"), summaries=True)
    events = stream.begin()
    asked: list[str] = []
    records = scores(ids, 2) if logprobs else None
    for a, b in itertools.pairwise([0, *cuts, len(ids)]):
        events += stream.feed(ids[a:b], None if records is None else records[a:b])
        while (text := stream.summary_due) is not None:
            asked.append(text)
            for piece in SUMMARY:
                events += stream.summary_delta(piece)
            events += stream.summary_done()
    return as_json(events + stream.finish(reason)), asked


def as_json(events: list[StreamEvent]) -> list[dict[str, Any]]:
    """The events' Open Responses JSON, each also checked in the ``openai`` dialect."""
    for event in events:
        validate_openai_event(event.to_json(WireDialect.OPENAI))
    return [event.to_json() for event in events]


def lifecycle(events: list[dict[str, Any]], index: int) -> list[str]:
    kinds = [e["type"] for e in events if e.get("output_index") == index]
    return [k for n, k in enumerate(kinds) if n == 0 or k != kinds[n - 1]]


def test_reasoning_item_ends_after_its_summary() -> None:
    events, asked = summarised(completion(THINK, ANSWER))
    final = check(events)
    assert asked == ["Paris is in France."]
    assert lifecycle(events, 0) == [
        "response.output_item.added",
        "response.content_part.added",
        "response.reasoning.delta",
        "response.reasoning.done",
        "response.content_part.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
    ]
    # the answer begins only once the reasoning item is done
    done = max(n for n, e in enumerate(events) if e.get("output_index") == 0)
    assert min(n for n, e in enumerate(events) if e.get("output_index") == 1) > done
    assert final["output"][0]["summary"] == [{"type": "summary_text", "text": "The user asked about Paris."}]
    assert final["output"][1]["content"][0]["text"] == "It is sunny."
    assert final["reasoning"]["summary"] == "auto"


@given(st.data())
def test_split_points_and_logprobs_do_not_matter(data: Any) -> None:
    ids = completion(THINK, PREAMBLE, LATER, CALL)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=8)))
    logprobs = data.draw(st.booleans())
    whole, asked = summarised(ids, tools=TOOLS)
    split, asked_split = summarised(ids, cuts, logprobs=logprobs, tools=TOOLS)
    assert asked == asked_split == ["Paris is in France.", "Now the weather."]

    def strip(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in i.items() if k not in ("id", "call_id", "content")} for i in output]

    assert strip(check(split)["output"]) == strip(check(whole)["output"])
    indexes = [e["output_index"] for e in split if "output_index" in e]
    assert indexes == sorted(indexes)  # one item after another, never interleaved
    for index in range(4):  # each item's lifecycle, summaries in place, deltas merged
        assert lifecycle(split, index) == lifecycle(whole, index)
    assert [e.get("output_index") for e in split if e["type"] == "response.output_item.done"] == [0, 1, 2, 3]


def test_reasoning_cut_by_a_new_message_is_summarised_before_it() -> None:
    ids = completion(THINK, ANSWER)
    end = ids.index(200007)  # <|end|> of the reasoning: dropped, the next header follows
    events, asked = summarised(ids[:end] + ids[end + 1 :])
    final = check(events)
    assert asked == ["Paris is in France."]
    assert final["output"][0]["status"] == "incomplete"
    assert final["output"][0]["summary"][0]["text"] == "The user asked about Paris."


@given(st.sampled_from(["stop", "length", "cancelled"]), st.integers(0, 3))
def test_ending_while_a_summary_is_due_closes_the_item(reason: str, pieces: int) -> None:
    request = parse_request({"model": "m", "input": "hi", "reasoning": {"summary": "concise"}})
    stream = EventBuilder(ResponseState("resp_1", request, "m"), summaries=True)
    typed = stream.begin() + stream.feed(completion(THINK, ANSWER))
    assert stream.summary_due == "Paris is in France."
    for piece in SUMMARY[:pieces]:
        typed += stream.summary_delta(piece)
    typed += stream.finish(reason)  # cancelled mid-summary, say
    final = check(as_json(typed))
    assert stream.summary_due is None
    summary = "".join(SUMMARY[:pieces]).strip()
    assert final["output"][0]["summary"] == ([{"type": "summary_text", "text": summary}] if pieces else [])
    assert final["output"][1]["content"][0]["text"] == "It is sunny."  # the held answer came out


def test_no_summaries_unless_asked_and_none_of_empty_reasoning() -> None:
    request = parse_request({"model": "m", "input": "hi"})
    stream = EventBuilder(ResponseState("resp_1", request, "m"))
    events = stream.begin() + stream.feed(completion(THINK, ANSWER))
    assert stream.summary_due is None
    assert check(as_json(events + stream.finish("stop")))["output"][0]["summary"] == []
    empty = Message.assistant("  ", channel="analysis")
    events, asked = summarised(completion(empty, ANSWER))
    assert asked == [] and check(events)["output"][0]["summary"] == []


def test_replay_has_the_summary_where_the_live_stream_had_it() -> None:
    live, _ = summarised(completion(THINK, ANSWER))
    replayed = replay_events(live[-1]["response"])
    check(replayed)
    assert [e["type"] for e in replayed if "summary" in e["type"]] == [
        e for e in dict.fromkeys(e["type"] for e in live if "summary" in e["type"])
    ]
    assert lifecycle(replayed, 0) == lifecycle(live, 0)


_ids = st.one_of(st.integers(0, 201087), st.sampled_from(list(range(199998, 200019))))


@given(
    st.lists(_ids, max_size=120),
    st.lists(st.integers(0, 120), max_size=6),
    st.sampled_from(["stop", "length", "cancelled"]),
    st.booleans(),
)
def test_random_completions_with_summaries_stay_valid(
    ids: list[int], cuts: list[int], reason: str, logprobs: bool
) -> None:
    # random ids: headers, channels and terminators in every odd order
    events, asked = summarised(
        ids, sorted(c for c in cuts if c <= len(ids)), reason=reason, logprobs=logprobs
    )
    final = check(events)
    indexes = [e["output_index"] for e in events if "output_index" in e]
    assert indexes == sorted(indexes)
    summaries = [i["summary"] for i in final["output"] if i["type"] == "reasoning" and i["summary"]]
    assert len(summaries) == len(asked)
