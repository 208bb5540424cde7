"""Building named rules of the intermediate form: :class:`RuleSet` names rules, shares the
ones built for one key, and lets a rule refer to itself; :func:`members_in_order` and
:func:`members_in_any_order` build the members of an object (JSON keys, keyword arguments,
tagged arguments) as rules.

Order of members: JSON objects keep the schema's order (llguidance's rule); tagged
arguments, and Python and object-notation objects, come in any order, each at most once,
the required ones all present — exactly so up to :data:`ANY_ORDER_LIMIT` members (a rule
per set of members written); past that the required ones are tracked so and the optional
ones may come anywhere (and repeat); past that many required ones, these come in schema
order.
"""

from __future__ import annotations

from typing import Final, TypeAlias

from .ir import EMPTY, Node, RuleRef, choice, concat, optional, zero_or_more

START: Final = "start"
"""The rule of the whole output."""
LAZY_START: Final = "lazy_start"
"""The rule of the output from the trigger on (for lazy grammars)."""
ANY_ORDER_LIMIT: Final = 6
"""Members in any order are tracked exactly up to this many (2**n rules)."""

Member: TypeAlias = tuple[Node, bool]
"""An object member: its node and whether it is required."""


class RuleSet:
    """Named rules of the intermediate form; ``terminals`` are regular and lexed whole.

    Rule names are a base and a counter (``call_3``): unique within the set, and stable
    for one sequence of calls, so the same input writes the same grammar text.
    """

    def __init__(self) -> None:
        self.definitions: dict[str, Node] = {}
        self.terminals: set[str] = set()
        self._by_key: dict[object, RuleRef] = {}
        self._count = 0

    def fresh_name(self, base: str) -> str:
        """A name not given before: ``base`` and the next number."""
        self._count += 1
        return f"{base}_{self._count}"

    def add(self, base: str, node: Node, *, terminal: bool = False, key: object = None) -> RuleRef:
        """A new rule ``node`` named after ``base``; with ``key``, the rule already built for
        that key if there is one (``node`` is then dropped)."""
        if key is not None and key in self._by_key:
            return self._by_key[key]
        name = self.fresh_name(base)
        self.definitions[name] = node
        if terminal:
            self.terminals.add(name)
        ref = RuleRef(name)
        if key is not None:
            self._by_key[key] = ref
        return ref

    def forward(self, base: str, key: object) -> tuple[RuleRef, bool]:
        """A reference for ``key`` and whether it still has to be defined (:meth:`define`):
        a rule may refer to itself through it."""
        if key in self._by_key:
            return self._by_key[key], False
        ref = RuleRef(self.fresh_name(base))
        self._by_key[key] = ref
        return ref, True

    def define(self, name: str, node: Node) -> None:
        """Set the rule ``name`` to ``node``."""
        self.definitions[name] = node

    def copy(self) -> RuleSet:
        """An independent copy: rules added to it do not reach this set."""
        other = RuleSet()
        other.definitions = dict(self.definitions)
        other.terminals = set(self.terminals)
        other._by_key = dict(self._by_key)
        other._count = self._count
        return other


def members_in_order(rule_set: RuleSet, members: list[Member], separator: Node, extra: Node | None) -> Node:
    """Object members in the given order, optional ones skippable, ``separator`` between,
    then any number of ``extra`` members (``None``: none)."""
    built: dict[tuple[int, bool], Node] = {}

    def rest(index: int, first: bool) -> Node:
        if (index, first) in built:
            return built[(index, first)]
        if index == len(members):
            if extra is None:
                node: Node = EMPTY
            else:
                more = zero_or_more(concat(separator, extra))
                node = optional(concat(extra, more)) if first else more
        else:
            member, required = members[index]
            take = concat(member if first else concat(separator, member), rest(index + 1, False))
            node = take if required else choice(take, rest(index + 1, first))
        if 0 < index < len(members) and node != EMPTY:
            node = rule_set.add("mem", node)
        built[(index, first)] = node
        return node

    return rest(0, True)


def members_in_any_order(
    rule_set: RuleSet, members: list[Member], separator: Node, extra: Node | None
) -> Node:
    """Members in any order, ``separator`` between, the required ones all present, any
    number of ``extra`` ones (see the module docstring for the limits)."""
    if len(members) <= ANY_ORDER_LIMIT:
        tracked, free = members, []
    else:
        tracked = [(member, required) for member, required in members if required]
        free = [member for member, required in members if not required]
    free += [extra] if extra is not None else []
    if len(tracked) > ANY_ORDER_LIMIT:
        return _required_in_order(tracked, free, separator)
    needed = sum(1 << i for i, (_member, required) in enumerate(tracked) if required)
    states: dict[tuple[int, bool], Node] = {}

    def state(written: int, started: bool) -> Node:
        """The rest of the object once the members in the bit set ``written`` are written."""
        if (written, started) in states:
            return states[(written, started)]
        ref: RuleRef | None = None
        if free:  # optional members loop back: a named rule from the start
            ref = RuleRef(rule_set.fresh_name("arg"))
            states[(written, started)] = ref
        lead = separator if started else EMPTY
        alternatives = [
            concat(lead, member, state(written | (1 << i), True))
            for i, (member, _required) in enumerate(tracked)
            if not written >> i & 1
        ]
        alternatives += [concat(lead, member, state(written, True)) for member in free]
        if written & needed == needed:
            alternatives.append(EMPTY)
        node = choice(*alternatives)
        if ref is not None:
            rule_set.define(ref.name, node)
            return ref
        states[(written, started)] = node if node == EMPTY else rule_set.add("arg", node)
        return states[(written, started)]

    return state(0, False)


def _required_in_order(required: list[Member], free: list[Node], separator: Node) -> Node:
    """The required members in their order, any of the ``free`` ones before, between and
    after them."""
    anything = choice(*free)
    before = zero_or_more(concat(anything, separator)) if free else EMPTY
    after = zero_or_more(concat(separator, anything)) if free else EMPTY
    parts = [
        concat(separator, member, after) if i else concat(before, member, after)
        for i, (member, _required) in enumerate(required)
    ]
    return concat(*parts)
