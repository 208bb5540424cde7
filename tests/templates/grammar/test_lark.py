"""The Lark writer: exact renderings of small grammars, run by llguidance."""

from __future__ import annotations

import json

import pytest
from grammar_checks import lark_accepts

from openchatml.templates.grammar.builder import START, RuleSet
from openchatml.templates.grammar.ir import (
    LAYOUT,
    FreeText,
    JsonValue,
    LiteralText,
    Repeat,
    char_class,
    choice,
    concat,
    optional,
)
from openchatml.templates.grammar.lark import LarkWriter, regex_class, regex_text


def _greeting() -> RuleSet:
    rules = RuleSet()
    word = rules.add("word", Repeat(char_class("a-z"), 1, None), terminal=True)
    ending = choice(LiteralText("."), LiteralText("?"))
    rules.define(START, concat(LiteralText("say "), word, optional(concat(LAYOUT, LiteralText("!"))), ending))
    return rules


def test_rules_terminals_and_layout() -> None:
    lark = LarkWriter(_greeting(), {}).write(START)
    assert lark == (
        "%llguidance {}\n"
        "\n"
        'start: "say " WORD_1 (_WS? "!")? ("." | "?")\n'
        "WORD_1: /(?:[a-z])+/\n"
        "_WS: /[ \\t\\r\\n]{1,32}/\n"
    )
    for text in ("say hi.", "say hi !?", "say hi\n\n!."):
        assert lark_accepts(lark, text), text
    for text in ("say hi", "say Hi.", "say hi!!.", "say  hi."):
        assert not lark_accepts(lark, text), text


def test_free_text_json_and_special_tokens() -> None:
    rules = RuleSet()
    call = concat(LiteralText("<call>"), JsonValue('{"type": "integer"}'), LiteralText("</call>"))
    rules.define(START, concat(FreeText("</think>"), call))
    lark = LarkWriter(rules, {"<call>": 257, "</call>": 258}).write(START)
    guidance = '{"lenient": true, "whitespace_pattern": "[\\\\x20\\\\x0A\\\\x0D\\\\x09]{1,32}"}'
    assert lark == (
        "%llguidance {}\n"
        "\n"
        "start: text_1 <[257]> json_2 <[258]>\n"
        "TEXT_1: /(?s:.*)<\\/think>/\n"
        "text_1[lazy]: TEXT_1\n"
        f'json_2: %json {{"x-guidance": {guidance}, "type": "integer"}}\n'
    )
    specials = ["<call>", "</call>"]
    assert lark_accepts(lark, "a </b> c</think><call>12</call>", specials)
    assert not lark_accepts(lark, "a</think><call>1.5</call>", specials)
    assert not lark_accepts(lark, "a</think></think><call>1</call>", specials)  # free text ends at the first
    assert not lark_accepts(lark, "a</think><call>1</call>", ["<x>", "<y>"])  # markers as text


def test_free_text_that_must_not_begin_with_a_marker() -> None:
    rules = RuleSet()
    rules.define(START, FreeText("", not_start=("<tool>",), avoid="<tool>"))
    lark = LarkWriter(rules, {}).write(START)
    assert lark.splitlines()[-1] == (
        "TEXT_1: /(?s:.*)/ & ~/[ \\t\\r\\n]*(?:<tool>)(?s:.*)/ & ~/(?s:.*)<tool>(?s:.*)/"
    )
    assert lark_accepts(lark, "Sure, a tool later")
    assert not lark_accepts(lark, "  <tool> now")
    assert not lark_accepts(lark, "Sure, <tool> later")  # never holding it
    # a marker that is a special token is never text: nothing to exclude
    fresh = RuleSet()
    fresh.define(START, FreeText("", not_start=("<tool>",), avoid="<tool>"))
    special = LarkWriter(fresh, {"<tool>": 257}).write(START)
    assert special.splitlines()[-1] == "TEXT_1: /(?s:.*)/ & ~/[ \\t\\r\\n]*(?:<tool>)(?s:.*)/"


def test_an_opening_special_token_stays_outside_the_lexeme() -> None:
    rules = RuleSet()
    rules.define(START, optional(FreeText("</think>", open="<think>")))
    lark = LarkWriter(rules, {"<think>": 257, "</think>": 258}).write(START)
    assert "start: (_WS? <[257]> TEXT_1 <[258]>)?" in lark
    assert lark_accepts(lark, "\n<think>hm</think>", ["<think>", "</think>"])
    assert lark_accepts(lark, "", ["<think>", "</think>"])
    assert not lark_accepts(lark, "<think>hm</think>", ["<x>", "<y>"])  # the markers spelled as text


def test_each_schema_is_written_once() -> None:
    rules = RuleSet()
    value = JsonValue(json.dumps({"type": "string"}))
    rules.define(START, concat(value, LiteralText(","), value))
    lark = LarkWriter(rules, {}).write(START)
    assert lark.count("%json") == 1 and 'start: json_1 "," json_1' in lark
    assert lark_accepts(lark, '"a","b"') and not lark_accepts(lark, '"a",1')


@pytest.mark.parametrize(
    ("text", "regex"),
    [
        ("a.b", "a\\.b"),
        ("</x>", "<\\/x>"),
        ("{[(|)]}", "\\{\\[\\(\\|\\)\\]\\}"),
        ("\n\t\x01", "\\n\\t\\x{01}"),
    ],
)
def test_regex_text_escapes(text: str, regex: str) -> None:
    assert regex_text(text) == regex


def test_regex_class() -> None:
    assert regex_class(char_class('"\\\x00-\x1f', negated=True)) == '[^"\\\\\\x{00}-\\x{1f}]'
    assert regex_class(char_class("a-z^-")) == "[a-z\\^\\-]"


def test_a_terminal_must_be_regular() -> None:
    rules = RuleSet()
    rules.define(START, rules.add("bad", FreeText("x"), terminal=True))
    with pytest.raises(AssertionError, match="not a regular expression"):
        LarkWriter(rules, {}).write(START)
