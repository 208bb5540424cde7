"""A call written as one JSON object, read token by token: its name, id and arguments,
under the format's keys or common ones."""

from __future__ import annotations

import json

from openchatml.templates.format import ToolCallFormat, ToolSyntax
from openchatml.templates.parsing.json_calls import JsonCallReader
from openchatml.templates.parsing.lexer import Lexer

JSON = ToolCallFormat(syntax=ToolSyntax.JSON)


def read(text: str, tools: ToolCallFormat = JSON, pieces: int = 1) -> JsonCallReader:
    """``text`` lexed and read in ``pieces`` parts of about equal length."""
    reader = JsonCallReader(tools)
    lexer = Lexer()
    i = 0
    step = max(1, len(text) // pieces)
    for end in [*range(step, len(text), step), len(text)]:
        i = lexer.run(text[:end], i, end == len(text))
        reader.feed(lexer.tokens)
        lexer.tokens.clear()
    return reader


def test_name_id_and_arguments() -> None:
    text = '{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}, "id": "c1"}'
    for pieces in (1, 3, len(text)):
        reader = read(text, pieces=pieces)
        assert (reader.name, reader.id, reader.done) == ("get_weather", "c1", True)
        assert json.loads("".join(reader.out)) == {"city": "Paris", "days": [1, 2]}


def test_the_formats_own_keys() -> None:
    tools = ToolCallFormat(
        syntax=ToolSyntax.JSON, name_key="tool_name", arguments_key="params", id_key="call"
    )
    reader = read('{"call": 7, "tool_name": "f", "params": {"a": true}}', tools)
    assert (reader.name, reader.id, "".join(reader.out)) == ("f", "7", '{"a": true}')


def test_a_wrapper_and_arguments_as_a_json_string() -> None:
    text = '{"type": "function", "function": {"name": "f", "arguments": "{\\"a\\": [1, \\"x\\"]}"}}'
    reader = read(text, pieces=7)
    assert (reader.name, "".join(reader.out), reader.done) == ("f", '{"a": [1, "x"]}', True)


def test_the_name_as_the_key() -> None:
    tools = ToolCallFormat(syntax=ToolSyntax.JSON, name_is_key=True)
    reader = read('{"get_weather": {"city": "Rome"}}', tools)
    assert (reader.name, "".join(reader.out)) == ("get_weather", '{"city": "Rome"}')


def test_values_of_no_interest_are_skipped() -> None:
    reader = read('{"meta": {"name": "no"}, "name": "f", "extra": [1, {"x": "y"}], "arguments": {}}')
    assert (reader.name, "".join(reader.out), reader.done) == ("f", "{}", True)


def test_arguments_cut_off_are_closed_into_json() -> None:
    reader = read('{"name": "f", "arguments": {"a": [1, "t')
    assert not reader.done and reader.in_args
    closing = reader.close()
    assert json.loads("".join(reader.out) + closing) == {"a": [1, "t"]}
    assert JsonCallReader(JSON).close() == ""  # no arguments begun: nothing to close
