"""Markers as nodes: optional whitespace at their edges and around inner line breaks."""

from __future__ import annotations

from openchatml.templates.grammar.ir import EMPTY, LAYOUT, Concat, LiteralText
from openchatml.templates.grammar.markers import marker_node, strip_edge


def test_marker_node() -> None:
    assert marker_node("") == EMPTY
    assert marker_node("\n") == LAYOUT
    assert marker_node("<tool_call>") == LiteralText("<tool_call>")
    assert marker_node("<tool_call>\n") == Concat((LiteralText("<tool_call>"), LAYOUT))
    assert marker_node("\n</function>\n</tool_call>") == Concat(
        (LAYOUT, LiteralText("</function>"), LAYOUT, LiteralText("</tool_call>"))
    )
    assert marker_node("a \n b", split=False) == LiteralText("a \n b")


def test_strip_edge() -> None:
    assert strip_edge("<call> [ ", "[", end=True) == ("<call> ", True)
    assert strip_edge(" ]</call>", "]", end=False) == ("</call>", True)
    assert strip_edge("<call>", "[", end=True) == ("<call>", False)
