"""``POST /v1/chat/completions`` end to end, against live servers.

The official ``openai`` SDK (``create``, ``stream``, ``parse``) and raw HTTP, every body
and chunk validated against the SDK's own types (``ChatCompletion``,
``ChatCompletionChunk``, strictly), over a scripted gpt-oss (exactly what the model
"said"; real models: ``test_chat_completions_models.py``). The same completion streamed
and answered at once says the same; tools, forced tool choices and response formats are enforced as
``/v1/responses`` enforces them; stop sequences cut the answer and stop the engine; a
client that leaves stops it too; bad input is a 400 naming its ``param``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import openai
import pytest
from live import ScriptedEngine, completion
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import BaseModel
from test_responses_api import ANSWER, CALL, THINK, prompt_text

from openchatml import Message
from openchatml.engines.base import Chunk, EngineError, SamplingParams

MODEL = "scripted-model"
HI = [{"role": "user", "content": "hi"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
PREAMBLE = Message.assistant("Let me check.", channel="commentary")
HARMONY_MARKERS = (
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|constrain|>",
)


def ask(http: httpx.Client, **body: Any) -> dict[str, Any]:
    """A chat completion's JSON (checked against the SDK's ``ChatCompletion``)."""
    reply = http.post("/v1/chat/completions", json={"model": MODEL, "messages": HI, **body})
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    ChatCompletion.model_validate(answer, strict=True)
    assert answer["object"] == "chat.completion" and answer["id"].startswith("chatcmpl-")
    return answer


def sse_chunks(text: str) -> list[dict[str, Any]]:
    """The chunks of an SSE body: ``data:`` lines only, ``[DONE]`` last."""
    blocks = [block for block in text.split("\n\n") if block]
    assert blocks[-1] == "data: [DONE]"
    chunks = []
    for block in blocks[:-1]:
        assert block.startswith("data: ") and "\n" not in block, block
        chunks.append(json.loads(block[len("data: ") :]))
    return chunks


def stream(http: httpx.Client, **body: Any) -> list[dict[str, Any]]:
    """A streamed chat completion's chunks, each checked against the SDK's type."""
    payload = {"model": MODEL, "messages": HI, "stream": True, **body}
    reply = http.post("/v1/chat/completions", json=payload)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/event-stream")
    chunks = sse_chunks(reply.text)
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk, strict=True)
        assert chunk["id"] == chunks[0]["id"] and chunk["object"] == "chat.completion.chunk"
    return chunks


def gathered(chunks: Sequence[dict[str, Any]], index: int = 0) -> dict[str, Any]:
    """What the chunks of choice ``index`` say: content, reasoning, calls, finish reason."""
    deltas = [c["choices"][0] for c in chunks if c["choices"] and c["choices"][0]["index"] == index]
    assert deltas[0]["delta"] == {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    for choice in deltas:
        for call in choice["delta"].get("tool_calls", ()):
            if "id" in call:
                calls[call["index"]] = {"id": call["id"], "name": call["function"]["name"], "arguments": ""}
            calls[call["index"]]["arguments"] += call["function"]["arguments"]
    content = "".join(c["delta"].get("content") or "" for c in deltas)
    reasons = [c["finish_reason"] for c in deltas if c["finish_reason"]]
    assert len(reasons) == 1 and deltas[-1]["finish_reason"] == reasons[0]
    return {
        "content": content or None,
        "reasoning_content": "".join(c["delta"].get("reasoning_content", "") for c in deltas) or None,
        "reasoning": "".join(c["delta"].get("reasoning", "") for c in deltas) or None,
        "tool_calls": [calls[n] for n in sorted(calls)],
        "finish_reason": reasons[0],
    }


def said(answer: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """What choice ``index`` of a chat completion says, as :func:`gathered` puts it."""
    choice = answer["choices"][index]
    message = choice["message"]
    calls = [
        {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in message.get("tool_calls") or ()
    ]
    return {
        "content": message["content"],
        "reasoning_content": message.get("reasoning_content"),
        "reasoning": message.get("reasoning"),
        "tool_calls": calls,
        "finish_reason": choice["finish_reason"],
    }


def without_ids(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "tool_calls": [{**call, "id": "-"} for call in answer["tool_calls"]]}


def refused(http: httpx.Client, body: Any, status: int = 400) -> dict[str, Any]:
    reply = http.post("/v1/chat/completions", json=body)
    assert reply.status_code == status, reply.text
    error: dict[str, Any] = reply.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


# --- gpt-oss, scripted -------------------------------------------------------------------------


def test_an_answer_by_the_sdk_and_by_raw_http(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    reply = server.client().chat.completions.create(
        model=MODEL,
        messages=[{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hello!"}],
        reasoning_effort="high",
        temperature=0.3,
        max_completion_tokens=500,
    )
    message = reply.choices[0].message
    assert message.content == "Hello there!"
    assert message.role == "assistant" and message.tool_calls is None
    extra = message.model_extra or {}
    assert extra["reasoning_content"] == extra["reasoning"] == "The user greets me."
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == MODEL
    usage = reply.usage
    assert usage is not None and usage.prompt_tokens == len(engine.prompts[-1])
    assert usage.completion_tokens == len(completion(THINK, ANSWER))
    assert usage.completion_tokens_details is not None and usage.completion_tokens_details.reasoning_tokens
    prompt = prompt_text(engine)
    assert "Reasoning: high" in prompt and "Be kind." in prompt and "Hello!" in prompt
    params = engine.params[-1]
    assert (params.temperature, params.max_tokens) == (0.3, 500)
    with server.http() as http:
        answer = ask(http)
    assert said(answer)["content"] == "Hello there!"
    assert (
        answer["usage"]["total_tokens"]
        == answer["usage"]["prompt_tokens"] + answer["usage"]["completion_tokens"]
    )


@pytest.mark.parametrize(
    "messages",
    [(THINK, ANSWER), (THINK, CALL), (THINK, PREAMBLE, CALL), (PREAMBLE, ANSWER), (ANSWER,)],
    ids=["answer", "call", "preamble and call", "two messages", "no reasoning"],
)
def test_streamed_and_answered_at_once_say_the_same(serve: Any, messages: tuple[Message, ...]) -> None:
    server = serve(ScriptedEngine(completion(*messages), chunk=2))
    with server.http() as http:
        at_once = said(ask(http, tools=[WEATHER]))
        chunks = stream(http, tools=[WEATHER], stream_options={"include_usage": True})
    assert without_ids(gathered(chunks)) == without_ids(at_once)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    assert all(chunk["usage"] is None for chunk in chunks[:-1])
    client = server.client()
    sdk = client.chat.completions.create(model=MODEL, messages=HI, tools=[WEATHER], stream=True)
    assert [chunk.choices[0].finish_reason for chunk in sdk if chunk.choices][-1] == at_once["finish_reason"]
    with client.chat.completions.stream(model=MODEL, messages=HI, tools=[WEATHER]) as helper:
        kinds = {event.type for event in helper}
        final = helper.get_final_completion()
    assert final.choices[0].message.content == at_once["content"]
    assert [c.function.arguments for c in final.choices[0].message.tool_calls or []] == [
        c["arguments"] for c in at_once["tool_calls"]
    ]
    if at_once["tool_calls"]:
        assert "tool_calls.function.arguments.done" in kinds


def test_without_usage_asked_no_usage_is_streamed(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with server.http() as http:
        chunks = stream(http)
    assert all("usage" not in chunk for chunk in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_a_tool_call_and_its_result_go_back_to_the_model(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, CALL))
    server = serve(engine)
    client = server.client()
    first = client.chat.completions.create(model=MODEL, messages=HI, tools=[WEATHER])
    call = (first.choices[0].message.tool_calls or [])[0]
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert first.choices[0].finish_reason == "tool_calls"
    engine.script = lambda prompt: completion(ANSWER)
    history: list[Any] = [
        *HI,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 C"},
    ]
    second = client.chat.completions.create(model=MODEL, messages=history, tools=[WEATHER])
    assert second.choices[0].message.content == "Hello there!"
    prompt = prompt_text(engine)
    assert "to=functions.get_weather" in prompt and '{"city": "Paris"}' in prompt and "Sunny, 21 C" in prompt
    assert "The user greets me." in prompt  # the reasoning before a call goes back to the model
    with server.http() as http:
        orphan = [*HI, {"role": "tool", "tool_call_id": "call_nope", "content": "x"}]
        error = refused(http, {"model": MODEL, "messages": orphan})
    assert error["param"] == "messages[1].tool_call_id"


def test_a_forced_tool_choice_is_enforced(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, CALL))
    server = serve(engine)
    client = server.client()
    forced = {"type": "function", "function": {"name": "get_weather"}}
    reply = client.chat.completions.create(model=MODEL, messages=HI, tools=[WEATHER], tool_choice=forced)
    assert reply.choices[0].finish_reason == "tool_calls"
    assert engine.params[-1].grammar is not None  # sampled under the tool choice's grammar
    engine.script = lambda prompt: completion(THINK, ANSWER)  # an engine that does not keep to it
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model=MODEL, messages=HI, tools=[WEATHER], tool_choice="required")
    assert caught.value.body["code"] == "invalid_tool_call"
    with server.http() as http:
        reply_stream = http.post(
            "/v1/chat/completions",
            json={
                "model": MODEL,
                "messages": HI,
                "tools": [WEATHER],
                "tool_choice": "required",
                "stream": True,
            },
        )
        chunks = sse_chunks(reply_stream.text)
    assert chunks[-1]["error"]["code"] == "invalid_tool_call"
    with pytest.raises(openai.APIError):
        for _ in client.chat.completions.create(
            model=MODEL,
            messages=HI,
            tools=[WEATHER],
            tool_choice="required",
            stream=True,
        ):
            pass
    engine.script = lambda prompt: completion(THINK, ANSWER)
    plain = client.chat.completions.create(model=MODEL, messages=HI, tools=[WEATHER], tool_choice="none")
    assert plain.choices[0].message.content == "Hello there!"
    assert "get_weather" not in prompt_text(engine)  # tool_choice none offers no tools


class CountingEngine(ScriptedEngine):
    """A scripted engine that counts the ids each generation gave before it ended."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.sampled: list[int] = []

    async def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        self.sampled.append(0)
        index = len(self.sampled) - 1
        async for chunk in super().generate(prompt, params):
            self.sampled[index] += len(chunk)
            yield chunk


