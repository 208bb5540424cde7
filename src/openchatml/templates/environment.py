"""A sandboxed Jinja environment that renders Hugging Face chat templates.

It renders the way transformers' ``apply_chat_template`` does: ``trim_blocks`` and
``lstrip_blocks``, loop controls, ``tojson`` without key sorting or HTML escaping (and with
``indent``, ``separators``, ``ensure_ascii``, ``sort_keys``), ``raise_exception``,
``strftime_now``, the ``{% generation %}`` tag. ``tools`` is left undefined when not given
(transformers passes ``None``, which breaks the templates written for tool use only; no
other template renders differently). On top of that it gives templates what they use in
the wild:

* ``{% do %}``, ``from_json`` / ``fromjson``, and the mutable list and dict methods
  (``append``, ``extend``, ``pop``, ``update``, ``setdefault`` …) that transformers'
  immutable sandbox refuses; a render works on a copy of its inputs, so a template that
  mutates them never touches the caller's data;
* ``tojson`` of what Jinja filters return lazily (``tools | map(attribute="function")`` is
  a generator): iterables are written as lists, ``Undefined`` as ``null``;
* reasoning under every name templates read: a message's ``reasoning_content``,
  ``thinking`` or ``reasoning`` is copied to the others (as transformers does);
* tool-call arguments that work both as a mapping and as text (:class:`ToolArguments`),
  see below;
* variables some templates expect from their callers, derived when the template uses them
  and the caller did not pass them: ``functions`` (the tools as indented JSON text, ``""``
  when there are none) and ``datetime`` (the render clock, ``%Y-%m-%d %H:%M:%S``).

Tool-call arguments. OpenAI messages carry ``function.arguments`` as JSON text; transformers
asks for a mapping, and most templates iterate it (``arguments | items``) or write it with
``tojson``, while others concatenate it to a string (``'>>>' + name + '\\n' + arguments``).
Every ``arguments`` that is (or decodes to) a JSON object reaches the template as a
:class:`ToolArguments`: a ``dict`` (``is mapping``, ``items``, ``[key]``, ``tojson``) whose
text (``{{ arguments }}``, ``~``, ``+`` with a string, ``| string``, string methods such as
``arguments.strip()``) is the JSON text it came from, or its JSON serialisation when it came
as a mapping. ``arguments is string`` is therefore false: templates that branch on it take
their mapping path (what vLLM gives them too: it decodes the arguments before rendering).
Arguments that are not a JSON object (free text for a ``python`` tool, a truncated call)
stay strings.

The sandbox still blocks every internal attribute (``''.__class__`` and the like): such a
render fails with :class:`TemplateRenderError`.

``ChatTemplate(source)`` compiles once; ``render(messages, tools=…, **variables)`` gives the
prompt text. Errors are :class:`TemplateSyntaxError` and :class:`TemplateRenderError`; the
latter names the template line and, where the template itself refused the input with
``raise_exception``, says ``refused:`` followed by the template's message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import jinja2
import jinja2.meta
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.parser import Parser
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import Namespace

from ..core.errors import text_position
from .errors import TemplateRenderError, TemplateSyntaxError

REASONING_FIELDS: Final = ("reasoning_content", "thinking", "reasoning")
"""The names a message's reasoning is read under; every render fills in all three."""


class _RaisedByTemplate(Exception):
    """What ``raise_exception`` raises inside a render."""


def _raise_exception(message: Any) -> None:
    raise _RaisedByTemplate(str(message))


# --- tool-call arguments ---------------------------------------------------------------


class ToolArguments(dict[str, Any]):
    """Tool-call arguments as a template sees them: a mapping whose text is JSON.

    ``text`` is the JSON text the arguments came as (kept, so that templates that write the
    arguments as a string reproduce them exactly); without it, or once a template has
    changed the mapping, the text is the JSON serialisation of the mapping.
    """

    __slots__ = ("_text",)

    def __init__(self, value: Mapping[str, Any], text: str | None = None) -> None:
        super().__init__(value)
        self._text = text

    def __str__(self) -> str:
        text = self._text
        if text is not None:
            try:
                if json.loads(text) == self:
                    return text
            except ValueError:  # pragma: no cover - the text was JSON when it was kept
                pass
        return json.dumps(self, ensure_ascii=False)

    def __getattr__(self, name: str) -> Any:
        # string methods (``arguments.strip()``, ``.startswith('{')``) act on the text
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(str(self), name)

    def __add__(self, other: Any) -> Any:
        if isinstance(other, str):
            return str(self) + other
        return NotImplemented

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, str):
            return other + str(self)
        return NotImplemented


