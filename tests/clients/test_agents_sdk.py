"""The OpenAI Agents SDK for Python (``openai-agents``) against a live server, with its
defaults: the Responses API over HTTP (``OpenAIResponsesModel``) on a client made by
``set_default_openai_client``, tracing off so that nothing leaves the machine.

A scripted engine says what the model answers: it calls the agent's tool, then answers
from the tool's output; every request the SDK sends is recorded, so each test checks what
the SDK ran and returned and what it sent. One test runs ``openchatml serve --model tiny-random``
as a user starts it, where only the protocol is checked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

import httpx
import pytest
from agents import (
    Agent,
    FunctionTool,
    ModelSettings,
    OpenAIConversationsSession,
    Runner,
    function_tool,
    responses_websocket_session,
    set_default_openai_client,
    set_tracing_disabled,
)
from agents.exceptions import MaxTurnsExceeded
from cli_server import CliServer
from live import ScriptedEngine, completion
from openai import AsyncOpenAI
from pydantic import BaseModel
from recorder import RecordedServer, check_every_response_completed

import codex_harness
from openchatml import Message, load_encoding

pytestmark = pytest.mark.clients

Result = TypeVar("Result")

QUESTION = "What is the weather in Paris?"
THINK = Message.assistant("The user asks for the weather in Paris.", channel="analysis")
CALL = Message.tool_call("functions.get_weather", json.dumps({"city": "Paris"}))
WEATHER = "sunny, 21 C in Paris"
ANSWER = "It is sunny and 21 C in Paris."
JSON_QUESTION = "Report the weather in Paris as JSON."
REPORT = {"city": "Paris", "celsius": 21}
GREETING = "Bonjour"
FRENCH = "You answer in French."
FRENCH_ANSWER = "Bonjour ! Il fait beau à Paris."
HELLO, HELLO_ANSWER = "Say hello", "Hello from openchatml!"
AGAIN, AGAIN_ANSWER = "Say it again", "Hello again, as asked."


class Report(BaseModel):
    """The structured answer of :data:`JSON_QUESTION`."""

    city: str
    celsius: float


def scripted_model() -> ScriptedEngine:
    """A model that thinks and calls ``get_weather`` for :data:`QUESTION`, answers
    :data:`ANSWER` from the tool's output, :data:`REPORT` (as JSON) to :data:`JSON_QUESTION`,
    hands :data:`GREETING` to the French agent (whose instructions are :data:`FRENCH`),
    who answers :data:`FRENCH_ANSWER`, and :data:`HELLO_ANSWER` / :data:`AGAIN_ANSWER`
    to :data:`HELLO` / :data:`AGAIN`."""
    encoding = load_encoding()

    def script(prompt: Sequence[int]) -> list[int]:
        text = encoding.decode(list(prompt))
        last = text.rsplit("<|message|>", 1)[-1]
        if FRENCH in text:
            return completion(Message.assistant(FRENCH_ANSWER))
        rules = [
            (WEATHER, [Message.assistant(ANSWER)]),
            (QUESTION, [THINK, CALL]),
            (JSON_QUESTION, [Message.assistant(json.dumps(REPORT))]),
            (GREETING, [Message.tool_call("functions.transfer_to_french_agent", "{}")]),
            (AGAIN, [Message.assistant(AGAIN_ANSWER)]),
            (HELLO, [Message.assistant(HELLO_ANSWER)]),
        ]
        said = next((said for needle, said in rules if needle in last), [Message.assistant("?")])
        return completion(*said)

    return ScriptedEngine(script)


def weather_tool(calls: list[str]) -> FunctionTool:
    """``get_weather(city)``, which appends ``city`` to ``calls`` and says :data:`WEATHER`."""

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny, 21 C in {city}"

    return get_weather


def weather_agent(model: str, calls: list[str], settings: ModelSettings | None = None) -> Agent[Any]:
    """An agent on ``model`` with :func:`weather_tool`."""
    return Agent(
        name="Weather",
        instructions="Answer questions about the weather.",
        model=model,
        tools=[weather_tool(calls)],
        model_settings=settings or ModelSettings(),
    )


def served_by(url: str, body: Callable[[AsyncOpenAI], Awaitable[Result]]) -> Result:
    """``body(client)`` in a fresh event loop, with ``client`` (an ``AsyncOpenAI`` at ``url``)
    the SDK's default client; the client is closed after."""

    async def main() -> Result:
        async with AsyncOpenAI(base_url=f"{url}/v1", api_key="dummy-key", max_retries=0) as client:
            set_default_openai_client(client, use_for_tracing=False)
            return await body(client)

    return asyncio.run(main())


