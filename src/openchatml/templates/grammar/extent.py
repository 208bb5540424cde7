"""How long a part of a grammar can be: the most characters a node spells, written
compactly (layout whitespace counted as one character), or ``None`` where it has no bound
(an unbounded repetition, free text, a recursive rule, a string with no ``maxLength``).

A sampled token holds at least one character, so a part of at most ``n`` characters takes
at most about ``n`` tokens: a budget split uses it to leave the calls the room they need.
A string's ``pattern`` bounds it where the pattern is a regular expression of bounded
length (``[0-9]{4}-[a-z]{2,6}``: eleven).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .builder import RuleSet
from .ir import CharClass, Choice, Concat, FreeText, JsonValue, Layout, LiteralText, Node, Repeat, RuleRef
from .json_schema import SchemaConverter
from .regex_reader import UnsupportedGrammarError, read_regex
from .value_dialect import JSON


class Extent:
    """Measures the nodes of ``rule_set`` (each rule once)."""

    def __init__(self, rule_set: RuleSet) -> None:
        self.rule_set = rule_set
        self.known: dict[str, int | None] = {}
        self.open: set[str] = set()

    def longest(self, node: Node) -> int | None:
        """The most characters ``node`` spells (``None``: no bound)."""
        if isinstance(node, LiteralText):
            return len(node.text)
        if isinstance(node, CharClass | Layout):
            return 1
        if isinstance(node, Concat):
            return _total(self.longest(item) for item in node.items)
        if isinstance(node, Choice):
            sizes = [self.longest(item) for item in node.items]
            return None if None in sizes else max((s for s in sizes if s is not None), default=0)
        if isinstance(node, Repeat):
            item = self.longest(node.item)
            if item == 0:
                return 0
            return None if item is None or node.most is None else item * node.most
        if isinstance(node, RuleRef):
            return self.rule(node.name)
        if isinstance(node, FreeText):
            return self.free_text(node)
        if isinstance(node, JsonValue):
            return json_longest(json.loads(node.schema))
        return None  # a nested grammar

    def rule(self, name: str) -> int | None:
        """The longest text of the rule ``name`` (a rule that refers to itself: ``None``)."""
        if name in self.known:
            return self.known[name]
        if name in self.open:
            return None
        self.open.add(name)
        size = self.longest(self.rule_set.definitions[name])
        self.open.discard(name)
        self.known[name] = size
        return size

    @staticmethod
    def free_text(node: FreeText) -> int | None:
        """Free text's bound: its ``most`` characters, else its pattern's longest match."""
        most = node.most if node.most is not None else pattern_longest(node.pattern)
        return None if most is None else most + len(node.open) + len(node.stop)


def _total(sizes: Any) -> int | None:
    out = 0
    for size in sizes:
        if size is None:
            return None
        out += size
    return out


def pattern_longest(pattern: str) -> int | None:
    """The longest text an anchored ``pattern`` (``^…$``) matches; ``None`` where it is
    unanchored, unbounded or not a regular expression the reader takes."""
    if not pattern.startswith("^") or not pattern.endswith("$") or pattern.endswith("\\$"):
        return None
    try:
        node = read_regex(pattern[1:-1])
    except UnsupportedGrammarError:
        return None
    return Extent(RuleSet()).longest(node)


def json_longest(schema: Any) -> int | None:
    """The longest compact JSON value of ``schema`` (a string's ``pattern`` bounds it where
    it has no ``maxLength``)."""
    bounded = _patterns_as_lengths(schema)
    rule_set = RuleSet()
    node = SchemaConverter(rule_set, JSON, bounded).value(bounded)
    return Extent(rule_set).longest(node)


def _patterns_as_lengths(schema: Any) -> Any:
    """``schema`` with each string ``pattern`` of bounded length as a ``maxLength``."""
    if isinstance(schema, list):
        return [_patterns_as_lengths(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {key: _patterns_as_lengths(value) for key, value in schema.items()}
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and "maxLength" not in schema:
        most = pattern_longest(pattern)
        if most is not None:
            out["maxLength"] = most
    return out
