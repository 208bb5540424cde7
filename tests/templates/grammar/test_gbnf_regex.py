"""Regular expressions read into the intermediate form and written as GBNF: the grammar
takes exactly the texts the expression matches whole (xgrammar judges the GBNF), what GBNF
cannot say is refused, and the text is what llama.cpp reads."""

from __future__ import annotations

import functools
import re

import pytest
from grammar_checks import ebnf_accepts
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from llguidance.gbnf_to_lark import gbnf_to_lark

from openchatml.engines.guidance import check_language, in_language
from openchatml.templates.grammar.builder import START, RuleSet
from openchatml.templates.grammar.char_sets import CLASS_LIMIT, category
from openchatml.templates.grammar.custom_grammar import custom_grammar_problem, custom_grammar_rules
from openchatml.templates.grammar.gbnf import GbnfWriter
from openchatml.templates.grammar.ir import CharClass, LiteralText, Repeat
from openchatml.templates.grammar.regex_reader import UnsupportedGrammarError, read_regex


@functools.cache
def regex_gbnf(pattern: str) -> str:
    """The GBNF of ``pattern`` (a whole grammar, its root the expression)."""
    rules = RuleSet()
    rules.define(START, custom_grammar_rules(rules, "regex", pattern))
    return GbnfWriter(rules).write(START)


def test_regex_is_read_into_nodes() -> None:
    assert read_regex("abc") == LiteralText("abc")
    assert read_regex("[a-c]{2,5}") == Repeat(CharClass(((97, 99),)), 2, 5)
    assert read_regex("x*?") == Repeat(LiteralText("x"), 0, None)
    assert read_regex("^(?:ab)$") == LiteralText("ab")  # anchors dropped: the whole text matches
    assert read_regex("(.|\\n)") == CharClass(((0, 0),), negated=True)  # every character (no NUL)
    # the other cases of a letter (``re`` also takes the Kelvin sign for k: a subset)
    assert read_regex("(?i)k") == CharClass(((75, 75), (107, 107)))


@pytest.mark.parametrize(
    ("pattern", "gbnf"),
    [
        ("[0-9]{4}-[a-z]{2,6}", 'root ::= [0-9]{4} "-" [a-z]{2,6}\n'),
        ("a|bc|d", 'root ::= [ad] | "bc"\n'),  # one-character alternatives: one class
        ("(ab|cd)+", 'root ::= in-part-1+\nin-part-1 ::= "ab" | "cd"\n'),
        (".+", "root ::= [^\\n]+\n"),
        ("(?s).?", "root ::= [^\\x00]?\n"),
        ('[\\]\\-^"\\\\]', 'root ::= [\\"\\\\-^-]\n'),  # the range \\ to ^ holds ]
        ("\\t\\x01\\u00e9", 'root ::= "\\t\\x01é"\n'),
    ],
)
def test_regex_gbnf_text(pattern: str, gbnf: str) -> None:
    assert regex_gbnf(pattern) == gbnf


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        ("[0-9]{4}-[a-z]{2,6}", ["1234-ab", "0000-abcdef"], ["123-ab", "1234-abcdefg", "1234-AB"]),
        ("(?i)yes|no", ["YES", "yEs", "No"], ["yesno", "n"]),
        ("[^a-c]+", ["xyz", "é\n"], ["", "xa"]),
        ("\\d{2}\\s\\w+", ["12 abc_9", "٣٤\tx"], ["12abc", "1 a"]),
        ("\\D\\S\\W", ["a!?", "xy-"], ["1a!", "a a", "aaa"]),
        ("(ab){2}|c{0,2}", ["abab", "", "cc"], ["ab", "ccc", "abc"]),
        ("a(?:b|)c", ["abc", "ac"], ["abbc"]),
        ("x\\.y\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$", ["x.y*+?()[]{}|^$"], ["xay*+?()[]{}|^$"]),
        ("(?x) a b  # spaced", ["ab"], ["a b"]),
        ("(?a)\\w+", ["a_1"], ["é"]),
        ("[\\s\\S]{3}", ["a\nb", "   "], ["ab"]),
        ('"(?:[^"\\\\]|\\\\.)*"', ['""', '"a\\"b"'], ['"a"b"']),
    ],
)
def test_regex_gbnf_takes_what_the_regex_matches(pattern: str, good: list[str], bad: list[str]) -> None:
    gbnf = regex_gbnf(pattern)
    for text in good:
        assert re.fullmatch(pattern, text), text
        assert ebnf_accepts(gbnf, text), (pattern, text)
    for text in bad:
        assert not re.fullmatch(pattern, text), text
        assert not ebnf_accepts(gbnf, text), (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(a)\\1", "back-references"),
        ("a(?=b)", "look-around"),
        ("(?<!a)b", "look-around"),
        ("\\bword\\b", "word boundaries"),
        ("(a)?(?(1)b|c)", "conditional"),
        ("(?>ab)", "atomic"),
        ("a++", "possessive"),
        ("[[:alpha:]]", "nested sets"),
        ("[a-z&&[^c]]", "nested sets"),
        ("\\p{L}", "does not compile"),
        ("[^\\x00-\\U0010FFFF]", "no character"),
    ],
)
def test_regex_gbnf_refuses_what_it_cannot_say(pattern: str, reason: str) -> None:
    with pytest.raises(UnsupportedGrammarError, match=reason):
        read_regex(pattern)
    assert reason in custom_grammar_problem("regex", pattern)


