"""Grammars that hold a model to its own tool-call syntax, for constrained decoding.

:func:`tool_call_grammar` turns a :class:`~.format.TemplateFormat` and the offered tools
into a :class:`ToolGrammar` that accepts exactly the output the format allows: the
reasoning (free text between the format's markers), content before the first call where
``tool_choice`` allows it, then the calls themselves, spelled the format's way (section
and per-call markers, separators, ids), naming only the allowed tools, with arguments that
conform to each tool's JSON Schema. Three texts come out of one construction:

* ``lark`` — llguidance's Lark dialect, for the whole output. JSON arguments (``json``,
  ``tag_json``) are inline ``%json`` schemas (llguidance's own schema compiler,
  ``lenient``); free text runs in lazy lexemes that end at the first trigger. Markers
  that are special tokens of the model's tokenizer (``special_tokens``) are written as
  token references (``<[id]>``): llguidance never matches a special token against quoted
  text.
* ``ebnf`` — the whole output in the GBNF syntax read by both llama.cpp and xgrammar
  (``Grammar.from_ebnf``); JSON Schemas are converted here.
* ``gbnf`` — what llama.cpp needs: when ``lazy`` (``tool_choice="auto"``), the grammar of
  the output from the trigger on (llama.cpp's lazy grammars let the model write freely
  until a trigger and apply the grammar from there); otherwise the same text as ``ebnf``.

Triggers (:class:`Trigger`): the literal that opens the calls — the format's
``section_start``, else ``call_start``, else the first marker of a call (an id or name
prefix). A format with no marker at all (bare JSON such as Llama 3.1's
``{"name": …, "parameters": …}``, a bare Python list) gets a ``pattern`` trigger anchored
at the start of the output, ``^\\s*(\\{)``: "the answer begins with the call"; the grammar
starts where the pattern's group starts. Triggers are meant to be matched in the output
after the reasoning (a model may think about a call before making it).

Theory of operation. The grammar is first built as a small intermediate form — literals,
character classes, sequences, alternatives, repetitions, rule references, optional layout
whitespace, "free text up to a marker", and "a JSON value conforming to a schema" — then
written out in each syntax (:class:`_LarkWriter`, :class:`_GbnfWriter`). The parts:

* reasoning, from ``prefix`` (the text the prompt already wrote of the assistant's
  message): already open (the output starts inside it and must close it), already closed,
  or optional at the start; with a delimiter and no start marker, everything until the
  delimiter is reasoning, and the delimiter must come;
* the body: ``required`` and named choices allow only whitespace before the first call;
  ``auto`` allows free text up to the trigger (after which calls must follow) or free text
  with no trigger at all;
* the calls: ``section_start`` call (separator call)* ``section_end``, each call
  ``call_start`` head arguments tail ``call_end``, the head being the name between its
  markers with the id where ``id_position`` puts it — or, when ``id_pattern`` holds the
  name and the id comes before it, the id alone (``functions.get_time:0``). Whitespace at
  the edges of a marker, and around its inner line breaks, is optional: models drop or add
  a newline there;
* the arguments, by syntax: a JSON object (``json``: name, arguments and id keys in the
  template's order, a wrapper object, the name as the key, a JSON list of calls, arguments
  as a JSON-encoded string; ``tag_json``); one tag per argument (``tag_tagged``), strings
  raw (up to the value suffix, or inside ``arg_value_wrap_*``), other values JSON or their
  Python spelling (``True``, ``None``, ``['a']``: templates that write ``value | string``
  teach it); Python keyword arguments and literals (``pythonic``); ``{k:v}`` with quote
  markers around strings (``object_notation``).

Order of properties: JSON objects keep the schema's order (llguidance's rule); tagged
arguments, and Python and object-notation objects, come in any order, each at most once,
the required ones all present — exactly so up to :data:`_ANY_ORDER_LIMIT` properties (a
rule per set of properties written); past that the required ones are tracked so and the
optional ones may come anywhere (and repeat); past that many required ones, these come in
schema order.

Schemas. ``type`` (one or a list), ``properties``/``required``/``additionalProperties``,
``items``/``prefixItems``/``minItems``/``maxItems``, ``enum``, ``const``, ``anyOf``/
``oneOf`` (as ``anyOf``), ``allOf`` (objects merged), local ``$ref`` (``#/$defs/…``,
``#/definitions/…``), ``nullable``, string ``minLength``/``maxLength``. The conversion of
this module ignores ``pattern``, ``format`` and number bounds (llguidance's ``%json``
enforces them where it is used). An object that declares ``properties`` and says nothing
of ``additionalProperties`` is closed (a model must not invent arguments); one that
declares none takes any keys.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from ..core.tokens import NAMED_SPECIAL_TOKENS
from .errors import UnsupportedTemplateError
from .format import CallIdPosition, ReasoningMode, TemplateFormat, ToolSyntax

__all__ = ["ToolChoice", "ToolGrammar", "Trigger", "harmony_tool_call_grammar", "tool_call_grammar"]

ToolChoice: TypeAlias = "str | Mapping[str, Any]"
"""``"auto"``, ``"required"``, ``{"type": "function", "name": N}`` (Responses) or
``{"type": "function", "function": {"name": N}}`` (Chat Completions), or
``{"type": "allowed_tools", "mode": "auto" | "required", "tools": [...]}``."""

_ANY_ORDER_LIMIT: Final = 6
"""Arguments in any order are tracked exactly up to this many properties (2**n rules)."""
_WS_MAX: Final = 32
"""The most layout whitespace accepted in one place."""


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
    gbnf: str
    """llama.cpp GBNF: the output from the trigger on when ``lazy``, else the whole output."""
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


def tool_call_grammar(
    fmt: TemplateFormat,
    tools: Sequence[Mapping[str, Any]],
    *,
    tool_choice: ToolChoice = "auto",
    parallel: bool = True,
    prefix: str = "",
    special_tokens: Mapping[str, int] | None = None,
) -> ToolGrammar:
    """The grammars that hold a model with this format to calls of these tools.

    ``tools``: function tools, as Chat Completions (``{"type": "function", "function":
    {...}}``) or Responses / bare (``{"name", "parameters"}``) objects; other tool types are
    ignored. ``tool_choice``: see :data:`ToolChoice`. ``parallel``: several calls in one
    message (only where the format writes several). ``prefix``: what the prompt already
    wrote of the assistant's message (``"<think>\\n"`` when the generation prompt opens the
    reasoning). ``special_tokens``: markers that are single special tokens of the model's
    tokenizer, with their ids (used by the Lark grammar and the triggers).

    A Harmony format (gpt-oss) gets :func:`harmony_tool_call_grammar` (``prefix`` and
    ``parallel`` do not apply: the prompt ends at ``<|start|>assistant``, and a Harmony
    turn ends at its one call).

    Raises :class:`UnsupportedTemplateError` when the format has no tool calls,
    ``ValueError`` for a ``tool_choice`` of ``"none"``, one naming a tool that is not
    offered, or no function tools at all.
    """
    if fmt.harmony:
        return harmony_tool_call_grammar(tools, tool_choice=tool_choice, special_tokens=special_tokens)
    if fmt.tools.syntax is ToolSyntax.NONE:
        raise UnsupportedTemplateError(f"format {fmt.name or '(unnamed)'} has no tool-call syntax")
    offered = _function_tools(tools)
    mode, names = _choice(tool_choice, offered)
    chosen = [(name, offered[name]) for name in names]
    several = parallel and fmt.tools.parallel
    builder = _Builder(fmt, chosen, several=several)
    start, lazy_start, opener = builder.build(mode=mode, prefix=prefix)
    specials = dict(special_tokens or {})
    lazy = mode == "auto"
    triggers = _triggers(fmt, opener, chosen, specials)
    gbnf_writer = _GbnfWriter(builder.g)
    ebnf = gbnf_writer.write(start)
    return ToolGrammar(
        lark=_LarkWriter(builder.g, specials).write(start),
        gbnf=gbnf_writer.write(lazy_start) if lazy else ebnf,
        ebnf=ebnf,
        triggers=triggers,
        lazy=lazy,
        tools=tuple(names),
        parallel=several,
    )


_RECIPIENT: Final = " to=functions."


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
    arguments). Raises ``ValueError`` as :func:`tool_call_grammar` does."""
    offered = _function_tools(tools)
    mode, names = _choice(tool_choice, offered)
    specials = {**NAMED_SPECIAL_TOKENS, **(special_tokens or {})}
    g = _Grammar()
    thought = _seq(_Lit("<|channel|>analysis<|message|>"), _Text("<|end|>"), _Lit("<|start|>assistant"))
    preamble = _seq(_Lit("<|channel|>commentary<|message|>"), _Text("<|end|>"), _Lit("<|start|>assistant"))
    answer = _seq(_Lit("<|channel|>final<|message|>"), _Text("<|return|>"))
    constrain = _opt(_alt(_Lit(" <|constrain|>json"), _Lit(" json")))
    heads: list[_Expr] = []
    rests: list[_Expr] = []
    for name in names:
        schema = offered[name]
        arguments = _seq(_Lit("<|message|>"), _json_node(schema, schema), _Lit("<|call|>"))
        # after the recipient: the channel (recipient first) and the constraint
        rest = _seq(_Lit(name), _opt(_Lit("<|channel|>commentary")), constrain, arguments)
        rests.append(g.rule("call", rest))
        heads.append(
            _alt(
                _seq(_Lit(_RECIPIENT + name + "<|channel|>commentary"), constrain, arguments),
                _seq(_Lit("<|channel|>commentary" + _RECIPIENT + name), constrain, arguments),
            )
        )
    call = g.rule("call", _alt(*heads))
    body = _alt(answer, call) if mode == "auto" else call
    g.rules["start"] = _seq(_star(_alt(thought, preamble)), body)
    g.rules["lazy_start"] = _alt(*rests)
    gbnf_writer = _GbnfWriter(g)
    ebnf = gbnf_writer.write("start")
    lazy = mode == "auto"
    return ToolGrammar(
        lark=_LarkWriter(g, specials).write("start"),
        gbnf=gbnf_writer.write("lazy_start") if lazy else ebnf,
        ebnf=ebnf,
        triggers=(Trigger(_RECIPIENT),),
        lazy=lazy,
        tools=tuple(names),
        parallel=False,
    )


