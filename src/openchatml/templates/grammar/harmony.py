"""The output grammar of gpt-oss, whose output is Harmony rather than a chat template's
own syntax."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...core.tokens import NAMED_SPECIAL_TOKENS
from .builder import LAZY_START, START, RuleSet
from .ir import (
    EMPTY,
    FreeText,
    LiteralText,
    Node,
    Subgrammar,
    choice,
    concat,
    optional,
    zero_or_more,
)
from .json_schema import json_value
from .tool_choice import BuiltinTool, FreeformTool, ToolChoice, offered_tools, select_tools
from .tool_grammar import ToolGrammar, Trigger, write_tool_grammar

FUNCTIONS: Final = "functions."
"""The namespace of a tool whose name holds none."""
TO: Final = " to="
"""What a call's header holds before its recipient: `` to=functions.`` (or
`` to=NAMESPACE.``) is the trigger of lazy grammars."""
JSON_SEPARATORS: Final = (",", ":")
"""gpt-oss writes JSON compact (``{"location":"Paris"}``): under a grammar, that spacing only."""
BUILTIN_CHANNELS: Final = ("<|channel|>analysis", "<|channel|>commentary")
"""The channels a call of a built-in tool (``to=python``) is written on."""
PRELUDE_SHARES: Final = (2, 4, 4)
"""With a bound on reasoning, at most three messages come before the answer or the call,
the first taking up to half of the bound and the others a quarter each."""


def harmony_tool_call_grammar(
    tools: Sequence[Mapping[str, Any]],
    *,
    tool_choice: ToolChoice = "auto",
    freeform: Sequence[FreeformTool] = (),
    builtin: Sequence[BuiltinTool] = (),
    answer_schema: Mapping[str, Any] | None = None,
    reasoning_tokens: int | None = None,
    special_tokens: Mapping[str, int] | None = None,
) -> ToolGrammar:
    """The grammars that hold gpt-oss (Harmony) to what a request allows, from the prompt's
    ``<|start|>assistant`` on: ``analysis`` messages and ``commentary`` preambles (each
    ended by ``<|end|><|start|>assistant``), then — by ``tool_choice`` — a ``final`` answer
    ending in ``<|return|>`` (``none``), a call (``required``, a named tool), or either
    (``auto``). A function call is ``<|channel|>commentary to=functions.NAME`` (or the
    recipient before the channel), optionally `` <|constrain|>json`` or `` json``,
    ``<|message|>``, the arguments as JSON conforming to the tool's schema, ``<|call|>``; a
    ``freeform`` tool's call carries its raw input instead (free text, or text of its
    grammar), with no constraint. A ``builtin`` tool's call (gpt-oss's ``python``) is
    ``<|channel|>analysis to=python`` (or ``commentary``, or the recipient first),
    optionally `` code``, ``<|message|>``, free text (JSON arguments conforming to its
    schema where it has one: the browser's actions), ``<|call|>``. One call per turn
    (``parallel`` is false). A tool whose name holds a dot, ``NAMESPACE.NAME``, is a tool of
    that Harmony namespace: its calls go ``to=NAMESPACE.NAME`` (:func:`harmony_recipient`).

    ``answer_schema``: the JSON Schema the final answer conforms to (``text.format``), which
    then comes with no preamble before it (a client reads every message text as the
    answer); ``None``: free text. ``reasoning_tokens``: a bound on the text of the messages before
    the answer or the call (at most three of them then: :data:`PRELUDE_SHARES`); ``None``:
    any number, unbounded. ``special_tokens``: the markers' ids (default: o200k_harmony's).
    The triggers, for lazy grammars, are `` to=functions.``, `` to=NAMESPACE.`` for each
    other namespace of the allowed tools and `` to=NAME`` for each allowed built-in one
    (the grammar from one on, itself included: the recipient, the rest of the header, the
    input). Raises ``ValueError`` as
    :func:`~.tool_choice.select_tools` does."""
    offered = offered_tools(tools, freeform, builtin)
    selection = select_tools(tool_choice, offered)
    rule_set = RuleSet()
    if answer_schema is None:
        answer_body: Node = FreeText("<|return|>")
    else:
        answer_body = concat(json_value(answer_schema, answer_schema), LiteralText("<|return|>"))
    answer = concat(LiteralText("<|channel|>final<|message|>"), answer_body)
    heads: list[Node] = []
    rests: list[Node] = []
    for name in selection.names:
        tool = offered[name]
        header, payload = _call_parts(tool)
        recipient = tool.name if isinstance(tool, BuiltinTool) else harmony_recipient(name)
        channels = BUILTIN_CHANNELS if isinstance(tool, BuiltinTool) else ("<|channel|>commentary",)
        # after " to=": the recipient, the channel (recipient first), the constraint, the input
        channel = choice(*map(LiteralText, channels))
        rest = concat(LiteralText(recipient), optional(channel), header, payload)
        rests.append(rule_set.add("call", rest))
        heads += [
            concat(LiteralText(order), header, payload)
            for written in channels
            for order in (TO + recipient + written, written + TO + recipient)
        ]
    if selection.mode == "none":
        body = answer
    else:
        call = rule_set.add("call", choice(*heads))  # one head per channel and order
        body = choice(answer, call) if selection.mode == "auto" else call
    # a structured answer comes alone: a preamble would be one more text to read as the answer
    rule_set.define(START, concat(_prelude(reasoning_tokens, preambles=answer_schema is None), body))
    # from the trigger on, the trigger included (as llama.cpp applies a lazy grammar)
    rule_set.define(LAZY_START, concat(LiteralText(TO), choice(*rests)) if rests else EMPTY)
    return write_tool_grammar(
        rule_set,
        {**NAMED_SPECIAL_TOKENS, **(special_tokens or {})},
        triggers=_triggers(selection.names, offered),
        lazy=selection.mode == "auto",
        tools=selection.names,
        parallel=False,
        json_separators=JSON_SEPARATORS,
    )


def harmony_recipient(name: str) -> str:
    """Whom a call of the tool ``name`` goes to: ``functions.NAME``, or ``name`` itself
    where it holds a namespace (``multi_agent_v1.spawn``)."""
    return name if "." in name else FUNCTIONS + name


def _triggers(names: Sequence[str], offered: Mapping[str, Any]) -> tuple[Trigger, ...]:
    """`` to=functions.``, then `` to=NAMESPACE.`` for each other namespace of ``names``
    and `` to=NAME`` for each built-in tool among them."""
    spaces = dict.fromkeys(
        [
            FUNCTIONS,
            *(
                name
                if isinstance(offered[name], BuiltinTool)
                else harmony_recipient(name).partition(".")[0] + "."
                for name in names
            ),
        ]
    )
    return tuple(Trigger(TO + space) for space in spaces)


def _call_parts(tool: Any) -> tuple[Node, Node]:
    """What follows a call's recipient and channel: the optional constraint (JSON for
    function tools, `` code`` or `` <|constrain|>code`` for built-in ones, either for a
    built-in one with a schema), then ``<|message|>``, the input and ``<|call|>``."""
    if isinstance(tool, BuiltinTool) and tool.schema is not None:
        spelled = (" code", " <|constrain|>code", " json", " <|constrain|>json")
        schema = json.loads(tool.schema)
        arguments = concat(LiteralText("<|message|>"), json_value(schema, schema), LiteralText("<|call|>"))
        return optional(choice(*map(LiteralText, spelled))), arguments
    if isinstance(tool, BuiltinTool):
        constraint = optional(choice(LiteralText(" code"), LiteralText(" <|constrain|>code")))
        return constraint, concat(LiteralText("<|message|>"), FreeText("<|call|>"))
    if isinstance(tool, FreeformTool):
        if tool.syntax == "text":
            payload: Node = FreeText("<|call|>")
        else:
            payload = Subgrammar(tool.syntax, tool.definition, "<|call|>")
        return EMPTY, concat(LiteralText("<|message|>"), payload)
    constrain = optional(choice(LiteralText(" <|constrain|>json"), LiteralText(" json")))
    arguments = concat(LiteralText("<|message|>"), json_value(tool, tool), LiteralText("<|call|>"))
    return constrain, arguments


def _message(channel: str, bound: int | None) -> Node:
    """One ``channel`` message before the answer, its text bounded by ``bound`` tokens."""
    return concat(
        LiteralText(f"<|channel|>{channel}<|message|>"),
        FreeText("<|end|>", max_tokens=bound),
        LiteralText("<|start|>assistant"),
    )


def _prelude(bound: int | None, *, preambles: bool) -> Node:
    """The messages before the answer or the call — ``analysis``, and ``commentary``
    preambles where ``preambles`` — any number, or with a ``bound`` on their text at most
    three (:data:`PRELUDE_SHARES`), each with its share of it."""
    channels = ("analysis", "commentary") if preambles else ("analysis",)
    if bound is None:
        return zero_or_more(choice(*(_message(channel, None) for channel in channels)))
    shares = [bound // share for share in PRELUDE_SHARES]
    shares[-1] = bound - sum(shares[:-1])
    prelude: Node = EMPTY
    for share in reversed(shares):
        if share <= 0:
            continue
        one = choice(*(_message(channel, share) for channel in channels))
        prelude = optional(concat(one, prelude))
    return prelude