def tool_arguments(value: Any) -> Any:
    """``value`` as templates get it: a JSON object (text or mapping) → :class:`ToolArguments`;
    anything else unchanged."""
    if isinstance(value, ToolArguments):
        return value
    if isinstance(value, Mapping):
        return ToolArguments(value)
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{"):
            try:
                decoded = json.loads(stripped)
            except ValueError:
                return value
            if isinstance(decoded, dict):
                return ToolArguments(decoded, value)
    return value


# --- the data a template sees ----------------------------------------------------------


def plain_data(value: Any) -> Any:
    """A fresh copy of ``value`` made of plain JSON types (mappings → dicts, sequences →
    lists, str/int/float subclasses → the base type); anything else becomes an inert
    ``"<TypeName>"`` placeholder, so no object with methods of its own reaches a template."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return value
    if isinstance(value, ToolArguments):
        return ToolArguments(plain_data(dict(value)), value._text)
    if isinstance(value, Mapping):
        return {plain_data(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_data(v) for v in value]
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return f"<{kind.__name__}>"


def template_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One HF message dict as a render gives it to the template: a plain copy, reasoning
    under all of :data:`REASONING_FIELDS`, tool-call arguments as :class:`ToolArguments`."""
    out: dict[str, Any] = plain_data(message)
    if not isinstance(out, dict):
        return out
    reasoning = next((out[k] for k in REASONING_FIELDS if out.get(k) is not None), None)
    if reasoning is not None:
        for key in REASONING_FIELDS:
            if out.get(key) is None:
                out[key] = reasoning
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            if isinstance(function, dict) and "arguments" in function:
                function["arguments"] = tool_arguments(function["arguments"])
            if "arguments" in call:
                call["arguments"] = tool_arguments(call["arguments"])
    return out


# --- filters and globals -----------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, jinja2.Undefined):
        return None
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _tojson(
    value: Any,
    indent: int | str | None = None,
    ensure_ascii: bool = False,
    separators: Sequence[str] | None = None,
    sort_keys: bool = False,
) -> str:
    if isinstance(indent, bool):  # transformers' order: ``tojson(ensure_ascii)`` positionally
        ensure_ascii, indent = indent, None
    seps = (separators[0], separators[1]) if separators is not None else None
    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=seps,
        sort_keys=sort_keys,
        default=_json_default,
    )


def _from_json(value: Any) -> Any:
    """``from_json``: JSON text decoded; a value that is already decoded (arguments given as a
    mapping) comes back as it is."""
    return json.loads(value) if isinstance(value, str) else value


class _SafeDict:
    """``dict(...)`` and ``dict.fromkeys(...)`` without handing the ``dict`` type itself to
    templates."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, keys: Iterable[Any], value: Any = None) -> dict[Any, Any]:
        return dict.fromkeys(keys, value)


class _Namespace(Namespace):
    """Jinja's ``namespace`` refusing underscore names (they could shadow internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for key in attrs:
            _Namespace._check(key)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _Namespace._check(name)
        Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"namespace attribute {name!r} starts with an underscore")


class _GenerationExtension(Extension):
    """``{% generation %}…{% endgeneration %}``: renders its body (transformers uses it to
    mark assistant tokens for training masks; the text is the same)."""

    tags = {"generation"}  # noqa: RUF012 - jinja's extension API

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


class _ChatSandbox(SandboxedEnvironment):
    """Jinja's sandbox, failing at once on an internal attribute (Jinja's own gives an
    undefined value that renders as nothing)."""

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        raise jinja2.exceptions.SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
        )


