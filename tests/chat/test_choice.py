"""A choice read from its response's events: the same answer streamed as chunks and
gathered into a ``chat.completion``, both valid for the OpenAI SDK's own types; the
chain of thought only in ``reasoning_content`` / ``reasoning``; stop sequences cut the
answer; a failed response fails the choice."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from openchatml import Message, Renderer
from openchatml.chat import (
    CallPiece,
    CallStart,
    ChoiceEnd,
    ChoiceFailure,
    ChoiceMessage,
    ChoiceReader,
    ChunkWriter,
    ContentPiece,
    Piece,
    ReasoningPiece,
    completion_json,
    parse_chat_request,
)
from openchatml.engines.base import TokenLogprob
from openchatml.responses.call_rules import CallRules
from openchatml.responses.resource import ResponseState, Usage
from openchatml.responses.stream import EventBuilder
from openchatml.responses.wire.event_base import StreamEvent

THINK = Message.assistant("The user asks for the weather. SECRET plan.", channel="analysis")
PREAMBLE = Message.assistant("Let me check.", channel="commentary")
ANSWER = Message.assistant("It is sunny in Paris.", channel="final")
CALL = Message.tool_call("functions.get_weather", '{"city": "Paris"}')
CALL_2 = Message.tool_call("functions.get_weather", '{"city": "Rome"}')
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def completion(*messages: Message) -> list[int]:
    """The ids a model samples to say ``messages`` after ``<|start|>assistant``."""
    renderer = Renderer()
    ids = [t for m in messages for t in renderer.message_tokens(m)]
    return ids[2:]


def events(ids: list[int], reason: str = "stop", cuts: int = 3, **body: Any) -> list[StreamEvent]:
    """The events of a response to ``body`` whose model samples ``ids`` (``cuts`` at a time)."""
    chat = parse_chat_request({"messages": [{"role": "user", "content": "Weather?"}], **body})
    request = chat.request
    builder = EventBuilder(
        ResponseState("resp_1", request, "m"), prompt_tokens=9, rules=CallRules.of(request), hold_calls=True
    )
    out = builder.begin()
    for start in range(0, len(ids), cuts):
        piece = ids[start : start + cuts]
        scores = [TokenLogprob(t, -0.5, ((t, -0.5),)) for t in piece] if request.wants_logprobs else None
        out += builder.feed(piece, scores)
    return out + builder.finish(reason)


def pieces(stream: list[StreamEvent], stops: tuple[str, ...] = ()) -> list[Piece]:
    reader = ChoiceReader(stops)
    return [piece for event in stream for piece in reader.feed(event)]


def gathered(found: list[Piece], logprobs: bool = False) -> dict[str, Any]:
    """The ``chat.completion`` of one choice's pieces, checked against the SDK's type."""
    message = ChoiceMessage()
    for piece in found:
        message.add(piece)
    body = completion_json("chatcmpl-1", 1, "m", [message], [Usage(9, 20, 5)], logprobs)
    ChatCompletion.model_validate(body, strict=True)
    return body


def streamed(found: list[Piece], logprobs: bool = False) -> Any:
    """The completion the SDK's own stream state builds from the chunks of ``found``,
    each chunk checked against the SDK's type."""
    writer = ChunkWriter("m", logprobs=logprobs, include_usage=True)
    chunks = [writer.role(0)] + [c for p in found if (c := writer.piece(0, p)) is not None]
    chunks.append(writer.usage([Usage(9, 20, 5)]))
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk, strict=True))
    return state.current_completion_snapshot


def same_answer(found: list[Piece], logprobs: bool = False) -> dict[str, Any]:
    """The gathered message, after checking the streamed one says the same."""
    body = gathered(found, logprobs)
    final = streamed(found, logprobs)
    choice, expected = final.choices[0], body["choices"][0]
    assert choice.finish_reason == expected["finish_reason"]
    message = choice.message
    assert message.content == expected["message"]["content"]
    assert getattr(message, "reasoning_content", None) == expected["message"].get("reasoning_content")
    assert getattr(message, "reasoning", None) == expected["message"].get("reasoning")
    calls = [
        c.model_dump(include={"id", "type", "function"}, exclude={"function": {"parsed_arguments"}})
        for c in message.tool_calls or []
    ]
    assert calls == expected["message"].get("tool_calls", [])
    if logprobs:
        assert choice.logprobs is not None and choice.logprobs.content is not None
        assert [lp.model_dump() for lp in choice.logprobs.content] == expected["logprobs"]["content"]
    assert final.usage is not None and final.usage.completion_tokens == 20
    return body["choices"][0]


def test_an_answer_with_reasoning() -> None:
    choice = same_answer(pieces(events(completion(THINK, ANSWER))))
    message = choice["message"]
    assert message["content"] == "It is sunny in Paris."
    assert (
        message["reasoning_content"] == message["reasoning"] == "The user asks for the weather. SECRET plan."
    )
    assert choice["finish_reason"] == "stop"
    assert "tool_calls" not in message


