"""Runs of characters that never hold ``<|``, the opening of the special tokens spelled
``<|…|>`` (Harmony's, and most chat models' control tokens).

llama.cpp matches a special token against a grammar's text rules by its text: where a JSON
string or a custom tool's text may hold ``<|end|>``, it may sample that token there — a
message ends in the middle of a string. :func:`guarded_repeat` rewrites a repetition of
characters (``x*``, ``x{m,n}``, where ``x`` is a class or a choice of classes and of texts
that hold neither ``<`` nor ``|``) so that ``|`` never follows ``<``: a ``<`` is followed
by anything else, or ends the run. Other ``<`` and ``|`` stay (``a<b``, ``x | y``, ``<>``).

Theory of operation. The run is an automaton of two states — after ``<`` or not — spelled
as rules: per state, ``rest <state 0>``, ``"<" <state 1>`` or the end, where ``rest`` is
what the item takes but ``<`` (and, after ``<``, but ``|``). A bound ``{m,n}`` unrolls the
states per character, up to :data:`UNROLL_LIMIT` (characters then count exactly, as a JSON
schema's ``maxLength`` needs); past it, the run is a repetition of steps — a character,
or ``<`` runs and the character after them — which counts a step as one character
(``<`` then may take the run past its bound; the parse after sampling checks it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from . import char_sets
from .builder import RuleSet
from .ir import (
    EMPTY,
    CharClass,
    Choice,
    Concat,
    Layout,
    LiteralText,
    Node,
    Repeat,
    RuleRef,
    choice,
    concat,
    optional,
)

OPENING: Final = "<|"
"""What a run never holds: the first two characters of a control token's text."""
UNROLL_LIMIT: Final = 256
"""Bounds up to this many characters are held exactly (two rules per character)."""
_LESS: Final = char_sets.normalized(((ord("<"), ord("<")),))
_BAR: Final = char_sets.normalized(((ord("|"), ord("|")),))


def guards(special_tokens: Iterable[str]) -> bool:
    """Whether the runs need guarding: some special token is spelled ``<|…|>``."""
    return any(text.startswith(OPENING) and text.endswith("|>") and len(text) > 4 for text in special_tokens)


def guarded_repeat(rule_set: RuleSet, node: Repeat) -> Node | None:
    """``node`` as rules of ``rule_set`` that never take ``<|`` (see the module
    docstring); ``None`` where it cannot take ``<|`` (at most one character: the item's
    texts of more than one hold neither ``<`` nor ``|``) or is not a run of characters."""
    if node.most is not None and node.most <= 1:
        return None
    split = _split(rule_set, node.item)
    if split is None:
        return None
    plain, after_less = (
        part if isinstance(part, CharClass) else rule_set.add("char", part, key=("opening-guard", part))
        for part in split
    )
    ref, new = rule_set.forward("run", ("opening-guard", node))
    if not new:
        return ref
    most = node.most
    if most is not None and most <= UNROLL_LIMIT:
        body = _unrolled(rule_set, plain, after_less, node.least, most)
    elif most is None and node.least <= UNROLL_LIMIT:
        body = _looped(rule_set, plain, after_less, node.least)
    else:
        step = rule_set.add("step", choice(plain, concat(Repeat(LiteralText("<"), 1, None), after_less)))
        body = concat(Repeat(step, node.least, most), optional(LiteralText("<")))
    rule_set.define(ref.name, body)
    return ref


