"""Lark grammars (llguidance's dialect) read into rules and written as GBNF: the rules take
the texts llguidance takes (xgrammar judges the GBNF, llguidance the Lark), common
terminals are imported, ``%ignore`` is kept between lexemes, left recursion is rewritten,
and what GBNF cannot say is refused."""

from __future__ import annotations

import functools

import pytest
from grammar_checks import ebnf_accepts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openchatml.engines.guidance import check_language, in_language
from openchatml.templates.grammar.builder import START, RuleSet
from openchatml.templates.grammar.custom_grammar import custom_grammar_problem, custom_grammar_rules
from openchatml.templates.grammar.gbnf import GbnfWriter
from openchatml.templates.grammar.lark_reader import COMMON, lark_lexemes
from openchatml.templates.grammar.regex_reader import UnsupportedGrammarError

CODEX_APPLY_PATCH = """start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
"""
"""The grammar Codex gives its ``apply_patch`` custom tool."""
PATCHES = [
    "*** Begin Patch\n*** Add File: hello.txt\n+Hello, world!\n+\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n"
    '-print("Hi")\n+print("Hello, <world> | x")\n context\n*** End of File\n*** End Patch',
    "*** Begin Patch\n*** Delete File: old.txt\n*** Update File: a\n@@\n-x\n*** End Patch\n",
]
NOT_PATCHES = [
    "*** Begin Patch\n*** End Patch\n",  # no hunk
    "*** Begin Patch\n*** Add File: a\n*** End Patch\n",  # no line
    "*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch\n",
    "*** Begin Patch\n*** Delete File: a\n*** End Patch\n\n",
]


@functools.cache
def lark_gbnf(grammar: str) -> str:
    rules = RuleSet()
    rules.define(START, custom_grammar_rules(rules, "lark", grammar))
    return GbnfWriter(rules).write(START)


def agrees(grammar: str, text: str) -> bool:
    """What both the GBNF (xgrammar) and the Lark grammar (llguidance) say of ``text``."""
    verdict = in_language("lark", grammar, text)
    assert ebnf_accepts(lark_gbnf(grammar), text) is verdict, (grammar, text, verdict)
    return verdict


def test_codex_apply_patch_converts() -> None:
    assert check_language("lark", CODEX_APPLY_PATCH) == ""
    assert custom_grammar_problem("lark", CODEX_APPLY_PATCH) == ""
    for patch in PATCHES:
        assert agrees(CODEX_APPLY_PATCH, patch), patch
    for patch in NOT_PATCHES:
        assert not agrees(CODEX_APPLY_PATCH, patch), patch


def test_rules_terminals_and_repetitions() -> None:
    grammar = """
    start: greeting ("," NAME)~1..2 [PUNCT] TAIL{0,2}
    greeting: "hi"i | "hello"
        | "hey"
    NAME: LETTER+
    LETTER: "a".."z"
    PUNCT: /[!?]/
    TAIL: "." // a comment
    # another comment
    """
    for text, expected in [
        ("hi,bob", True),
        ("HI,bob,al!..", True),
        ("hey,x?", True),
        ("hello,bob,al,cy", False),
        ("hi", False),
        ("hi,Bob", False),
        ("hi,bob...", False),
    ]:
        assert agrees(grammar, text) is expected, text


@pytest.mark.parametrize("name", sorted(COMMON))
def test_common_terminals(name: str) -> None:
    samples = {
        "DIGIT": "7", "HEXDIGIT": "f", "INT": "42", "SIGNED_INT": "-42", "DECIMAL": "4.", "_EXP": "e-3",
        "FLOAT": "1.5e3", "SIGNED_FLOAT": "+.5", "NUMBER": "12", "SIGNED_NUMBER": "-1.0",
        "ESCAPED_STRING": '"a\\"b"', "LCASE_LETTER": "q", "UCASE_LETTER": "Q", "LETTER": "Q", "WORD": "Word",
        "CNAME": "_x1", "WS_INLINE": " \t", "WS": " \n", "CR": "\r", "LF": "\n", "NEWLINE": "\r\n\n",
        "SH_COMMENT": "# x", "CPP_COMMENT": "// x", "C_COMMENT": "/* a * b */", "SQL_COMMENT": "-- x",
    }  # fmt: skip
    grammar = f"start: X\n%import common.{name} -> X\n"
    assert agrees(grammar, samples[name])
    assert not agrees(grammar, samples[name] + "\n\x01")


