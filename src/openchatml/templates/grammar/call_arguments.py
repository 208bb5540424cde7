"""The arguments of one tool call, spelled the format's way, conforming to the tool's
parameters schema.

By syntax: a JSON object (``json``: name, arguments and id keys in the template's order, a
wrapper object, the name as the key, arguments as a JSON-encoded string; ``tag_json``:
the arguments alone); one tag per argument (``tag_tagged``), strings raw, exactly as the
format's parser reads them back (the whitespace around them as the template writes it, the
schema's ``enum``, ``minLength``, ``maxLength``, ``pattern`` and known ``format`` held, no
marker the parser stops at inside; an unbounded one may sit inside ``arg_value_wrap_*``),
other values JSON or their Python spelling (``True``, ``None``, ``['a']``: templates that
write ``value | string`` teach it); Python
keyword arguments and literals (``pythonic``); ``{k:v}`` with quote markers around strings
(``object_notation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..format import ToolCallFormat, ToolSyntax
from .builder import Member, RuleSet, members_in_any_order, members_in_order
from .ir import EMPTY, LAYOUT, FreeText, LiteralText, Node, choice, concat
from .json_schema import (
    SchemaConverter,
    allows_type,
    declared_members,
    json_value,
    string_enum,
    string_limits,
    without_strings,
)
from .markers import marker_node, split_whitespace
from .value_dialect import IDENTIFIER, JSON, JSON_IN_STRING, PYTHON, ValueDialect, object_notation


class ArgumentRuleBuilder:
    """Builds the nodes of tool-call arguments in the syntax of ``tool_format`` into
    ``rule_set``."""

    def __init__(self, tool_format: ToolCallFormat, rule_set: RuleSet) -> None:
        self.tool_format = tool_format
        self.rule_set = rule_set

    def arguments(self, schema: Any) -> Node:
        """The arguments of a tag / Python / object-notation call."""
        syntax = self.tool_format.syntax
        if syntax is ToolSyntax.TAG_JSON:
            return json_value(schema, schema)
        if syntax is ToolSyntax.TAG_TAGGED:
            return self.tagged(schema)
        if syntax is ToolSyntax.PYTHONIC:
            return self.keyword_arguments(schema, PYTHON, "(", ")", "=")
        dialect = object_notation(self.tool_format.string_quote or '"')
        return self.keyword_arguments(schema, dialect, "{", "}", ":")

    def keyword_arguments(
        self, schema: Any, dialect: ValueDialect, open_bracket: str, close_bracket: str, equals: str
    ) -> Node:
        """``name=value`` (or ``name:value``) arguments in any order between brackets."""
        converter = SchemaConverter(self.rule_set, dialect, schema)
        declared, extra = declared_members(schema)
        separator = converter.separator()
        members: list[Member] = [
            (concat(LiteralText(name), LAYOUT, LiteralText(equals), LAYOUT, converter.value(sub)), required)
            for name, sub, required in declared
        ]
        extra_member = None
        if extra is not None and extra is not False:
            key = self.rule_set.add("ident", IDENTIFIER, terminal=True, key=("ident",))
            extra_value = converter.value(extra if isinstance(extra, Mapping) else {})
            extra_member = concat(key, LAYOUT, LiteralText(equals), LAYOUT, extra_value)
        body = members_in_any_order(self.rule_set, members, separator, extra_member)
        return concat(LiteralText(open_bracket), LAYOUT, body, LAYOUT, LiteralText(close_bracket))

    def tagged(self, schema: Any) -> Node:
        """One tag per argument, in any order; other arguments under any name where the
        schema allows them and the name's end is marked."""
        tool_format = self.tool_format
        declared, extra = declared_members(schema)
        members: list[Member] = [
            (
                concat(
                    marker_node(tool_format.arg_name_prefix),
                    LiteralText(name),
                    self.tag_value(sub, schema, named=True),
                ),
                required,
            )
            for name, sub, required in declared
        ]
        extra_member = None
        if extra is not None and extra is not False and tool_format.arg_name_suffix.strip():
            extra_member = concat(
                marker_node(tool_format.arg_name_prefix),
                FreeText(tool_format.arg_name_suffix.strip()),
                self.tag_value(extra if isinstance(extra, Mapping) else {}, schema, named=False),
            )
        if tool_format.arg_separator.strip():
            separator = concat(marker_node(tool_format.arg_separator), LAYOUT)
        else:
            separator = LAYOUT
        return members_in_any_order(self.rule_set, members, separator, extra_member)

    def tag_value(self, schema: Any, root: Any, *, named: bool) -> Node:
        """A tagged argument's value after its name (``named``: the name's end marker is
        still to come): a string exactly as the format's parser reads it back (the text
        between the name and the value as the template writes it, then the value in
        ``schema``'s bounds, then the value's end marker as the template writes it);
        other values as JSON (after ``arg_value_prefix_json`` where the template has one)
        or their Python spelling (``True``, ``None``, ``['a']``), which templates that write
        ``value | string`` teach their models, between optional whitespace."""
        tool_format = self.tool_format
        suffix = tool_format.arg_value_suffix
        name_end = self._name_end(named)
        prefix_json = tool_format.arg_value_prefix_json or tool_format.arg_value_prefix
        alternatives: list[Node] = []
        strings = string_enum(schema)
        if allows_type(schema, "string") and suffix.strip():
            alternatives.append(concat(name_end, self._string_value(schema, strings)))
        if strings is None and (not alternatives or prefix_json != tool_format.arg_value_prefix):
            non_string = without_strings(schema) if alternatives else schema
            if non_string is not None:
                value = SchemaConverter(self.rule_set, PYTHON, root).value(non_string)
                loose_end = marker_node(tool_format.arg_name_suffix) if named else LAYOUT
                if not tool_format.arg_name_suffix.strip() and not prefix_json.strip():
                    loose_end = concat(name_end, LAYOUT)
                alternatives.append(
                    concat(loose_end, marker_node(prefix_json), LAYOUT, value, LAYOUT, marker_node(suffix))
                )
        return choice(*alternatives)

    def _name_end(self, named: bool) -> Node:
        """From the end of an argument's name to its raw value, as the parser reads it: the
        name's end marker (``named``), then the whitespace it keeps (the marker's own and a
        blank value prefix's) or the value prefix; a line break where the name has no end
        marker and the value no prefix."""
        tool_format = self.tool_format
        _lead, core, trail = split_whitespace(tool_format.arg_name_suffix)
        value_prefix = tool_format.arg_value_prefix
        prefix_lead, prefix_core, prefix_trail = split_whitespace(value_prefix)
        head = marker_node(tool_format.arg_name_suffix.rstrip()) if named and core else EMPTY
        if prefix_core:
            return concat(head, LAYOUT, LiteralText(prefix_core + prefix_trail))
        if core:
            return concat(head, LiteralText(trail + prefix_lead))
        return LiteralText("\n")

    def _string_value(self, schema: Any, strings: list[str] | None) -> Node:
        """A raw string value then the value's end marker: one of ``strings``, or text within
        the schema's bounds (``minLength``, ``maxLength``, ``pattern``, ``format`` where
        :data:`FORMAT_PATTERNS` has it) that holds no marker the parser stops at; in the
        format's wrapper (``<![CDATA[``) where it has one and the text is unbounded."""
        tool_format = self.tool_format
        lead, core, trail = split_whitespace(tool_format.arg_value_suffix)
        end = concat(LiteralText(lead + core), LAYOUT if trail else EMPTY)
        if strings is not None:
            return concat(choice(*map(LiteralText, strings)), end)
        least, most, pattern = string_limits(schema)
        name_prefix = tool_format.arg_name_prefix.strip()
        forbid = tuple(
            dict.fromkeys(
                text
                for text in (
                    core,
                    tool_format.arguments_end.strip(),
                    tool_format.call_end.strip(),
                    tool_format.section_end.strip(),
                    name_prefix if name_prefix != core else "",
                )
                if text
            )
        )
        wrap_start = tool_format.arg_value_wrap_start.strip()
        wrap_end = tool_format.arg_value_wrap_end.strip()
        wrapper = bool(wrap_start and wrap_end)
        text = FreeText(
            lead + core,
            (wrap_start,) if wrapper else (),
            least=least,
            most=most,
            pattern=pattern,
            forbid=forbid,
        )
        plain = concat(text, LAYOUT if trail else EMPTY)
        if not wrapper or least or most is not None or pattern:
            return plain
        wrapped = concat(LiteralText(wrap_start), FreeText(wrap_end), LAYOUT, end)
        return choice(plain, wrapped)

    def json_call(self, name: str, schema: Any) -> Node:
        """A ``json`` call object, keys in the template's order."""
        tool_format = self.tool_format
        converter = SchemaConverter(self.rule_set, JSON, schema)
        if tool_format.arguments_as_string:
            encoded = SchemaConverter(self.rule_set, JSON_IN_STRING, schema).value(schema)
            arguments = concat(LiteralText('"'), encoded, LiteralText('"'))
        else:
            arguments = json_value(schema, schema)
        inner: list[tuple[str, Node, bool]] = []
        outer: list[tuple[str, Node, bool]] = []
        if tool_format.name_is_key:
            inner.append((name, converter.pair(name, arguments), True))
        else:
            inner.append(
                (tool_format.name_key, converter.pair(tool_format.name_key, converter.const(name)), True)
            )
            inner.append(
                (tool_format.arguments_key, converter.pair(tool_format.arguments_key, arguments), True)
            )
        target = outer if tool_format.wrapper_key else inner
        if tool_format.id_key:
            call_id = json_value({"type": ["string", "integer"]}, {})
            target.append((tool_format.id_key, converter.pair(tool_format.id_key, call_id), False))
        known = {tool_format.name_key, tool_format.arguments_key, tool_format.id_key, tool_format.wrapper_key}
        for key in tool_format.key_order:
            if key and key not in known and not tool_format.name_is_key:
                target.append((key, converter.pair(key, json_value({}, {})), False))
        if tool_format.wrapper_key:
            wrapped = self._json_object(inner, converter.separator())
            outer.append((tool_format.wrapper_key, converter.pair(tool_format.wrapper_key, wrapped), True))
            return self._json_object(outer, converter.separator())
        return self._json_object(inner, converter.separator())

    def _json_object(self, keyed: list[tuple[str, Node, bool]], separator: Node) -> Node:
        """An object of the (key, member, required) members, in the template's key order."""
        order = list(self.tool_format.key_order)

        def rank(member: tuple[str, Node, bool]) -> int:
            return order.index(member[0]) if member[0] in order else len(order)

        members = [(node, required) for _key, node, required in sorted(keyed, key=rank)]
        body = members_in_order(self.rule_set, members, separator, None)
        return concat(LiteralText("{"), LAYOUT, body, LAYOUT, LiteralText("}"))