def test_a_failed_choice_cancels_the_others(serve: Any) -> None:
    long_thought = Message.assistant("Let me think. " * 100, channel="analysis")
    scripts = [completion(ANSWER), completion(long_thought, CALL)]
    engine = CountingEngine(lambda prompt: scripts[len(engine.sampled) - 1], chunk=1, delay=0.005)
    server = serve(engine)
    with server.http() as http:
        body = {"model": MODEL, "messages": HI, "tools": [WEATHER], "tool_choice": "required", "n": 2}
        error = refused(http, body, status=500)
    assert (error["type"], error["code"]) == ("model_error", "invalid_tool_call")
    assert engine.sampled[0] == len(scripts[0])
    assert engine.sampled[1] < len(scripts[1])  # stopped when the first choice failed


class Weather(BaseModel):
    city: str
    degrees: int


def test_parse_and_response_formats_are_enforced(serve: Any) -> None:
    answer = Message.assistant('{"city": "Paris", "degrees": 21}', channel="final")
    engine = ScriptedEngine(completion(THINK, answer))
    server = serve(engine)
    client = server.client()
    parsed = client.chat.completions.parse(model=MODEL, messages=HI, response_format=Weather)
    assert parsed.choices[0].message.parsed == Weather(city="Paris", degrees=21)
    assert engine.params[-1].grammar is not None
    assert "# Response Formats" in prompt_text(engine) and "Weather" in prompt_text(engine)
    reply = client.chat.completions.create(model=MODEL, messages=HI, response_format={"type": "json_object"})
    assert json.loads(reply.choices[0].message.content or "") == {"city": "Paris", "degrees": 21}
    engine.script = lambda prompt: completion(THINK, ANSWER)  # not JSON: the strict format is broken
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.parse(model=MODEL, messages=HI, response_format=Weather)
    assert caught.value.body["code"] == "invalid_output"


