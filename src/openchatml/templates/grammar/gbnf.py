"""The intermediate form written as GBNF, the grammar syntax of llama.cpp that xgrammar
(``Grammar.from_ebnf``) reads too.

Rules reachable from the start are written in the order they are first reached, the start
named ``root``; names are lower case with dashes (``call-3``). GBNF has no lexemes, no lazy
matching and no JSON Schema, so the writer spells them as rules: layout whitespace is a
bounded repetition, a JSON value is converted by :mod:`.json_schema`, and free text is the
automaton of the marker it stops at (see :meth:`GbnfWriter.free_text`). Literals and
character classes are escaped so that llama.cpp, xgrammar and llguidance's GBNF converter
read them alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from .builder import RuleSet
from .ir import (
    LAYOUT,
    WHITESPACE_MAX,
    CharClass,
    Choice,
    Concat,
    FreeText,
    JsonValue,
    Layout,
    LiteralText,
    Node,
    Repeat,
    RuleRef,
    Subgrammar,
    char_class,
    choice,
    concat,
    optional,
    zero_or_more,
)
from .json_schema import SchemaConverter
from .value_dialect import JSON

_HEX: Final = frozenset("0123456789abcdefABCDEF")
_BLANK: Final = " \t\r\n"
_NAMED_ESCAPES: Final = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"'}


def gbnf_literal(text: str) -> str:
    """A GBNF string: named escapes, ``\\xHH`` for other control characters (``\\u00HH``
    before a hex digit, which some parsers would read as part of the escape)."""
    out = []
    for i, char in enumerate(text):
        if char in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            follows_hex = i + 1 < len(text) and text[i + 1] in _HEX
            out.append(f"\\u{ord(char):04X}" if follows_hex else f"\\x{ord(char):02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _class_char(code: int) -> str:
    char = chr(code)
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    if char in "[]":
        return "\\" + char
    return f"\\x{code:02X}" if code < 0x20 or code == 0x7F else char


def gbnf_class(node: CharClass) -> str:
    """A GBNF character class that llama.cpp, xgrammar and llguidance's converter read alike:
    ranges of control characters last (``\\xHH``, never before a hex digit), a ``-`` at
    the very end, a ``^`` never first."""
    plain: list[str] = []
    control: list[str] = []
    dash = False
    for low, high in node.ranges:
        if low == high == ord("-"):
            dash = True
            continue
        text = _class_char(low) if low == high else _class_char(low) + "-" + _class_char(high)
        (control if _class_char(low).startswith("\\x") else plain).append(text)
    if plain and plain[0].startswith("^") and not node.negated:
        plain.append(plain.pop(0))
    body = "".join(plain) + "".join(control) + ("-" if dash else "")
    if body.startswith("^") and not node.negated:  # "^" alone, or before control characters
        body = "\\x5E" + body[1:]
    return f"[{'^' if node.negated else ''}{body}]"


class _MarkerAutomaton:
    """The Knuth–Morris–Pratt automaton of ``marker``: in state ``j`` the text read so far
    ends with the marker's first ``j`` characters (and with no longer part of it)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.alphabet = sorted(set(marker))
        self.failure = [0] * len(marker)
        matched = 0
        for i in range(1, len(marker)):
            while matched and marker[i] != marker[matched]:
                matched = self.failure[matched - 1]
            if marker[i] == marker[matched]:
                matched += 1
            self.failure[i] = matched

    def step(self, state: int, char: str) -> int:
        """The state after reading ``char`` in ``state``."""
        marker = self.marker
        while state and marker[state] != char:
            state = self.failure[state - 1]
        return state + 1 if marker[state] == char else 0

    def run(self, text: str) -> int | None:
        """The state after reading ``text`` from the start (``None``: it completed the marker)."""
        state = 0
        for char in text:
            state = self.step(state, char)
            if state == len(self.marker):
                return None
        return state