def test_llama_cpp_repetition_limit_is_refused() -> None:
    assert "at most 2000" in custom_grammar_problem("regex", "a{2001}")
    assert custom_grammar_problem("regex", "a{2000}b{0,5000}") == ""  # a larger bound reads as none


def test_large_classes_keep_a_subset() -> None:
    """``\\w`` holds over 700 ranges: the class keeps the ASCII ones and the widest others."""
    words = category("w")
    assert len(words) > CLASS_LIMIT
    node = read_regex("\\w")
    assert isinstance(node, CharClass) and not node.negated and len(node.ranges) == CLASS_LIMIT
    gbnf = regex_gbnf("\\w+")
    assert ebnf_accepts(gbnf, "snake_case_42") and ebnf_accepts(gbnf, "中文한국어")
    assert not ebnf_accepts(gbnf, "a-b")


def test_bounds_past_llama_cpp_limit_take_named_parts() -> None:
    """llama.cpp expands ``x{m,n}`` into ``n`` rules times the rules ``x`` holds, and refuses
    past 2000: a repeated group is a rule of its own, one rule however large."""
    gbnf = regex_gbnf("((ab){0,50}c){0,100}")
    assert "{0,100}" in gbnf and "{0,50}" in gbnf
    assert re.search(r"^root ::= in-part-\d+\{0,100\}$", gbnf, re.M), gbnf


def test_regex_gbnf_round_trips_through_llguidance() -> None:
    """llguidance's own GBNF converter reads the rules back into a Lark grammar that takes
    the same texts (for expressions without quotes or backslashes, which it misreads)."""
    pattern = "[0-9]{2,3}(-[a-z]+|\\.x)*"
    lark = gbnf_to_lark(regex_gbnf(pattern))
    assert check_language("lark", lark) == ""
    for text, expected in [("12", True), ("123-ab.x-c", True), ("1", False), ("12-", False), ("12.y", False)]:
        assert in_language("lark", lark, text) is expected, text


# --- property: the GBNF takes exactly what the regex matches -----------------------------

ALPHABET = "ab<|-\n"
ATOMS = st.sampled_from(
    ["a", "b", "<", "\\|", "-", "\\n", ".", "[ab]", "[^a]", "[<|]", "[a-]", "\\s", "(?:)"]
)


def _regexes() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        quantified = st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,3}", "{1,}", "*?"])).map(
            lambda pair: f"(?:{pair[0]}){pair[1]}"
        )
        joined = st.lists(inner, min_size=2, max_size=3).map("".join)
        either = st.lists(inner, min_size=2, max_size=3).map(lambda items: "(?:" + "|".join(items) + ")")
        return quantified | joined | either

    return st.recursive(ATOMS, extend, max_leaves=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), pattern=_regexes())
def test_property_gbnf_takes_the_regex_texts(data: st.DataObject, pattern: str) -> None:
    gbnf = regex_gbnf(pattern)
    text = data.draw(st.from_regex(pattern, fullmatch=True).filter(lambda t: "\x00" not in t and len(t) < 40))
    assert ebnf_accepts(gbnf, text), (pattern, text, gbnf)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_regexes(), text=st.text(ALPHABET, max_size=8))
def test_property_gbnf_takes_nothing_else(pattern: str, text: str) -> None:
    assume(not re.fullmatch(pattern, text))
    assert not ebnf_accepts(regex_gbnf(pattern), text), (pattern, text)