def test_the_stream_helper_with_a_strict_pydantic_tool(serve: Any) -> None:
    call = Message.tool_call("functions.Weather", '{"city": "Paris", "degrees": 21}')
    server = serve(ScriptedEngine(completion(THINK, call), chunk=1))
    tool = openai.pydantic_function_tool(Weather)
    with server.client().chat.completions.stream(model=MODEL, messages=HI, tools=[tool]) as helper:
        events = list(helper)
        final = helper.get_final_completion()
    done = [e for e in events if e.type == "tool_calls.function.arguments.done"]
    assert len(done) == 1 and done[0].parsed_arguments == Weather(city="Paris", degrees=21)
    assert any(e.type == "tool_calls.function.arguments.delta" for e in events)
    calls = final.choices[0].message.tool_calls or []
    assert calls[0].function.parsed_arguments == Weather(city="Paris", degrees=21)


def test_logprobs(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(THINK, ANSWER), chunk=2))
    client = server.client()
    reply = client.chat.completions.create(model=MODEL, messages=HI, logprobs=True, top_logprobs=2)
    logprobs = reply.choices[0].logprobs
    assert logprobs is not None and logprobs.content
    assert "".join(t.token for t in logprobs.content) == "Hello there!"
    assert all(len(t.top_logprobs) == 2 and t.bytes for t in logprobs.content)
    with server.http() as http:
        chunks = stream(http, logprobs=True, top_logprobs=2)
        plain = ask(http)
    streamed = [
        t
        for c in chunks
        if c["choices"] and c["choices"][0]["logprobs"]
        for t in c["choices"][0]["logprobs"]["content"]
    ]
    assert streamed == [t.model_dump() for t in logprobs.content]
    assert plain["choices"][0]["logprobs"] is None