def _split(rule_set: RuleSet, item: Node) -> tuple[Node, Node] | None:
    """What the item takes but ``<`` (in any state), and what it takes but ``<`` and ``|``
    (after ``<``); ``None`` where it cannot take both ``<`` and ``|``, or holds a part
    that is neither a class nor free of both."""
    resolved = _resolved(rule_set, item)
    members = resolved.items if isinstance(resolved, Choice) else (resolved,)
    classes: list[char_sets.Ranges] = []
    neutral: list[Node] = []
    for member in members:
        member = _resolved(rule_set, member)
        if isinstance(member, CharClass):
            classes.append(char_sets.of_class(member))
        elif isinstance(member, LiteralText) and len(member.text) == 1:
            classes.append(char_sets.normalized(((ord(member.text), ord(member.text)),)))
        elif _free_of(rule_set, member, "<|"):
            neutral.append(member)
        else:
            return None
    takes = char_sets.union(*classes) if classes else ()
    if not (char_sets.contains(takes, "<") and char_sets.contains(takes, "|")):
        return None
    plain = _choice_of(char_sets.difference(takes, _LESS), neutral)
    after_less = _choice_of(char_sets.difference(takes, char_sets.union(_LESS, _BAR)), neutral)
    return plain, after_less


def _choice_of(ranges: char_sets.Ranges, neutral: list[Node]) -> Node:
    return choice(*([char_sets.as_class(ranges)] if ranges else []), *neutral)


def _resolved(rule_set: RuleSet, node: Node) -> Node:
    """``node``, or the body of the rule it names (through chains of names)."""
    seen: set[str] = set()
    while isinstance(node, RuleRef) and node.name not in seen and node.name in rule_set.definitions:
        seen.add(node.name)
        node = rule_set.definitions[node.name]
    return node


def _free_of(rule_set: RuleSet, node: Node, chars: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether no text of ``node`` holds any of ``chars`` (``False`` where unknown)."""
    if isinstance(node, LiteralText):
        return not any(char in node.text for char in chars)
    if isinstance(node, CharClass):
        ranges = char_sets.of_class(node)
        return not any(char_sets.contains(ranges, char) for char in chars)
    if isinstance(node, Concat | Choice):
        return all(_free_of(rule_set, item, chars, seen) for item in node.items)
    if isinstance(node, Repeat):
        return node.most == 0 or _free_of(rule_set, node.item, chars, seen)
    if isinstance(node, RuleRef):
        body = rule_set.definitions.get(node.name)
        return (
            node.name not in seen and body is not None and _free_of(rule_set, body, chars, seen | {node.name})
        )
    return isinstance(node, Layout)


def _unrolled(rule_set: RuleSet, plain: Node, after_less: Node, least: int, most: int) -> Node:
    """``least`` to ``most`` characters: a rule per count and state, built from the end."""
    following: tuple[Node, Node] = (EMPTY, EMPTY)  # after `most` characters: the end
    for count in range(most - 1, -1, -1):
        following = _states(rule_set, plain, after_less, following, may_end=count >= least, first=not count)
    return following[0]


def _looped(rule_set: RuleSet, plain: Node, after_less: Node, least: int) -> Node:
    """At least ``least`` characters, any number more: two rules that loop, after a rule
    per count and state up to ``least``."""
    loop = (RuleRef(rule_set.fresh_name("run")), RuleRef(rule_set.fresh_name("run")))
    for ref, rest in zip(loop, (plain, after_less), strict=True):
        rule_set.define(ref.name, optional(choice(concat(rest, loop[0]), concat(LiteralText("<"), loop[1]))))
    following: tuple[Node, Node] = loop
    for count in range(least - 1, -1, -1):
        following = _states(rule_set, plain, after_less, following, may_end=False, first=not count)
    return following[0]


def _states(
    rule_set: RuleSet,
    plain: Node,
    after_less: Node,
    following: tuple[Node, Node],
    *,
    may_end: bool,
    first: bool,
) -> tuple[Node, Node]:
    """The two states one character before ``following`` (each a rule, but the first
    state of the first character, which stands alone)."""
    states: list[Node] = []
    for rest in (plain, after_less) if not first else (plain,):
        options = [concat(rest, following[0]), concat(LiteralText("<"), following[1])]
        body = choice(*options, *([EMPTY] if may_end else []))
        states.append(body if first else rule_set.add("run", body))
    return (states[0], states[-1])
