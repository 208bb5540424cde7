"""The GBNF writer: exact renderings of small grammars, and the text of every family's
grammar as llama.cpp reads it."""

from __future__ import annotations

import json
import re

import pytest
from grammar_checks import CONFIGURE, TOOLS, ebnf_accepts
from hand_formats import FORMATS

from openchatml.templates.format import ToolSyntax
from openchatml.templates.grammar import tool_call_grammar
from openchatml.templates.grammar.builder import LAZY_START, START, RuleSet
from openchatml.templates.grammar.gbnf import GbnfWriter, gbnf_class, gbnf_literal
from openchatml.templates.grammar.ir import (
    LAYOUT,
    FreeText,
    JsonValue,
    LiteralText,
    Repeat,
    RuleRef,
    char_class,
    choice,
    concat,
    optional,
)

# Every family with tool calls, for the checks that take any format.
TOOL_FAMILIES = sorted(
    f for f, fmt in FORMATS.items() if fmt.tools.syntax is not ToolSyntax.NONE and not fmt.harmony
)


def test_gbnf_names_and_escapes_suit_llama_cpp() -> None:
    """llama.cpp reads rule names of letters, digits and dashes, and ``\\xHH`` escapes of two
    digits; xgrammar reads more when a hex digit follows, which the writer never lets happen."""
    for family in TOOL_FAMILIES:
        grammar = tool_call_grammar(FORMATS[family], [*TOOLS, CONFIGURE])
        for text in (grammar.gbnf, grammar.ebnf):
            for line in text.splitlines():
                assert re.match(r"^[a-z0-9-]+ ::= \S", line), (family, line)
            assert not re.search(r"\\x[0-9A-Fa-f]{3}", text), family
            assert text.startswith("root ::= ")


def _greeting() -> RuleSet:
    rules = RuleSet()
    word = rules.add("word", Repeat(char_class("a-z"), 1, None), terminal=True)
    ending = choice(LiteralText("."), LiteralText("?"))
    rules.define(START, concat(LiteralText("say "), word, optional(concat(LAYOUT, LiteralText("!"))), ending))
    return rules


def test_rules_and_layout() -> None:
    rules = _greeting()
    assert GbnfWriter(rules).write(START) == (
        'root ::= "say " word-1 (ws-2 "!")? ("." | "?")\nword-1 ::= [a-z]+\nws-2 ::= [ \\t\\r\\n]{0,32}\n'
    )
    assert list(rules.definitions) == ["word_1", START]  # the writer adds its rules to a copy


def _free_text_rules() -> RuleSet:
    rules = RuleSet()
    rules.define(START, concat(FreeText("</a>"), LiteralText("ok")))
    rules.define(LAZY_START, FreeText("", not_start=("ab",), avoid="ab"))
    return rules


def test_free_text_is_the_automaton_of_its_marker() -> None:
    assert GbnfWriter(_free_text_rules()).write(START) == (
        'root ::= until-2 "</a>" "ok"\n'
        'until-2 ::= ([^<] until-2 | "<" until-3)?\n'
        'until-3 ::= ([^/<] until-2 | "/" until-4 | "<" until-3)?\n'
        'until-4 ::= ([^<a] until-2 | "<" until-3 | "a" until-5)?\n'
        'until-5 ::= ([^<>] until-2 | "<" until-3)?\n'
    )


def test_free_text_that_must_not_begin_with_a_marker() -> None:
    assert GbnfWriter(_free_text_rules()).write(LAZY_START) == (
        "root ::= head-4\n"
        'head-4 ::= ([ \\t\\r\\n] head-4 | "a" head-5 | "b" until-2 | [^ab \\t\\r\\n] until-2)?\n'
        'head-5 ::= ("a" until-3 | [^ab] until-2)?\n'
        'until-2 ::= ([^a] until-2 | "a" until-3)?\n'
        'until-3 ::= ([^ab] until-2 | "a" until-3)?\n'
    )


def test_free_text_in_xgrammar() -> None:
    rules = _free_text_rules()
    writer = GbnfWriter(rules)
    stop, avoid = writer.write(START), writer.write(LAZY_START)
    for text in ("x</a>ok", "</a>ok", "a</b><</a>ok", "<</a>ok"):
        assert ebnf_accepts(stop, text), text
    for text in ("x</a>yok", "x</a></a>ok", "x</aok"):
        assert not ebnf_accepts(stop, text), text
    for text in ("", "xyz", "ba", "a", " b"):
        assert ebnf_accepts(avoid, text), text
    for text in ("ab", " ab", "aab", "x ab"):
        assert not ebnf_accepts(avoid, text), text


def test_one_writer_writes_several_starts() -> None:
    rules = RuleSet()
    rules.define(START, concat(LAYOUT, rules.add("call", LiteralText("c"))))
    rules.define(LAZY_START, concat(RuleRef("call_1"), LAYOUT))
    writer = GbnfWriter(rules)
    assert writer.write(START) == 'root ::= ws-2 call-1\nws-2 ::= [ \\t\\r\\n]{0,32}\ncall-1 ::= "c"\n'
    assert writer.write(LAZY_START) == 'root ::= call-1 ws-2\ncall-1 ::= "c"\nws-2 ::= [ \\t\\r\\n]{0,32}\n'


def test_json_values_become_rules() -> None:
    rules = RuleSet()
    rules.define(START, JsonValue(json.dumps({"type": "array", "items": {"type": "integer"}, "maxItems": 2})))
    assert GbnfWriter(rules).write(START) == (
        "root ::= val-1\n"
        'val-1 ::= "[" ws-4 (val-2 (ws-4 "," ws-4 val-2)?)? ws-4 "]"\n'
        "ws-4 ::= [ \\t\\r\\n]{0,32}\n"
        "val-2 ::= int-3\n"
        'int-3 ::= "-"? ("0" | [1-9] [0-9]*)\n'
    )


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
        ("\n\t\r", '"\\n\\t\\r"'),
        ("\x01b", '"\\u0001b"'),  # \x01b would read as one escape
        ("\x01g\x7f", '"\\x01g\\x7F"'),
    ],
)
def test_literals(text: str, literal: str) -> None:
    assert gbnf_literal(text) == literal


@pytest.mark.parametrize(
    ("spec", "negated", "text"),
    [
        ("a-z0-9_", False, "[a-z0-9_]"),
        ("+-", False, "[+-]"),  # a dash last
        ("-a", False, "[a-]"),
        ("^a", False, "[a^]"),  # a caret never first
        ("^", False, "[\\x5E]"),
        ("^", True, "[^^]"),
        ('"\\\x00-\x1f', True, '[^\\"\\\\\\x00-\\x1F]'),  # control characters last
        ("[]", False, "[\\[\\]]"),
    ],
)
def test_character_classes(spec: str, negated: bool, text: str) -> None:
    assert gbnf_class(char_class(spec, negated=negated)) == text