def test_n_choices_each_a_response_of_its_own(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    reply = server.client().chat.completions.create(model=MODEL, messages=HI, n=3, seed=5)
    assert [c.index for c in reply.choices] == [0, 1, 2]
    assert [c.message.content for c in reply.choices] == ["Hello there!"] * 3
    assert sorted(p.seed for p in engine.params[-3:]) == [5, 6, 7]
    assert reply.usage is not None and reply.usage.completion_tokens == 3 * len(completion(THINK, ANSWER))
    assert reply.usage.prompt_tokens == len(engine.prompts[-1])
    with server.http() as http:
        chunks = stream(http, n=2, stream_options={"include_usage": True})
    assert [gathered(chunks, n)["content"] for n in (0, 1)] == ["Hello there!"] * 2
    assert chunks[-1]["usage"]["completion_tokens"] == 2 * len(completion(THINK, ANSWER))


def test_stop_sequences_cut_the_answer_and_stop_the_engine(serve: Any) -> None:
    long = Message.assistant("one two three STOP four " + "five " * 200, channel="final")
    engine = ScriptedEngine(completion(THINK, long), chunk=1, delay=0.002)
    server = serve(engine)
    client = server.client()
    reply = client.chat.completions.create(model=MODEL, messages=HI, stop=["STOP", "never"])
    assert reply.choices[0].message.content == "one two three "
    assert reply.choices[0].finish_reason == "stop"
    assert engine.cancelled == 1
    assert reply.usage is not None and reply.usage.completion_tokens < len(completion(THINK, long))
    with server.http() as http:
        chunks = stream(http, stop="STOP", stream_options={"include_usage": True})
    assert gathered(chunks)["content"] == "one two three "
    assert gathered(chunks)["finish_reason"] == "stop"
    assert engine.cancelled == 2
    unstopped = client.chat.completions.create(model=MODEL, messages=HI, stop="absent", max_tokens=20)
    assert unstopped.choices[0].finish_reason == "length"


def test_max_tokens_ends_a_choice_for_length(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    with server.http() as http:
        answer = ask(http, max_tokens=12)
        chunks = stream(http, max_completion_tokens=12)
    assert engine.params[-1].max_tokens == 12
    assert said(answer)["finish_reason"] == gathered(chunks)["finish_reason"] == "length"
    assert said(answer)["content"] is None and said(answer)["reasoning"]


class FailingEngine(ScriptedEngine):
    """An engine that fails after its first chunk."""

    async def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        yield Chunk(tuple(completion(THINK)[:3]))
        raise EngineError("the GPU caught fire")


def test_a_failing_engine_is_an_error_not_an_answer(serve: Any) -> None:
    server = serve(FailingEngine([]))
    with server.http() as http:
        error = refused(http, {"model": MODEL, "messages": HI}, status=500)
        chunks = sse_chunks(http.post("/v1/chat/completions", json={"messages": HI, "stream": True}).text)
    assert (error["type"], error["code"]) == ("model_error", "model_error")
    assert "fire" in error["message"]
    assert chunks[-1] == {"error": {**error, "param": None}}


# --- requests the server refuses, and what it ignores -----------------------------------------


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({"messages": HI, "temperature": "hot"}, "temperature", "invalid_type"),
        ({"messages": [{"role": "user"}]}, "messages[0].content", "invalid_type"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "invalid_value"),
        (
            {
                "messages": HI,
                "tools": [WEATHER],
                "tool_choice": {"type": "function", "function": {"name": "f"}},
            },
            "tool_choice.function.name",
            None,
        ),
        ({"messages": HI, "n": 100}, "n", "invalid_value"),
        ({"messages": HI, "stop": ["a", "b", "c", "d", "e"]}, "stop", "invalid_value"),
        ({"messages": HI, "top_logprobs": 3}, "top_logprobs", "invalid_value"),
        (
            {
                "messages": HI,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "a", "strict": True, "schema": {"type": 5}},
                },
            },
            "response_format.json_schema.schema",
            None,
        ),
        (
            {
                "messages": HI,
                "tools": [
                    {"type": "function", "function": {"name": "f", "strict": True, "parameters": {"type": 5}}}
                ],
            },
            "tools[0].function.parameters",
            None,
        ),
    ],
)
def test_bad_requests_are_400_naming_their_param(serve: Any, body: Any, param: str, code: str | None) -> None:
    engine = ScriptedEngine(completion(ANSWER))
    server = serve(engine)
    with server.http() as http:
        error = refused(http, body)
    assert error["param"] == param, error
    assert error["type"] == "invalid_request_error"
    if code is not None:
        assert error["code"] == code
    assert engine.prompts == []


