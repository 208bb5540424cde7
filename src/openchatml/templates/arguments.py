"""Tool-call arguments: JSON text from what models write.

Models spell arguments in many dialects: strict JSON, Python literals (``True``,
``None``, ``'single quotes'``, ``f(k=v)`` keyword arguments), bare keys and odd string
quotes (Gemma 4's ``{k:<|"|>v<|"|>}``), or raw text between tags typed only by the tool's
JSON schema (``<parameter=n>5</parameter>``). This module turns all of them into JSON text.

* :class:`Lexer` — a resumable, lenient tokenizer of JSON-like text: it reads as far as
  it is sure of and says where it stopped, so a parser can feed it a growing buffer.
* :class:`JsonWriter` — tokens → JSON text (``{"k": v, "l": [1, 2]}``, with ``": "`` and
  ``", "``), written as soon as each piece is certain: a key once its colon is seen, a
  string character by character, a number once it has ended. A writer closed early
  (:meth:`JsonWriter.close`) still leaves valid JSON.
* :func:`tool_schemas`, :func:`value_kinds`, :func:`typed_value` — the JSON types a
  parameter's schema allows, and the value raw tagged text stands for.
* :func:`loads_lenient` — one JSON-like text to a Python value, in one go.

Nothing here raises on bad input: what cannot be read is skipped and counted in
``JsonWriter.skipped``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.encoder import encode_basestring
from typing import Any, Final

__all__ = [
    "JsonWriter",
    "Lexer",
    "loads_lenient",
    "tool_schemas",
    "typed_json",
    "typed_value",
    "value_kinds",
]

# --- tokens ---------------------------------------------------------------------------

T_OPEN: Final = 0
"""``{``, ``[`` or ``(``; the value is the character."""
T_CLOSE: Final = 1
"""``}``, ``]`` or ``)``."""
T_COLON: Final = 2
"""``:`` or ``=``."""
T_COMMA: Final = 3
T_STR_BEGIN: Final = 4
T_STR: Final = 5
"""A piece of a string's decoded text."""
T_STR_END: Final = 6
T_ATOM: Final = 7
"""A number, a literal or a bare word, as written."""

Token = tuple[int, str]

_ESCAPES: Final = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "/": "/",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "0": "\0",
    "a": "\a",
    "v": "\v",
    "\n": "",
}
_PLAIN = {'"': re.compile(r'[^"\\]+'), "'": re.compile(r"[^'\\]+")}
_DQ_BODY: Final = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S)
_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_ATOM_RE: Final = re.compile(r"""[^\s,:={}\[\]()"'<]+""")
_WS_RE: Final = re.compile(r"\s+")
_HEX4: Final = re.compile(r"[0-9a-fA-F]{4}")
_HEX2: Final = re.compile(r"[0-9a-fA-F]{2}")
_HEX8: Final = re.compile(r"[0-9a-fA-F]{8}")
_JSON_NUMBER: Final = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS: Final = {
    "true": "true",
    "false": "false",
    "null": "null",
    "True": "true",
    "False": "false",
    "None": "null",
    "TRUE": "true",
    "FALSE": "false",
    "NULL": "null",
}


