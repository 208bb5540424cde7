"""The tool-call grammar of gpt-oss, whose output is Harmony rather than a chat template's
own syntax."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...core.tokens import NAMED_SPECIAL_TOKENS
from .builder import LAZY_START, START, RuleSet
from .ir import FreeText, LiteralText, Node, choice, concat, optional, zero_or_more
from .json_schema import json_value
from .tool_choice import ToolChoice, function_tools, select_tools
from .tool_grammar import ToolGrammar, Trigger, write_tool_grammar

RECIPIENT: Final = " to=functions."
"""What a call's header holds before the tool's name; the trigger of lazy grammars."""


def harmony_tool_call_grammar(
    tools: Sequence[Mapping[str, Any]],
    *,
    tool_choice: ToolChoice = "auto",
    special_tokens: Mapping[str, int] | None = None,
) -> ToolGrammar:
    """The grammars that hold gpt-oss (Harmony) to calls of these tools, from the prompt's
    ``<|start|>assistant`` on: any number of ``analysis`` messages and ``commentary``
    preambles (each ended by ``<|end|><|start|>assistant``), then — under ``auto`` — a
    ``final`` answer ending in ``<|return|>``, or a call: ``<|channel|>commentary
    to=functions.NAME`` (or the recipient before the channel), optionally `` <|constrain|>json``
    or `` json``, ``<|message|>``, the arguments as JSON conforming to the tool's schema,
    ``<|call|>``. One call per turn (``parallel`` is false). ``special_tokens``: the
    markers' ids (default: o200k_harmony's). The trigger, for lazy grammars, is
    `` to=functions.`` (the grammar from it on: the name, the rest of the header, the
    arguments). Raises ``ValueError`` as :func:`~.tool_calls.tool_call_grammar` does."""
    offered = function_tools(tools)
    selection = select_tools(tool_choice, offered)
    rule_set = RuleSet()
    thought = concat(
        LiteralText("<|channel|>analysis<|message|>"), FreeText("<|end|>"), LiteralText("<|start|>assistant")
    )
    preamble = concat(
        LiteralText("<|channel|>commentary<|message|>"),
        FreeText("<|end|>"),
        LiteralText("<|start|>assistant"),
    )
    answer = concat(LiteralText("<|channel|>final<|message|>"), FreeText("<|return|>"))
    constrain = optional(choice(LiteralText(" <|constrain|>json"), LiteralText(" json")))
    heads: list[Node] = []
    rests: list[Node] = []
    for name in selection.names:
        schema = offered[name]
        arguments = concat(LiteralText("<|message|>"), json_value(schema, schema), LiteralText("<|call|>"))
        # after the recipient: the channel (recipient first) and the constraint
        rest = concat(LiteralText(name), optional(LiteralText("<|channel|>commentary")), constrain, arguments)
        rests.append(rule_set.add("call", rest))
        heads.append(
            choice(
                concat(LiteralText(RECIPIENT + name + "<|channel|>commentary"), constrain, arguments),
                concat(LiteralText("<|channel|>commentary" + RECIPIENT + name), constrain, arguments),
            )
        )
    call = rule_set.add("call", choice(*heads))
    lazy = selection.mode == "auto"
    body = choice(answer, call) if lazy else call
    rule_set.define(START, concat(zero_or_more(choice(thought, preamble)), body))
    rule_set.define(LAZY_START, choice(*rests))
    return write_tool_grammar(
        rule_set,
        {**NAMED_SPECIAL_TOKENS, **(special_tokens or {})},
        triggers=(Trigger(RECIPIENT),),
        lazy=lazy,
        tools=selection.names,
        parallel=False,
    )
