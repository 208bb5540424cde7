"""The grammar a response is sampled under: what its request allows, as the engines take it.

:func:`response_grammar` turns a checked request — its function tools (strict or not), its
``tool_choice``, its ``text.format``, its code interpreter (gpt-oss's built-in ``python``)
— and the model's output format (Harmony, or a chat
template's analysed format) into a :class:`~..templates.grammar.ToolGrammar`, compiled once
(:func:`~..engines.guidance.check_grammar`) to refuse, before any generation, what the grammar engine
cannot take: each refusal a :class:`~.errors.RequestError` naming the ``param`` at fault
(``tools[2].parameters``, ``text.format.schema``, ``tool_choice``). ``None`` where nothing
constrains the output (no tools, or ``auto`` over none, and free text).

Reasoning stays free but bounded: with ``max_tokens`` to spend, the text before the answer
or the call gets at most ``max_tokens - reserve`` tokens (:func:`reasoning_bound`), so that
a forced call or a schema-conforming answer has room to finish. A template model asked
for no reasoning (``reasoning.effort: "none"``) gets none: a block its prompt opened closes
at once, and none opens.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..engines.guidance import check_grammar
from ..templates.errors import UnsupportedTemplateError
from ..templates.format import TemplateFormat, ToolSyntax
from ..templates.grammar import ToolGrammar, harmony_tool_call_grammar, tool_call_grammar
from ..templates.grammar.budget import RESERVE
from ..templates.grammar.custom_grammar import custom_grammar_problem
from ..templates.grammar.json_schema import close_schema
from ..templates.grammar.tool_choice import BuiltinTool, FreeformTool
from .call_rules import answer_schema
from .errors import RequestError
from .hosted_functions import builtin_schema, hosted_functions
from .request import ResponseRequest
from .tool_index import OfferedTool, ToolIndex
from .wire.tools import AllowedTools, CustomTool, JsonSchemaFormat

ANY_VALUE: Final[Mapping[str, Any]] = {}


@dataclass(frozen=True, slots=True)
class ModelFormat:
    """How the model writes its output: Harmony (``template`` ``None``), or a chat
    template's ``template`` format with the ``markers`` its tokenizer holds as tokens."""

    template: TemplateFormat | None = None
    markers: tuple[tuple[str, int], ...] = ()