class Lexer:
    """Tokenizes JSON-like text incrementally.

    ``custom_quote`` is an extra string delimiter with no escapes inside (``<|"|>``);
    ``stops`` are markers that end the value where a token could begin (``stopped`` is
    set and the marker is left unread). It reads one value: ``ended`` once that value is
    complete, and nothing after it. :meth:`run` appends tokens to ``tokens`` and returns
    how far it read; called again with more text (the same buffer, grown) it goes on from
    there.
    """

    __slots__ = ("_custom", "_quote", "_stop_first", "_stops", "depth", "ended", "stopped", "tokens")

    def __init__(self, *, custom_quote: str = "", stops: Sequence[str] = ()) -> None:
        self._custom = custom_quote
        self._stops = tuple(s for s in stops if s)
        self._stop_first = frozenset(s[0] for s in self._stops)
        self._quote = ""
        """The open string's delimiter, ``""`` outside strings."""
        self.tokens: list[Token] = []
        self.depth = 0
        self.ended = False
        self.stopped = False

    @property
    def in_string(self) -> bool:
        """Whether the text read so far ends inside a string."""
        return bool(self._quote)

    @property
    def quote(self) -> str:
        """The open string's delimiter (``""`` outside strings)."""
        return self._quote

    def run(self, buf: str, i: int, final: bool = False) -> int:
        """Read ``buf[i:]``; return the index of the first character not read.

        Without ``final``, a token that may go on (a number, a partial escape or marker at
        the end) is left unread; with it, everything is read.
        """
        n = len(buf)
        toks = self.tokens
        if self.ended or self.stopped:
            return i
        while i < n:
            if self._quote:
                i = self._string(buf, i, n, final)
                if self._quote:
                    return i
                if self.depth == 0:
                    self.ended = True
                    return i
                continue
            c = buf[i]
            if c.isspace():  # what _WS_RE takes, so that a cut between spaces changes nothing
                m = _WS_RE.match(buf, i)
                i = m.end() if m else i + 1
                continue
            if c in self._stop_first:
                hit, partial = self._stop_at(buf, i)
                if hit:
                    self.stopped = True
                    return i
                if partial and not final:
                    return i
            if self._custom and c == self._custom[0]:
                if buf.startswith(self._custom, i):
                    self._quote = self._custom
                    toks.append((T_STR_BEGIN, self._custom))
                    i += len(self._custom)
                    continue
                if self._custom.startswith(buf[i:]) and not final:
                    return i
            if c in "{[(":
                toks.append((T_OPEN, c))
                self.depth += 1
                i += 1
            elif c in "}])":
                toks.append((T_CLOSE, c))
                i += 1
                self.depth -= 1
                if self.depth <= 0:
                    self.depth = 0
                    self.ended = True
                    return i
            elif c == ":" or c == "=":
                toks.append((T_COLON, c))
                i += 1
            elif c == ",":
                toks.append((T_COMMA, c))
                i += 1
            elif c == '"' or c == "'":
                self._quote = c
                toks.append((T_STR_BEGIN, c))
                i += 1
            else:
                m = _ATOM_RE.match(buf, i)
                if m is None:  # a lone "<" that starts no marker
                    toks.append((T_ATOM, c))
                    i += 1
                elif m.end() == n and not final:
                    return i
                else:
                    toks.append((T_ATOM, m.group()))
                    i = m.end()
                if self.depth == 0:
                    self.ended = True
                    return i
        return i

    def _stop_at(self, buf: str, i: int) -> tuple[str, bool]:
        partial = False
        rest = len(buf) - i
        for stop in self._stops:
            if buf.startswith(stop, i):
                return stop, False
            if rest < len(stop) and stop.startswith(buf[i:]):
                partial = True
        return "", partial

    def _string(self, buf: str, i: int, n: int, final: bool) -> int:
        quote = self._quote
        toks = self.tokens
        pieces: list[str] = []
        if len(quote) > 1:  # a custom quote: raw text up to the closing quote
            j = buf.find(quote, i)
            if j >= 0:
                if j > i:
                    toks.append((T_STR, buf[i:j]))
                toks.append((T_STR_END, quote))
                self._quote = ""
                return j + len(quote)
            end = n
            if not final:  # keep back what may begin the closing quote
                for k in range(min(len(quote) - 1, n - i), 0, -1):
                    if quote.startswith(buf[n - k :]):
                        end = n - k
                        break
            if end > i:
                toks.append((T_STR, buf[i:end]))
            return end
        if quote == '"':  # JSON's own strings: decoded by the json module when it can
            m = _DQ_BODY.match(buf, i)
            e = m.end() if m is not None else i
            if _SURROGATE.search(buf, i, e):  # surrogate halves: decoded below, one by one
                e = -1
            try:
                if e < 0:
                    raise ValueError
                if e < n:  # the closing quote is here
                    text, end = scanstring(buf, i, False)
                    if text:
                        toks.append((T_STR, text))
                    toks.append((T_STR_END, quote))
                    self._quote = ""
                    return int(end)
                body = buf[i:e]
                if body:
                    text, _ = scanstring(body + '"', 0, False)
                    toks.append((T_STR, text))
                    i += len(body)
                if i == n or (i == n - 1 and not final):  # all read, or a lone backslash at the end
                    return i
            except ValueError:  # an escape JSON does not know (``\'``) or an unfinished one
                pass
        plain = _PLAIN[quote]
        while i < n:
            m = plain.match(buf, i)
            if m is not None:
                pieces.append(m.group())
                i = m.end()
                continue
            c = buf[i]
            if c == quote:
                if pieces:
                    toks.append((T_STR, "".join(pieces)))
                toks.append((T_STR_END, quote))
                self._quote = ""
                return i + 1
            # a backslash
            if i + 1 >= n:
                if final:
                    pieces.append("\\")
                    i += 1
                break
            esc = buf[i + 1]
            if esc == "u":
                m = _HEX4.match(buf, i + 2)
                if m is None:
                    if n - (i + 2) < 4 and not final:
                        break
                    pieces.append("\\u")
                    i += 2
                    continue
                code = int(m.group(), 16)
                if 0xD800 <= code < 0xDC00:  # a high surrogate: wants its low half
                    if n - (i + 6) < 6 and not final and buf.startswith("\\u"[: n - (i + 6)], i + 6):
                        break
                    low = _HEX4.match(buf, i + 8) if buf.startswith("\\u", i + 6) else None
                    if low is not None and 0xDC00 <= int(low.group(), 16) < 0xE000:
                        code = 0x10000 + ((code - 0xD800) << 10) + (int(low.group(), 16) - 0xDC00)
                        pieces.append(chr(code))
                        i += 12
                        continue
                    pieces.append("\ufffd")
                elif 0xDC00 <= code < 0xE000:
                    pieces.append("\ufffd")
                else:
                    pieces.append(chr(code))
                i += 6
            elif esc == "x" or esc == "U":  # Python's \xXX and \UXXXXXXXX
                width = 2 if esc == "x" else 8
                m = (_HEX2 if esc == "x" else _HEX8).match(buf, i + 2)
                if m is None or int(m.group(), 16) > 0x10FFFF:
                    if n - (i + 2) < width and not final:
                        break
                    pieces.append("\\" + esc)
                    i += 2
                    continue
                code = int(m.group(), 16)
                pieces.append("\ufffd" if 0xD800 <= code < 0xE000 else chr(code))
                i += 2 + width
            else:
                decoded = _ESCAPES.get(esc)
                pieces.append(decoded if decoded is not None else "\\" + esc)
                i += 2
        if pieces:
            toks.append((T_STR, "".join(pieces)))
        return i


