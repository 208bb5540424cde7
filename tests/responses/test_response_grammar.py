"""The grammar a response is sampled under: built from the request and the dialect's output
format, checked before any generation (a bad schema is a 400 naming its ``param``), with a
bound on the reasoning that leaves the constrained part room."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_dialect import SETTINGS, qwen3_dialect

from openchatml.responses.dialect import HarmonyDialect
from openchatml.responses.errors import RequestError
from openchatml.responses.grammar import (
    RESERVE,
    ModelFormat,
    check_gbnf_custom_tools,
    reasoning_bound,
    response_grammar,
)
from openchatml.responses.input import build_conversation
from openchatml.responses.request import parse_request
from openchatml.responses.runner import Prepared

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}


def prepared(dialect: Any, **body: Any) -> Prepared:
    request = parse_request({"model": "m", "input": "Weather in Paris?", **body})
    conversation = build_conversation(request, request.items, settings=SETTINGS)
    result: Prepared = dialect.prepare(request, conversation, context_length=4096)
    return result


def grammar_of(dialect: Any, **body: Any) -> Any:
    return prepared(dialect, **body).params.grammar


@pytest.mark.parametrize("dialect", [HarmonyDialect(), qwen3_dialect()], ids=["harmony", "template"])
def test_free_requests_have_no_grammar(dialect: Any) -> None:
    assert grammar_of(dialect) is None
    assert grammar_of(dialect, tool_choice="none") is None
    assert grammar_of(dialect, text={"format": {"type": "text"}}) is None


@pytest.mark.parametrize("dialect", [HarmonyDialect(), qwen3_dialect()], ids=["harmony", "template"])
def test_choices_become_grammars(dialect: Any) -> None:
    auto = grammar_of(dialect, tools=[WEATHER, TIME])
    assert auto.lazy and auto.tools == ("get_weather", "get_time")
    required = grammar_of(dialect, tools=[WEATHER, TIME], tool_choice="required")
    assert not required.lazy and required.tools == ("get_weather", "get_time")
    named = grammar_of(dialect, tools=[WEATHER, TIME], tool_choice={"type": "function", "name": "get_time"})
    assert named.tools == ("get_time",)
    allowed = grammar_of(
        dialect,
        tools=[WEATHER, TIME],
        tool_choice={
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "function", "name": "get_time"}],
        },
    )
    assert allowed.lazy and allowed.tools == ("get_time",)
    none = grammar_of(dialect, tools=[WEATHER], tool_choice="none")
    assert none.tools == () and "get_weather" not in none.lark  # tools stay described, never called


@pytest.mark.parametrize("dialect", [HarmonyDialect(), qwen3_dialect()], ids=["harmony", "template"])
def test_text_formats_hold_the_answer(dialect: Any) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    strict = grammar_of(
        dialect, text={"format": {"type": "json_schema", "name": "n", "schema": schema, "strict": True}}
    )
    assert '"additionalProperties": false' in strict.lark  # strict closes the schema
    loose = grammar_of(dialect, text={"format": {"type": "json_schema", "name": "n", "schema": schema}})
    assert '"properties": {"n"' in loose.lark and '"additionalProperties": false' not in loose.lark
    obj = grammar_of(dialect, text={"format": {"type": "json_object"}})
    assert '%json {"x-guidance"' in obj.lark and '"type": "object"' in obj.lark
    # a loose schema the grammar engine cannot take falls back to any JSON value, never an error
    odd = {"type": "object", "properties": {"n": {"type": "string", "pattern": "(?<=a)b"}}}
    fallback = grammar_of(dialect, text={"format": {"type": "json_schema", "name": "n", "schema": odd}})
    assert "(?<=a)b" not in fallback.lark


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {
                "tools": [
                    {**WEATHER, "parameters": {"type": "object", "properties": {"c": {"type": "mystery"}}}}
                ]
            },
            "tools[0].parameters",
        ),
        (
            {
                "tools": [
                    TIME,
                    {
                        **WEATHER,
                        "parameters": {"type": "object", "properties": {"c": {"pattern": "(?<=a)b"}}},
                    },
                ]
            },
            "tools[1].parameters",
        ),
        (
            {
                "text": {
                    "format": {
                        "type": "json_schema",
                        "name": "x",
                        "strict": True,
                        "schema": {"type": "object", "properties": {"c": {"type": "mystery"}}},
                    }
                }
            },
            "text.format.schema",
        ),
    ],
)
def test_a_schema_that_cannot_be_enforced_is_a_400(body: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as caught:
        prepared(HarmonyDialect(), **body)
    assert caught.value.param == param and caught.value.code == "invalid_schema"
    assert caught.value.status == 400


def test_a_tool_that_is_not_strict_is_never_refused_for_its_schema() -> None:
    loose = {**WEATHER, "strict": False, "parameters": {"type": "object", "properties": {"c": {"type": "x"}}}}
    grammar = grammar_of(HarmonyDialect(), tools=[loose], tool_choice="required")
    assert json.dumps({"type": "object"})[1:-1] in grammar.lark


def test_the_reasoning_leaves_room_for_the_answer() -> None:
    assert reasoning_bound(None) is None
    assert reasoning_bound(4) == 2
    for budget in (10, 100, 300, 1000, 5000, 123_457):
        bound = reasoning_bound(budget)
        assert bound is not None
        reserve = min(RESERVE, budget // 2)
        assert budget - reserve - (budget - reserve) // 8 <= bound <= budget - reserve
    # nearby budgets share one grammar
    assert len({reasoning_bound(b) for b in range(3000, 3100)}) <= 2
    capped = grammar_of(HarmonyDialect(), tools=[TIME], tool_choice="required", max_output_tokens=600)
    assert "max_tokens=" in capped.lark
    unbounded = parse_request({"model": "m", "input": "x", "tools": [TIME], "tool_choice": "required"})
    assert "max_tokens=" not in response_grammar(unbounded, ModelFormat()).lark  # no budget, no bound


def test_grammars_are_built_once_per_distinct_request() -> None:
    first = grammar_of(HarmonyDialect(), tools=[WEATHER], tool_choice="required", max_output_tokens=500)
    again = grammar_of(HarmonyDialect(), tools=[WEATHER], tool_choice="required", max_output_tokens=500)
    assert first is again


def test_model_formats_are_hashable() -> None:
    assert hash(ModelFormat()) == hash(ModelFormat())
    assert response_grammar(parse_request({"model": "m", "input": "x"}), ModelFormat()) is None


def test_a_custom_grammar_gbnf_cannot_carry_is_refused_for_llama_cpp() -> None:
    """llama-server samples under GBNF: a custom tool whose grammar it cannot carry is a 400
    before any generation (:func:`check_gbnf_custom_tools`, called for that engine only)."""
    regex = {"type": "grammar", "syntax": "regex", "definition": "[0-9]{4}"}
    pin = {"type": "custom", "name": "pin", "format": regex}
    lazy = {
        "type": "custom",
        "name": "note",
        "format": {"type": "grammar", "syntax": "lark", "definition": 'start: x "!"\nx[lazy]: /[a-z]+/\n'},
    }
    check_gbnf_custom_tools(parse_request({"model": "m", "input": "x", "tools": [WEATHER, pin]}))
    with pytest.raises(RequestError) as raised:
        check_gbnf_custom_tools(parse_request({"model": "m", "input": "x", "tools": [pin, lazy]}))
    assert raised.value.code == "unsupported_custom_tool" and raised.value.param == "tools"
    assert "'note'" in raised.value.message and "lazy" in raised.value.message