def reasoning_bound(max_tokens: int | None) -> int | None:
    """The tokens reasoning may take of ``max_tokens`` (``None``: unbounded): all but
    :data:`RESERVE` (half of a smaller budget), rounded down to one of a few values (so
    that nearby budgets share one compiled grammar: at most an eighth is lost). A template
    model's calls with a longest spelling take more of it where they need it
    (:func:`~..templates.grammar.budget.call_budget`)."""
    if max_tokens is None:
        return None
    free = max_tokens - min(RESERVE, max_tokens // 2)
    if free < 8:
        return max(free, 0)
    step = 1 << (free.bit_length() - 4)  # 8 to 15 steps of the leading power of two
    return free // step * step


def response_grammar(
    request: ResponseRequest,
    model: ModelFormat,
    *,
    prefix: str = "",
    max_tokens: int | None = None,
) -> ToolGrammar | None:
    """The grammar ``request``'s output is sampled under (see the module docstring);
    ``prefix``: what a template's prompt already wrote of the answer. Raises
    :class:`RequestError` for a ``tool_choice`` the format cannot express or a schema or
    grammar the grammar engine cannot compile."""
    answer = _answer_schema(request)
    index = ToolIndex.of(request)
    offered = bool(index)
    choice = _choice(request, index) if offered else "none"
    template = model.template
    writes_calls = template is None or template.tools.syntax is not ToolSyntax.NONE
    if not writes_calls and _mode(choice) == "auto":
        choice = "none"  # the template writes no calls: the answer is all there is to hold
    if answer is None and choice == "none" and not (offered and writes_calls):
        return None
    functions = [tool for tool in index.tools if tool.custom is None]
    if template is not None:  # a template model calls the hosted tools as functions
        functions += hosted_functions(index.hosted)
    tools = tuple(map(_tool_json, functions))
    freeform = tuple(
        _freeform(tool.call_name, tool.custom) for tool in index.tools if tool.custom is not None
    )
    builtin = (
        tuple(BuiltinTool(name, builtin_schema(name)) for name in index.hosted) if template is None else ()
    )
    grammar = _built(
        model,
        json.dumps(tools, sort_keys=True),
        freeform,
        builtin,
        json.dumps(choice if template is None else _as_function_choice(choice), sort_keys=True),
        None if answer is None else json.dumps(answer, sort_keys=True),
        request.parallel_tool_calls,
        prefix,
        0 if template is not None and request.reasoning_effort == "none" else reasoning_bound(max_tokens),
    )
    _check(grammar, request, answer)
    return grammar


def _mode(choice: Any) -> str:
    """``none``, ``auto`` or ``required``: what a builder's ``tool_choice`` leaves to the model."""
    if isinstance(choice, str):
        return choice
    return str(choice.get("mode", "auto")) if choice.get("type") == "allowed_tools" else "required"


def _choice(request: ResponseRequest, index: ToolIndex) -> Any:
    """The request's ``tool_choice`` as the grammar builders take it, by call names (see
    :meth:`~.tool_index.ToolIndex.selection`)."""
    choice = request.tool_choice
    mode, names = index.selection(choice)
    if mode == "none" or isinstance(choice, str):
        return mode
    if isinstance(choice, AllowedTools) or len(names) != 1:  # an MCP server's tools: any of them
        return {"type": "allowed_tools", "mode": mode, "tools": [{"name": name} for name in names]}
    (name,) = names
    tool = index.get(name)
    if name in index.hosted:
        return {"type": "builtin", "name": name}
    kind = "custom" if tool is not None and tool.custom is not None else "function"
    return {"type": kind, "name": name}


def _as_function_choice(choice: Any) -> Any:
    """``choice`` for a template model: a hosted tool named as the function it is offered as."""
    if isinstance(choice, dict) and choice.get("type") == "builtin":
        return {"type": "function", "name": choice["name"]}
    return choice


def _freeform(name: str, tool: CustomTool) -> FreeformTool:
    grammar = tool.grammar
    if grammar is None:
        return FreeformTool(name)
    return FreeformTool(name, grammar.syntax, grammar.definition)


def _tool_json(tool: OfferedTool) -> dict[str, Any]:
    return {
        "type": "function",
        "name": tool.call_name,
        "parameters": dict(tool.parameters) if tool.parameters is not None else None,
        "strict": tool.strict,
    }


def _answer_schema(request: ResponseRequest) -> Mapping[str, Any] | None:
    """The JSON Schema the answer conforms to: what :func:`~.call_rules.answer_schema` holds
    it to (a strict format's closed schema, any object for ``json_object``), or a loose
    format's schema where the grammar engine takes it (else any JSON value: best effort,
    never an error); ``None`` for text."""
    fmt = request.text_format
    if isinstance(fmt, JsonSchemaFormat) and fmt.json_schema is not None and not fmt.strict:
        schema = dict(fmt.json_schema)
        return schema if not check_grammar(_schema_grammar(schema)) else ANY_VALUE
    return answer_schema(request)


@functools.lru_cache(maxsize=256)
def _built(
    model: ModelFormat,
    tools: str,
    freeform: tuple[FreeformTool, ...],
    builtin: tuple[BuiltinTool, ...],
    choice: str,
    answer: str | None,
    parallel: bool,
    prefix: str,
    bound: int | None,
) -> ToolGrammar:
    """The grammar of one distinct (format, tools, choice, answer, budget): built once."""
    tool_list = json.loads(tools)
    for tool in tool_list:
        if tool["parameters"] is None:
            del tool["parameters"]
    tool_choice = json.loads(choice)
    answer_schema = None if answer is None else json.loads(answer)
    try:
        if model.template is None:
            return harmony_tool_call_grammar(
                tool_list,
                tool_choice=tool_choice,
                freeform=freeform,
                builtin=builtin,
                answer_schema=answer_schema,
                reasoning_tokens=bound,
            )
        return tool_call_grammar(
            model.template,
            tool_list,
            tool_choice=tool_choice,
            parallel=parallel,
            prefix=prefix,
            freeform=freeform,
            answer_schema=answer_schema,
            reasoning_tokens=bound,
            special_tokens=dict(model.markers),
        )
    except UnsupportedTemplateError as exc:
        raise RequestError(
            f"This model's chat template cannot express tool_choice {tool_choice!r}: {exc}",
            param="tool_choice",
            code="unsupported_tool_choice",
        ) from exc
    except ValueError as exc:
        lark = next((t for t in freeform if t.syntax == "lark" and repr(t.name) in str(exc)), None)
        if lark is not None:
            raise RequestError(
                f"This model cannot take custom tool {lark.name!r}: {exc}.",
                param="tools",
                code="unsupported_custom_tool",
            ) from exc
        raise RequestError(
            f"Invalid tool_choice: {exc}.", param="tool_choice", code="unsupported_tool_choice"
        ) from exc


def _check(grammar: ToolGrammar, request: ResponseRequest, answer: Mapping[str, Any] | None) -> None:
    """Refuse a grammar the engine cannot compile, naming the part at fault."""
    verdict = check_grammar(grammar.lark)
    if not verdict:
        return
    for index, tool in enumerate(request.tools):
        if tool.strict is not False and tool.parameters is not None:
            problem = check_grammar(_schema_grammar(close_schema(dict(tool.parameters))))
            if problem:
                raise _schema_error(f"tools[{index}].parameters", problem)
    if answer is not None:
        problem = check_grammar(_schema_grammar(answer))
        if problem:
            raise _schema_error("text.format.schema", problem)
    raise RequestError(
        f"The request's tools and formats cannot be enforced: {_first_line(verdict)}",
        param="tools",
        code="invalid_grammar",
    )


def check_gbnf_custom_tools(request: ResponseRequest) -> None:
    """Refuse, for an engine that samples under llama.cpp's GBNF, a custom tool whose
    grammar GBNF cannot carry (:func:`~..templates.grammar.custom_grammar.custom_grammar_problem`):
    a 400 ``unsupported_custom_tool`` before any generation."""
    for tool in ToolIndex.of(request).tools:
        grammar = tool.custom.grammar if tool.custom is not None else None
        if grammar is None:
            continue
        problem = custom_grammar_problem(grammar.syntax, grammar.definition)
        if problem:
            raise RequestError(
                f"This server's engine (llama.cpp, whose grammars are GBNF) cannot enforce the "
                f"{grammar.syntax} grammar of custom tool {tool.call_name!r}: {_first_line(problem)}.",
                param="tools",
                code="unsupported_custom_tool",
            )


def _schema_grammar(schema: Mapping[str, Any]) -> str:
    return f"start: %json {json.dumps(schema)}\n"


def _schema_error(param: str, problem: str) -> RequestError:
    return RequestError(
        f"Invalid schema at '{param}': the grammar engine cannot enforce it: {_first_line(problem)}",
        param=param,
        code="invalid_schema",
    )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
