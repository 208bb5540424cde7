"""Grammars that hold a model to its tool-call syntax, for constrained decoding.

:func:`tool_call_grammar` builds, from a template's analysed format (or Harmony, for
gpt-oss: :func:`harmony_tool_call_grammar`) and the offered tools, a :class:`ToolGrammar`:
llguidance Lark, llama.cpp GBNF and xgrammar EBNF texts, with the :class:`Trigger` of a
lazy grammar.

The modules, bottom up: :mod:`.ir` (the intermediate form), :mod:`.builder` (named rules,
object members), :mod:`.value_dialect` and :mod:`.json_schema` (values by JSON Schema),
:mod:`.lark` and :mod:`.gbnf` (the writers; for GBNF, :mod:`.char_sets`,
:mod:`.regex_reader`, :mod:`.lark_reader` and :mod:`.custom_grammar` read custom tools'
grammars into rules, :mod:`.opening_guard` keeps runs of text from spelling a control
token), :mod:`.tool_choice` (what ``tool_choice`` allows), :mod:`.markers` and
:mod:`.call_arguments` (a format's calls), :mod:`.tool_grammar` (the result),
:mod:`.tool_calls` and :mod:`.harmony` (the grammars of a request).
"""

from .harmony import harmony_tool_call_grammar
from .tool_calls import tool_call_grammar
from .tool_choice import ToolChoice
from .tool_grammar import ToolGrammar, Trigger

__all__ = ["ToolChoice", "ToolGrammar", "Trigger", "harmony_tool_call_grammar", "tool_call_grammar"]
