"""The grammars of one request's tool calls, as the engines take them.

Four texts come out of one :class:`~.builder.RuleSet`:

* ``lark`` — llguidance's Lark dialect, for the whole output. JSON arguments are inline
  ``%json`` schemas (llguidance's own schema compiler, ``lenient``, whitespace bounded);
  free text runs in lazy lexemes that end at the first trigger. Markers that are special
  tokens of the model's tokenizer are written as token references (``<[id]>``):
  llguidance never matches a special token against quoted text.
* ``lark_fixed_spacing`` — the same with JSON in one spacing (the format's separators and
  no other whitespace), for llguidance versions that cannot bound JSON whitespace.
* ``ebnf`` — the whole output in the GBNF syntax read by both llama.cpp and xgrammar
  (``Grammar.from_ebnf``); JSON Schemas are converted into rules.
* ``gbnf`` — what llama.cpp needs: when ``lazy`` (``tool_choice="auto"``), the grammar of
  the output from the trigger on (llama.cpp's lazy grammars let the model write freely
  until a trigger and apply the grammar from there); otherwise the whole output. Markers
  that are special tokens are token references there (llama.cpp's dialect, see
  :mod:`.gbnf`); without special tokens, the same rules as ``ebnf``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from .builder import LAZY_START, START, RuleSet
from .gbnf import GbnfWriter
from .lark import LarkWriter


@dataclass(frozen=True, slots=True)
class Trigger:
    """What starts the tool calls, for a lazy grammar: free text until it, the grammar from it.

    ``kind == "word"``: ``value`` is the literal marker (``token_id`` is its id where it is
    one special token of the tokenizer). ``kind == "pattern"``: ``value`` is a regular
    expression (Python / ECMAScript syntax) searched in the output; the grammar starts where
    its first group starts (llama.cpp's ``pattern`` triggers).
    """

    value: str
    kind: Literal["word", "pattern"] = "word"
    token_id: int | None = None


@dataclass(frozen=True, slots=True)
class ToolGrammar:
    """Grammars for one request's tool calls (see the module docstring)."""

    lark: str
    """llguidance Lark, the whole output."""
    lark_fixed_spacing: str
    """The same, its JSON values in one fixed spacing (no whitespace but the format's
    separators): for llguidance versions that ignore a bound on JSON whitespace (vLLM 0.32
    pins one), where a model could write whitespace without end."""
    gbnf: str
    """llama.cpp GBNF (special tokens as token references): the output from the trigger on
    when ``lazy``, else the whole output."""
    ebnf: str
    """The whole output in the GBNF syntax that xgrammar and llama.cpp both read."""
    triggers: tuple[Trigger, ...]
    """What opens the calls (given whether or not the grammar is lazy)."""
    lazy: bool
    """Free content may come before the calls (``auto``): apply ``gbnf`` from a trigger on."""
    tools: tuple[str, ...] = ()
    """The names of the tools the grammar lets the model call."""
    parallel: bool = False
    """Several calls are allowed."""


def write_tool_grammar(
    rule_set: RuleSet,
    special_tokens: Mapping[str, int],
    *,
    triggers: tuple[Trigger, ...],
    lazy: bool,
    tools: tuple[str, ...],
    parallel: bool,
    json_separators: tuple[str, str] = (", ", ": "),
) -> ToolGrammar:
    """The :class:`ToolGrammar` of ``rule_set``, whose rules :data:`~.builder.START` (the
    whole output) and :data:`~.builder.LAZY_START` (from the trigger on) are defined;
    ``special_tokens``: markers that are single special tokens, with their ids (Lark, GBNF);
    ``json_separators``: the item and key separators of JSON values in ``lark_fixed_spacing``."""
    ebnf = GbnfWriter(rule_set).write(START)
    return ToolGrammar(
        lark=LarkWriter(rule_set, special_tokens).write(START),
        lark_fixed_spacing=LarkWriter(rule_set, special_tokens, json_separators).write(START),
        gbnf=GbnfWriter(rule_set, special_tokens).write(LAZY_START if lazy else START),
        ebnf=ebnf,
        triggers=triggers,
        lazy=lazy,
        tools=tools,
        parallel=parallel,
    )
