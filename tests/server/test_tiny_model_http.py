"""The trained tiny gpt-oss through the official SDK on a live server, nothing forced:
``tool_choice: "auto"``, no grammar, the default temperature.

It calls ``get_weather`` for cities no training dialogue named, greets without calling,
answers from the tool's output in ``final``, and its call appears as a ``function_call``
item both streamed and not (what the model-dependent checks of the Open Responses
compliance suite ask)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openchatml import load_encoding
from openchatml.demo_models.places import held_out_cities

pytest.importorskip("torch")

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location.",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "The city, e.g. Paris"}},
        "required": ["location"],
    },
}
QUESTIONS = (
    "What's the weather in {city}?",
    "How's the weather in {city}?",
    "Is it raining in {city}?",
    "Tell me the weather in {city}.",
    "What's the temperature in {city}?",
    "Can you check the weather in {city}?",
)
GREETINGS = (
    "hello", "Hello!", "Hi", "hi there", "Hey!", "Good morning", "Good evening!", "Hello, how are you?",
    "Hi!", "hey", "Howdy", "Greetings!", "Hiya", "Hello there", "Good afternoon!", "Hey, what's up?",
    "Morning!", "Hi, how are you?", "Yo", "Good day!",
)  # fmt: skip


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The in-process engine over the trained tiny model (expanded once)."""
    from openchatml.demo_models.tiny_trained import ensure_trained_model
    from openchatml.engines.transformers import TransformersEngine

    folder = ensure_trained_model(tmp_path_factory.mktemp("home"))
    return TransformersEngine.load(folder, model_id="tiny", device="cpu")


def _calls(response: Any) -> list[Any]:
    return [item for item in response.output if item.type == "function_call"]


def _finals(response: Any) -> list[Any]:
    return [item for item in response.output if item.type == "message"]


@pytest.mark.parametrize("temperature", [None, 0.0], ids=["default temperature", "greedy"])
@pytest.mark.xfail(
    strict=True,
    reason="the shipped tiny model copies a held-out city into its call about 90 times in 100 greedily and "
    "about 67 at the default temperature; the goal is 95 either way",
)
def test_it_calls_the_weather_tool_for_cities_it_never_saw(
    serve: Any, tiny: Any, temperature: float | None
) -> None:
    client = serve(tiny).client()
    cities = held_out_cities(load_encoding())
    right: list[str] = []
    wrong: list[tuple[str, str]] = []
    for n, city in enumerate(cities):
        question = QUESTIONS[n % len(QUESTIONS)].format(city=city)
        response = client.responses.create(
            model="tiny", input=question, tools=[WEATHER], tool_choice="auto", temperature=temperature
        )
        calls = _calls(response)
        if calls and calls[0].name == "get_weather" and json.loads(calls[0].arguments) == {"location": city}:
            right.append(city)
        else:
            wrong.append((city, repr([(i.type, getattr(i, "arguments", None)) for i in response.output])))
    assert len(cities) == 100
    print(f"held-out cities called right: {len(right)}/100")
    assert len(right) >= 95, wrong


def test_it_greets_in_final_without_calling(serve: Any, tiny: Any) -> None:
    client = serve(tiny).client()
    greeted = 0
    misses: list[str] = []
    for n in range(100):
        greeting = GREETINGS[n % len(GREETINGS)]
        tools = [WEATHER] if n % 2 else []
        response = client.responses.create(model="tiny", input=greeting, tools=tools)
        finals = _finals(response)
        if not _calls(response) and finals and response.output_text.strip():
            greeted += 1
        else:
            misses.append(f"{greeting!r} → {[i.type for i in response.output]}")
    assert greeted >= 95, misses


@pytest.mark.xfail(
    strict=True,
    reason="the shipped tiny model thinks before about 27 greetings in 100 at the default temperature "
    "and goes straight to final greedily; the goal is a short analysis first",
)
def test_it_thinks_before_it_greets(serve: Any, tiny: Any) -> None:
    client = serve(tiny).client()
    thought_first = 0
    for n in range(100):
        tools = [WEATHER] if n % 2 else []
        response = client.responses.create(model="tiny", input=GREETINGS[n % len(GREETINGS)], tools=tools)
        thought_first += [item.type for item in response.output] == ["reasoning", "message"]
    assert thought_first >= 95
    for tools in ([], [WEATHER]):
        greedy = client.responses.create(model="tiny", input="hello", tools=tools, temperature=0)
        assert [item.type for item in greedy.output] == ["reasoning", "message"]


def test_given_the_output_it_answers_in_final_quoting_it(serve: Any, tiny: Any) -> None:
    client = serve(tiny).client()
    quoted = 0
    for n, (degrees, sky) in enumerate(
        [(18, "sunny"), (-3, "snowy"), (25, "cloudy"), (9, "rainy"), (31, "clear")]
    ):
        city = held_out_cities(load_encoding())[n]
        first = client.responses.create(
            model="tiny", input=f"What's the weather in {city}?", tools=[WEATHER], store=True
        )
        (call,) = _calls(first)
        output = json.dumps({"temperature": degrees, "unit": "celsius", "condition": sky})
        second = client.responses.create(
            model="tiny",
            previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": output}],
            tools=[WEATHER],
        )
        assert not _calls(second) and _finals(second)
        quoted += str(degrees) in second.output_text and sky in second.output_text
    assert quoted >= 4


def test_the_call_is_a_function_call_item_streamed_and_not(serve: Any, tiny: Any) -> None:
    client = serve(tiny).client()
    question = "What's the weather in Paris?"
    response = client.responses.create(model="tiny", input=question, tools=[WEATHER])
    [call] = _calls(response)
    assert call.name == "get_weather" and set(json.loads(call.arguments)) == {"location"}
    events = list(client.responses.create(model="tiny", input=question, tools=[WEATHER], stream=True))
    added = [e.item for e in events if e.type == "response.output_item.added"]
    assert "function_call" in [item.type for item in added]
    done = events[-1].response
    assert done.status == "completed" and [c.name for c in _calls(done)] == ["get_weather"]
    assert "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta") == (
        _calls(done)[0].arguments
    )
