"""The GBNF writer given the tokenizer's special tokens (llama.cpp's dialect): markers as token
references, optional where they only end the output, free text that never spells a special
token, and a bound on free text in characters.

xgrammar reads no token references: to check what a grammar accepts, each ``<[id]>`` is
read as one private-use character standing for the token (:func:`as_ebnf`, :func:`spelled`)."""

from __future__ import annotations

import re

from grammar_checks import ebnf_accepts

from openchatml.core.tokens import CALL_ID, END_ID, NAMED_SPECIAL_TOKENS, RETURN_ID
from openchatml.templates.grammar import harmony_tool_call_grammar
from openchatml.templates.grammar.builder import START, RuleSet
from openchatml.templates.grammar.gbnf import GbnfWriter, ending_markers
from openchatml.templates.grammar.ir import FreeText, LiteralText, choice, concat

SPECIALS = {"<s>": 1, "<e>": 2, "<r>": 3}
S, E, R = "\ue001", "\ue002", "\ue003"
"""The characters that stand for the special tokens in :func:`as_ebnf`."""
TOOL = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}


def stand_in(token: int) -> str:
    """The character that stands for special token ``token``: U+E000 and its rank among
    o200k_harmony's (the test tokens' ids are small)."""
    return chr(0xE000 + (token - 199998 if token >= 199998 else token))


def as_ebnf(gbnf: str) -> str:
    """``gbnf`` with each token reference ``<[id]>`` read as its :func:`stand_in`."""
    return re.sub(r"<\[(\d+)\]>", lambda m: f'"\\u{ord(stand_in(int(m.group(1)))):04X}"', gbnf)


def spelled(text: str) -> str:
    """``text`` with Harmony's special tokens written as their stand-ins."""
    for marker, token in NAMED_SPECIAL_TOKENS.items():
        text = text.replace(marker, stand_in(token))
    return text


def _rules() -> RuleSet:
    rules = RuleSet()
    bounded = concat(FreeText("<e>", max_tokens=4), LiteralText("ok<e>"))
    rules.define(
        START, concat(LiteralText("<s>say "), choice(bounded, concat(LiteralText("x"), FreeText("<r>"))))
    )
    return rules


def test_markers_become_token_references() -> None:
    assert GbnfWriter(_rules(), SPECIALS).write(START).splitlines()[:3] == [
        'root ::= <[1]> "say " (step-6{0,4} partial-11? <[2]> "ok" <[2]> | "x" until-1 <[3]>?)',
        'step-6 ::= [^<] | "<" step-7',
        'partial-11 ::= "<" partial-12',
    ]


def test_without_special_tokens_the_text_is_the_common_gbnf() -> None:
    assert GbnfWriter(_rules(), {}).write(START) == GbnfWriter(_rules()).write(START)
    assert "<[" not in GbnfWriter(_rules()).write(START)


def test_a_marker_that_only_ends_the_output_is_optional() -> None:
    """``<r>`` ends the output wherever it is named; ``<e>`` is also followed by text."""
    assert ending_markers(_rules(), START, sorted(SPECIALS.items())) == frozenset({"<r>"})
    grammar = as_ebnf(GbnfWriter(_rules(), SPECIALS).write(START))
    assert ebnf_accepts(grammar, f"{S}say x hello{R}")
    assert ebnf_accepts(grammar, f"{S}say x hello")  # llama.cpp samples the end id after it
    assert not ebnf_accepts(grammar, f"{S}say ab{E}ok")


def test_free_text_never_spells_a_special_token() -> None:
    """llama.cpp matches a special token against text by its spelled text: free text must
    not hold any (whatever its own stop), or a special token could be sampled as text."""
    grammar = as_ebnf(GbnfWriter(_rules(), SPECIALS).write(START))
    for text in ("hello", "a<b", "<e", "e>", "<<r", "s>x<"):
        assert ebnf_accepts(grammar, f"{S}say x{text}{R}"), text
    for text in ("<r>", "a<e>b", "<s>", "x<<s>"):
        assert not ebnf_accepts(grammar, f"{S}say x{text}{R}"), text


def test_bounded_free_text_counts_characters() -> None:
    grammar = as_ebnf(GbnfWriter(_rules(), SPECIALS).write(START))
    for text in ("", "abcd", "a<eb", "ab<e", "<<<<"):
        assert ebnf_accepts(grammar, f"{S}say {text}{E}ok{E}"), text
    for text in ("abcde", "a<e>", "ab<r>"):
        assert not ebnf_accepts(grammar, f"{S}say {text}{E}ok{E}"), text


def test_harmony_grammars_in_llama_cpp_dialect() -> None:
    required = harmony_tool_call_grammar([TOOL], tool_choice="required", reasoning_tokens=40)
    none = harmony_tool_call_grammar([TOOL], tool_choice="none")
    for grammar in (required, none):
        assert not any(marker in grammar.gbnf for marker in NAMED_SPECIAL_TOKENS)
        assert f"<[{END_ID}]> " in grammar.gbnf  # a message's end is no end of the output
        assert "<|" in grammar.ebnf  # xgrammar's text keeps the spelled markers
    assert f"<[{CALL_ID}]>?" in required.gbnf and f"<[{RETURN_ID}]>" not in required.gbnf
    assert f"<[{RETURN_ID}]>?" in none.gbnf and f"<[{CALL_ID}]>" not in none.gbnf
    assert "{0,20}" in required.gbnf  # the first message's share of the bound, in characters


def test_harmony_lazy_grammar_reads_from_its_trigger() -> None:
    """llama-server applies a lazy grammar from the start of its trigger word on, the word
    included (as :func:`grammar_checks.from_trigger` and the template grammars have it)."""
    auto = harmony_tool_call_grammar([TOOL], tool_choice="auto")
    call = spelled(" to=functions.get_time<|channel|>commentary json<|message|>{}<|call|>")
    assert auto.lazy and auto.triggers[0].value == " to=functions."
    assert ebnf_accepts(as_ebnf(auto.gbnf), call)