def make_environment() -> SandboxedEnvironment:
    """A fresh sandboxed environment set up for chat templates."""
    env = _ChatSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        extensions=["jinja2.ext.loopcontrols", "jinja2.ext.do", _GenerationExtension],
    )
    env.filters["tojson"] = _tojson
    env.filters["from_json"] = _from_json
    env.filters["fromjson"] = _from_json
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(str(fmt))
    env.globals["dict"] = _SafeDict()
    env.globals["namespace"] = _Namespace
    return env


_ENVIRONMENT: Final = make_environment()

_DERIVED: Final[dict[str, Callable[[Sequence[Mapping[str, Any]] | None, datetime], Any]]] = {
    "functions": lambda tools, now: json.dumps(tools, ensure_ascii=False, indent=2) if tools else "",
    "datetime": lambda tools, now: now.strftime("%Y-%m-%d %H:%M:%S"),
}
"""Variables a template may expect from its caller, derived from the tools and the clock."""


class ChatTemplate:
    """A compiled chat template.

    ``source``: the Jinja text; ``name``: for messages; ``bos_token``/``eos_token``: the
    values of those variables; ``now``: the clock ``strftime_now`` and ``datetime`` read
    (``None``: the current time at each render; a fixed time makes renders reproducible).
    Raises :class:`TemplateSyntaxError`.
    """

    def __init__(
        self,
        source: str,
        *,
        name: str = "<template>",
        bos_token: str = "",
        eos_token: str = "",
        now: datetime | None = None,
    ) -> None:
        self.source = source
        self.name = name
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.now = now
        try:
            ast = _ENVIRONMENT.parse(source)
            self._template = _ENVIRONMENT.from_string(ast)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateSyntaxError(
                f"{name}: {exc.message}", position=_line_position(source, exc.lineno)
            ) from exc
        self.variables: frozenset[str] = frozenset(jinja2.meta.find_undeclared_variables(ast))
        """The names the template reads that it does not set itself."""

    def __repr__(self) -> str:
        return f"ChatTemplate(name={self.name!r})"

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        **variables: Any,
    ) -> str:
        """The prompt text for ``messages`` (HF message dicts) and ``tools`` (OpenAI-style
        ``{"type": "function", "function": {...}}`` dicts; a bare ``{"name", "description",
        "parameters"}`` is wrapped so); ``variables`` reach the template
        as globals (``enable_thinking``, ``documents`` …). The template gets copies (see the
        module docstring). Raises :class:`TemplateRenderError`."""
        now = self.now if self.now is not None else datetime.now()
        plain_tools = [_openai_tool(t) for t in plain_data(list(tools))] if tools is not None else None
        context: dict[str, Any] = {
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            "strftime_now": lambda fmt: now.strftime(str(fmt)),
        }
        for key, derive in _DERIVED.items():
            if key in self.variables and key not in variables:
                context[key] = derive(plain_tools, now)
        if plain_tools is not None:
            context["tools"] = plain_tools
        context.update((k, plain_data(v)) for k, v in variables.items())
        context["messages"] = [template_message(m) for m in messages]
        context["add_generation_prompt"] = add_generation_prompt
        try:
            return self._template.render(context)
        except _RaisedByTemplate as exc:
            raise TemplateRenderError(f"{self.name} refused: {exc}", position=self._where(exc)) from exc
        except Exception as exc:  # a template bug (UndefinedError, TypeError …) inside the sandbox
            raise TemplateRenderError(
                f"{self.name}: {type(exc).__name__}: {exc}", position=self._where(exc)
            ) from exc

    def _where(self, exc: BaseException) -> Any:
        """The position of the template line ``exc`` was raised at, if Jinja says."""
        line = None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<template>":
                line = tb.tb_lineno
            tb = tb.tb_next
        return _line_position(self.source, line)


def _openai_tool(tool: Any) -> Any:
    """A bare function description (``{"name", "description", "parameters"}``) wrapped as
    OpenAI does (``{"type": "function", "function": {...}}``); anything else unchanged."""
    if isinstance(tool, dict) and "function" not in tool and "name" in tool:
        return {"type": "function", "function": tool}
    return tool


def _line_position(source: str, line: int | None) -> Any:
    if not line or line < 1:
        return None
    offset = 0
    for _ in range(line - 1):
        found = source.find("\n", offset)
        if found < 0:
            return None
        offset = found + 1
    return text_position(source, offset)
