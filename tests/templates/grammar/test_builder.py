"""Named rules and object members: rule names, rules shared by key, recursion, copies;
members in order and in any order, run by llguidance."""

from __future__ import annotations

from collections.abc import Callable

from grammar_checks import lark_accepts

from openchatml.templates.grammar.builder import (
    ANY_ORDER_LIMIT,
    START,
    Member,
    RuleSet,
    members_in_any_order,
    members_in_order,
)
from openchatml.templates.grammar.ir import LiteralText, Node, RuleRef, choice, concat, optional
from openchatml.templates.grammar.lark import LarkWriter


def test_rule_names_count_up_and_keys_share_rules() -> None:
    rules = RuleSet()
    first = rules.add("call", LiteralText("a"))
    shared = rules.add("str", LiteralText('""'), terminal=True, key=("str",))
    again = rules.add("str", LiteralText("ignored"), terminal=True, key=("str",))
    assert (first, shared, again) == (RuleRef("call_1"), RuleRef("str_2"), RuleRef("str_2"))
    assert rules.definitions == {"call_1": LiteralText("a"), "str_2": LiteralText('""')}
    assert rules.terminals == {"str_2"}
    assert rules.fresh_name("x") == "x_3"


def test_forward_references_allow_recursion() -> None:
    rules = RuleSet()
    ref, new = rules.forward("list", "key")
    assert new and ref.name not in rules.definitions
    rules.define(ref.name, concat(LiteralText("("), optional(ref), LiteralText(")")))
    assert rules.forward("list", "key") == (ref, False)
    rules.define(START, ref)
    lark = LarkWriter(rules, {}).write(START)
    assert lark_accepts(lark, "((()))") and not lark_accepts(lark, "(()")


def test_copies_are_independent() -> None:
    rules = RuleSet()
    rules.add("a", LiteralText("a"), key="a")
    copy = rules.copy()
    copy.add("b", LiteralText("b"), terminal=True)
    assert copy.add("a", LiteralText("other"), key="a") == RuleRef("a_1")
    assert list(rules.definitions) == ["a_1"] and not rules.terminals
    assert list(copy.definitions) == ["a_1", "b_2"] and copy.terminals == {"b_2"}
    assert rules.fresh_name("c") == "c_2"  # names in the copy do not advance the original


Arrange = Callable[[RuleSet, list[Member], Node, Node | None], Node]


def _object(arrange: Arrange, names: str, required: str, extra: Node | None = None) -> str:
    """The Lark grammar of ``{…}`` holding members ``k=1`` for each letter of ``names``
    (those in ``required`` required), ``,`` between them."""
    rules = RuleSet()
    members = [(LiteralText(f"{name}=1"), name in required) for name in names]
    body = arrange(rules, members, LiteralText(","), extra)
    rules.define(START, concat(LiteralText("{"), body, LiteralText("}")))
    return LarkWriter(rules, {}).write(START)


def test_members_in_order() -> None:
    lark = _object(members_in_order, "abc", "b")
    for text in ("{b=1}", "{a=1,b=1}", "{a=1,b=1,c=1}", "{b=1,c=1}"):
        assert lark_accepts(lark, text), text
    for text in ("{}", "{b=1,a=1}", "{a=1,b=1,b=1}", "{a=1,,b=1}", "{,b=1}"):
        assert not lark_accepts(lark, text), text
    extra = choice(LiteralText("x=1"), LiteralText("y=1"))
    with_extra = _object(members_in_order, "ab", "", extra)
    for text in ("{}", "{x=1}", "{a=1,y=1,x=1}", "{b=1,x=1}"):
        assert lark_accepts(with_extra, text), text
    assert not lark_accepts(with_extra, "{x=1,a=1}")


def test_members_in_any_order_each_once() -> None:
    lark = _object(members_in_any_order, "abc", "ac")
    for text in ("{a=1,c=1}", "{c=1,a=1}", "{b=1,c=1,a=1}", "{c=1,b=1,a=1}"):
        assert lark_accepts(lark, text), text
    for text in ("{a=1}", "{a=1,a=1,c=1}", "{a=1,c=1,b=1,b=1}", "{}"):
        assert not lark_accepts(lark, text), text


def test_members_in_any_order_past_the_limit() -> None:
    """Past the limit the required members are still tracked, the optional ones may repeat."""
    names = "abcdefgh"
    assert len(names) > ANY_ORDER_LIMIT
    lark = _object(members_in_any_order, names, "ab")
    assert lark_accepts(lark, "{h=1,b=1,c=1,a=1,c=1}")
    assert not lark_accepts(lark, "{h=1,b=1,c=1}")
    assert not lark_accepts(lark, "{a=1,b=1,a=1}")


def test_many_required_members_come_in_order() -> None:
    names = "abcdefghij"[: ANY_ORDER_LIMIT + 1]
    lark = _object(members_in_any_order, names, names, LiteralText("z=1"))
    in_order = ",".join(f"{name}=1" for name in names)
    assert lark_accepts(lark, "{" + in_order + "}")
    assert lark_accepts(lark, "{z=1," + in_order + ",z=1}")
    assert not lark_accepts(lark, "{" + ",".join(f"{name}=1" for name in reversed(names)) + "}")
