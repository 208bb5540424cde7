"""The intermediate form: the node constructors keep trees flat, share equal nodes and
read character classes and repetitions as the writers expect."""

from __future__ import annotations

import dataclasses

import pytest

from openchatml.templates.grammar.ir import (
    EMPTY,
    LAYOUT,
    CharClass,
    Choice,
    Concat,
    FreeText,
    JsonValue,
    LiteralText,
    Repeat,
    RuleRef,
    char_class,
    choice,
    concat,
    optional,
    referenced_rules,
    zero_or_more,
)

A, B, C = LiteralText("a"), LiteralText("b"), LiteralText("c")


def test_concat_flattens_and_drops_empty_parts() -> None:
    assert concat(A, concat(B, C)) == Concat((A, B, C))
    assert concat(LiteralText(""), A, EMPTY) == A  # one item stands alone
    assert concat() == EMPTY
    assert concat(A, LAYOUT, LAYOUT, concat(LAYOUT, B)) == Concat((A, LAYOUT, B))


def test_choice_flattens_deduplicates_and_makes_empty_optional() -> None:
    assert choice(A, choice(B, A), RuleRef("r"), RuleRef("r")) == Choice((A, B, RuleRef("r")))
    big = concat(A, B)
    assert choice(big, big) == Choice((big, big))  # only small alternatives are deduplicated
    assert choice(A, EMPTY) == Repeat(A, 0, 1)
    assert choice(A, B, EMPTY) == Repeat(Choice((A, B)), 0, 1)
    assert choice() == EMPTY and choice(EMPTY) == EMPTY
    assert choice(A) == A


def test_optional_and_zero_or_more() -> None:
    assert optional(A) == Repeat(A, 0, 1)
    assert optional(EMPTY) == EMPTY
    assert zero_or_more(A) == Repeat(A, 0, None)


def test_char_class_reads_ranges() -> None:
    assert char_class("a-z0-9_") == CharClass(((97, 122), (48, 57), (95, 95)))
    assert char_class("+-") == CharClass(((43, 43), (45, 45)))  # a dash at the end is a dash
    assert char_class('"\\', negated=True) == CharClass(((34, 34), (92, 92)), negated=True)
    assert char_class("a-z") is char_class("a-z")


@pytest.mark.parametrize(
    ("least", "most", "quantifier"),
    [(0, 1, "?"), (0, None, "*"), (1, None, "+"), (2, None, "{2,}"), (4, 4, "{4}"), (0, 32, "{0,32}")],
)
def test_repeat_quantifier(least: int, most: int | None, quantifier: str) -> None:
    assert Repeat(A, least, most).quantifier == quantifier


def test_referenced_rules_in_order() -> None:
    node = concat(
        RuleRef("x"), choice(RuleRef("y"), zero_or_more(RuleRef("z"))), FreeText("</a>"), RuleRef("x")
    )
    assert list(referenced_rules(node)) == ["x", "y", "z", "x"]
    assert list(referenced_rules(JsonValue("{}"))) == []


def test_nodes_are_frozen_values() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        A.text = "b"  # type: ignore[misc]
    assert FreeText("</a>", ("<a>",)) == FreeText("</a>", ("<a>",))
    assert len({FreeText("x"), FreeText("x"), JsonValue("{}"), JsonValue("{}")}) == 2
