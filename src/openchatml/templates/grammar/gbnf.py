"""The intermediate form written as GBNF, the grammar syntax of llama.cpp that xgrammar
(``Grammar.from_ebnf``) reads too.

Rules reachable from the start are written in the order they are first reached, the start
named ``root``; names are lower case with dashes (``call-3``). GBNF has no lexemes, no lazy
matching and no JSON Schema, so the writer spells them as rules: layout whitespace is a
bounded repetition, a JSON value is converted by :mod:`.json_schema`, and free text is the
automaton of the marker it stops at (see :meth:`GbnfWriter.free_text`). Literals and
character classes are escaped so that llama.cpp, xgrammar and llguidance's GBNF converter
read them alike.

Given the tokenizer's special tokens, the writer writes llama.cpp's own dialect (the text
xgrammar cannot read): a marker that is a special token becomes a token reference
``<[id]>``, matched by id only, never by its spelled text. llama.cpp matches a special
token against text rules by its text, so free text never holds the text of any special
token (its automaton avoids them all): a special token is sampled where the grammar names
it, nowhere else. llama.cpp samples an end-of-generation token only where its grammar may
end, and outside the grammar; a special token that only ever ends the output (Harmony's
``<|return|>``, ``<|call|>``) is written optional (``<[id]>?``), so that the grammar may end
before it. A bound on free text (``FreeText.max_tokens``) becomes a bound in characters,
which llama.cpp checks cheaply: at most ``max_tokens`` steps of the automaton, each a
character or a run that starts like a special token and breaks off (a token holds at
least one character, so the text stays within about ``max_tokens`` tokens); free text that
must not begin with given texts (``not_start``) stays unbounded. Free text with a count of
characters (a value's ``least``/``most``) is that many characters none of which begins a
text it must not hold (its ``forbid`` texts, the special tokens); its ``pattern`` is not
carried (as in the JSON values GBNF spells). Where special tokens are
spelled ``<|…|>``, runs of characters — JSON strings, a custom tool's text — never hold
``<|`` (:mod:`.opening_guard`).

A custom tool's grammar (:class:`~.ir.Subgrammar`, Lark or a regular expression) is read
into rules (:mod:`.custom_grammar`); one that GBNF cannot carry becomes free text up to its
stop, checked after parsing (:func:`~.custom_grammar.custom_grammar_problem` says why, for
a server to refuse it first).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from .builder import RuleSet
from .custom_grammar import custom_grammar_rules
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
from .opening_guard import guarded_repeat, guards
from .regex_reader import UnsupportedGrammarError
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


def split_markers(text: str, special_tokens: list[tuple[str, int]]) -> list[tuple[str, int | None]]:
    """``text`` cut into plain pieces (``None``) and the special tokens it holds (their ids);
    ``special_tokens`` longest first, so that the longest marker wins."""
    out: list[tuple[str, int | None]] = []
    pending = ""
    i = 0
    while i < len(text):
        for marker, token in special_tokens:
            if marker and text.startswith(marker, i):
                if pending:
                    out.append((pending, None))
                    pending = ""
                out.append((marker, token))
                i += len(marker)
                break
        else:
            pending += text[i]
            i += 1
    if pending:
        out.append((pending, None))
    return out


def ending_markers(rule_set: RuleSet, start: str, special_tokens: list[tuple[str, int]]) -> frozenset[str]:
    """The markers of ``special_tokens`` (longest first) that only ever end the output of
    ``start``: each place that names one is the last thing the output may hold."""
    last: set[str] = set()
    inner: set[str] = set()
    visited: set[tuple[str, bool]] = set()

    def visit(node: Node, tail: bool) -> None:
        if isinstance(node, LiteralText):
            parts = split_markers(node.text, special_tokens)
            for index, (piece, token) in enumerate(parts):
                if token is not None:
                    (last if tail and index == len(parts) - 1 else inner).add(piece)
        elif isinstance(node, Concat):
            for index, item in enumerate(node.items):
                visit(item, tail and index == len(node.items) - 1)
        elif isinstance(node, Choice):
            for item in node.items:
                visit(item, tail)
        elif isinstance(node, Repeat):
            visit(node.item, tail and node.most == 1)
        elif isinstance(node, RuleRef):
            if (node.name, tail) not in visited:
                visited.add((node.name, tail))
                visit(rule_set.definitions[node.name], tail)
        elif isinstance(node, FreeText):
            visit(LiteralText(node.open), False)
            visit(LiteralText(node.stop), tail)
        elif isinstance(node, Subgrammar):
            visit(node.fallback, tail)

    visit(RuleRef(start), True)
    return frozenset(last - inner)


class _MarkerAutomaton:
    """The automaton of text that never completes one of ``markers`` (Aho–Corasick): in
    state ``j`` the text read so far ends with ``prefixes[j]``, the longest proper prefix
    of a marker it ends with; states are numbered shortest prefix first (for one marker,
    state ``j`` has read its first ``j`` characters)."""

    def __init__(self, markers: Iterable[str]) -> None:
        self.markers = tuple(sorted({marker for marker in markers if marker}))
        self.prefixes = sorted(
            {marker[:length] for marker in self.markers for length in range(len(marker))},
            key=lambda prefix: (len(prefix), prefix),
        )
        self.index = {prefix: state for state, prefix in enumerate(self.prefixes)}
        self.alphabet = sorted(set("".join(self.markers)))
        self.moves: dict[tuple[int, str], int | None] = {}

    def step(self, state: int, char: str) -> int | None:
        """The state after reading ``char`` in ``state`` (``None``: it completed a marker)."""
        key = (state, char)
        if key not in self.moves:
            text = self.prefixes[state] + char
            if any(text.endswith(marker) for marker in self.markers):
                self.moves[key] = None
            else:
                self.moves[key] = next(
                    self.index[text[i:]] for i in range(len(text) + 1) if text[i:] in self.index
                )
        return self.moves[key]

    def run(self, text: str) -> int | None:
        """The state after reading ``text`` from the start (``None``: it completed a marker)."""
        state = 0
        for char in text:
            target = self.step(state, char)
            if target is None:
                return None
            state = target
        return state


class GbnfWriter:
    """Writes the rules of a :class:`~.builder.RuleSet` as GBNF. The rules it adds (layout,
    JSON values, free text) go into a copy of the rule set. ``special_tokens`` (marker text
    → token id): write llama.cpp's dialect, with token references (see the module
    docstring); none: the GBNF that llama.cpp and xgrammar both read."""

    def __init__(self, rule_set: RuleSet, special_tokens: Mapping[str, int] | None = None) -> None:
        self.rule_set = rule_set.copy()
        self.special_tokens = sorted((special_tokens or {}).items(), key=lambda item: -len(item[0]))
        self.ending: frozenset[str] = frozenset()
        self.free_text_rules: dict[FreeText, str] = {}
        self.json_rules: dict[str, Node] = {}
        self.automata: dict[tuple[str, ...], tuple[_MarkerAutomaton, list[RuleRef]]] = {}
        self.segment_rules: dict[tuple[str, ...], tuple[RuleRef, RuleRef]] = {}
        self.referenced: list[str] = []
        self.rule_bodies: dict[str, tuple[str, list[str]]] = {}
        self.guard = guards(text for text, _ in self.special_tokens)
        self.subgrammar_rules: dict[tuple[str, str], Node | None] = {}

    def write(self, start: str) -> str:
        """The grammar of the rules reachable from ``start`` (named ``root``); a writer may
        write several starts of one grammar (the rules' text is kept between them)."""
        if self.special_tokens:
            ending = ending_markers(self.rule_set, start, self.special_tokens)
            if ending != self.ending:  # the markers are written otherwise: rewrite the rules
                self.ending = ending
                self.rule_bodies.clear()
                self.free_text_rules.clear()
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

    def pieces(self, text: str) -> list[str]:
        """``text`` as GBNF: literals, and with special tokens, token references (those that
        only end the output optional)."""
        out: list[str] = []
        for piece, token in split_markers(text, self.special_tokens):
            if token is None:
                out.append(gbnf_literal(piece))
            else:
                out.append(f"<[{token}]>" + ("?" if piece in self.ending else ""))
        return out

    def expression(self, node: Node, *, top: bool = False) -> str:
        """``node`` as a GBNF expression (``top``: the whole body of a rule, alternatives
        written bare)."""
        if isinstance(node, LiteralText):
            return " ".join(self.pieces(node.text)) or '""'
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
            guarded = guarded_repeat(self.rule_set, node) if self.guard else None
            if guarded is not None:
                return self.expression(guarded, top=top)
            inner = node.item
            atom = self.expression(inner)
            if not isinstance(inner, LiteralText | CharClass | RuleRef) or (
                isinstance(inner, LiteralText) and len(inner.text) != 1
            ):
                atom = f"({self.expression(inner, top=True)})"
            return atom + node.quantifier
        if isinstance(node, FreeText):
            return self.free_text(node)
        if isinstance(node, Subgrammar):
            return self.subgrammar(node)
        return self.json(node)

    def subgrammar(self, node: Subgrammar) -> str:
        """A custom tool's grammar as rules (read once), then its stop; one that GBNF
        cannot carry is free text up to the stop."""
        key = (node.syntax, node.definition)
        if key not in self.subgrammar_rules:
            try:
                self.subgrammar_rules[key] = custom_grammar_rules(self.rule_set, node.syntax, node.definition)
            except UnsupportedGrammarError:
                self.subgrammar_rules[key] = None
        body = self.subgrammar_rules[key]
        if body is None:
            return self.free_text(node.fallback)
        stop = [self.expression(LiteralText(node.stop))] if node.stop else []
        return " ".join([self.expression(body), *stop])

    def json(self, node: JsonValue) -> str:
        """The schema's value converted into rules (once per schema)."""
        if node.schema not in self.json_rules:
            schema = json.loads(node.schema)
            self.json_rules[node.schema] = SchemaConverter(self.rule_set, JSON, schema).value(schema)
        return self.expression(self.json_rules[node.schema])

    def free_text(self, node: FreeText) -> str:
        """Free text as rules: the states of the automaton of the marker it stops at (or must
        not hold) and, with special tokens, of theirs too, each a rule that never completes
        one, then the marker; before them, the states of a trie of the texts it must not
        begin with. With special tokens and ``max_tokens``, at most that many steps of the
        automaton (:meth:`bounded_text`)."""
        if node in self.free_text_rules:
            return self.free_text_rules[node]
        marker = node.stop or node.avoid
        markers = [marker, *node.forbid, *(text for text, _ in self.special_tokens)]
        if node.least or node.most is not None:
            out = self.expression(self.counted_text(node))
        elif self.special_tokens and node.max_tokens is not None and not node.not_start:
            out = self.bounded_text(markers, node.max_tokens)
        else:
            out = self.expression(self.unbounded_text(markers, node.not_start))
        if node.stop:
            out += " " + self.expression(LiteralText(node.stop))
        if node.open:
            out = f"{self.expression(LAYOUT)} {self.expression(LiteralText(node.open))} {out}"
        self.free_text_rules[node] = out
        return out

    def counted_text(self, node: FreeText) -> Node:
        """``node.least`` to ``node.most`` characters, none of them the first character of
        a text it must not hold (its ``forbid`` texts, else its stop; the special tokens;
        what it must not begin with): a run that can hold none of them."""
        texts = [*(node.forbid or (node.stop.strip(),)), *node.not_start]
        texts += [text for text, _ in self.special_tokens]
        firsts = sorted({ord(text[0]) for text in texts if text})
        excluded = CharClass(tuple((code, code) for code in firsts) or ((0, 0),), negated=True)
        return Repeat(excluded, node.least, node.most)

    def unbounded_text(self, markers: list[str], not_start: tuple[str, ...]) -> Node:
        """Any text that completes none of ``markers`` and does not begin (after whitespace)
        with one of ``not_start``: the rule of its automaton's first state, or of a trie."""
        any_text = self.rule_set.add("any", zero_or_more(char_class("\x00", negated=True)), key=("gbnf-any",))
        alphabet: list[str] = []
        states: list[RuleRef] = []
        if any(markers):
            automaton, states = self.marker_states(markers)
            alphabet = automaton.alphabet

        def after(text: str) -> Node | None:
            """Where ``text`` leaves the markers' automaton (``None``: it completed one)."""
            if not states:
                return any_text
            state = automaton.run(text)
            return None if state is None else states[state]

        excluded = {head for head in not_start if head}
        if excluded:
            return self._exclusion_trie(excluded, alphabet, after)
        entry = after("")
        assert entry is not None
        return entry

    def marker_states(self, markers: list[str]) -> tuple[_MarkerAutomaton, list[RuleRef]]:
        """The automaton of ``markers`` and one rule per state: any text from that state on
        that completes none of them (built once per set of markers with special tokens)."""
        key = tuple(sorted(set(markers)))
        if key in self.automata:
            return self.automata[key]
        automaton = _MarkerAutomaton(markers)
        states = [RuleRef(self.rule_set.fresh_name("until")) for _ in automaton.prefixes]
        for state, ref in enumerate(states):
            moves = {char: automaton.step(state, char) for char in automaton.alphabet}
            advancing = sorted(char for char, target in moves.items() if target != 0)
            other = CharClass(tuple((ord(char), ord(char)) for char in advancing), negated=True)
            alternatives: list[Node] = [concat(other, states[0])]
            for char in advancing:
                target = moves[char]
                if target is not None:
                    alternatives.append(concat(LiteralText(char), states[target]))
            self.rule_set.define(ref.name, optional(choice(*alternatives)))
        if self.special_tokens:
            self.automata[key] = automaton, states
        return automaton, states

    def bounded_text(self, markers: list[str], bound: int) -> str:
        """Text that completes none of ``markers``, at most ``bound`` steps of their
        automaton: a step reads one character from its first state back to it (through the
        states of a marker's beginning, which count as one), and text may end on a
        marker's beginning."""
        key = tuple(sorted(set(markers)))
        if key not in self.segment_rules:
            automaton, _ = self.marker_states(markers)
            count = len(automaton.prefixes)
            returns = [RuleRef(self.rule_set.fresh_name("step")) for _ in range(count)]
            endings = [RuleRef(self.rule_set.fresh_name("partial")) for _ in range(count)]
            for state in range(count):
                moves = {char: automaton.step(state, char) for char in automaton.alphabet}
                advancing = sorted(char for char, target in moves.items() if target != 0)
                other = CharClass(tuple((ord(char), ord(char)) for char in advancing), negated=True)
                back: list[Node] = [other]
                onward: list[Node] = []
                for char in advancing:
                    target = moves[char]
                    if target is not None:
                        back.append(concat(LiteralText(char), returns[target]))
                        onward.append(concat(LiteralText(char), endings[target]))
                self.rule_set.define(returns[state].name, choice(*back))
                self.rule_set.define(
                    endings[state].name, optional(choice(*onward)) if state else choice(*onward)
                )
            self.segment_rules[key] = returns[0], endings[0]
        step, ending = self.segment_rules[key]
        return f"{self.rule_name(step.name)}{{0,{bound}}} {self.rule_name(ending.name)}?"

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