# --------------------------------------------------------------------------- inputs


def _function_tools(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Name → parameters schema (closed, see the module docstring) of each function tool."""
    out: dict[str, Any] = {}
    for tool in tools:
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            continue
        fn = tool.get("function")
        spec = fn if isinstance(fn, Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a function tool without a name: {dict(tool)!r}")
        params = spec.get("parameters")
        if params is None:
            params = {"type": "object", "properties": {}}
        out.setdefault(name, _close(params))
    return out


def _choice(choice: ToolChoice, offered: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(``"auto"`` | ``"required"``, allowed names) from a ``tool_choice``."""
    names = list(offered)
    if isinstance(choice, str):
        if choice == "none":
            raise ValueError("tool_choice 'none' forbids tool calls: no tool-call grammar applies")
        if choice not in ("auto", "required"):
            raise ValueError(f"unknown tool_choice {choice!r}")
        mode = choice
    elif isinstance(choice, Mapping):
        kind = choice.get("type")
        if kind == "function":
            fn = choice.get("function")
            name = fn.get("name") if isinstance(fn, Mapping) else choice.get("name")
            if name not in offered:
                raise ValueError(f"tool_choice names {name!r}, which is not an offered function tool")
            mode, names = "required", [str(name)]
        elif kind == "allowed_tools":
            mode = str(choice.get("mode", "auto"))
            if mode not in ("auto", "required"):
                raise ValueError(f"unknown allowed_tools mode {mode!r}")
            allowed: list[str] = []
            for tool in choice.get("tools") or ():
                if not isinstance(tool, Mapping):
                    continue
                fn = tool.get("function")
                name = fn.get("name") if isinstance(fn, Mapping) else tool.get("name")
                if isinstance(name, str) and name in offered and name not in allowed:
                    allowed.append(name)
            names = allowed
        else:
            raise ValueError(f"unknown tool_choice {dict(choice)!r}")
    else:
        raise ValueError(f"unknown tool_choice {choice!r}")
    if not names:
        raise ValueError("no function tool to call")
    return mode, names


def _close(schema: Any, *, in_all_of: bool = False) -> Any:
    """``schema`` with ``additionalProperties: false`` on objects that declare properties
    and say nothing of others (not inside ``allOf``, whose parts are merged), and OpenAPI's
    ``nullable: true`` as a ``"null"`` type."""
    if isinstance(schema, list):
        return [_close(s, in_all_of=in_all_of) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, Mapping):
            out[key] = {k: _close(v) for k, v in value.items()}
        elif key in ("items", "prefixItems", "additionalProperties", "anyOf", "oneOf", "not", "contains"):
            out[key] = _close(value)
        elif key == "allOf":
            out[key] = _close(value, in_all_of=True)
        else:
            out[key] = value
    if out.get("nullable") is True:
        del out["nullable"]
        kind = out.get("type")
        if isinstance(kind, str) and kind != "null":
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
    if (
        not in_all_of
        and "allOf" not in out
        and isinstance(out.get("properties"), Mapping)
        and out["properties"]
        and "additionalProperties" not in out
    ):
        out["additionalProperties"] = False
    return out


# --------------------------------------------------------------------------- the intermediate form


@dataclass(frozen=True, slots=True)
class _Lit:
    text: str


@dataclass(frozen=True, slots=True)
class _Chars:
    ranges: tuple[tuple[int, int], ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class _Seq:
    items: tuple[_Expr, ...]


@dataclass(frozen=True, slots=True)
class _Alt:
    items: tuple[_Expr, ...]


@dataclass(frozen=True, slots=True)
class _Rep:
    item: _Expr
    lo: int
    hi: int | None


@dataclass(frozen=True, slots=True)
class _Ref:
    name: str


@dataclass(frozen=True, slots=True)
class _Ws:
    """Optional layout whitespace."""


@dataclass(frozen=True, slots=True)
class _Text:
    """Free text: up to and including the first ``stop`` (``""``: to the end, never holding
    ``avoid``), not beginning (after whitespace) with any of ``not_start``; with ``open``,
    whitespace and ``open`` come first (one lexeme in Lark: whitespace before a marker must
    not be taken for free text)."""

    stop: str
    not_start: tuple[str, ...] = ()
    avoid: str = ""
    open: str = ""


@dataclass(frozen=True, slots=True)
class _Json:
    """A JSON value conforming to ``schema`` (JSON text, with the ``$defs`` it refers to)."""

    schema: str


_Expr: TypeAlias = "_Lit | _Chars | _Seq | _Alt | _Rep | _Ref | _Ws | _Text | _Json"
_EMPTY: Final = _Seq(())
_WS: Final = _Ws()


def _seq(*items: _Expr) -> _Expr:
    """A flattened sequence: no empty parts, runs of whitespace merged."""
    out: list[_Expr] = []
    for item in items:
        for part in item.items if isinstance(item, _Seq) else (item,):
            if isinstance(part, _Lit) and not part.text:
                continue
            if isinstance(part, _Ws) and out and isinstance(out[-1], _Ws):
                continue
            out.append(part)
    return out[0] if len(out) == 1 else _Seq(tuple(out))


def _alt(*items: _Expr) -> _Expr:
    """Alternatives, flattened (small ones deduplicated); an empty one makes the rest optional."""
    out: list[_Expr] = []
    seen: set[_Expr] = set()
    empty = False
    for item in items:
        for part in item.items if isinstance(item, _Alt) else (item,):
            if isinstance(part, _Seq) and not part.items:
                empty = True
            elif isinstance(part, _Lit | _Chars | _Ref | _Ws):
                if part not in seen:
                    seen.add(part)
                    out.append(part)
            else:
                out.append(part)
    if not out:
        return _EMPTY
    body = out[0] if len(out) == 1 else _Alt(tuple(out))
    return _opt(body) if empty else body


def _opt(item: _Expr) -> _Expr:
    return item if item == _EMPTY else _Rep(item, 0, 1)


def _star(item: _Expr) -> _Expr:
    return _Rep(item, 0, None)


@functools.cache
def _chars(spec: str, *, negated: bool = False) -> _Chars:
    """A character class from ``"a-z0-9_"``-style text (``-`` between two characters is a range)."""
    ranges: list[tuple[int, int]] = []
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            ranges.append((ord(spec[i]), ord(spec[i + 2])))
            i += 3
        else:
            ranges.append((ord(spec[i]), ord(spec[i])))
            i += 1
    return _Chars(tuple(ranges), negated)


def _mark(text: str, *, split: bool = True) -> _Expr:
    """A marker whose leading and trailing whitespace is optional (and, with ``split``, the
    whitespace of its inner line breaks: ``</function>\\n</tool_call>``)."""
    if not text:
        return _EMPTY
    core = text.strip()
    if not core:
        return _WS
    lines = re.split(r"\s*\n\s*", core) if split else [core]
    inner: list[_Expr] = []
    for i, line in enumerate(lines):
        inner += [_WS, _Lit(line)] if i else [_Lit(line)]
    return _seq(_WS if text[0].isspace() else _EMPTY, *inner, _WS if text[-1].isspace() else _EMPTY)


class _Grammar:
    """Named rules of the intermediate form; ``terminals`` are regular and lexed whole."""

    def __init__(self) -> None:
        self.rules: dict[str, _Expr] = {}
        self.terminals: set[str] = set()
        self.memo: dict[object, _Ref] = {}
        self._count = 0

    def fresh(self, base: str) -> str:
        self._count += 1
        return f"{base}_{self._count}"

    def rule(self, base: str, expr: _Expr, *, terminal: bool = False, key: object = None) -> _Ref:
        if key is not None and key in self.memo:
            return self.memo[key]
        name = self.fresh(base)
        self.rules[name] = expr
        if terminal:
            self.terminals.add(name)
        ref = _Ref(name)
        if key is not None:
            self.memo[key] = ref
        return ref

    def copy(self) -> _Grammar:
        other = _Grammar()
        other.rules = dict(self.rules)
        other.terminals = set(self.terminals)
        other.memo = dict(self.memo)
        other._count = self._count
        return other

    def forward(self, base: str, key: object) -> tuple[_Ref, bool]:
        """A reference for ``key`` and whether it still has to be defined (recursion)."""
        if key in self.memo:
            return self.memo[key], False
        ref = _Ref(self.fresh(base))
        self.memo[key] = ref
        return ref, True

    def define(self, ref: _Ref, expr: _Expr) -> None:
        self.rules[ref.name] = expr


# --------------------------------------------------------------------------- values by schema


_JSON_CHAR: Final = _alt(
    _chars('"\\\x00-\x1f', negated=True),
    _seq(_Lit("\\"), _alt(_chars('"\\/bfnrt'), _seq(_Lit("u"), _Rep(_chars("0-9a-fA-F"), 4, 4)))),
)
_NUMBER: Final = _seq(
    _opt(_Lit("-")),
    _alt(_Lit("0"), _seq(_chars("1-9"), _star(_chars("0-9")))),
    _opt(_seq(_Lit("."), _Rep(_chars("0-9"), 1, None))),
    _opt(_seq(_chars("eE"), _opt(_chars("+-")), _Rep(_chars("0-9"), 1, None))),
)
_INTEGER: Final = _seq(_opt(_Lit("-")), _alt(_Lit("0"), _seq(_chars("1-9"), _star(_chars("0-9")))))
_IDENT: Final = _seq(_chars("A-Za-z_"), _star(_chars("A-Za-z0-9_")))


@dataclass(frozen=True, slots=True)
class _Dialect:
    """How values are spelled: ``json``; ``jstr`` (JSON text inside a JSON string);
    ``py`` (Python literals, JSON spellings of true/false/null too); ``on`` (object
    notation: bare keys, strings between ``quote`` markers)."""

    kind: Literal["json", "jstr", "py", "on"]
    quote: str = ""

    def lit(self, text: str) -> _Lit:
        """Structural text, escaped as it must appear."""
        if self.kind == "jstr":
            return _Lit(json.dumps(text, ensure_ascii=False)[1:-1])
        return _Lit(text)


_JSON: Final = _Dialect("json")
_JSTR: Final = _Dialect("jstr")
_PY: Final = _Dialect("py")


class _Values:
    """JSON Schema → intermediate form, in one dialect; ``root`` resolves ``$ref``."""

    def __init__(self, g: _Grammar, dialect: _Dialect, root: Any) -> None:
        self.g = g
        self.d = dialect
        self.root = root

    # -- pieces of the dialect
    def ws(self) -> _Expr:
        if self.d.kind == "jstr":
            return _Rep(_alt(_Lit(" "), _Lit("\\n"), _Lit("\\t")), 0, _WS_MAX)
        return _WS

    def sep(self) -> _Expr:
        return _seq(self.ws(), self.d.lit(","), self.ws())

    def kv_sep(self) -> _Expr:
        return _seq(self.ws(), self.d.lit(":"), self.ws())

    def string(self, lo: int = 0, hi: int | None = None) -> _Expr:
        kind = self.d.kind
        if kind == "on":
            return _seq(_Lit(self.d.quote), _Text(self.d.quote))
        if kind == "py":
            dq = _alt(_chars('"\\', negated=True), _seq(_Lit("\\"), _chars("\x00", negated=True)))
            sq = _alt(_chars("'\\", negated=True), _seq(_Lit("\\"), _chars("\x00", negated=True)))
            body = _alt(_seq(_Lit('"'), _star(dq), _Lit('"')), _seq(_Lit("'"), _star(sq), _Lit("'")))
            return self.g.rule("pystr", body, terminal=True, key=("pystr",))
        if kind == "jstr":
            plain = _chars('"\\\x00-\x1f', negated=True)
            inner_escape = _seq(
                _Lit("\\\\"),
                _alt(
                    _Lit('\\"'),
                    _Lit("\\\\"),
                    _chars("/bfnrt"),
                    _seq(_Lit("u"), _Rep(_chars("0-9a-fA-F"), 4, 4)),
                ),
            )
            outer_escape = _seq(
                _Lit("\\"), _alt(_chars("nrtbf/"), _seq(_Lit("u"), _Rep(_chars("0-9a-fA-F"), 4, 4)))
            )
            char = _alt(plain, inner_escape, outer_escape)
            return self.g.rule(
                "jstrstr", _seq(_Lit('\\"'), _star(char), _Lit('\\"')), terminal=True, key=("jstrstr",)
            )
        if lo == 0 and hi is None:
            return self.g.rule(
                "str", _seq(_Lit('"'), _star(_JSON_CHAR), _Lit('"')), terminal=True, key=("str",)
            )
        char = self.g.rule("char", _JSON_CHAR, terminal=True, key=("char",))
        return self.g.rule(
            "strn", _seq(_Lit('"'), _Rep(char, lo, hi), _Lit('"')), terminal=True, key=("strn", lo, hi)
        )

    def number(self, integer: bool) -> _Expr:
        body = _INTEGER if integer else _NUMBER
        return self.g.rule(
            "int" if integer else "num", body, terminal=True, key=("int" if integer else "num",)
        )

    def boolean(self) -> _Expr:
        if self.d.kind == "py":
            return _alt(_Lit("True"), _Lit("False"), _Lit("true"), _Lit("false"))
        return _alt(self.d.lit("true"), self.d.lit("false"))

    def null(self) -> _Expr:
        if self.d.kind in ("py", "on"):
            return _alt(_Lit("None"), _Lit("null"))
        return self.d.lit("null")

    def key(self, name: str) -> _Expr:
        kind = self.d.kind
        if kind == "on":
            return _alt(_Lit(name), _Lit(self.d.quote + name + self.d.quote))
        if kind == "py":
            return _alt(_Lit(_py_str(name)), _Lit(json.dumps(name, ensure_ascii=False)))
        return self.d.lit(json.dumps(name, ensure_ascii=False))

    def any_key(self) -> _Expr:
        if self.d.kind == "on":
            return _alt(self.g.rule("ident", _IDENT, terminal=True, key=("ident",)), self.string())
        return self.string()

    def const(self, value: Any) -> _Expr:
        kind = self.d.kind
        if kind == "py":
            return _alt(_Lit(_py_literal(value)), _Lit(json.dumps(value, ensure_ascii=False)))
        if kind == "on":
            return _Lit(_on_literal(value, self.d.quote))
        return self.d.lit(json.dumps(value, ensure_ascii=False))

    def pair(self, name: str, value: _Expr) -> _Expr:
        return _seq(self.key(name), self.kv_sep(), value)

    # -- values
    def value(self, schema: Any) -> _Expr:
        if not isinstance(schema, Mapping) or not schema:
            return self.any()
        key = (self.d, "v", json.dumps(schema, sort_keys=True, default=str))
        ref, new = self.g.forward("val", key)
        if new:
            self.g.define(ref, self._value(schema))
        return ref

    def _value(self, s: Mapping[str, Any]) -> _Expr:
        if "$ref" in s:
            target = self._resolve(s["$ref"])
            rest = {k: v for k, v in s.items() if k not in ("$ref", "$defs", "definitions")}
            if target is None:
                return self.any()
            if not rest or not isinstance(target, Mapping):
                return self.value(target)
            return self.value({**target, **rest})
        if "const" in s:
            return self.const(s["const"])
        if isinstance(s.get("enum"), list):
            return _alt(*(self.const(v) for v in s["enum"]))
        for word in ("anyOf", "oneOf"):
            if isinstance(s.get(word), list) and s[word]:
                siblings = {k: v for k, v in s.items() if k not in (word, "$defs", "definitions")}
                return _alt(*(self.value(_merge(siblings, sub)) for sub in s[word]))
        if isinstance(s.get("allOf"), list) and s["allOf"]:
            merged: dict[str, Any] = {k: v for k, v in s.items() if k != "allOf"}
            for sub in s["allOf"]:
                if isinstance(sub, Mapping) and "$ref" in sub:
                    sub = self._resolve(sub["$ref"]) or {}
                merged = _merge(merged, sub)
            return self.value(merged)
        types = _types(s)
        if not types:
            return self.any()
        return _alt(*(self._typed(t, s) for t in types))

    def _typed(self, t: str, s: Mapping[str, Any]) -> _Expr:
        if t == "string":
            lo = int(s.get("minLength", 0) or 0)
            hi = s.get("maxLength")
            return self.string(lo, int(hi) if isinstance(hi, int) else None)
        if t in ("number", "integer"):
            return self.number(t == "integer")
        if t == "boolean":
            return self.boolean()
        if t == "null":
            return self.null()
        if t == "array":
            return self.array(s)
        if t == "object":
            return self.object(s)
        return self.any()

    def object(self, s: Mapping[str, Any]) -> _Expr:
        props = s.get("properties") if isinstance(s.get("properties"), Mapping) else {}
        assert isinstance(props, Mapping)
        required = [r for r in s.get("required") or () if isinstance(r, str)]
        items = [(name, sub, name in required) for name, sub in props.items() if sub is not False]
        items += [(name, {}, True) for name in required if name not in props]
        extra = s.get("additionalProperties", None if items else True)
        extra_pair = None
        if extra is not None and extra is not False:
            extra_pair = _seq(
                self.any_key(), self.kv_sep(), self.value(extra if isinstance(extra, Mapping) else {})
            )
        members = [(self.pair(n, self.value(sub)), req) for n, sub, req in items]
        arrange = _members if self.d.kind in ("json", "jstr") else _any_order
        body = arrange(self.g, members, self.sep(), extra_pair)
        return _seq(self.d.lit("{"), self.ws(), body, self.ws(), self.d.lit("}"))

    def array(self, s: Mapping[str, Any]) -> _Expr:
        items = s.get("items")
        prefix = s.get("prefixItems")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, s.get("additionalItems", True)
        lo = int(s.get("minItems", 0) or 0)
        hi_raw = s.get("maxItems")
        hi = int(hi_raw) if isinstance(hi_raw, int) else None
        item = None if items is False else self.value(items if isinstance(items, Mapping) else {})
        sep = self.sep()
        if isinstance(prefix, list) and prefix:
            head = [self.value(p) for p in prefix]
            body: _Expr = _EMPTY
            for i in reversed(range(len(head))):
                rest = body if i == len(head) - 1 else _seq(sep, body) if body != _EMPTY else _EMPTY
                tail = _seq(head[i], rest)
                body = tail if i < lo else _opt(tail)
            if item is not None:
                more = _star(_seq(sep, item))
                body = _seq(head[0], *[_seq(sep, h) for h in head[1:]], more)
                body = body if lo > 0 else _opt(body)
        elif item is None:
            body = _EMPTY
        else:
            rest_lo = max(lo - 1, 0)
            rest_hi = None if hi is None else max(hi - 1, 0)
            if hi == 0:
                body = _EMPTY
            else:
                body = _seq(item, _Rep(_seq(sep, item), rest_lo, rest_hi))
                body = body if lo > 0 else _opt(body)
        return _seq(self.d.lit("["), self.ws(), body, self.ws(), self.d.lit("]"))

    def any(self) -> _Expr:
        key = (self.d, "any")
        ref, new = self.g.forward("any", key)
        if new:
            sep = self.sep()
            pair = _seq(self.any_key(), self.kv_sep(), ref)
            obj = _seq(
                self.d.lit("{"),
                self.ws(),
                _opt(_seq(pair, _star(_seq(sep, pair)))),
                self.ws(),
                self.d.lit("}"),
            )
            arr = _seq(
                self.d.lit("["), self.ws(), _opt(_seq(ref, _star(_seq(sep, ref)))), self.ws(), self.d.lit("]")
            )
            self.g.define(ref, _alt(self.string(), self.number(False), obj, arr, self.boolean(), self.null()))
        return ref

    def _resolve(self, pointer: Any) -> Any:
        if not isinstance(pointer, str) or not pointer.startswith("#"):
            return None
        node = self.root
        for part in [p for p in pointer[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node


def _types(s: Mapping[str, Any]) -> list[str]:
    raw = s.get("type")
    types = (
        [raw]
        if isinstance(raw, str)
        else [t for t in raw if isinstance(t, str)]
        if isinstance(raw, list)
        else []
    )
    if not types:
        if "properties" in s or "additionalProperties" in s or "required" in s:
            types = ["object"]
        elif "items" in s or "prefixItems" in s:
            types = ["array"]
    if types and s.get("nullable") is True and "null" not in types:
        types.append("null")
    return types


def _merge(a: Any, b: Any) -> dict[str, Any]:
    """A shallow merge of two schemas (``properties`` and ``required`` joined)."""
    out = dict(a) if isinstance(a, Mapping) else {}
    if not isinstance(b, Mapping):
        return out
    for key, value in b.items():
        if key == "properties" and isinstance(out.get(key), Mapping) and isinstance(value, Mapping):
            out[key] = {**out[key], **value}
        elif key == "required" and isinstance(out.get(key), list) and isinstance(value, list):
            out[key] = list(dict.fromkeys([*out[key], *value]))
        else:
            out[key] = value
    return out


def _allows(schema: Any, wanted: str) -> bool:
    """Whether ``schema`` admits some value of JSON type ``wanted``."""
    if not isinstance(schema, Mapping) or not schema:
        return True
    if "const" in schema:
        return _json_type(schema["const"]) == wanted
    if isinstance(schema.get("enum"), list):
        return any(_json_type(v) == wanted for v in schema["enum"])
    for word in ("anyOf", "oneOf"):
        if isinstance(schema.get(word), list):
            return any(_allows(sub, wanted) for sub in schema[word])
    if "$ref" in schema or "allOf" in schema:
        return True
    types = _types(schema)
    return not types or wanted in types or (wanted == "integer" and "number" in types)


def _json_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


def _string_enum(schema: Any) -> list[str] | None:
    """The allowed strings when ``schema`` is only an ``enum``/``const`` of strings."""
    if not isinstance(schema, Mapping):
        return None
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return [str(v) for v in values]
    return None


def _py_str(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _py_literal(value: Any) -> str:
    if isinstance(value, str):
        return _py_str(value)
    if value is True or value is False or value is None:
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_py_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_py_str(str(k))}: {_py_literal(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _on_literal(value: Any, quote: str) -> str:
    if isinstance(value, str):
        return quote + value + quote
    if isinstance(value, list):
        return "[" + ",".join(_on_literal(v, quote) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_on_literal(v, quote)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _members(g: _Grammar, items: list[tuple[_Expr, bool]], sep: _Expr, extra: _Expr | None) -> _Expr:
    """Object members in the given order, optional ones skippable, ``sep`` between, then
    any number of ``extra`` members."""
    memo: dict[tuple[int, bool], _Expr] = {}

    def rest(i: int, first: bool) -> _Expr:
        if (i, first) in memo:
            return memo[(i, first)]
        if i == len(items):
            if extra is None:
                expr: _Expr = _EMPTY
            else:
                more = _star(_seq(sep, extra))
                expr = _opt(_seq(extra, more)) if first else more
        else:
            member, required = items[i]
            take = _seq(member if first else _seq(sep, member), rest(i + 1, False))
            expr = take if required else _alt(take, rest(i + 1, first))
        if i > 0 and i < len(items) and expr != _EMPTY:
            expr = g.rule("mem", expr)
        memo[(i, first)] = expr
        return expr

    return rest(0, True)


def _any_order(g: _Grammar, items: list[tuple[_Expr, bool]], sep: _Expr, extra: _Expr | None) -> _Expr:
    """Members in any order, ``sep`` between, the required ones all present, any number of
    ``extra`` ones. Up to :data:`_ANY_ORDER_LIMIT` members each comes at most once (a rule
    per set of members written); past that only the required ones are tracked so, and
    optional ones may come anywhere (and repeat); past that limit of required ones too, the
    required ones come in schema order."""
    limit = _ANY_ORDER_LIMIT
    if len(items) <= limit:
        tracked, free = items, []
    else:
        tracked, free = [(m, r) for m, r in items if r], [m for m, r in items if not r]
    free += [extra] if extra is not None else []
    if len(tracked) > limit:
        anything = _alt(*free)
        before = _star(_seq(anything, sep)) if free else _EMPTY
        after = _star(_seq(sep, anything)) if free else _EMPTY
        parts = [
            _seq(sep, member, after) if i else _seq(before, member, after)
            for i, (member, _r) in enumerate(tracked)
        ]
        return _seq(*parts)
    need = sum(1 << i for i, (_m, r) in enumerate(tracked) if r)
    states: dict[tuple[int, bool], _Expr] = {}

    def state(mask: int, started: bool) -> _Expr:
        if (mask, started) in states:
            return states[(mask, started)]
        ref: _Ref | None = None
        if free:  # optional members loop back: a named rule from the start
            ref = _Ref(g.fresh("arg"))
            states[(mask, started)] = ref
        lead = sep if started else _EMPTY
        alts = [
            _seq(lead, m, state(mask | (1 << i), True))
            for i, (m, _r) in enumerate(tracked)
            if not mask >> i & 1
        ]
        alts += [_seq(lead, m, state(mask, True)) for m in free]
        if mask & need == need:
            alts.append(_EMPTY)
        expr = _alt(*alts)
        if ref is not None:
            g.define(ref, expr)
            return ref
        states[(mask, started)] = expr if expr == _EMPTY else g.rule("arg", expr)
        return states[(mask, started)]

    return state(0, False)


# --------------------------------------------------------------------------- the format's layout


def _strip_edge(text: str, char: str, *, end: bool) -> tuple[str, bool]:
    """``text`` without a ``char`` at its end (``end``) or start, and whether it had one."""
    core = text.rstrip() if end else text.lstrip()
    if end and core.endswith(char):
        return core[: -len(char)], True
    if not end and core.startswith(char):
        return core[len(char) :], True
    return text, False


@dataclass
class _Builder:
    """Builds the intermediate form of one request's grammar."""

    fmt: TemplateFormat
    tools: list[tuple[str, Any]]
    several: bool
    g: _Grammar = field(default_factory=_Grammar)

    def build(self, *, mode: str, prefix: str) -> tuple[str, str, str]:
        """(whole-output rule, from-the-trigger rule, the opening literal of the calls)."""
        opener, rest = self.calls()
        calls = _seq(_Lit(opener), rest)
        end = _WS
        reasoning, start_marker = self.reasoning(prefix)
        not_start = (start_marker,) if start_marker else ()
        if mode != "auto":
            body = _seq(_WS, calls, end)
        elif opener:
            body = _alt(
                _seq(_Text(opener, not_start), rest, end),
                _Text("", not_start, avoid=opener),
            )
        else:
            heads = self.bare_heads()
            body = _alt(_seq(_WS, calls, end), _Text("", (*not_start, *heads)))
        self.g.rules["start"] = _seq(reasoning, body)
        self.g.rules["lazy_start"] = _seq(calls, end)
        return "start", "lazy_start", opener

    # -- reasoning
    def reasoning(self, prefix: str) -> tuple[_Expr, str]:
        """The reasoning part and the marker that opens it (free text must not begin with it)."""
        r = self.fmt.reasoning
        if r.mode is ReasoningMode.NONE or not r.end:
            return _EMPTY, ""
        end = r.end.strip() or r.end
        if r.mode is ReasoningMode.TAGS and r.start:
            start = r.start.strip() or r.start
            opened = prefix.rfind(start)
            if opened >= 0 and prefix.find(end, opened) < 0:
                return _seq(_Text(end), _WS), ""
            if opened >= 0 or end in prefix:
                return _EMPTY, ""
            return _opt(_seq(_Text(end, open=start), _WS)), start
        if end in prefix:
            return _EMPTY, ""
        return _seq(_Text(end), _WS), ""  # everything before the delimiter is reasoning

    # -- calls
    def markers(self) -> tuple[str, str, str, str]:
        """section_start, section_end, call_start, call_end (a section marker that repeats a
        per-call or name marker is dropped: it is not written twice)."""
        t = self.fmt.tools
        s_start, s_end, c_start, c_end = t.section_start, t.section_end, t.call_start, t.call_end
        if s_start and s_start.strip() in (c_start.strip(), t.name_prefix.strip()):
            s_start = ""
            if s_end.strip() in (c_end.strip(), ""):
                s_end = ""
        return s_start, s_end, c_start, c_end

    def calls(self) -> tuple[str, _Expr]:
        """The calls of one message, split into their opening literal (``""``: none) and the rest."""
        t = self.fmt.tools
        s_start, s_end, _c_start, _c_end = self.markers()
        listed = t.array and t.syntax in (ToolSyntax.JSON, ToolSyntax.PYTHONIC)
        if listed:
            s_start, _ = _strip_edge(s_start, "[", end=True)
            s_end, _ = _strip_edge(s_end, "]", end=False)
        calls = [self.call(name, schema) for name, schema in self.tools]
        opener = s_start.strip()
        one = first_call = self.g.rule("call", _alt(*calls))
        if not opener and not listed:
            opener = self.call_opening()
            if opener:  # every call opens with it: the first one's is the trigger
                head, rests = self.split_calls(calls, opener)
                first_call = self.g.rule("call", _alt(*(self.g.rule("call", rest) for rest in rests)))
                one = self.g.rule("call", _seq(*head, first_call))
        if listed:
            sep = _seq(_WS, _Lit(","), _WS)
            inner = _seq(first_call, _star(_seq(sep, one))) if self.several else first_call
            body = _seq(_Lit("["), _WS, inner, _WS, _Lit("]"))
        else:
            sep = _seq(_mark(t.separator), _WS) if t.separator.strip() else _WS
            body = _seq(first_call, _star(_seq(sep, one))) if self.several else first_call
        after_start = _WS if s_start.strip() and s_start[-1].isspace() else _EMPTY
        return opener, _seq(after_start, body, _mark(s_end))

    def call_opening(self) -> str:
        """The literal every call begins with, when there is no section marker."""
        _s, _e, c_start, _c = self.markers()
        t = self.fmt.tools
        if c_start.strip():
            return c_start.strip()
        if t.syntax is not ToolSyntax.JSON and not self.id_is_head():
            if t.id_position is CallIdPosition.BEFORE_NAME:
                return t.id_prefix.strip()
            return t.name_prefix.strip()
        return ""

    def bare_heads(self) -> tuple[str, ...]:
        """How a call with no marker begins (for content that must not begin so)."""
        t = self.fmt.tools
        if t.syntax is ToolSyntax.JSON:
            return ("[",) if t.array else ("{",)
        if t.syntax is ToolSyntax.PYTHONIC and t.array:
            return ("[",)
        return tuple(name for name, _s in self.tools)

    def call(self, name: str, schema: Any) -> _Expr:
        """One call of tool ``name``."""
        t = self.fmt.tools
        _s, _e, c_start, c_end = self.markers()
        if t.syntax is ToolSyntax.JSON:
            return _seq(_mark(c_start, split=False), self.json_call(name, schema), _mark(c_end))
        name_suffix, a_start, a_end = t.name_suffix, t.arguments_start, t.arguments_end
        brackets = {
            ToolSyntax.PYTHONIC: ("(", ")"),
            ToolSyntax.OBJECT_NOTATION: ("{", "}"),
            ToolSyntax.TAG_JSON: ("{", "}"),
        }
        if t.syntax in brackets:
            open_, close = brackets[t.syntax]
            a_start, found = _strip_edge(a_start, open_, end=True)
            if not found and not a_start.strip():
                name_suffix, _ = _strip_edge(name_suffix, open_, end=True)
            a_end, found = _strip_edge(a_end, close, end=False)
            if not found and not a_end.strip():
                c_end, _ = _strip_edge(c_end, close, end=False)
        ident = self.g.rule("id", _Rep(_chars("A-Za-z0-9_-"), 1, None), terminal=True, key=("callid",))
        call_id = _seq(_mark(t.id_prefix, split=False), ident, _mark(t.id_suffix))
        parts: list[_Expr] = [_mark(c_start, split=False)]
        if self.id_is_head():
            parts.append(self.id_head(name))
        else:
            if t.id_position is CallIdPosition.BEFORE_NAME:
                parts.append(call_id)
            parts += [_mark(t.name_prefix, split=False), _Lit(name), _mark(name_suffix)]
        if t.id_position is CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS:
            parts.append(call_id)
        parts += [_mark(a_start), self.arguments(schema), _mark(a_end)]
        if t.id_position is CallIdPosition.AFTER_ARGUMENTS:
            parts.append(call_id)
        parts.append(_mark(c_end))
        return _seq(*parts)

    def id_is_head(self) -> bool:
        """Whether the id, made from ``id_pattern`` with the name in it, stands where the
        name would (``functions.get_time:0``)."""
        t = self.fmt.tools
        return (
            t.id_position is CallIdPosition.BEFORE_NAME
            and "{name}" in t.id_pattern
            and not t.id_prefix.strip()
            and not t.id_suffix.strip()
        )

    def id_head(self, name: str) -> _Expr:
        """``id_pattern`` with ``name`` and a call index in it."""
        parts: list[_Expr] = []
        for i, piece in enumerate(re.split(r"(\{name\}|\{index\})", self.fmt.tools.id_pattern)):
            if i % 2 == 0:
                parts.append(_Lit(piece))
            elif piece == "{name}":
                parts.append(_Lit(name))
            else:
                parts.append(
                    self.g.rule("index", _Rep(_chars("0-9"), 1, None), terminal=True, key=("index",))
                )
        return _seq(*parts)

    def split_calls(self, calls: list[_Expr], opener: str) -> tuple[list[_Expr], list[_Expr]]:
        """What every call begins with, up to ``opener``, and the rest of each call."""
        head: list[_Expr] = []
        rests: list[_Expr] = []
        for call in calls:
            items: list[_Expr] = list(call.items) if isinstance(call, _Seq) else [call]
            at = items.index(_Lit(opener))
            head = items[: at + 1]
            rests.append(_seq(*items[at + 1 :]))
        return head, rests

    def arguments(self, schema: Any) -> _Expr:
        """The arguments of a tag / Python / object-notation call."""
        t = self.fmt.tools
        if t.syntax is ToolSyntax.TAG_JSON:
            return _json_node(schema, schema)
        if t.syntax is ToolSyntax.TAG_TAGGED:
            return self.tagged(schema)
        if t.syntax is ToolSyntax.PYTHONIC:
            return self.keyword_args(schema, _PY, "(", ")", "=")
        return self.keyword_args(schema, _Dialect("on", t.string_quote or '"'), "{", "}", ":")

    def props(self, schema: Any) -> tuple[list[tuple[str, Any, bool]], Any]:
        """The declared arguments (name, schema, required) and what other arguments may be."""
        s = schema if isinstance(schema, Mapping) else {}
        props = s.get("properties") if isinstance(s.get("properties"), Mapping) else {}
        assert isinstance(props, Mapping)
        required = [r for r in s.get("required") or () if isinstance(r, str)]
        items = [(n, sub, n in required) for n, sub in props.items() if sub is not False]
        items += [(n, {}, True) for n in required if n not in props]
        extra = s.get("additionalProperties", None if items else True)
        return items, extra

    def keyword_args(self, schema: Any, dialect: _Dialect, open_: str, close: str, eq: str) -> _Expr:
        values = _Values(self.g, dialect, schema)
        items, extra = self.props(schema)
        sep = values.sep()
        members = [(_seq(_Lit(n), _WS, _Lit(eq), _WS, values.value(sub)), req) for n, sub, req in items]
        extra_member = None
        if extra is not None and extra is not False:
            key = self.g.rule("ident", _IDENT, terminal=True, key=("ident",))
            extra_member = _seq(
                key, _WS, _Lit(eq), _WS, values.value(extra if isinstance(extra, Mapping) else {})
            )
        body = _any_order(self.g, members, sep, extra_member)
        return _seq(_Lit(open_), _WS, body, _WS, _Lit(close))

    def tagged(self, schema: Any) -> _Expr:
        t = self.fmt.tools
        items, extra = self.props(schema)
        members = [
            (
                _seq(
                    _mark(t.arg_name_prefix), _Lit(n), _mark(t.arg_name_suffix), self.tag_value(sub, schema)
                ),
                req,
            )
            for n, sub, req in items
        ]
        extra_member = None
        if extra is not None and extra is not False and t.arg_name_suffix.strip():
            suffix = t.arg_name_suffix
            extra_member = _seq(
                _mark(t.arg_name_prefix),
                _Text(suffix.strip()),
                _WS if suffix[-1].isspace() else _EMPTY,
                self.tag_value(extra if isinstance(extra, Mapping) else {}, schema),
            )
        sep = _seq(_mark(t.arg_separator), _WS) if t.arg_separator.strip() else _WS
        return _any_order(self.g, members, sep, extra_member)

    def tag_value(self, schema: Any, root: Any) -> _Expr:
        """A tagged argument's value with its prefix and suffix: raw text for strings, JSON
        for the rest (after ``arg_value_prefix_json`` where the template has one) — or its
        Python spelling (``True``, ``None``, ``['a']``), which templates that write
        ``value | string`` teach their models."""
        t = self.fmt.tools
        suffix = t.arg_value_suffix
        core = suffix.strip()
        trailing = _WS if suffix and suffix[-1].isspace() else _EMPTY
        prefix_json = t.arg_value_prefix_json or t.arg_value_prefix
        alts: list[_Expr] = []
        strings = _string_enum(schema)
        if strings is not None:
            alts.append(_seq(_mark(t.arg_value_prefix), _WS, _alt(*map(_Lit, strings)), _mark(suffix)))
        elif _allows(schema, "string") and core:
            wrap_start, wrap_end = t.arg_value_wrap_start.strip(), t.arg_value_wrap_end.strip()
            if wrap_start and wrap_end:
                plain = _Text(core, (wrap_start,))
                wrapped = _seq(_Lit(wrap_start), _Text(wrap_end), _WS, _Lit(core))
                alts.append(_seq(_mark(t.arg_value_prefix), _alt(plain, _seq(_WS, wrapped)), trailing))
            else:
                alts.append(_seq(_mark(t.arg_value_prefix), _Text(core), trailing))
        if strings is None and (not alts or prefix_json != t.arg_value_prefix):
            non_string = _without_strings(schema) if alts else schema
            if non_string is not None:
                value = _Values(self.g, _PY, root).value(non_string)
                alts.append(_seq(_mark(prefix_json), _WS, value, _WS, _mark(suffix)))
        return _alt(*alts)

    def json_call(self, name: str, schema: Any) -> _Expr:
        """A ``json`` call object, keys in the template's order."""
        t = self.fmt.tools
        values = _Values(self.g, _JSON, schema)
        args = (
            _Values(self.g, _JSTR, schema).value(schema)
            if t.arguments_as_string
            else _json_node(schema, schema)
        )
        if t.arguments_as_string:
            args = _seq(_Lit('"'), args, _Lit('"'))
        order = list(t.key_order)

        def rank(key: str) -> int:
            return order.index(key) if key in order else len(order)

        sep = values.sep()
        inner: list[tuple[str, _Expr, bool]] = []
        outer: list[tuple[str, _Expr, bool]] = []
        if t.name_is_key:
            inner.append((name, values.pair(name, args), True))
        else:
            inner.append((t.name_key, values.pair(t.name_key, values.const(name)), True))
            inner.append((t.arguments_key, values.pair(t.arguments_key, args), True))
        target = outer if t.wrapper_key else inner
        if t.id_key:
            target.append(
                (t.id_key, values.pair(t.id_key, _json_node({"type": ["string", "integer"]}, {})), False)
            )
        known = {t.name_key, t.arguments_key, t.id_key, t.wrapper_key}
        for key in order:
            if key and key not in known and not t.name_is_key:
                target.append((key, values.pair(key, _json_node({}, {})), False))

        def obj(members: list[tuple[str, _Expr, bool]]) -> _Expr:
            members = sorted(members, key=lambda m: rank(m[0]))
            body = _members(self.g, [(expr, req) for _k, expr, req in members], sep, None)
            return _seq(_Lit("{"), _WS, body, _WS, _Lit("}"))

        if t.wrapper_key:
            outer.append((t.wrapper_key, values.pair(t.wrapper_key, obj(inner)), True))
            return obj(outer)
        return obj(inner)


def _without_strings(schema: Any) -> Any:
    """``schema`` less its string values (``None`` if nothing is left), for the JSON branch
    of a tagged value whose strings are written raw."""
    if not isinstance(schema, Mapping) or not schema:
        return {"anyOf": [{"type": t} for t in _NON_STRING]}
    if isinstance(schema.get("anyOf"), list):
        rest = [s for s in schema["anyOf"] if _allows_other(s)]
        return {**schema, "anyOf": rest} if rest else None
    types = _types(schema)
    if types:
        rest_types = [t for t in types if t != "string"]
        return {**schema, "type": rest_types} if rest_types else None
    return schema if _allows_other(schema) else None


_NON_STRING: Final = ("number", "boolean", "null", "array", "object")


def _allows_other(schema: Any) -> bool:
    return any(_allows(schema, t) for t in _NON_STRING)


def _json_node(schema: Any, root: Any) -> _Json:
    """A :class:`_Json` for ``schema``, carrying the root's ``$defs`` it may refer to."""
    s = dict(schema) if isinstance(schema, Mapping) else {}
    if isinstance(root, Mapping) and root is not schema:
        for key in ("$defs", "definitions"):
            if key in root and key not in s and "$ref" in json.dumps(s):
                s[key] = root[key]
    return _Json(json.dumps(s, ensure_ascii=False))


# --------------------------------------------------------------------------- triggers


def _triggers(
    fmt: TemplateFormat, opener: str, tools: list[tuple[str, Any]], specials: Mapping[str, int]
) -> tuple[Trigger, ...]:
    if opener:
        return (Trigger(opener, "word", specials.get(opener)),)
    t = fmt.tools
    if t.syntax is ToolSyntax.JSON or (t.syntax is ToolSyntax.PYTHONIC and t.array):
        head = re.escape("[" if t.array else "{")
    else:
        head = "(?:" + "|".join(re.escape(name) for name, _s in tools) + ")"
    return (Trigger(rf"^\s*({head})", "pattern"),)


# --------------------------------------------------------------------------- writers


def _refs(expr: _Expr) -> Iterator[str]:
    if isinstance(expr, _Ref):
        yield expr.name
    elif isinstance(expr, _Seq | _Alt):
        for item in expr.items:
            yield from _refs(item)
    elif isinstance(expr, _Rep):
        yield from _refs(expr.item)


@functools.cache
def _regex_char(code: int, *, in_class: bool) -> str:
    ch = chr(code)
    if code < 0x20 or code == 0x7F:
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\x{{{code:02x}}}")
    meta = "\\]^-[&~" if in_class else "\\.+*?()|[]{}^$#&-~"
    if ch in meta:
        return "\\" + ch
    if ch == "/":
        return "\\/"
    return ch


def _regex_class(c: _Chars) -> str:
    body = "".join(
        _regex_char(lo, in_class=True)
        if lo == hi
        else _regex_char(lo, in_class=True) + "-" + _regex_char(hi, in_class=True)
        for lo, hi in c.ranges
    )
    return f"[{'^' if c.negated else ''}{body}]"


def _repeat_suffix(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, 1):
        return "?"
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if hi is None:
        return f"{{{lo},}}"
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"


class _LarkWriter:
    """Writes llguidance Lark."""

    def __init__(self, g: _Grammar, specials: Mapping[str, int]) -> None:
        self.g = g
        self.specials = sorted(specials.items(), key=lambda kv: -len(kv[0]))
        self.extra: list[str] = []
        self.texts: dict[_Text, str] = {}
        self.jsons: dict[str, str] = {}
        self.ws_used = False

    def write(self, start: str) -> str:
        lines: list[str] = []
        seen: set[str] = set()
        queue = [start]
        while queue:
            name = queue.pop(0)
            if name in seen:
                continue
            seen.add(name)
            expr = self.g.rules[name]
            if name in self.g.terminals:
                lines.append(f"{name.upper()}: /{self.regex(expr)}/")
            else:
                lines.append(f"{name.lower()}: {self.expr(expr, top=True)}")
                queue.extend(r for r in _refs(expr) if r not in seen)
        head = ["%llguidance {}", ""]
        if self.ws_used:
            self.extra.append(f"_WS: /[ \\t\\r\\n]{{1,{_WS_MAX}}}/")
        return "\n".join(head + lines + self.extra) + "\n"

    def name(self, ref: str) -> str:
        return ref.upper() if ref in self.g.terminals else ref.lower()

    def pieces(self, text: str) -> list[str]:
        """``text`` as Lark: quoted strings, with special tokens as token references."""
        out: list[str] = []
        buf = ""
        i = 0
        while i < len(text):
            for marker, token in self.specials:
                if marker and text.startswith(marker, i):
                    if buf:
                        out.append(json.dumps(buf, ensure_ascii=False))
                        buf = ""
                    out.append(f"<[{token}]>")
                    i += len(marker)
                    break
            else:
                buf += text[i]
                i += 1
        if buf:
            out.append(json.dumps(buf, ensure_ascii=False))
        return out

    def expr(self, e: _Expr, *, top: bool = False) -> str:
        if isinstance(e, _Lit):
            return " ".join(self.pieces(e.text)) or '""'
        if isinstance(e, _Chars):
            return f"/{_regex_class(e)}/"
        if isinstance(e, _Ref):
            return self.name(e.name)
        if isinstance(e, _Ws):
            self.ws_used = True
            return "_WS?"
        if isinstance(e, _Seq):
            if not e.items:
                return '""'
            return " ".join(self.expr(i) for i in e.items)
        if isinstance(e, _Alt):
            body = " | ".join(self.expr(i) for i in e.items)
            return body if top else f"({body})"
        if isinstance(e, _Rep):
            return f"({self.expr(e.item, top=True)}){_repeat_suffix(e.lo, e.hi)}"
        if isinstance(e, _Text):
            return self.text(e)
        return self.json(e)

    def json(self, e: _Json) -> str:
        if e.schema not in self.jsons:
            schema = json.loads(e.schema)
            guidance = {"lenient": True, "whitespace_pattern": f"[\\x20\\x0A\\x0D\\x09]{{1,{_WS_MAX}}}"}
            text = json.dumps({"x-guidance": guidance, **schema}, ensure_ascii=False)
            name = self.g.fresh("json")
            self.jsons[e.schema] = name
            self.extra.append(f"{name}: %json {text}")
        return self.jsons[e.schema]

    def text(self, e: _Text) -> str:
        if e in self.texts:
            return self.texts[e]
        opening = self.pieces(e.open) if e.open else []
        pieces = self.pieces(e.stop) if e.stop else []
        if any(p.startswith("<[") for p in opening):
            out = " ".join(["_WS?", *opening, self.text(_Text(e.stop, e.not_start, e.avoid))])
            self.ws_used = True
            self.texts[e] = out
            return out
        lead = ""
        if e.open:
            lead = "[ \\t\\r\\n]*" + "".join(_regex_char(ord(c), in_class=False) for c in e.open)
        exclude = ""
        if e.not_start:
            heads = "|".join("".join(_regex_char(ord(c), in_class=False) for c in s) for s in e.not_start)
            exclude = f" & ~/[ \\t\\r\\n]*(?:{heads})(?s:.*)/"
        term = self.g.fresh("TEXT").upper()
        if not e.stop or pieces[0].startswith("<["):
            self.extra.append(f"{term}: /{lead}(?s:.*)/{exclude}")
            out = " ".join([term, *pieces])
        else:
            stop = json.loads(pieces[0])
            escaped = "".join(_regex_char(ord(c), in_class=False) for c in stop)
            self.extra.append(f"{term}: /{lead}(?s:.*){escaped}/{exclude}")
            lazy = term.lower()
            self.extra.append(f"{lazy}[lazy]: {term}")
            out = " ".join([lazy, *pieces[1:]])
        self.texts[e] = out
        return out

    def regex(self, e: _Expr) -> str:
        if isinstance(e, _Lit):
            return "".join(_regex_char(ord(c), in_class=False) for c in e.text)
        if isinstance(e, _Chars):
            return _regex_class(e)
        if isinstance(e, _Ref):
            return f"(?:{self.regex(self.g.rules[e.name])})"
        if isinstance(e, _Seq):
            return "".join(self.regex(i) for i in e.items)
        if isinstance(e, _Alt):
            return "(?:" + "|".join(self.regex(i) for i in e.items) + ")"
        if isinstance(e, _Rep):
            return f"(?:{self.regex(e.item)}){_repeat_suffix(e.lo, e.hi)}"
        raise AssertionError(f"not a regular expression: {e!r}")


_HEX: Final = frozenset("0123456789abcdefABCDEF")


def _gbnf_literal(text: str) -> str:
    """A GBNF string: named escapes, ``\\xHH`` for other control characters (``\\u00HH``
    before a hex digit, which some parsers would read as part of the escape)."""
    out = []
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"'}
    for i, ch in enumerate(text):
        if ch in named:
            out.append(named[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            follows_hex = i + 1 < len(text) and text[i + 1] in _HEX
            out.append(f"\\u{ord(ch):04X}" if follows_hex else f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _gbnf_class(c: _Chars) -> str:
    """A GBNF character class that llama.cpp, xgrammar and llguidance's converter read alike:
    ranges of control characters last (``\\xHH``, never before a hex digit), a ``-`` at
    the very end, a ``^`` never first."""

    def char(code: int) -> str:
        ch = chr(code)
        named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"', "]": "\\]", "[": "\\["}
        if ch in named:
            return named[ch]
        return f"\\x{code:02X}" if code < 0x20 or code == 0x7F else ch

    plain: list[str] = []
    control: list[str] = []
    dash = False
    for lo, hi in c.ranges:
        if lo == hi == ord("-"):
            dash = True
            continue
        text = char(lo) if lo == hi else char(lo) + "-" + char(hi)
        (control if char(lo).startswith("\\x") else plain).append(text)
    if plain and plain[0].startswith("^") and not c.negated:
        plain.append(plain.pop(0))
    body = "".join(plain) + "".join(control) + ("-" if dash else "")
    if body.startswith("^") and not c.negated:  # "^" alone, or before control characters
        body = "\\x5E" + body[1:]
    return f"[{'^' if c.negated else ''}{body}]"


class _GbnfWriter:
    """Writes GBNF (llama.cpp; xgrammar reads the same text)."""

    def __init__(self, g: _Grammar) -> None:
        self.g = g.copy()
        self.texts: dict[_Text, str] = {}
        self.jsons: dict[str, _Expr] = {}
        self.used: list[str] = []
        self.start = ""
        self.bodies: dict[str, tuple[str, list[str]]] = {}

    def write(self, start: str) -> str:
        """The grammar of the rules reachable from ``start`` (named ``root``); a writer may
        write several starts of one grammar (the rules' text is kept between them)."""
        self.start = start
        lines: list[str] = []
        seen: set[str] = set()
        queue = [start]
        while queue:
            name = queue.pop(0)
            if name in seen:
                continue
            seen.add(name)
            if name not in self.bodies:
                self.used = []
                self.bodies[name] = (self.expr(self.g.rules[name], top=True), self.used)
            body, used = self.bodies[name]
            lines.append(f"{'root' if name == start else self.name(name)} ::= {body}")
            queue.extend(r for r in used if r not in seen)
        return "\n".join(lines) + "\n"

    def name(self, ref: str) -> str:
        self.used.append(ref)
        return ref.lower().replace("_", "-")

    def expr(self, e: _Expr, *, top: bool = False) -> str:
        if isinstance(e, _Lit):
            return _gbnf_literal(e.text)
        if isinstance(e, _Chars):
            return _gbnf_class(e)
        if isinstance(e, _Ref):
            return self.name(e.name)
        if isinstance(e, _Ws):
            return self.ref(self.g.rule("ws", _Rep(_chars(" \t\r\n"), 0, _WS_MAX), key=("gbnf-ws",)))
        if isinstance(e, _Seq):
            return " ".join(self.expr(i) for i in e.items) if e.items else '""'
        if isinstance(e, _Alt):
            body = " | ".join(self.expr(i) for i in e.items)
            return body if top else f"({body})"
        if isinstance(e, _Rep):
            inner = e.item
            atom = self.expr(inner)
            if not isinstance(inner, _Lit | _Chars | _Ref) or (
                isinstance(inner, _Lit) and len(inner.text) != 1
            ):
                atom = f"({self.expr(inner, top=True)})"
            return atom + _repeat_suffix(e.lo, e.hi)
        if isinstance(e, _Text):
            return self.text(e)
        return self.json(e)

    def ref(self, ref: _Ref) -> str:
        return self.name(ref.name)

    def json(self, e: _Json) -> str:
        if e.schema not in self.jsons:
            schema = json.loads(e.schema)
            self.jsons[e.schema] = _Values(self.g, _JSON, schema).value(schema)
        return self.expr(self.jsons[e.schema])

    def text(self, e: _Text) -> str:
        """Free text as rules: the states of the Knuth–Morris–Pratt automaton of the marker
        it stops at (or must not hold), each a rule that never completes the marker, then
        the marker; before them, the states of a trie of the texts it must not begin with."""
        if e in self.texts:
            return self.texts[e]
        marker = e.stop or e.avoid
        any_text = self.g.rule("any", _star(_chars("\x00", negated=True)), key=("gbnf-any",))
        fail = [0] * len(marker)
        k = 0
        for i in range(1, len(marker)):
            while k and marker[i] != marker[k]:
                k = fail[k - 1]
            if marker[i] == marker[k]:
                k += 1
            fail[i] = k

        def step(j: int, c: str) -> int:
            while j and marker[j] != c:
                j = fail[j - 1]
            return j + 1 if marker[j] == c else 0

        alphabet = sorted(set(marker))
        states = [_Ref(self.g.fresh("until")) for _ in marker]
        for j, ref in enumerate(states):
            moves = {c: step(j, c) for c in alphabet}
            special = sorted(c for c, nxt in moves.items() if nxt)
            other = _Chars(tuple((ord(c), ord(c)) for c in special), negated=True)
            alts: list[_Expr] = [_seq(other, states[0])]
            alts += [_seq(_Lit(c), states[moves[c]]) for c in special if moves[c] < len(marker)]
            self.g.define(ref, _opt(_alt(*alts)))

        def after(text: str) -> _Expr | None:
            """Where ``text`` leaves the marker's automaton (``None``: it completed it)."""
            if not marker:
                return any_text
            j = 0
            for c in text:
                j = step(j, c)
                if j == len(marker):
                    return None
            return states[j] if marker else any_text

        entry = after("")
        assert entry is not None
        excluded = {s for s in e.not_start if s}
        if excluded:
            prefixes = {s[:n] for s in excluded for n in range(len(s))}
            nodes = {p: _Ref(self.g.fresh("head")) for p in sorted(prefixes)}
            blank = " \t\r\n"
            for p, ref in nodes.items():
                explicit = sorted({s[len(p)] for s in excluded if s.startswith(p)} | set(alphabet))
                alts = [_seq(_chars(blank), ref)] if not p else []
                for c in explicit:
                    if not p and c in blank:
                        continue
                    q = p + c
                    target = nodes.get(q) if q in nodes else None if q in excluded else after(q)
                    if target is not None and after(q) is not None:
                        alts.append(_seq(_Lit(c), target))
                taken = explicit + (list(blank) if not p else [])
                rest = after(p + "\x00")
                assert rest is not None
                alts.append(_seq(_Chars(tuple((ord(c), ord(c)) for c in taken), negated=True), rest))
                self.g.define(ref, _opt(_alt(*alts)))
            entry = nodes[""]
        out = self.expr(entry)
        if e.stop:
            out += " " + self.expr(_Lit(e.stop))
        if e.open:
            out = f"{self.expr(_WS)} {self.expr(_Lit(e.open))} {out}"
        self.texts[e] = out
        return out
