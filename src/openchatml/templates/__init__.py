"""Any model's chat template: render prompts with it, derive its output format by
differential analysis, parse its output into OpenChatML messages, build grammars.

The rooms, bottom up: :mod:`.format` (what a template says about a model's output),
:mod:`.environment` (the sandboxed Jinja that renders it), :mod:`.analysis` (the format,
read off renders of probe conversations), :mod:`.prompt` and :mod:`.tokenize` (a
conversation → prompt text → token ids, request text kept as text), :mod:`.parsing` (a
model's output → typed deltas and a message), :mod:`.decoding` (the same from token ids),
:mod:`.grammar` (grammars that hold a model to its tool-call syntax), :mod:`.check` (parse
cases run whole and streamed). :class:`ModelTokenizer` is what these layers need of a
model's tokenizer; the concrete one lives in :mod:`openchatml.engines.tokenizer`.
"""

from __future__ import annotations

from .analysis import analyze, analyze_source, preserved_tokens
from .decoding import TemplateTokenParser
from .environment import ChatTemplate
from .errors import (
    ParseWarning,
    TemplateError,
    TemplateRenderError,
    TemplateSyntaxError,
    UnsupportedTemplateError,
)
from .format import (
    CallIdPosition,
    ContentFormat,
    ContentMode,
    GenerationPrompts,
    ReasoningFormat,
    ReasoningMode,
    TemplateFormat,
    ToolCallFormat,
    ToolSyntax,
)
from .grammar import ToolChoice, ToolGrammar, Trigger, harmony_tool_call_grammar, tool_call_grammar
from .model_tokenizer import ModelTokenizer
from .parsing import (
    ContentText,
    Delta,
    HarmonyOutputParser,
    OutputParser,
    ParsedMessage,
    ParseOptions,
    ReasoningText,
    TemplateParser,
    ToolArgumentsText,
    ToolCall,
    ToolCallIdentified,
    ToolCallStarted,
    open_parser,
    parse_output,
)
from .prompt import render_prompt
from .tokenize import prompt_ids

__all__ = [
    "CallIdPosition",
    "ChatTemplate",
    "ContentFormat",
    "ContentMode",
    "ContentText",
    "Delta",
    "GenerationPrompts",
    "HarmonyOutputParser",
    "ModelTokenizer",
    "OutputParser",
    "ParseOptions",
    "ParseWarning",
    "ParsedMessage",
    "ReasoningFormat",
    "ReasoningMode",
    "ReasoningText",
    "TemplateError",
    "TemplateFormat",
    "TemplateParser",
    "TemplateRenderError",
    "TemplateSyntaxError",
    "TemplateTokenParser",
    "ToolArgumentsText",
    "ToolCall",
    "ToolCallFormat",
    "ToolCallIdentified",
    "ToolCallStarted",
    "ToolChoice",
    "ToolGrammar",
    "ToolSyntax",
    "Trigger",
    "UnsupportedTemplateError",
    "analyze",
    "analyze_source",
    "harmony_tool_call_grammar",
    "open_parser",
    "parse_output",
    "preserved_tokens",
    "prompt_ids",
    "render_prompt",
    "tool_call_grammar",
]
