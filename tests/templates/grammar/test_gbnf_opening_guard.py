"""Given special tokens spelled ``<|…|>``, the GBNF writer's runs of characters — JSON
strings, a custom tool's text — never hold ``<|``: llama.cpp would sample the special token
whose text it is there (``<|end|>`` in the middle of a string ends the message). Other
``<`` stay, and bounds count characters exactly. Custom tools' grammars become rules.

Token references are read as private-use characters for xgrammar, as in
``test_gbnf_tokens``."""

from __future__ import annotations

import json
import re

import pytest
from grammar_checks import ebnf_accepts
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml.core.tokens import CALL_ID, NAMED_SPECIAL_TOKENS
from openchatml.templates.grammar import harmony_tool_call_grammar
from openchatml.templates.grammar.builder import START, RuleSet
from openchatml.templates.grammar.gbnf import GbnfWriter
from openchatml.templates.grammar.ir import LiteralText, Repeat, Subgrammar, char_class, concat
from openchatml.templates.grammar.opening_guard import UNROLL_LIMIT, guards
from openchatml.templates.grammar.tool_choice import FreeformTool

CONTROL = {"<|end|>": 7, "<|call|>": 8}
"""Special tokens in the ``<|…|>`` spelling."""


def stand_in(token: int) -> str:
    return chr(0xE000 + (token - 199998 if token >= 199998 else token))


def as_ebnf(gbnf: str) -> str:
    """``gbnf`` with each token reference read as the private-use character of its id."""
    return re.sub(r"<\[(\d+)\]>", lambda m: f'"\\u{ord(stand_in(int(m.group(1)))):04X}"', gbnf)


def spelled(text: str) -> str:
    for marker, token in NAMED_SPECIAL_TOKENS.items():
        text = text.replace(marker, stand_in(token))
    return text


def run_grammar(least: int, most: int | None, specials: dict[str, int] | None = None) -> str:
    """``"` + a run of ``[a<|b]`` + ``"``, written with ``specials``."""
    rules = RuleSet()
    run = Repeat(char_class("ab<|"), least, most)
    rules.define(START, concat(LiteralText("'"), run, LiteralText("'")))
    return as_ebnf(GbnfWriter(rules, CONTROL if specials is None else specials).write(START))


def test_guards_only_control_token_spellings() -> None:
    assert guards(NAMED_SPECIAL_TOKENS)
    assert guards(["<tool_call>", "<|im_end|>"])
    assert not guards(["<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|"])


@pytest.mark.parametrize(("least", "most"), [(0, None), (2, None), (0, 5), (2, 5), (3, 3)])
def test_a_run_never_holds_the_opening(least: int, most: int | None) -> None:
    grammar = run_grammar(least, most)
    for text in ("ab<", "<<a", "|<b", "a|b", "<a<b", "<<<", "|||", "ab<b<"):
        fits = least <= len(text) <= (most if most is not None else 99)
        assert ebnf_accepts(grammar, f"'{text}'") is fits, text
    for text in ("<|", "a<|", "<<|b", "b<|a"):
        assert not ebnf_accepts(grammar, f"'{text}'"), text


def test_without_control_tokens_a_run_is_left_alone() -> None:
    grammar = run_grammar(0, 4, {"<tool_call>": 3})
    assert "run-" not in grammar and ebnf_accepts(grammar, "'a<|b'")
    assert run_grammar(0, 4, {}) == as_ebnf(GbnfWriter(_plain_rules()).write(START))


def _plain_rules() -> RuleSet:
    rules = RuleSet()
    rules.define(START, concat(LiteralText("'"), Repeat(char_class("ab<|"), 0, 4), LiteralText("'")))
    return rules


def test_long_bounds_count_steps() -> None:
    """Past :data:`UNROLL_LIMIT` a ``<`` and the character after it count as one step."""
    grammar = run_grammar(0, UNROLL_LIMIT + 10)
    assert ebnf_accepts(grammar, "'" + "ab" * ((UNROLL_LIMIT + 10) // 2) + "'")
    assert not ebnf_accepts(grammar, "'" + "a" * (UNROLL_LIMIT + 11) + "'")
    assert not ebnf_accepts(grammar, "'" + "a" * 40 + "<|" + "'")
    at_least = run_grammar(UNROLL_LIMIT + 1, None)
    assert ebnf_accepts(at_least, "'" + "a<" * UNROLL_LIMIT + "b'")
    assert not ebnf_accepts(at_least, "'" + "a" * UNROLL_LIMIT + "'")


@settings(max_examples=200, deadline=None)
@given(
    text=st.text("ab<|", max_size=9),
    least=st.integers(0, 4),
    extra=st.one_of(st.none(), st.integers(0, 5)),
)
def test_property_runs(text: str, least: int, extra: int | None) -> None:
    most = None if extra is None else least + extra
    expected = "<|" not in text and least <= len(text) and (most is None or len(text) <= most)
    assert ebnf_accepts(run_grammar(least, most), f"'{text}'") is expected


SCHEMA = {
    "type": "object",
    "properties": {"short": {"type": "string", "maxLength": 3}, "long": {"type": "string"}},
    "required": ["short", "long"],
}
TOOL = {"type": "function", "name": "note", "parameters": SCHEMA}


def harmony_call(name: str, text: str) -> str:
    """A call of ``name`` with ``text`` as its input: the markers as tokens, ``text`` as text."""
    head = spelled(f"<|channel|>commentary to=functions.{name}<|message|>")
    return head + text + spelled("<|call|>")


def test_harmony_json_strings_never_spell_a_special_token() -> None:
    grammar = as_ebnf(harmony_tool_call_grammar([TOOL], tool_choice="required").gbnf)
    for short, long in [("a<b", "x <= y < z"), ("<<<", "<"), ("|", "a|b<c>"), ("", "<\\n|")]:
        arguments = json.dumps({"short": short, "long": long})
        assert ebnf_accepts(grammar, harmony_call("note", arguments)), arguments
    for short, long in [("<|e", "a"), ("a", "see <|end|> here"), ("a", "<|call|>"), ("<<<<", "a")]:
        arguments = json.dumps({"short": short, "long": long})
        assert not ebnf_accepts(grammar, harmony_call("note", arguments)), arguments


def test_harmony_custom_tools_take_their_grammar() -> None:
    pin = FreeformTool("pin", "regex", "[0-9]{4}-[a-z]{2,6}")
    note = FreeformTool("note", "lark", 'start: "* " LINE+\nLINE: /.+\\n/\n')
    for tool, good, bad in [
        (pin, ["1234-ab"], ["1234-a", "12345-ab"]),
        (note, ["* a <b> | c\n", "* x\ny\n"], ["* a<|end|>\n", "* \n", "x\n"]),
    ]:
        grammar = harmony_tool_call_grammar(
            [], tool_choice={"type": "custom", "name": tool.name}, freeform=[tool]
        )
        assert f"<[{CALL_ID}]>?" in grammar.gbnf
        ebnf = as_ebnf(grammar.gbnf)
        for text in good:
            assert ebnf_accepts(ebnf, harmony_call(tool.name, text)), text
        for text in bad:
            assert not ebnf_accepts(ebnf, harmony_call(tool.name, text)), text


def test_a_grammar_gbnf_cannot_carry_is_free_text() -> None:
    """The text is then checked after parsing (and a server refuses it first)."""
    rules = RuleSet()
    rules.define(START, Subgrammar("lark", "start: <|end|>", "!"))
    grammar = GbnfWriter(rules).write(START)
    assert ebnf_accepts(grammar, "anything at all!") and not ebnf_accepts(grammar, "a!b!")
