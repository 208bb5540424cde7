"""The in-process engine samples under a request's grammar: the tiny random-weight gpt-oss,
which left alone never writes a call, makes the call a grammar forces, with arguments that
validate, at every seed; reasoning comes first where the model writes it; a bound on the
reasoning leaves room for the call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from openchatml import load_encoding, parse_tokens
from openchatml.core.tokens import CALL_ID, RETURN_ID
from openchatml.engines import EngineError, SamplingParams
from openchatml.engines.guidance import Guidance, check_grammar
from openchatml.engines.transformers import TransformersEngine
from openchatml.templates.grammar import harmony_tool_call_grammar
from openchatml.templates.grammar.tool_choice import FreeformTool

pytest.importorskip("torch")

PROMPT = "<|start|>user<|message|>What is the weather in Paris?<|end|><|start|>assistant"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 12},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        },
        "required": ["city", "unit"],
    },
}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
STOPS = (RETURN_ID, CALL_ID, 199999)


@pytest.fixture(scope="module")
def engine(tiny_model_dir: Path) -> Iterator[TransformersEngine]:
    loaded = TransformersEngine.load(tiny_model_dir, device="cpu")
    yield loaded
    asyncio.run(loaded.aclose())


def sample(engine: TransformersEngine, params: SamplingParams) -> list[int]:
    prompt = load_encoding().encode(PROMPT, allowed_special="all")

    async def main() -> list[int]:
        return [t async for chunk in engine.generate(prompt, params) for t in chunk]

    return asyncio.run(main())


def messages(ids: list[int]) -> list[Any]:
    encoding = load_encoding()
    head = encoding.encode("<|start|>assistant", allowed_special="all")
    return list(parse_tokens([*head, *ids]))


def params(grammar: Any, seed: int, max_tokens: int = 400) -> SamplingParams:
    return SamplingParams(max_tokens=max_tokens, seed=seed, stop_token_ids=STOPS, grammar=grammar)


def test_a_forced_call_is_made_at_every_seed(engine: TransformersEngine) -> None:
    grammar = harmony_tool_call_grammar([WEATHER, TIME], tool_choice="required", reasoning_tokens=200)
    thought = 0
    for seed in range(6):
        ids = sample(engine, params(grammar, seed))
        assert ids[-1] == CALL_ID, load_encoding().decode(ids)
        *before, call = messages(ids)
        assert call.recipient in ("functions.get_weather", "functions.get_time")
        arguments = json.loads(call.text)
        schema = WEATHER["parameters"] if call.recipient.endswith("weather") else TIME["parameters"]
        jsonschema.validate(arguments, schema)
        thought += any(m.channel == "analysis" for m in before)
    assert thought, "the model never reasoned before its call"


def test_free_sampling_never_calls(engine: TransformersEngine) -> None:
    """Without a grammar the random model does not find the call syntax: the grammar is what
    makes the calls above."""
    ids = sample(engine, SamplingParams(max_tokens=120, seed=0, stop_token_ids=STOPS))
    assert CALL_ID not in ids


def test_none_answers_and_never_calls(engine: TransformersEngine) -> None:
    grammar = harmony_tool_call_grammar([WEATHER], tool_choice="none", reasoning_tokens=100)
    for seed in range(4):
        ids = sample(engine, params(grammar, seed, max_tokens=200))
        assert CALL_ID not in ids
        if ids[-1] == RETURN_ID:
            assert messages(ids)[-1].channel == "final"


def test_a_structured_answer_validates(engine: TransformersEngine) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"enum": ["yes", "no"]}, "score": {"type": "integer"}},
        "required": ["answer", "score"],
        "additionalProperties": False,
    }
    grammar = harmony_tool_call_grammar([], tool_choice="none", answer_schema=schema, reasoning_tokens=100)
    for seed in range(4):
        ids = sample(engine, params(grammar, seed, max_tokens=240))
        assert ids[-1] == RETURN_ID
        final = messages(ids)[-1]
        assert final.channel == "final"
        jsonschema.validate(json.loads(final.text), schema)


def test_a_regex_tool_gets_its_input(engine: TransformersEngine) -> None:
    pin = FreeformTool("pin", "regex", "[0-9]{4}-[a-z]{2,5}")
    grammar = harmony_tool_call_grammar(
        [], tool_choice={"type": "custom", "name": "pin"}, freeform=[pin], reasoning_tokens=60
    )
    for seed in range(3):
        ids = sample(engine, params(grammar, seed, max_tokens=120))
        call = messages(ids)[-1]
        assert call.recipient == "functions.pin"
        assert __import__("re").fullmatch("[0-9]{4}-[a-z]{2,5}", call.text), call.text


def test_the_reasoning_bound_leaves_room_for_the_call(engine: TransformersEngine) -> None:
    grammar = harmony_tool_call_grammar([TIME], tool_choice="required", reasoning_tokens=40)
    for seed in range(3):
        ids = sample(engine, params(grammar, seed, max_tokens=90))
        assert ids[-1] == CALL_ID, len(ids)


def test_a_grammar_that_does_not_compile_fails_the_generation(engine: TransformersEngine) -> None:
    broken = harmony_tool_call_grammar([TIME], tool_choice="required")
    broken = type(broken)(**{**{f: getattr(broken, f) for f in broken.__slots__}, "lark": "start: nope"})
    with pytest.raises(EngineError, match="does not compile"):
        sample(engine, params(broken, 0))


def test_grammars_are_compiled_once() -> None:
    guidance = Guidance.of(None)
    assert Guidance.of(None) is guidance
    lark = harmony_tool_call_grammar([TIME], tool_choice="required").lark
    assert check_grammar(lark) == ""
    assert "nope" in check_grammar("start: nope")
    first, second = guidance.matcher(lark), guidance.matcher(lark)
    assert first is not second
    assert first.advance(200005) and not first.accepting  # copies do not share a place
    assert second.allowed()[200005]