# --- writing JSON -----------------------------------------------------------------------

_K, _C, _V, _N = 0, 1, 2, 3
"""Container states: expecting a key, a colon, a value, a comma (or the end)."""


def encode_string(text: str) -> str:
    """``text`` as the inside of a JSON string (escaped, without the quotes)."""
    out: str = encode_basestring(text)
    return out[1:-1]


def atom_json(atom: str) -> str:
    """The JSON text for a bare token: a number, ``true``/``True``…, or else a string."""
    lit = _LITERALS.get(atom)
    if lit is not None:
        return lit
    if _JSON_NUMBER.fullmatch(atom):
        return atom
    try:
        number: float = int(atom.replace("_", ""), 0)
    except ValueError:
        try:
            number = float(atom.replace("_", ""))
        except ValueError:
            return '"' + encode_string(atom) + '"'
        if math.isnan(number) or math.isinf(number):
            return "null"
    return json.dumps(number)


class JsonWriter:
    """Writes JSON text from :class:`Lexer` tokens, one value.

    Lenient: a missing comma or colon is supplied, a trailing comma dropped, a key with
    no value gets ``null``, a bare word is a string, ``(`` opens keyword arguments
    (``f(k=v)``: an object) at the top level and a tuple (an array) below it; what cannot
    stand where it is is skipped and counted in ``skipped``. ``done`` once the value has
    ended; :meth:`close` ends it early.

    ``positional`` names the keyword-argument object's positional arguments in order
    (``f(1, 2)``); beyond them they are named ``_0``, ``_1`` ….
    """

    __slots__ = (
        "_atom",
        "_in_str",
        "_key",
        "_skip",
        "_skip_str",
        "_stack",
        "done",
        "positional",
        "skipped",
        "started",
    )

    def __init__(self, positional: Sequence[str] = ()) -> None:
        self._stack: list[list[Any]] = []
        """Open containers: [is_object, state, count, is_kwargs, positional index, key]."""
        self._in_str = False
        self._key: list[str] | None = None
        """The pieces of the object key being read."""
        self._atom: str | None = None
        """A bare word read where a keyword argument's name may stand."""
        self._skip = 0
        """Depth of a container being skipped."""
        self._skip_str = False
        self.positional = tuple(positional)
        self.done = False
        self.started = False
        self.skipped = 0

    @property
    def in_string(self) -> bool:
        """Whether a string value is being written (its closing quote not yet)."""
        return self._in_str and not self._skip_str

    def write(self, tokens: Iterable[Token]) -> str:
        """The JSON text for ``tokens`` (the text written so far ends where they end)."""
        out: list[str] = []
        for tok in tokens:
            if self.done:
                self.skipped += 1
                continue
            self._token(tok[0], tok[1], out)
        return "".join(out)

    def write_from(self, tokens: Sequence[Token], start: int, out: list[str]) -> int:
        """Write ``tokens[start:]`` to ``out`` until the value ends; return the index of
        the first token not used."""
        n = len(tokens)
        k = start
        token = self._token
        while k < n and not self.done:
            kind, value = tokens[k]
            token(kind, value, out)
            k += 1
        return k

    def close(self) -> str:
        """Text that ends the value now: the open string closed, a pending value
        ``null``, every container closed. Empty when the value has ended or not begun."""
        if self.done or not self.started:
            return ""
        out: list[str] = []
        if self._atom is not None:
            self._flush_atom(out)
        if self._in_str:
            out.append('"')
            self._in_str = False
            self._after_value()
        self._key = None
        for depth, top in enumerate(reversed(self._stack)):
            if depth == 0 and top[0] and top[1] == _V:  # a key written, its value not
                out.append("null")
            out.append("}" if top[0] else "]")
        self._stack.clear()
        self.done = True
        return "".join(out)

    # --- internals ---------------------------------------------------------------

    def _after_value(self) -> None:
        if self._stack:
            self._stack[-1][1] = _N
        else:
            self.done = True

    def _begin_value(self, out: list[str]) -> bool:
        """Write what goes before a value here; False if no value can stand here."""
        stack = self._stack
        if not stack:
            if self.started:
                return False
            self.started = True
            return True
        top = stack[-1]
        if top[0]:  # an object
            if top[1] == _V:
                return True
            if top[1] == _K and top[3]:  # keyword arguments: a positional argument
                index = top[4]
                top[4] += 1
                name = self.positional[index] if index < len(self.positional) else f"_{index}"
                self._write_key(name, top, out)
                return True
            return False
        if top[2]:  # an array (a missing comma is supplied)
            out.append(", ")
        top[2] += 1
        return True

    @staticmethod
    def _write_key(key: str, top: list[Any], out: list[str]) -> None:
        out.append((", " if top[2] else "") + encode_basestring(key) + ": ")
        top[2] += 1
        top[1] = _V

    def _flush_atom(self, out: list[str]) -> None:
        """A bare word read where a keyword argument's name may stand was a value."""
        atom = self._atom
        self._atom = None
        if atom is not None and self._begin_value(out):
            out.append(atom_json(atom))
            self._after_value()

    def _token(self, kind: int, value: str, out: list[str]) -> None:
        if self._skip_str:
            if kind == T_STR_END:
                self._skip_str = False
            return
        if self._skip:
            if kind == T_OPEN:
                self._skip += 1
            elif kind == T_CLOSE:
                self._skip -= 1
            elif kind == T_STR_BEGIN:
                self._skip_str = True
            return
        if self._in_str:
            if kind == T_STR:
                out.append(encode_string(value))
            elif kind == T_STR_END:
                out.append('"')
                self._in_str = False
                self._after_value()
            return
        if self._key is not None:
            if kind == T_STR:
                self._key.append(value)
            elif kind == T_STR_END:
                frame = self._stack[-1]
                frame[1] = _C
                frame[5] = "".join(self._key)
                self._key = None
            return
        stack = self._stack
        if self._atom is not None:  # keyword arguments: name=value, or a positional word
            if kind == T_COLON:
                atom = self._atom
                self._atom = None
                self._write_key(atom, stack[-1], out)
                return
            self._flush_atom(out)
        top = stack[-1] if stack else None
        if top is not None and top[0] and top[1] == _C:
            key = top[5]
            if kind == T_COLON:
                self._write_key(key, top, out)
                return
            if kind in (T_STR_BEGIN, T_ATOM, T_OPEN):  # a missing colon
                self._write_key(key, top, out)
            else:  # a key without a value: dropped
                top[1] = _N
                self.skipped += 1
        if kind == T_STR_BEGIN:
            if top is not None and top[0] and top[1] in (_K, _N) and not top[3]:
                self._key = []
            elif self._begin_value(out):
                out.append('"')
                self._in_str = True
            else:
                self.skipped += 1
                self._skip_str = True
        elif kind == T_ATOM:
            if top is not None and top[0] and top[1] in (_K, _N):
                if top[3]:
                    self._atom = value
                else:
                    top[1] = _C
                    top[5] = value
            elif self._begin_value(out):
                out.append(atom_json(value))
                self._after_value()
            else:
                self.skipped += 1
        elif kind == T_OPEN:
            kwargs = value == "(" and not stack
            if self._begin_value(out):
                is_object = value == "{" or kwargs
                out.append("{" if is_object else "[")
                stack.append([is_object, _K if is_object else _V, 0, kwargs, 0, ""])
            else:
                self.skipped += 1
                self._skip = 1
        elif kind == T_CLOSE:
            if top is None:
                self.skipped += 1
                return
            if top[0] and top[1] == _V:
                out.append("null")
            stack.pop()
            out.append("}" if top[0] else "]")
            self._after_value()
        elif kind == T_COMMA:
            if top is None:
                self.skipped += 1
            elif top[0]:
                if top[1] == _V:
                    out.append("null")
                    top[1] = _N
                if top[1] == _N:
                    top[1] = _K
            else:
                top[1] = _V if top[1] == _N else top[1]
        elif kind == T_COLON:
            self.skipped += 1


