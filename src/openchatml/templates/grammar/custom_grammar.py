"""A custom tool's grammar — a Lark grammar or a regular expression — as rules of the
intermediate form, for a writer that cannot embed it (GBNF, :mod:`.gbnf`).

:func:`custom_grammar_rules` reads it (:mod:`.lark_reader`, :mod:`.regex_reader`) into a
:class:`~.builder.RuleSet` and holds the rules to what llama.cpp's GBNF can take:

* a repeated part that is more than a literal or a class becomes a rule of its own
  (llama.cpp expands ``x{m,n}`` into a rule per repetition, times the rules ``x`` holds,
  and refuses past 2000); a lower bound past 2000 is refused;
* a rule that begins alternatives with itself (``a: a x | y``, which Lark's Earley parser
  takes and llama.cpp refuses) is rewritten (``a: y x*``); one that reaches itself
  otherwise before any text is refused.

:func:`custom_grammar_problem` says, once per grammar, why one cannot be carried (``""``:
it can).
"""

from __future__ import annotations

import functools
from typing import Final, Literal

from .builder import RuleSet
from .ir import CharClass, Choice, Concat, LiteralText, Node, Repeat, RuleRef, choice, concat, zero_or_more
from .lark_reader import LarkReader
from .regex_reader import UnsupportedGrammarError, read_regex

Syntax = Literal["lark", "regex"]
REPETITION_LIMIT: Final = 2000
"""The most repetitions llama.cpp expands (``x{m,n}``: ``m`` more is refused, ``n`` more
is read as no bound)."""


def custom_grammar_rules(rule_set: RuleSet, syntax: Syntax, definition: str) -> Node:
    """The texts of ``definition`` as a node whose rules are added to ``rule_set``. Raises
    :class:`~.regex_reader.UnsupportedGrammarError` for what GBNF cannot carry."""
    added = set(rule_set.definitions)
    if syntax == "lark":
        root: Node = LarkReader(rule_set).read(definition)
    else:
        root = read_regex(definition)
    root = _named_repeats(rule_set, root)
    for name in sorted(set(rule_set.definitions) - added):
        body = _without_self_prefix(name, rule_set.definitions[name])
        rule_set.define(name, _named_repeats(rule_set, body))
    _refuse_left_recursion(rule_set, set(rule_set.definitions) - added)
    return root


@functools.lru_cache(maxsize=256)
def custom_grammar_problem(syntax: Syntax, definition: str) -> str:
    """Why GBNF cannot carry ``definition`` (``""``: it can)."""
    try:
        custom_grammar_rules(RuleSet(), syntax, definition)
    except UnsupportedGrammarError as exc:
        return str(exc)
    return ""


def _named_repeats(rule_set: RuleSet, node: Node) -> Node:
    """``node`` with each repeated part that is not a literal, a class or a rule made a rule."""
    if isinstance(node, Concat):
        return Concat(tuple(_named_repeats(rule_set, item) for item in node.items))
    if isinstance(node, Choice):
        return Choice(tuple(_named_repeats(rule_set, item) for item in node.items))
    if isinstance(node, Repeat):
        if node.least > REPETITION_LIMIT:
            raise UnsupportedGrammarError(
                f"at least {node.least} repetitions: GBNF (llama.cpp) takes at most {REPETITION_LIMIT}"
            )
        item = _named_repeats(rule_set, node.item)
        if not isinstance(item, LiteralText | CharClass | RuleRef):
            item = rule_set.add("in_part", item, key=("in_part", item))
        return Repeat(item, node.least, node.most)
    return node


def _without_self_prefix(name: str, body: Node) -> Node:
    """A rule that begins some alternatives with itself (``a: a x | y``) as the others
    then any number of the rests (``a: y x*``): the same texts, without left recursion."""
    options = body.items if isinstance(body, Choice) else (body,)
    rests: list[Node] = []
    others: list[Node] = []
    for option in options:
        items = option.items if isinstance(option, Concat) else (option,)
        if items and items[0] == RuleRef(name):
            rests.append(concat(*items[1:]))
        else:
            others.append(option)
    if not rests or not others:
        return body
    return concat(choice(*others), zero_or_more(choice(*rests)))


def _first_refs(node: Node, definitions: dict[str, Node]) -> tuple[set[str], bool]:
    """The rules ``node`` may begin with, and whether it may take the empty text (a rule's
    own emptiness read from ``definitions`` without recursion: a first guess, enough to
    find rules that reach themselves through empty prefixes in the grammars GBNF takes)."""
    if isinstance(node, RuleRef):
        return {node.name}, _empty(definitions.get(node.name), definitions, {node.name})
    if isinstance(node, Concat):
        found: set[str] = set()
        for item in node.items:
            refs, empty = _first_refs(item, definitions)
            found |= refs
            if not empty:
                return found, False
        return found, True
    if isinstance(node, Choice):
        found, empty = set(), False
        for item in node.items:
            refs, item_empty = _first_refs(item, definitions)
            found |= refs
            empty = empty or item_empty
        return found, empty
    if isinstance(node, Repeat):
        refs, empty = _first_refs(node.item, definitions)
        return refs, empty or node.least == 0
    return set(), isinstance(node, LiteralText) and not node.text


def _empty(node: Node | None, definitions: dict[str, Node], seen: set[str]) -> bool:
    if node is None or isinstance(node, CharClass):
        return False
    if isinstance(node, LiteralText):
        return not node.text
    if isinstance(node, RuleRef):
        return node.name not in seen and _empty(definitions.get(node.name), definitions, seen | {node.name})
    if isinstance(node, Concat):
        return all(_empty(item, definitions, seen) for item in node.items)
    if isinstance(node, Choice):
        return any(_empty(item, definitions, seen) for item in node.items)
    if isinstance(node, Repeat):
        return node.least == 0 or _empty(node.item, definitions, seen)
    return False


def _refuse_left_recursion(rule_set: RuleSet, names: set[str]) -> None:
    """Raise :class:`~.regex_reader.UnsupportedGrammarError` where one of the rules
    ``names`` reaches itself before any text."""
    first = {name: _first_refs(rule_set.definitions[name], rule_set.definitions)[0] & names for name in names}
    for name in sorted(names):
        reached: set[str] = set()
        todo = list(first[name])
        while todo:
            current = todo.pop()
            if current == name:
                shown = name.rsplit("_", 1)[0].removeprefix("in_")
                raise UnsupportedGrammarError(
                    f"the rule {shown!r} is left-recursive (it begins with itself), which GBNF cannot take"
                )
            if current not in reached:
                reached.add(current)
                todo.extend(first[current])