def test_multiple_imports_and_json() -> None:
    grammar = (
        'start: WORD ":" call\ncall: %json {"type": "object", "properties": {"n": {"type": "integer"}}}\n'
    )
    grammar += "%import common (WORD, WS)\n"
    assert agrees(grammar, 'go:{"n": 3}')
    assert not agrees(grammar, 'go:{"n": "3"}')


def test_ignore_between_lexemes_only() -> None:
    """llguidance skips ``%ignore`` text between two lexemes, never first (last only where
    another lexeme might have followed); the rules take it between two lexemes only."""
    grammar = 'start: NUMBER ("," NUMBER)* ["!"]\n%import common.NUMBER\n%ignore " "\n'
    gbnf = lark_gbnf(grammar)
    for text, expected in [("1,2", True), ("1 , 2  ,3", True), ("1 !", True), (" 1", False), ("1 ", False)]:
        assert ebnf_accepts(gbnf, text) is expected, text
        assert in_language("lark", grammar, text) or not expected, text
    once = '%llguidance {"ignore_once": true}\n%ignore /[ ]{1,2}/\nstart: "a" "b"\n'
    assert ebnf_accepts(lark_gbnf(once), "a  b") and not ebnf_accepts(lark_gbnf(once), "a   b")


def test_left_recursion_is_rewritten() -> None:
    grammar = 'start: expr\nexpr: expr "+" term | expr "-" term | term\nterm: /[0-9]+/\n'
    assert "expr" not in custom_grammar_problem("lark", grammar)
    for text, expected in [("1", True), ("1+2-30", True), ("+1", False), ("1+", False)]:
        assert agrees(grammar, text) is expected, text


@pytest.mark.parametrize(
    ("grammar", "reason"),
    [
        ("start: a\na: b 'x'\nb: a | \"y\"", "no lexeme fits"),
        ('start: a\na: b "x"\nb: a | "y"', "left-recursive"),
        ("start: <|end|>", "special token"),
        ("start: <[12]>", "special token"),
        ("start: @other", "another grammar"),
        ('start: %regex {"substring_words": "a b"}', "%regex"),
        ('start: %lark { start: "a" }', "%lark"),
        ('start: x\nx[lazy]: /.*/ "end"', "lazy"),
        ('start: x\nx[stop="a"]: /.*/', "stop"),
        ('start: x\nx.2: "a"', "priority"),
        ("start: A\nA: /[a-z]+/ & ~/abc/", "'&'"),
        ("start: A\nA: ~/abc/", "'~'"),
        ("start: x\n%import other.X -> x", "only common"),
        ("start: X\n%declare X", "%declare"),
        ('start: "a" x\n', "undefined"),
        ('start: "a"\nstart: "b"', "defined twice"),
        ('start: "b".."a"', "in order"),
        ("start: /\\p{L}/", "does not compile"),
        ('x: "a"', "no start rule"),
    ],
)
def test_lark_gbnf_refuses_what_it_cannot_say(grammar: str, reason: str) -> None:
    with pytest.raises(UnsupportedGrammarError, match=reason):
        custom_grammar_rules(RuleSet(), "lark", grammar)


def test_lexemes_as_llguidance_cuts_them() -> None:
    lexemes = lark_lexemes('?start: "a\\"" /b\\//i+ x~2..3 // note\n  | Y\n%json {"a": [1]}')
    assert [(lexeme.kind, lexeme.text) for lexeme in lexemes] == [
        ("rule", "?start"), (":", ":"), ("string", '"a\\""'), ("regexp", "/b\\//i"), ("op", "+"),
        ("rule", "x"), ("~", "~"), ("number", "2"), ("..", ".."), ("number", "3"), ("newline", "\n  "),
        ("|", "|"), ("token", "Y"), ("newline", "\n"), ("%json", '%json {"a": [1]}'), ("newline", "\n"),
        ("end", ""),
    ]  # fmt: skip
    assert lexemes[-3].value == {"a": [1]}


LINE = st.text(st.characters(codec="utf-8", exclude_characters="\n\x00"), max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=LINE.filter(bool),
    lines=st.lists(st.tuples(st.sampled_from("+- "), LINE), min_size=1, max_size=4),
    ending=st.sampled_from(["*** End Patch\n", "*** End Patch"]),
)
def test_property_codex_patches(path: str, lines: list[tuple[str, str]], ending: str) -> None:
    body = "".join(f"{mark}{text}\n" for mark, text in lines)
    added = "".join(f"+{text}\n" for _, text in lines)
    for patch in (
        f"*** Begin Patch\n*** Update File: {path}\n@@\n{body}{ending}",
        f"*** Begin Patch\n*** Add File: {path}\n{added}{ending}",
    ):
        assert agrees(CODEX_APPLY_PATCH, patch), patch