def test_content_the_model_cannot_read_and_other_refusals(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    with server.http() as http:
        error = refused(
            http,
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "What is it?"}, image]}]},
        )
        assert (error["param"], error["code"]) == ("messages[0].content[1]", "unsupported_content")
        error = refused(http, {"model": "gpt-7", "messages": HI}, status=404)
        assert (error["param"], error["code"]) == ("model", "model_not_found")
        reply = http.post(
            "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalid_json"
        long = [{"role": "user", "content": "word " * 9000}]
        error = refused(http, {"messages": long})
        assert (error["param"], error["code"]) == ("messages", "context_length_exceeded")
    with pytest.raises(openai.BadRequestError) as caught:
        server.client().chat.completions.create(
            model=MODEL, messages=[{"role": "tool", "content": "x", "tool_call_id": "c"}]
        )
    assert caught.value.body["param"] == "messages[0].tool_call_id"


def test_unknown_and_unused_parameters_are_named_in_a_header(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with server.http() as http:
        reply = http.post(
            "/v1/chat/completions",
            json={"messages": HI, "top_k": 20, "logit_bias": {"50256": -100}, "store": True, "user": "u1"},
        )
        assert reply.status_code == 200
        assert reply.headers["OpenChatML-Ignored-Parameters"] == "top_k, logit_bias, store"
        plain = http.post("/v1/chat/completions", json={"messages": HI})
        assert "OpenChatML-Ignored-Parameters" not in plain.headers
        streamed = http.post("/v1/chat/completions", json={"messages": HI, "stream": True, "min_p": 0.1})
        assert streamed.headers["OpenChatML-Ignored-Parameters"] == "min_p"


def test_a_client_that_leaves_stops_the_engine(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER) * 30, chunk=1, delay=0.02)
    server = serve(engine)
    body = {"model": MODEL, "messages": HI, "stream": True, "n": 2}
    with (
        httpx.Client(base_url=server.url, timeout=30) as http,
        http.stream("POST", "/v1/chat/completions", json=body) as reply,
    ):
        for line in reply.iter_lines():
            if "reasoning" in line:
                break
    deadline = time.monotonic() + 10
    while engine.cancelled < 2:
        assert time.monotonic() < deadline, "generation went on after the client left"
        time.sleep(0.02)
    with httpx.Client(base_url=server.url, timeout=0.3) as http, pytest.raises(httpx.ReadTimeout):
        http.post("/v1/chat/completions", json={"model": MODEL, "messages": HI})
    deadline = time.monotonic() + 10
    while engine.cancelled < 3 or len(server.service.runs):
        assert time.monotonic() < deadline, "generation went on after the client left"
        time.sleep(0.02)