def test_hidden_reasoning_never_reaches_the_content_however_the_ids_arrive() -> None:
    ids = completion(THINK, PREAMBLE, CALL)
    for cuts in (1, 2, 7, len(ids)):
        found = pieces(events(ids, cuts=cuts, tools=[WEATHER]))
        content = "".join(p.text for p in found if isinstance(p, ContentPiece))
        assert "SECRET" not in content
        assert "SECRET" in "".join(p.text for p in found if isinstance(p, ReasoningPiece))


def test_calls_stream_their_start_then_their_arguments() -> None:
    found = pieces(events(completion(THINK, CALL, CALL_2), tools=[WEATHER]))
    starts = [p for p in found if isinstance(p, CallStart)]
    assert [(s.index, s.name) for s in starts] == [(0, "get_weather"), (1, "get_weather")]
    assert all(s.call_id.startswith("call_") for s in starts)
    arguments = [
        "".join(p.arguments for p in found if isinstance(p, CallPiece) and p.index == n) for n in (0, 1)
    ]
    assert arguments == ['{"city": "Paris"}', '{"city": "Rome"}']
    choice = same_answer(found)
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert [c["id"] for c in choice["message"]["tool_calls"]] == [s.call_id for s in starts]


def test_a_preamble_and_a_call() -> None:
    choice = same_answer(pieces(events(completion(PREAMBLE, CALL), tools=[WEATHER])))
    assert choice["message"]["content"] == "Let me check."
    assert choice["finish_reason"] == "tool_calls"


def test_messages_of_one_turn_are_paragraphs_of_one_content() -> None:
    choice = same_answer(pieces(events(completion(PREAMBLE, ANSWER))))
    assert choice["message"]["content"] == "Let me check.\n\nIt is sunny in Paris."


def test_log_probabilities_go_with_their_text() -> None:
    found = pieces(events(completion(THINK, ANSWER), logprobs=True, top_logprobs=1))
    choice = same_answer(found, logprobs=True)
    tokens = choice["logprobs"]["content"]
    assert "".join(t["token"] for t in tokens) == "It is sunny in Paris."
    assert all(t["logprob"] == -0.5 and len(t["top_logprobs"]) == 1 for t in tokens)


@pytest.mark.parametrize(
    ("stops", "content"), [(("sunny",), "It is "), (("Paris", "is"), "It "), (("zzz",), None)]
)
def test_stop_sequences_cut_the_answer(stops: tuple[str, ...], content: str | None) -> None:
    ids = completion(THINK, ANSWER)
    for cuts in (1, 3, len(ids)):
        reader = ChoiceReader(stops)
        found: list[Piece] = []
        for event in events(ids, cuts=cuts):
            found += reader.feed(event)
        choice = same_answer(found)
        assert choice["message"]["content"] == (content or "It is sunny in Paris.")
        assert choice["finish_reason"] == "stop"
        assert reader.stopped is (content is not None)
        assert isinstance(found[-1], ChoiceEnd)


def test_length_and_failures() -> None:
    cut_short = events(completion(THINK, ANSWER)[:-4], reason="length")
    assert same_answer(pieces(cut_short))["finish_reason"] == "length"
    forced = {"type": "function", "function": {"name": "get_weather"}}
    failed = pieces(events(completion(ANSWER), tools=[WEATHER], tool_choice=forced))
    assert isinstance(failed[-1], ChoiceFailure)
    assert failed[-1].error.code == "invalid_tool_call"
    assert ChunkWriter("m").piece(0, failed[-1]) is None
    cancelled = pieces(events(completion(ANSWER), reason="cancelled"))
    assert isinstance(cancelled[-1], ChoiceFailure) and cancelled[-1].error.code == "cancelled"


def test_nothing_is_read_after_the_end() -> None:
    stream = events(completion(ANSWER))
    reader = ChoiceReader()
    for event in stream:
        reader.feed(event)
    assert reader.finished
    assert all(reader.feed(event) == [] for event in stream)


def test_chunks_of_several_choices_and_the_usage() -> None:
    writer = ChunkWriter("m", include_usage=True)
    found = pieces(events(completion(THINK, ANSWER)))
    chunks = [writer.role(0), writer.role(1)]
    for a, b in itertools.zip_longest(found, found):
        chunks += [c for index, p in ((0, a), (1, b)) if p is not None and (c := writer.piece(index, p))]
    chunks.append(writer.usage([Usage(9, 20, 5, 3), Usage(9, 30, 6, 3)]))
    state = ChatCompletionStreamState()
    for chunk in chunks:
        assert chunk["id"] == writer.id and chunk["object"] == "chat.completion.chunk"
        assert "usage" in chunk
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk, strict=True))
    final = state.current_completion_snapshot
    assert [c.message.content for c in final.choices] == ["It is sunny in Paris."] * 2
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == []
    assert usage == {
        "prompt_tokens": 9,
        "completion_tokens": 50,
        "total_tokens": 59,
        "prompt_tokens_details": {"cached_tokens": 3},
        "completion_tokens_details": {"reasoning_tokens": 11},
    }
