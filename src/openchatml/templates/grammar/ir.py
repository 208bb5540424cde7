"""The intermediate form of a grammar: the nodes every grammar is built from before it is
written out in a grammar syntax (:mod:`.lark`, :mod:`.gbnf`).

Theory of operation. A grammar is a set of named rules (:class:`~.builder.RuleSet`), each
a tree of nodes: exact text (:class:`LiteralText`), one character of a class
(:class:`CharClass`), a sequence (:class:`Concat`), alternatives (:class:`Choice`), a
bounded or unbounded repetition (:class:`Repeat`), a reference to another rule
(:class:`RuleRef`), optional layout whitespace (:class:`Layout`), free text up to a marker
(:class:`FreeText`), a JSON value conforming to a schema (:class:`JsonValue`) and text in
the language of a grammar the request brings (:class:`Subgrammar`). The last three are kept
whole so that each writer can spell them its own way: Lark has lazy lexemes, llguidance's
``%json`` and nested ``%lark`` grammars; GBNF has none of them and gets rules (a nested
grammar read into rules where GBNF can say it, else free text).

Nodes are frozen, slotted and hashable: equal nodes are one node, which lets the builders
deduplicate alternatives and share rules. Build them with :func:`concat`, :func:`choice`,
:func:`optional`, :func:`zero_or_more` and :func:`char_class`, which keep trees flat.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

WHITESPACE_MAX: Final = 32
"""The most layout whitespace accepted in one place."""


@dataclass(frozen=True, slots=True)
class LiteralText:
    """Exactly ``text``."""

    text: str


@dataclass(frozen=True, slots=True)
class CharClass:
    """One character whose code point lies in one of the inclusive ``ranges`` (or, when
    ``negated``, in none of them)."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Concat:
    """The ``items`` one after the other (no items: the empty string)."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Choice:
    """One of the ``items``."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """``item`` at least ``least`` and at most ``most`` times (``None``: no bound)."""

    item: Node
    least: int
    most: int | None

    @property
    def quantifier(self) -> str:
        """The repetition as Lark and GBNF both write it after an atom: ``?``, ``*``, ``+``,
        ``{n}``, ``{m,}`` or ``{m,n}``."""
        least, most = self.least, self.most
        if (least, most) == (0, 1):
            return "?"
        if (least, most) == (0, None):
            return "*"
        if (least, most) == (1, None):
            return "+"
        if most is None:
            return f"{{{least},}}"
        return f"{{{least}}}" if least == most else f"{{{least},{most}}}"


@dataclass(frozen=True, slots=True)
class RuleRef:
    """The rule called ``name``."""

    name: str


@dataclass(frozen=True, slots=True)
class Layout:
    """Optional layout whitespace: spaces, tabs and line breaks, at most
    :data:`WHITESPACE_MAX` of them."""


@dataclass(frozen=True, slots=True)
class FreeText:
    """Free text: up to and including the first ``stop`` (``""``: to the end, never holding
    ``avoid``), not beginning (after whitespace) with any of ``not_start``; with ``open``,
    whitespace and ``open`` come first (one lexeme in Lark: whitespace before a marker must
    not be taken for free text). ``max_tokens``: at most this many tokens of text (the
    stop marker then follows); ``None``: unbounded. A value read back from between markers
    holds ``least`` to ``most`` characters (``None``: no bound) before ``stop``, matches the
    JSON Schema ``pattern`` (a search, as JSON Schema reads it) where the writer can say so,
    and holds none of ``forbid`` (a text that ends ``stop`` only at its end)."""

    stop: str
    not_start: tuple[str, ...] = ()
    avoid: str = ""
    open: str = ""
    max_tokens: int | None = None
    least: int = 0
    most: int | None = None
    pattern: str = ""
    forbid: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Subgrammar:
    """Text in the language of a grammar the request brings — a Lark grammar
    (``syntax == "lark"``, llguidance's dialect) or a regular expression (``"regex"``) —
    then ``stop``. A writer that cannot embed it reads it into rules
    (:mod:`.custom_grammar`), or where it cannot, writes ``FreeText(stop)``
    (:attr:`fallback`): the text is then checked after parsing."""

    syntax: Literal["lark", "regex"]
    definition: str
    stop: str

    @property
    def fallback(self) -> FreeText:
        """Free text up to ``stop``, for writers that cannot embed the grammar."""
        return FreeText(self.stop)


@dataclass(frozen=True, slots=True)
class JsonValue:
    """A JSON value conforming to ``schema`` (JSON text, with the ``$defs`` it refers to)."""

    schema: str


Node: TypeAlias = (
    LiteralText | CharClass | Concat | Choice | Repeat | RuleRef | Layout | FreeText | JsonValue | Subgrammar
)
"""Any node of the intermediate form."""

EMPTY: Final = Concat(())
"""The empty string."""
LAYOUT: Final = Layout()
"""Optional layout whitespace."""


def concat(*items: Node) -> Node:
    """The items in sequence, flattened: no empty parts, runs of layout whitespace merged;
    a single item stands alone."""
    out: list[Node] = []
    for item in items:
        for part in item.items if isinstance(item, Concat) else (item,):
            if isinstance(part, LiteralText) and not part.text:
                continue
            if isinstance(part, Layout) and out and isinstance(out[-1], Layout):
                continue
            out.append(part)
    return out[0] if len(out) == 1 else Concat(tuple(out))


def choice(*items: Node) -> Node:
    """Alternatives, flattened (small ones deduplicated); an empty one makes the rest optional."""
    out: list[Node] = []
    seen: set[Node] = set()
    empty = False
    for item in items:
        for part in item.items if isinstance(item, Choice) else (item,):
            if isinstance(part, Concat) and not part.items:
                empty = True
            elif isinstance(part, LiteralText | CharClass | RuleRef | Layout):
                if part not in seen:
                    seen.add(part)
                    out.append(part)
            else:
                out.append(part)
    if not out:
        return EMPTY
    body = out[0] if len(out) == 1 else Choice(tuple(out))
    return optional(body) if empty else body


def optional(item: Node) -> Node:
    """``item`` or nothing."""
    return item if item == EMPTY else Repeat(item, 0, 1)


def zero_or_more(item: Node) -> Node:
    """``item`` any number of times."""
    return Repeat(item, 0, None)


@functools.cache
def char_class(spec: str, *, negated: bool = False) -> CharClass:
    """A character class from ``"a-z0-9_"``-style text (``-`` between two characters is a range)."""
    ranges: list[tuple[int, int]] = []
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            ranges.append((ord(spec[i]), ord(spec[i + 2])))
            i += 3
        else:
            ranges.append((ord(spec[i]), ord(spec[i])))
            i += 1
    return CharClass(tuple(ranges), negated)


def referenced_rules(node: Node) -> Iterator[str]:
    """The names of the rules ``node`` refers to, in order of appearance."""
    if isinstance(node, RuleRef):
        yield node.name
    elif isinstance(node, Concat | Choice):
        for item in node.items:
            yield from referenced_rules(item)
    elif isinstance(node, Repeat):
        yield from referenced_rules(node.item)
