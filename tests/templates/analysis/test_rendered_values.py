"""JSON values and Python calls found inside rendered text."""

from __future__ import annotations

from openchatml.templates.analysis.values import (
    contains,
    json_at,
    json_containing,
    matching_close,
    python_call,
)


def test_contains_looks_at_keys_and_values_a_few_levels_deep() -> None:
    assert contains({"a": [{"b": "needle"}]}, "needle")
    assert contains({"needle": 1}, "needle")
    assert not contains({"a": "needles"}, "needle")
    deep: object = "needle"
    for _ in range(6):
        deep = [deep]
    assert not contains(deep, "needle")


def test_json_at() -> None:
    assert json_at('x{"a": 1} y', 1) == ({"a": 1}, 9)
    assert json_at("x{a: 1}", 1) is None


def test_json_containing_finds_the_outermost_value_around_the_needle() -> None:
    text = '<tool_call>[{"name": "foofoo", "arguments": {"k": "v"}}]</tool_call>'
    found = json_containing(text, "foofoo")
    assert found is not None
    value, start, end = found
    assert value == [{"name": "foofoo", "arguments": {"k": "v"}}]
    assert text[start:end] == text[len("<tool_call>") : -len("</tool_call>")]
    assert json_containing('{"other": 1} foofoo', "foofoo") is None
    assert json_containing("no json", "foofoo") is None


def test_matching_close_respects_nesting_and_quotes() -> None:
    text = "f(a='x)', b=(1, 2)) tail"
    assert matching_close(text, 1, "(", ")") == len("f(a='x)', b=(1, 2))")
    assert matching_close('{"a": "}\\"}"}', 0, "{", "}") == len('{"a": "}\\"}"}')
    assert matching_close("(open", 0, "(", ")") == -1


def test_python_call() -> None:
    assert python_call("foofoo(first='XXXX')")
    assert not python_call("foofoo")
    assert not python_call("foofoo(first=")