@pytest.fixture(autouse=True)
def agents_sdk() -> None:
    """Skips when ``OPENCHATML_TEST_CLIENTS=0``; turns the SDK's tracing off (it would
    export to OpenAI)."""
    if codex_harness.MODE == "0":
        pytest.skip("client-program tests are off (OPENCHATML_TEST_CLIENTS=0)")
    set_tracing_disabled(True)


@pytest.fixture
def served(recorded_server: Callable[[ScriptedEngine], RecordedServer]) -> RecordedServer:
    """A live server over :func:`scripted_model` that records each request."""
    return recorded_server(scripted_model())


def bodies(served: RecordedServer) -> list[dict[str, Any]]:
    """The ``POST /v1/responses`` bodies, after checking that each was answered 200 and
    came from the Agents SDK."""
    requests = served.responses_requests()
    assert [r.status for r in requests] == [200] * len(requests), served.report()
    assert all(r.headers["user-agent"].startswith("Agents/Python") for r in requests)
    return [r.json() for r in requests]


def check_tool_turn(served: RecordedServer, calls: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tool ran once with the scripted arguments, the second request carried its output
    back, and that output reached the model after its reasoning and call; returns the two
    request bodies."""
    assert calls == ["Paris"]
    first, second = bodies(served)
    assert [t["name"] for t in first["tools"]] == ["get_weather"]
    [output] = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert output["output"] == WEATHER and output["call_id"].startswith("call_")
    prompt = served.prompt_texts()[1]
    assert prompt.index(THINK.text) < prompt.index('{"city": "Paris"}<|call|>') < prompt.index(WEATHER)
    return first, second


def check_call_sent_back(body: dict[str, Any]) -> None:
    """``body``'s input holds the model's call of ``get_weather`` and its output, paired by
    ``call_id``."""
    [call] = [i for i in body["input"] if i.get("type") == "function_call"]
    [output] = [i for i in body["input"] if i.get("type") == "function_call_output"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Paris"}
    assert output["call_id"] == call["call_id"]


def test_run_calls_the_tool_then_answers(served: RecordedServer) -> None:
    calls: list[str] = []
    agent = weather_agent(served.engine.info.id, calls)
    result = served_by(served.url, lambda client: Runner.run(agent, QUESTION))
    assert result.final_output == ANSWER
    assert [item.type for item in result.new_items] == [
        "reasoning_item",
        "tool_call_item",
        "tool_call_output_item",
        "message_output_item",
    ]
    first, second = check_tool_turn(served, calls)
    check_call_sent_back(second)
    assert "stream" not in first
    [reasoning] = [i for i in second["input"] if i.get("type") == "reasoning"]
    assert reasoning["content"] == [{"type": "reasoning_text", "text": THINK.text}]


def test_streamed_run(served: RecordedServer) -> None:
    calls: list[str] = []
    agent = weather_agent(served.engine.info.id, calls)

    async def stream(client: AsyncOpenAI) -> tuple[Any, list[Any]]:
        result = Runner.run_streamed(agent, QUESTION)
        return result, [event async for event in result.stream_events()]

    result, events = served_by(served.url, stream)
    assert result.final_output == ANSWER
    first, second = check_tool_turn(served, calls)
    check_call_sent_back(second)
    assert first["stream"] is True
    raw = [e.data for e in events if e.type == "raw_response_event"]
    kinds = [event.type for event in raw]
    assert kinds.count("response.created") == kinds.count("response.completed") == 2
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.done" in kinds
    deltas = "".join(event.delta for event in raw if event.type == "response.output_text.delta")
    assert deltas == ANSWER
    items = [e.name for e in events if e.type == "run_item_stream_event"]
    assert items == ["reasoning_item_created", "tool_called", "tool_output", "message_output_created"]
    assert [e.new_agent.name for e in events if e.type == "agent_updated_stream_event"] == ["Weather"]


def test_reasoning_comes_back_encrypted(served: RecordedServer) -> None:
    """With ``store=False`` and ``reasoning.encrypted_content`` asked for, the SDK sends the
    reasoning item back with its id and sealed content, and the server accepts it."""
    calls: list[str] = []
    settings = ModelSettings(store=False, response_include=["reasoning.encrypted_content"])
    agent = weather_agent(served.engine.info.id, calls, settings)
    result = served_by(served.url, lambda client: Runner.run(agent, QUESTION))
    assert result.final_output == ANSWER
    first, second = check_tool_turn(served, calls)
    check_call_sent_back(second)
    assert first["store"] is False and first["include"] == ["reasoning.encrypted_content"]
    [reasoning] = [i for i in second["input"] if i.get("type") == "reasoning"]
    assert reasoning["id"].startswith("rs_") and reasoning["encrypted_content"]


def test_previous_response_id(served: RecordedServer) -> None:
    """``auto_previous_response_id``: the second request sends only the tool's output and
    the first response's id; the server restores the rest of the turn."""
    calls: list[str] = []
    agent = weather_agent(served.engine.info.id, calls)
    result = served_by(served.url, lambda client: Runner.run(agent, QUESTION, auto_previous_response_id=True))
    assert result.final_output == ANSWER
    _, second = check_tool_turn(served, calls)
    assert second["previous_response_id"] == result.raw_responses[0].response_id
    assert [i["type"] for i in second["input"]] == ["function_call_output"]
    [call] = [item for item in result.raw_responses[0].output if item.type == "function_call"]
    assert second["input"][0]["call_id"] == call.call_id


def test_websocket_session(served: RecordedServer) -> None:
    """``responses_websocket_session``: the SDK's Responses transport over the API's
    WebSocket mode; the turn runs with no HTTP request to ``/v1/responses``."""
    calls: list[str] = []
    agent = weather_agent(served.engine.info.id, calls)

    async def over_socket(client: AsyncOpenAI) -> Any:
        async with responses_websocket_session(api_key="dummy-key", base_url=f"{served.url}/v1") as session:
            return await session.run(agent, QUESTION)

    result = served_by(served.url, over_socket)
    assert result.final_output == ANSWER and calls == ["Paris"]
    assert served.responses_requests() == [], served.report()
    prompt = served.prompt_texts()[1]
    assert prompt.index(THINK.text) < prompt.index('{"city": "Paris"}<|call|>') < prompt.index(WEATHER)


def test_model_settings_reach_the_server(served: RecordedServer) -> None:
    """The request parameters an agent's ``ModelSettings`` set are accepted and echoed in
    the stored response; a forced tool choice is sent once (the SDK resets it after the call)."""
    calls: list[str] = []
    settings = ModelSettings(
        tool_choice="get_weather",
        parallel_tool_calls=False,
        truncation="auto",
        metadata={"team": "weather"},
        temperature=0.5,
        max_tokens=400,
        top_logprobs=2,
        response_include=["message.output_text.logprobs"],
        extra_args={"prompt_cache_key": "weather-agent"},
    )
    agent = weather_agent(served.engine.info.id, calls, settings)
    result = served_by(served.url, lambda client: Runner.run(agent, QUESTION))
    assert result.final_output == ANSWER
    first, second = check_tool_turn(served, calls)
    check_call_sent_back(second)
    assert first["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert "tool_choice" not in second
    with httpx.Client(base_url=served.url, timeout=30) as http:
        stored = http.get(f"/v1/responses/{result.raw_responses[0].response_id}").json()
    assert stored["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert stored["parallel_tool_calls"] is False and stored["truncation"] == "auto"
    assert stored["metadata"] == {"team": "weather"} and stored["prompt_cache_key"] == "weather-agent"
    assert stored["temperature"] == 0.5 and stored["max_output_tokens"] == 400
    assert stored["top_logprobs"] == 2
    [message] = result.raw_responses[1].output
    assert message.type == "message"
    [text] = message.content
    assert text.type == "output_text" and text.logprobs


def test_structured_output(served: RecordedServer) -> None:
    """``output_type`` asks for a ``json_schema`` answer; the scripted one keeps to it."""
    agent: Agent[Any] = Agent(
        name="Reporter", instructions="Report the weather.", model=served.engine.info.id, output_type=Report
    )
    result = served_by(served.url, lambda client: Runner.run(agent, JSON_QUESTION))
    assert result.final_output == Report(city="Paris", celsius=21.0)
    [body] = bodies(served)
    text_format = body["text"]["format"]
    assert text_format["type"] == "json_schema" and text_format["strict"] is True
    assert text_format["schema"]["required"] == ["city", "celsius"]


def test_handoff(served: RecordedServer) -> None:
    """The triage agent hands over to the French agent (a ``transfer_to_…`` tool call),
    whose instructions and answer the next request carries."""
    model = served.engine.info.id
    french: Agent[Any] = Agent(name="French agent", instructions=FRENCH, model=model)
    triage: Agent[Any] = Agent(name="Triage", instructions="Route the user.", model=model, handoffs=[french])
    result = served_by(served.url, lambda client: Runner.run(triage, GREETING))
    assert result.final_output == FRENCH_ANSWER and result.last_agent.name == "French agent"
    first, second = bodies(served)
    assert [t["name"] for t in first["tools"]] == ["transfer_to_french_agent"]
    assert second["instructions"] == FRENCH
    [output] = [i for i in second["input"] if i.get("type") == "function_call_output"]
    [call] = [i for i in second["input"] if i.get("type") == "function_call"]
    assert call["name"] == "transfer_to_french_agent" and output["call_id"] == call["call_id"]


@pytest.mark.parametrize("memory", ["session", "conversation_id"])
def test_conversation_on_the_server(served: RecordedServer, memory: str) -> None:
    """Two runs share a conversation kept by the server, through the SDK's
    ``OpenAIConversationsSession`` or a ``conversation_id``; the second turn's prompt
    holds the first turn."""
    agent: Agent[Any] = Agent(name="Greeter", instructions="Greet.", model=served.engine.info.id)

    async def two_turns(client: AsyncOpenAI) -> list[Any]:
        if memory == "session":
            session = OpenAIConversationsSession(openai_client=client)
            options: dict[str, Any] = {"session": session}
        else:
            options = {"conversation_id": (await client.conversations.create()).id}
        return [await Runner.run(agent, prompt, **options) for prompt in (HELLO, AGAIN)]

    first, second = served_by(served.url, two_turns)
    assert (first.final_output, second.final_output) == (HELLO_ANSWER, AGAIN_ANSWER)
    assert all(r.status == 200 for r in served.requests), served.report()
    prompt = served.prompt_texts()[-1]
    assert prompt.index(HELLO) < prompt.index(HELLO_ANSWER) < prompt.index(AGAIN)


@pytest.fixture(scope="module")
def tiny_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    """``openchatml serve --model tiny-random`` (the random-weight gpt-oss)."""
    if codex_harness.MODE == "0":
        pytest.skip("client-program tests are off (OPENCHATML_TEST_CLIENTS=0)")
    home = tmp_path_factory.mktemp("serve-tiny-agents")
    server = CliServer(["--model", "tiny-random", "--device", "cpu"], home, timeout=600)
    yield server
    server.stop()


def test_streamed_run_against_the_tiny_model(tiny_server: CliServer) -> None:
    """Whatever the random weights say, the SDK gets well-formed responses: the forced
    first call (``tool_choice="required"``) parses and runs, the run ends in an answer or
    at ``max_turns``, and every request was answered 200 with a completed response."""
    [model] = [m["id"] for m in httpx.get(f"{tiny_server.url}/v1/models", timeout=10).json()["data"]]
    calls: list[str] = []
    agent = weather_agent(model, calls, ModelSettings(tool_choice="required"))

    async def stream(client: AsyncOpenAI) -> list[Any]:
        result = Runner.run_streamed(agent, QUESTION, max_turns=2)
        events: list[Any] = []
        try:
            async for event in result.stream_events():
                events.append(event)
        except MaxTurnsExceeded:
            pass
        return events

    events = served_by(tiny_server.url, stream)
    assert len(calls) >= 1, tiny_server.log()[-4000:]
    assert "tool_output" in [e.name for e in events if e.type == "run_item_stream_event"]
    check_every_response_completed(tiny_server.url)
