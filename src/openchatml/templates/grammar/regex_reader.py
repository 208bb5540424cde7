"""Regular expressions read into the intermediate form (:mod:`.ir`), for a writer that
cannot embed one (GBNF).

The dialect is the one custom tools and Lark terminals take: what both Python's ``re`` and
llguidance (Rust's ``regex`` syntax) read, parsed by the standard library's own parser
(``re._parser``). Literals, ``.``, classes (ranges, negation, ``\\d`` ``\\s`` ``\\w`` and
their negations), groups, alternation, the quantifiers ``? * + {m} {m,} {m,n}`` (lazy ones
match the same texts), the flags ``i`` ``s`` ``m`` ``x`` ``a`` (inline or given) are
read; the anchors ``^`` ``$`` ``\\A`` ``\\Z`` are dropped (the whole text matches). Refused
with :class:`UnsupportedGrammarError`: back-references, look-around, word boundaries,
conditionals, atomic groups and possessive quantifiers, and nested sets or set operations
in a class (``[[:alpha:]]``, ``[a-z&&[^c]]``, which the two dialects read differently).

A class of more than :data:`~.char_sets.CLASS_LIMIT` ranges keeps its ASCII ranges and its
widest others (``\\w`` has over 700): the grammar then takes a subset of the expression's
texts, never one it does not match.
"""

from __future__ import annotations

import importlib
import re
import warnings
from typing import Any, Final

from . import char_sets
from .char_sets import Ranges
from .ir import CharClass, LiteralText, Node, Repeat, choice, concat

sre: Any = importlib.import_module("re._constants")  # typeshed has no stubs for these two
sre_parse: Any = importlib.import_module("re._parser")
MAX_REPEAT: Final = sre.MAXREPEAT
_FLAGS: Final = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE, "x": re.VERBOSE, "u": 0}
"""Lark's flags after a ``/regex/`` (``u`` is the default here)."""
_CATEGORIES: Final = {
    sre.CATEGORY_DIGIT: ("d", False),
    sre.CATEGORY_NOT_DIGIT: ("d", True),
    sre.CATEGORY_SPACE: ("s", False),
    sre.CATEGORY_NOT_SPACE: ("s", True),
    sre.CATEGORY_WORD: ("w", False),
    sre.CATEGORY_NOT_WORD: ("w", True),
}
_DROPPED_ANCHORS: Final = (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING, sre.AT_END, sre.AT_END_STRING)
_REFUSED: Final = {
    sre.GROUPREF: "back-references",
    sre.GROUPREF_EXISTS: "conditional groups",
    sre.ASSERT: "look-around",
    sre.ASSERT_NOT: "look-around",
    sre.ATOMIC_GROUP: "atomic groups",
    sre.POSSESSIVE_REPEAT: "possessive quantifiers",
}


class UnsupportedGrammarError(ValueError):
    """A grammar (or regular expression) holds what the target syntax cannot express."""


def lark_flags(letters: str) -> int:
    """The ``re`` flags of a Lark regular expression's flag letters (``/…/is``). Raises
    :class:`UnsupportedGrammarError` for one it does not know."""
    flags = 0
    for letter in letters:
        if letter not in _FLAGS:
            raise UnsupportedGrammarError(f"the regular expression flag {letter!r} is not supported")
        flags |= _FLAGS[letter]
    return flags