# --- schemas and typed values -----------------------------------------------------------

_ALL_KINDS: Final = frozenset({"string", "integer", "number", "boolean", "null", "object", "array"})


def tool_schemas(tools: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Tool name → its parameters' JSON schema, from OpenAI-style tools
    (``{"type": "function", "function": {"name", "parameters"}}``) or bare function
    objects (``{"name", "parameters"}``). Entries without a name are ignored."""
    out: dict[str, Mapping[str, Any]] = {}
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        fn = tool.get("function", tool)
        if not isinstance(fn, Mapping):
            continue
        name = fn.get("name")
        if isinstance(name, str) and name:
            params = fn.get("parameters")
            out[name] = params if isinstance(params, Mapping) else {}
    return out


def property_schema(parameters: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The schema of property ``name`` of an object schema, ``None`` if it says nothing."""
    props = parameters.get("properties")
    if isinstance(props, Mapping):
        sub = props.get(name)
        if isinstance(sub, Mapping):
            return _resolve(sub, parameters)
    extra = parameters.get("additionalProperties")
    if isinstance(extra, Mapping):
        return _resolve(extra, parameters)
    return None


def property_names(parameters: Mapping[str, Any]) -> tuple[str, ...]:
    """The declared properties of an object schema, in order."""
    props = parameters.get("properties")
    return tuple(k for k in props if isinstance(k, str)) if isinstance(props, Mapping) else ()


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/") or depth > 8:
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return schema
        node = node[part]
    return _resolve(node, root, depth + 1) if isinstance(node, Mapping) else schema


def value_kinds(schema: Mapping[str, Any] | None, root: Mapping[str, Any] | None = None) -> frozenset[str]:
    """The JSON types ``schema`` allows (``string``, ``integer``, ``number``, ``boolean``,
    ``null``, ``object``, ``array``); empty when it does not say."""
    if not isinstance(schema, Mapping):
        return frozenset()
    if root is not None:
        schema = _resolve(schema, root)
    kinds: set[str] = set()
    t = schema.get("type")
    if isinstance(t, str):
        kinds.add(t)
    elif isinstance(t, list):
        kinds.update(x for x in t if isinstance(x, str))
    for key in ("enum", "const"):
        if key in schema:
            values = schema[key] if key == "enum" and isinstance(schema[key], list) else [schema[key]]
            kinds.update(_kind_of(v) for v in values)
    for key in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(key)
        if isinstance(subs, list):
            for sub in subs:
                kinds |= value_kinds(sub, root)
    if not kinds:
        if "properties" in schema:
            kinds.add("object")
        elif "items" in schema:
            kinds.add("array")
    return frozenset(kinds & _ALL_KINDS)


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_INT_RE: Final = re.compile(r"[+-]?\d+")
_NUM_RE: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_MISSING: Final = object()


def loads_lenient(text: str) -> Any:
    """The value of one JSON-like text (JSON, Python literals, bare keys); raises
    ``ValueError`` when it is not one whole value."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    lexer = Lexer()
    end = lexer.run(text, 0, final=True)
    writer = JsonWriter()
    out = writer.write(lexer.tokens)
    if end != len(text) or not writer.done or writer.skipped:
        raise ValueError("not one JSON-like value")
    return json.loads(out)


def typed_value(raw: str, kinds: frozenset[str]) -> Any:
    """The value raw tagged text stands for, given the types its schema allows.

    A parameter that may only be a string keeps its text as is (``"007"`` stays
    ``"007"``); otherwise the first type the text reads as wins, in the order null,
    boolean, integer, number, object/array, string. With no schema, JSON (or a Python
    literal) is tried and the text kept as a string if it is not one.
    """
    if kinds == {"string"}:
        return raw
    text = raw.strip()
    if not kinds:
        try:
            return loads_lenient(text)
        except ValueError:
            return raw
    if "null" in kinds and text in ("null", "None", "NULL"):
        return None
    if "boolean" in kinds:
        low = text.lower()
        if low in ("true", "false"):
            return low == "true"
    if ("integer" in kinds or "number" in kinds) and _INT_RE.fullmatch(text):
        return int(text)
    if ("number" in kinds or "integer" in kinds) and _NUM_RE.fullmatch(text):
        number = float(text)
        if "integer" in kinds and number.is_integer() and "number" not in kinds:
            return int(number)
        return number
    if "object" in kinds or "array" in kinds or "string" not in kinds:
        try:
            value = loads_lenient(text)
        except ValueError:
            value = _MISSING
        if value is not _MISSING and ("string" not in kinds or not isinstance(value, str)):
            return value
    return raw


def typed_json(raw: str, kinds: frozenset[str]) -> str:
    """:func:`typed_value` as JSON text."""
    return json.dumps(typed_value(raw, kinds), ensure_ascii=False)