class GbnfWriter:
    """Writes the rules of a :class:`~.builder.RuleSet` as GBNF. The rules it adds (layout,
    JSON values, free text) go into a copy of the rule set."""

    def __init__(self, rule_set: RuleSet) -> None:
        self.rule_set = rule_set.copy()
        self.free_text_rules: dict[FreeText, str] = {}
        self.json_rules: dict[str, Node] = {}
        self.referenced: list[str] = []
        self.rule_bodies: dict[str, tuple[str, list[str]]] = {}

    def write(self, start: str) -> str:
        """The grammar of the rules reachable from ``start`` (named ``root``); a writer may
        write several starts of one grammar (the rules' text is kept between them)."""
        lines: list[str] = []
        seen: set[str] = set()
        queue = [start]
        while queue:
            name = queue.pop(0)
            if name in seen:
                continue
            seen.add(name)
            if name not in self.rule_bodies:
                self.referenced = []
                body = self.expression(self.rule_set.definitions[name], top=True)
                self.rule_bodies[name] = (body, self.referenced)
            body, referenced = self.rule_bodies[name]
            lines.append(f"{'root' if name == start else self.rule_name(name)} ::= {body}")
            queue.extend(ref for ref in referenced if ref not in seen)
        return "\n".join(lines) + "\n"

    def rule_name(self, ref: str) -> str:
        """How the rule ``ref`` is named (and noted as referenced by the rule being written)."""
        self.referenced.append(ref)
        return ref.lower().replace("_", "-")

    def expression(self, node: Node, *, top: bool = False) -> str:
        """``node`` as a GBNF expression (``top``: the whole body of a rule, alternatives
        written bare)."""
        if isinstance(node, LiteralText):
            return gbnf_literal(node.text)
        if isinstance(node, CharClass):
            return gbnf_class(node)
        if isinstance(node, RuleRef):
            return self.rule_name(node.name)
        if isinstance(node, Layout):
            blank = Repeat(char_class(_BLANK), 0, WHITESPACE_MAX)
            return self.rule_name(self.rule_set.add("ws", blank, key=("gbnf-ws",)).name)
        if isinstance(node, Concat):
            return " ".join(self.expression(item) for item in node.items) if node.items else '""'
        if isinstance(node, Choice):
            body = " | ".join(self.expression(item) for item in node.items)
            return body if top else f"({body})"
        if isinstance(node, Repeat):
            inner = node.item
            atom = self.expression(inner)
            if not isinstance(inner, LiteralText | CharClass | RuleRef) or (
                isinstance(inner, LiteralText) and len(inner.text) != 1
            ):
                atom = f"({self.expression(inner, top=True)})"
            return atom + node.quantifier
        if isinstance(node, FreeText):
            return self.free_text(node)
        if isinstance(node, Subgrammar):  # GBNF cannot embed it: free text, checked after parsing
            return self.free_text(node.fallback)
        return self.json(node)

    def json(self, node: JsonValue) -> str:
        """The schema's value converted into rules (once per schema)."""
        if node.schema not in self.json_rules:
            schema = json.loads(node.schema)
            self.json_rules[node.schema] = SchemaConverter(self.rule_set, JSON, schema).value(schema)
        return self.expression(self.json_rules[node.schema])

    def free_text(self, node: FreeText) -> str:
        """Free text as rules: the states of the Knuth–Morris–Pratt automaton of the marker
        it stops at (or must not hold), each a rule that never completes the marker, then
        the marker; before them, the states of a trie of the texts it must not begin with."""
        if node in self.free_text_rules:
            return self.free_text_rules[node]
        marker = node.stop or node.avoid
        any_text = self.rule_set.add("any", zero_or_more(char_class("\x00", negated=True)), key=("gbnf-any",))
        automaton = _MarkerAutomaton(marker)
        states = self._marker_states(automaton)

        def after(text: str) -> Node | None:
            """Where ``text`` leaves the marker's automaton (``None``: it completed it)."""
            if not marker:
                return any_text
            state = automaton.run(text)
            return None if state is None else states[state]

        entry = after("")
        assert entry is not None
        excluded = {head for head in node.not_start if head}
        if excluded:
            entry = self._exclusion_trie(excluded, automaton.alphabet, after)
        out = self.expression(entry)
        if node.stop:
            out += " " + self.expression(LiteralText(node.stop))
        if node.open:
            out = f"{self.expression(LAYOUT)} {self.expression(LiteralText(node.open))} {out}"
        self.free_text_rules[node] = out
        return out

    def _marker_states(self, automaton: _MarkerAutomaton) -> list[RuleRef]:
        """One rule per state of the automaton: any text from that state on that does not
        complete the marker."""
        marker = automaton.marker
        states = [RuleRef(self.rule_set.fresh_name("until")) for _ in marker]
        for state, ref in enumerate(states):
            moves = {char: automaton.step(state, char) for char in automaton.alphabet}
            advancing = sorted(char for char, target in moves.items() if target)
            other = CharClass(tuple((ord(char), ord(char)) for char in advancing), negated=True)
            alternatives: list[Node] = [concat(other, states[0])]
            alternatives += [
                concat(LiteralText(char), states[moves[char]])
                for char in advancing
                if moves[char] < len(marker)
            ]
            self.rule_set.define(ref.name, optional(choice(*alternatives)))
        return states

    def _exclusion_trie(
        self, excluded: set[str], alphabet: list[str], after: Callable[[str], Node | None]
    ) -> RuleRef:
        """The rules of a trie of the ``excluded`` beginnings (after leading whitespace):
        each node goes on along the trie, or leaves it for the marker's automaton
        (``after``) on a character that no excluded text takes there. Returns the root."""
        prefixes = {text[:length] for text in excluded for length in range(len(text))}
        nodes = {prefix: RuleRef(self.rule_set.fresh_name("head")) for prefix in sorted(prefixes)}
        for prefix, ref in nodes.items():
            explicit = sorted(
                {text[len(prefix)] for text in excluded if text.startswith(prefix)} | set(alphabet)
            )
            alternatives: list[Node] = [concat(char_class(_BLANK), ref)] if not prefix else []
            for char in explicit:
                if not prefix and char in _BLANK:
                    continue
                extended = prefix + char
                target: Node | None
                if extended in nodes:
                    target = nodes[extended]
                elif extended in excluded:
                    target = None  # an excluded beginning: no way on
                else:
                    target = after(extended)
                if target is not None and after(extended) is not None:
                    alternatives.append(concat(LiteralText(char), target))
            taken = explicit + (list(_BLANK) if not prefix else [])
            rest = after(prefix + "\x00")  # the prefix, then a character outside the marker
            assert rest is not None
            alternatives.append(
                concat(CharClass(tuple((ord(char), ord(char)) for char in taken), negated=True), rest)
            )
            self.rule_set.define(ref.name, optional(choice(*alternatives)))
        return nodes[""]