def read_regex(pattern: str, flags: int = 0) -> Node:
    """The texts ``pattern`` matches whole, as a node (see the module docstring). Raises
    :class:`UnsupportedGrammarError` for what it cannot express, or a pattern ``re`` does
    not read."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)  # a nested set or a set operation
            parsed = sre_parse.parse(pattern, flags)
    except FutureWarning as exc:
        raise UnsupportedGrammarError(f"nested sets or set operations in a class: {exc}") from None
    except (re.error, OverflowError, RecursionError) as exc:
        raise UnsupportedGrammarError(f"the regular expression does not compile: {exc}") from None
    try:
        return _sequence(list(parsed), parsed.state.flags)
    except RecursionError:
        raise UnsupportedGrammarError("the regular expression is nested too deeply") from None


def _sequence(items: list[tuple[Any, Any]], flags: int) -> Node:
    """The elements in sequence, runs of literal text joined."""
    parts: list[Node] = []
    for op, value in items:
        node = _item(op, value, flags)
        if isinstance(node, LiteralText) and parts and isinstance(parts[-1], LiteralText):
            parts[-1] = LiteralText(parts[-1].text + node.text)
        else:
            parts.append(node)
    return concat(*parts)


def _item(op: Any, value: Any, flags: int) -> Node:
    """One element of the parsed pattern."""
    if op in _REFUSED:
        raise UnsupportedGrammarError(f"{_REFUSED[op]} cannot be expressed")
    if op is sre.LITERAL:
        return _literal(value, flags)
    if op in (sre.NOT_LITERAL, sre.ANY, sre.IN):
        return _class(op, value, flags)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        least, most, body = value
        return Repeat(_sequence(list(body), flags), least, None if most == MAX_REPEAT else most)
    if op is sre.SUBPATTERN:
        _group, added, removed, body = value
        return _sequence(list(body), (flags | added) & ~removed)
    if op is sre.BRANCH:
        return _alternatives([_sequence(list(branch), flags) for branch in value[1]])
    if op is sre.AT:
        if value in _DROPPED_ANCHORS:
            return concat()
        raise UnsupportedGrammarError("word boundaries cannot be expressed")
    raise UnsupportedGrammarError(f"{op} is not supported")


def _literal(code: int, flags: int) -> Node:
    if flags & re.IGNORECASE:
        closed = _closed(((code, code),), flags)
        if len(closed) > 1 or closed[0][0] != closed[0][1]:
            return CharClass(closed)
    return LiteralText(chr(code))


def _closed(ranges: Ranges, flags: int) -> Ranges:
    """``ranges`` with the other cases of their letters where ``flags`` ignore case."""
    if not flags & re.IGNORECASE:
        return char_sets.normalized(ranges)
    return char_sets.case_closed(char_sets.normalized(ranges), ascii_only=bool(flags & re.ASCII))


def _class(op: Any, value: Any, flags: int) -> CharClass:
    """``.``, a negated literal or a bracketed class."""
    if op is sre.ANY:
        newline = () if flags & re.DOTALL else ((10, 10),)
        return char_sets.as_class(char_sets.complement(newline))
    if op is sre.NOT_LITERAL:
        chars = char_sets.complement(_closed(((value, value),), flags))
    else:
        negated = False
        parts: list[tuple[int, int]] = []
        for kind, item in value:
            if kind is sre.NEGATE:
                negated = True
            elif kind is sre.LITERAL:
                parts.append((item, item))
            elif kind is sre.RANGE:
                parts.append(item)
            elif kind is sre.CATEGORY and item in _CATEGORIES:
                name, inverse = _CATEGORIES[item]
                found = char_sets.category(name, ascii_only=bool(flags & re.ASCII))
                parts.extend(char_sets.complement(found) if inverse else found)
            else:
                raise UnsupportedGrammarError(f"{kind} {item} in a class is not supported")
        chars = _closed(tuple(parts), flags)
        if negated:
            chars = char_sets.complement(chars)
    try:
        return char_sets.as_class(char_sets.trimmed(chars))
    except ValueError:
        raise UnsupportedGrammarError("a class that matches no character") from None


def _alternatives(options: list[Node]) -> Node:
    """The alternatives, those of one character merged into one class (first among them)."""
    singles: list[tuple[int, int]] = []
    rest: list[Node] = []
    place = -1
    for option in options:
        if isinstance(option, CharClass) or (isinstance(option, LiteralText) and len(option.text) == 1):
            if place < 0:
                place = len(rest)
                rest.append(option)
            singles.extend(
                char_sets.of_class(option)
                if isinstance(option, CharClass)
                else [(ord(option.text), ord(option.text))]
            )
        else:
            rest.append(option)
    if place >= 0:
        merged = char_sets.normalized(singles)
        only = len(merged) == 1 and merged[0][0] == merged[0][1]
        rest[place] = LiteralText(chr(merged[0][0])) if only else char_sets.as_class(merged)
    return choice(*rest)
