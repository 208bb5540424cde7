"""Grammars that hold a model to its own tool-call syntax, for constrained decoding.

:func:`tool_call_grammar` turns a :class:`~..format.TemplateFormat` and the offered tools
into a :class:`~.tool_grammar.ToolGrammar` that accepts exactly the output the format
allows: the reasoning (free text between the format's markers), content before the first
call where ``tool_choice`` allows it, then the calls themselves, spelled the format's way
(section and per-call markers, separators, ids), naming only the allowed tools, with
arguments that conform to each tool's JSON Schema (:mod:`.call_arguments`).

The parts of the output:

* reasoning, from ``prefix`` (the text the prompt already wrote of the assistant's
  message): already open (the output starts inside it and must close it), already closed
  (no block opens again), or optional at the start; with a delimiter and no start marker,
  everything until the delimiter is reasoning, and the delimiter must come. With thinking
  off (a bound of 0 tokens) there is none: an open block closes at once, none opens;
* the body: ``required`` and named choices allow only whitespace before the first call;
  ``auto`` allows free text up to the trigger (after which calls must follow) or free text
  with no trigger at all;
* the calls: ``section_start`` call (separator call)* ``section_end``, each call
  ``call_start`` head arguments tail ``call_end``, the head being the name between its
  markers with the id where ``id_position`` puts it — or, when ``id_pattern`` holds the
  name and the id comes before it, the id alone (``functions.get_time:0``).

Triggers (:class:`~.tool_grammar.Trigger`): the literal that opens the calls — the
format's ``section_start``, else ``call_start``, else the first marker of a call (an id or
name prefix). A format with no marker at all (bare JSON such as Llama 3.1's
``{"name": …, "parameters": …}``, a bare Python list) gets a ``pattern`` trigger anchored
at the start of the output, ``^\\s*(\\{)``: "the answer begins with the call"; the grammar
starts where the pattern's group starts. Triggers are meant to be matched in the output
after the reasoning (a model may think about a call before making it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from ..analysis.thinking import open_reasoning
from ..errors import UnsupportedTemplateError
from ..format import CallIdPosition, ReasoningMode, TemplateFormat, ToolCallFormat, ToolSyntax
from .budget import call_budget
from .builder import LAZY_START, START, RuleSet
from .call_arguments import ArgumentRuleBuilder
from .extent import Extent
from .harmony import harmony_tool_call_grammar
from .ir import (
    EMPTY,
    LAYOUT,
    Concat,
    FreeText,
    LiteralText,
    Node,
    Repeat,
    char_class,
    choice,
    concat,
    optional,
    zero_or_more,
)
from .json_schema import json_value
from .markers import marker_node, strip_edge
from .tool_choice import FreeformTool, ToolChoice, offered_tools, select_tools
from .tool_grammar import ToolGrammar, Trigger, write_tool_grammar

JSON_SEPARATORS: Final = (", ", ": ")
"""Chat templates write JSON as Jinja's ``tojson`` does (``{"city": "Paris"}``): under a
grammar, JSON values take that spacing only."""


def tool_call_grammar(
    fmt: TemplateFormat,
    tools: Sequence[Mapping[str, Any]],
    *,
    tool_choice: ToolChoice = "auto",
    parallel: bool = True,
    prefix: str = "",
    freeform: Sequence[FreeformTool] = (),
    answer_schema: Mapping[str, Any] | None = None,
    reasoning_tokens: int | None = None,
    special_tokens: Mapping[str, int] | None = None,
) -> ToolGrammar:
    """The grammars that hold a model with this format to what a request allows.

    ``tools``: function tools, as Chat Completions (``{"type": "function", "function":
    {...}}``) or Responses / bare (``{"name", "parameters"}``) objects; other tool types are
    ignored. ``freeform``: tools whose input is raw text (:class:`~.tool_choice.FreeformTool`),
    called as a function with one string argument ``input`` (a regular expression becomes
    the string's ``pattern``). ``tool_choice``: see :data:`~.tool_choice.ToolChoice`
    (``none``: content only, never a call). ``parallel``: several calls in one message
    (only where the format writes several). ``prefix``: what the prompt already wrote of
    the assistant's message (``"<think>\\n"`` when the generation prompt opens the
    reasoning). ``answer_schema``: the JSON Schema the content conforms to (``None``: free
    text). ``reasoning_tokens``: a bound on the reasoning's tokens (where its end marker is
    one special token); ``0``: no reasoning (a block the prompt opened closes at once, and
    none opens). ``special_tokens``: markers that are single special tokens of the
    model's tokenizer, with their ids (used by the Lark grammar and the triggers).

    A Harmony format (gpt-oss) gets :func:`~.harmony.harmony_tool_call_grammar` (``prefix``
    and ``parallel`` do not apply: the prompt ends at ``<|start|>assistant``, and a Harmony
    turn ends at its one call).

    Raises :class:`UnsupportedTemplateError` when the format has no tool calls and the
    choice is not ``none``, ``ValueError`` for a choice naming a tool that is not offered,
    no tool to call, or a Lark freeform tool (a format's JSON arguments cannot carry it).
    """
    if fmt.harmony:
        return harmony_tool_call_grammar(
            tools,
            tool_choice=tool_choice,
            freeform=freeform,
            answer_schema=answer_schema,
            reasoning_tokens=reasoning_tokens,
            special_tokens=special_tokens,
        )
    offered = offered_tools(tools, freeform)
    selection = select_tools(tool_choice, offered)
    if fmt.tools.syntax is ToolSyntax.NONE and selection.mode != "none":
        raise UnsupportedTemplateError(f"format {fmt.name or '(unnamed)'} has no tool-call syntax")
    chosen = [(name, _arguments_schema(offered[name])) for name in selection.names]
    several = parallel and fmt.tools.parallel
    builder = ToolCallRuleBuilder(fmt, chosen, several=several)
    opener = builder.build(
        mode=selection.mode, prefix=prefix, answer_schema=answer_schema, reasoning_tokens=reasoning_tokens
    )
    specials = dict(special_tokens or {})
    return write_tool_grammar(
        builder.rule_set,
        specials,
        triggers=_triggers(fmt.tools, opener, chosen, specials) if chosen else (),
        lazy=selection.mode == "auto",
        tools=selection.names,
        parallel=several,
        json_separators=JSON_SEPARATORS,
    )


def _arguments_schema(tool: Any) -> Any:
    """The arguments schema of an offered tool: its own (a function tool), or one string
    ``input`` (a freeform tool; a regular expression becomes its ``pattern``). Raises
    ``ValueError`` for a Lark freeform tool."""
    if not isinstance(tool, FreeformTool):
        return tool
    if tool.syntax == "lark":
        raise ValueError(
            f"tool {tool.name!r} takes input in a Lark grammar, which this model's tool-call "
            "format (JSON arguments) cannot carry; use a regular expression or free text"
        )
    text: dict[str, Any] = {"type": "string"}
    if tool.syntax == "regex":
        text["pattern"] = f"^(?:{tool.definition})$"
    return {
        "type": "object",
        "properties": {"input": text},
        "required": ["input"],
        "additionalProperties": False,
    }


class ToolCallRuleBuilder:
    """Builds the rules of one request's output in a template format: the reasoning, the
    content, the calls of the ``tools`` (name, parameters schema) — ``several`` of them or
    one."""

    def __init__(self, fmt: TemplateFormat, tools: list[tuple[str, Any]], *, several: bool) -> None:
        self.fmt = fmt
        self.tools = tools
        self.several = several
        self.rule_set = RuleSet()
        self.arguments = ArgumentRuleBuilder(fmt.tools, self.rule_set)
        self.max_calls: int | None = None
        """The most calls of one message where a budget bounds them (``None``: any number)."""

    @property
    def tool_format(self) -> ToolCallFormat:
        return self.fmt.tools

    def build(
        self,
        *,
        mode: Literal["none", "auto", "required"],
        prefix: str,
        answer_schema: Mapping[str, Any] | None = None,
        reasoning_tokens: int | None = None,
    ) -> str:
        """Define the rules :data:`~.builder.START` (the whole output) and
        :data:`~.builder.LAZY_START` (from the trigger on); return the opening literal of
        the calls (``""``: none). ``answer_schema``: the content is a JSON value of it;
        ``reasoning_tokens``: a bound on the reasoning, split with the calls
        (:func:`~.budget.call_budget`)."""
        if mode != "none" and reasoning_tokens:
            budget = call_budget(reasoning_tokens, self.longest_call())
            reasoning_tokens, self.max_calls = budget.reasoning_tokens, budget.max_calls
        reasoning, start_marker = self.reasoning(prefix, reasoning_tokens)
        not_start = (start_marker,) if start_marker else ()
        if answer_schema is not None:
            answer: Node | None = concat(LAYOUT, json_value(answer_schema, answer_schema), LAYOUT)
        else:
            answer = None
        if mode == "none":
            avoid = ""
            heads: tuple[str, ...] = ()
            if self.fmt.tools.syntax is not ToolSyntax.NONE:
                avoid = self.markers()[0].strip() or self.call_opening()
                heads = () if avoid else self.bare_heads()  # a call with no marker: how it begins
            content = FreeText("", (*not_start, *heads), avoid=avoid)
            self.rule_set.define(START, concat(reasoning, answer or content))
            self.rule_set.define(LAZY_START, EMPTY)
            return ""
        opener, rest = self.calls()
        calls = concat(LiteralText(opener), rest)
        end = LAYOUT
        if mode != "auto":
            body = concat(LAYOUT, calls, end)
        elif answer is not None:
            body = choice(concat(LAYOUT, calls, end), answer)
        elif opener:
            body = choice(
                concat(FreeText(opener, not_start), rest, end),
                FreeText("", not_start, avoid=opener),
            )
        else:
            heads = self.bare_heads()
            body = choice(concat(LAYOUT, calls, end), FreeText("", (*not_start, *heads)))
        self.rule_set.define(START, concat(reasoning, body))
        self.rule_set.define(LAZY_START, concat(calls, end))
        return opener

    # -- reasoning
    def reasoning(self, prefix: str, bound: int | None = None) -> tuple[Node, str]:
        """The reasoning part (its text at most ``bound`` tokens; ``0``: no reasoning, an
        open block closes at once) and the marker that opens it (free text must not begin
        with it: once the reasoning is over, or where there is none, a block never opens)."""
        reasoning = self.fmt.reasoning
        if reasoning.mode is ReasoningMode.NONE or not reasoning.end:
            return EMPTY, ""
        end = reasoning.end.strip() or reasoning.end
        start = ""
        if reasoning.mode is ReasoningMode.TAGS and reasoning.start:
            start = reasoning.start.strip() or reasoning.start
        if open_reasoning(reasoning, prefix):  # the output starts inside the reasoning
            if bound == 0:
                return concat(LAYOUT, LiteralText(end), LAYOUT), ""
            return concat(FreeText(end, max_tokens=bound), LAYOUT), ""
        if not start or start in prefix or end in prefix or bound == 0:
            return EMPTY, start  # over (or switched off) before the output starts
        return optional(concat(FreeText(end, open=start, max_tokens=bound), LAYOUT)), start

    # -- calls
    def markers(self) -> tuple[str, str, str, str]:
        """section_start, section_end, call_start, call_end (a section marker that repeats a
        per-call or name marker is dropped: it is not written twice)."""
        tool_format = self.tool_format
        section_start, section_end = tool_format.section_start, tool_format.section_end
        call_start, call_end = tool_format.call_start, tool_format.call_end
        if section_start and section_start.strip() in (call_start.strip(), tool_format.name_prefix.strip()):
            section_start = ""
            if section_end.strip() in (call_end.strip(), ""):
                section_end = ""
        return section_start, section_end, call_start, call_end

    def calls(self) -> tuple[str, Node]:
        """The calls of one message, split into their opening literal (``""``: none) and the rest."""
        tool_format = self.tool_format
        section_start, section_end, _call_start, _call_end = self.markers()
        listed = tool_format.array and tool_format.syntax in (ToolSyntax.JSON, ToolSyntax.PYTHONIC)
        if listed:
            section_start, _ = strip_edge(section_start, "[", end=True)
            section_end, _ = strip_edge(section_end, "]", end=False)
        calls = self.call_nodes
        opener = section_start.strip()
        one = first_call = self.rule_set.add("call", choice(*calls))
        if not opener and not listed:
            opener = self.call_opening()
            if opener:  # every call opens with it: the first one's is the trigger
                head, rests = self.split_calls(calls, opener)
                first_call = self.rule_set.add(
                    "call", choice(*(self.rule_set.add("call", rest) for rest in rests))
                )
                one = self.rule_set.add("call", concat(*head, first_call))
        if listed:
            separator = concat(LAYOUT, LiteralText(","), LAYOUT)
            inner = concat(first_call, self.more_calls(separator, one)) if self.several else first_call
            body = concat(LiteralText("["), LAYOUT, inner, LAYOUT, LiteralText("]"))
        else:
            if tool_format.separator.strip():
                separator = concat(marker_node(tool_format.separator), LAYOUT)
            else:
                separator = LAYOUT
            body = concat(first_call, self.more_calls(separator, one)) if self.several else first_call
        after_start = LAYOUT if section_start.strip() and section_start[-1].isspace() else EMPTY
        return opener, concat(after_start, body, marker_node(section_end))

    @functools.cached_property
    def call_nodes(self) -> list[Node]:
        """One call of each tool."""
        return [self.call(name, schema) for name, schema in self.tools]

    def longest_call(self) -> int | None:
        """The most characters one call spells (``None``: no bound)."""
        extent = Extent(self.rule_set)
        sizes = [extent.longest(node) for node in self.call_nodes]
        return None if not sizes or None in sizes else max(size for size in sizes if size is not None)

    def more_calls(self, separator: Node, one: Node) -> Node:
        """The calls after the first: any number, or as many as :attr:`max_calls` leaves."""
        if self.max_calls is None:
            return zero_or_more(concat(separator, one))
        return Repeat(concat(separator, one), 0, self.max_calls - 1) if self.max_calls > 1 else EMPTY

    def call_opening(self) -> str:
        """The literal every call begins with, when there is no section marker."""
        _section_start, _section_end, call_start, _call_end = self.markers()
        tool_format = self.tool_format
        if call_start.strip():
            return call_start.strip()
        if tool_format.syntax is not ToolSyntax.JSON and not self.id_is_head():
            if tool_format.id_position is CallIdPosition.BEFORE_NAME:
                return tool_format.id_prefix.strip()
            return tool_format.name_prefix.strip()
        return ""

    def bare_heads(self) -> tuple[str, ...]:
        """How a call with no marker begins (for content that must not begin so)."""
        tool_format = self.tool_format
        if tool_format.syntax is ToolSyntax.JSON:
            return ("[",) if tool_format.array else ("{",)
        if tool_format.syntax is ToolSyntax.PYTHONIC and tool_format.array:
            return ("[",)
        return tuple(name for name, _schema in self.tools)

    def call(self, name: str, schema: Any) -> Node:
        """One call of tool ``name``."""
        tool_format = self.tool_format
        _section_start, _section_end, call_start, call_end = self.markers()
        if tool_format.syntax is ToolSyntax.JSON:
            json_call = self.arguments.json_call(name, schema)
            return concat(marker_node(call_start, split=False), json_call, marker_node(call_end))
        name_suffix, arguments_start, arguments_end = (
            tool_format.name_suffix,
            tool_format.arguments_start,
            tool_format.arguments_end,
        )
        brackets = {
            ToolSyntax.PYTHONIC: ("(", ")"),
            ToolSyntax.OBJECT_NOTATION: ("{", "}"),
            ToolSyntax.TAG_JSON: ("{", "}"),
        }
        if tool_format.syntax in brackets:  # the arguments write their own brackets
            open_bracket, close_bracket = brackets[tool_format.syntax]
            arguments_start, found = strip_edge(arguments_start, open_bracket, end=True)
            if not found and not arguments_start.strip():
                name_suffix, _ = strip_edge(name_suffix, open_bracket, end=True)
            arguments_end, found = strip_edge(arguments_end, close_bracket, end=False)
            if not found and not arguments_end.strip():
                call_end, _ = strip_edge(call_end, close_bracket, end=False)
        identifier = self.rule_set.add(
            "id", Repeat(char_class("A-Za-z0-9_-"), 1, None), terminal=True, key=("callid",)
        )
        call_id = concat(
            marker_node(tool_format.id_prefix, split=False), identifier, marker_node(tool_format.id_suffix)
        )
        position = tool_format.id_position
        parts: list[Node] = [marker_node(call_start, split=False)]
        if self.id_is_head():
            parts.append(self.id_head(name))
        else:
            if position is CallIdPosition.BEFORE_NAME:
                parts.append(call_id)
            parts += [
                marker_node(tool_format.name_prefix, split=False),
                LiteralText(name),
                marker_node(name_suffix),
            ]
        if position is CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS:
            parts.append(call_id)
        arguments = self.arguments.arguments(schema)
        parts += [marker_node(arguments_start), arguments, marker_node(arguments_end)]
        if position is CallIdPosition.AFTER_ARGUMENTS:
            parts.append(call_id)
        parts.append(marker_node(call_end))
        return concat(*parts)

    def id_is_head(self) -> bool:
        """Whether the id, made from ``id_pattern`` with the name in it, stands where the
        name would (``functions.get_time:0``)."""
        tool_format = self.tool_format
        return (
            tool_format.id_position is CallIdPosition.BEFORE_NAME
            and "{name}" in tool_format.id_pattern
            and not tool_format.id_prefix.strip()
            and not tool_format.id_suffix.strip()
        )

    def id_head(self, name: str) -> Node:
        """``id_pattern`` with ``name`` and a call index in it."""
        parts: list[Node] = []
        for i, piece in enumerate(re.split(r"(\{name\}|\{index\})", self.tool_format.id_pattern)):
            if i % 2 == 0:
                parts.append(LiteralText(piece))
            elif piece == "{name}":
                parts.append(LiteralText(name))
            else:
                index = Repeat(char_class("0-9"), 1, None)
                parts.append(self.rule_set.add("index", index, terminal=True, key=("index",)))
        return concat(*parts)

    def split_calls(self, calls: list[Node], opener: str) -> tuple[list[Node], list[Node]]:
        """What every call begins with, up to ``opener``, and the rest of each call."""
        head: list[Node] = []
        rests: list[Node] = []
        for call in calls:
            items: list[Node] = list(call.items) if isinstance(call, Concat) else [call]
            at = items.index(LiteralText(opener))
            head = items[: at + 1]
            rests.append(concat(*items[at + 1 :]))
        return head, rests


def _triggers(
    tool_format: ToolCallFormat, opener: str, tools: list[tuple[str, Any]], special_tokens: Mapping[str, int]
) -> tuple[Trigger, ...]:
    """The trigger of the calls: the opening literal, or where there is none a pattern for
    a call at the start of the output."""
    if opener:
        return (Trigger(opener, "word", special_tokens.get(opener)),)
    if tool_format.syntax is ToolSyntax.JSON or (
        tool_format.syntax is ToolSyntax.PYTHONIC and tool_format.array
    ):
        head = re.escape("[" if tool_format.array else "{")
    else:
        head = "(?:" + "|".join(re.escape(name) for name, _schema in tools) + ")"
    return (Trigger(rf"^\s*({head})", "pattern"),)
