"""JSON text from :class:`~.lexer.Lexer` tokens: :class:`JsonWriter`.

Tokens → JSON text (``{"k": v, "l": [1, 2]}``, with ``": "`` and ``", "``), written as soon
as each piece is certain: a key once its colon is seen, a string character by character,
a number once it has ended. A writer closed early (:meth:`JsonWriter.close`) still leaves
valid JSON. Nothing here raises on bad input: what cannot be read is skipped and counted
in ``JsonWriter.skipped``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring
from typing import Final

from .lexer import T_ATOM, T_CLOSE, T_COLON, T_COMMA, T_OPEN, T_STR, T_STR_BEGIN, T_STR_END, Token

__all__ = ["JsonWriter", "atom_json", "encode_string"]

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

_EXPECT_KEY: Final = 0
_EXPECT_COLON: Final = 1
_EXPECT_VALUE: Final = 2
_EXPECT_COMMA: Final = 3
"""What an open container expects next (after a value: a comma, or its end)."""
_KEY_OR_COMMA: Final = (_EXPECT_KEY, _EXPECT_COMMA)


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


class _Frame:
    """An open container of the value being written."""

    __slots__ = ("count", "expecting", "is_object", "key", "kwargs", "positional")

    def __init__(self, is_object: bool, kwargs: bool) -> None:
        self.is_object = is_object
        self.expecting = _EXPECT_KEY if is_object else _EXPECT_VALUE
        self.count = 0
        """Members written."""
        self.kwargs = kwargs
        """Keyword arguments (``f(k=v)``): an object whose keys are bare words."""
        self.positional = 0
        """Keyword arguments: the positional arguments so far."""
        self.key = ""
        """An object: the key read, its colon not yet."""


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
        self._stack: list[_Frame] = []
        """The open containers, outermost first."""
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
            if depth == 0 and top.is_object and top.expecting == _EXPECT_VALUE:  # a key, no value
                out.append("null")
            out.append("}" if top.is_object else "]")
        self._stack.clear()
        self.done = True
        return "".join(out)

    def pending(self, tail: str = "") -> str:
        """Text for what was read but not written, as far as it goes, when the output stops
        here for good in a partial parse: a key cut short (``{"ar``), a key waiting for
        its colon, a bare word read where a keyword argument's name may stand, and
        ``tail``, a bare word the lexer held back (a number or literal that may go on).
        The result continues the text written so far; it is no complete JSON."""
        if self.done or self._in_str or self._skip or self._skip_str:
            return ""
        stack = self._stack
        top = stack[-1] if stack else None
        out: list[str] = []
        if self._key is not None and top is not None:
            out.append(_separator(top) + '"' + encode_string("".join(self._key)))
            return "".join(out)
        if top is not None and top.is_object and top.expecting == _EXPECT_COLON:
            return _separator(top) + encode_basestring(top.key)
        word = self._atom if self._atom is not None else tail
        self._atom = None
        if not word:
            return ""
        at_key = top is not None and top.is_object and top.expecting in _KEY_OR_COMMA
        if at_key and top is not None and (not top.kwargs or word.isidentifier()):
            return _separator(top) + '"' + encode_string(word)
        prefix = _value_prefix(word)
        if prefix and self._begin_value(out):
            out.append(prefix)
        return "".join(out)

    # --- internals ---------------------------------------------------------------

    def _after_value(self) -> None:
        if self._stack:
            self._stack[-1].expecting = _EXPECT_COMMA
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
        if top.is_object:
            if top.expecting == _EXPECT_VALUE:
                return True
            if top.expecting == _EXPECT_KEY and top.kwargs:  # keyword arguments: a positional one
                index = top.positional
                top.positional += 1
                name = self.positional[index] if index < len(self.positional) else f"_{index}"
                self._write_key(name, top, out)
                return True
            return False
        if top.count:  # an array (a missing comma is supplied)
            out.append(", ")
        top.count += 1
        return True

    @staticmethod
    def _write_key(key: str, top: _Frame, out: list[str]) -> None:
        out.append((", " if top.count else "") + encode_basestring(key) + ": ")
        top.count += 1
        top.expecting = _EXPECT_VALUE

    def _flush_atom(self, out: list[str]) -> None:
        """A bare word read where a keyword argument's name may stand was a value."""
        atom = self._atom
        self._atom = None
        if atom is not None and self._begin_value(out):
            out.append(atom_json(atom))
            self._after_value()

    def _token(self, kind: int, value: str, out: list[str]) -> None:
        """Write one token: inside a string, a key or a skipped value here, the rest by
        :meth:`_structure`."""
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
                frame.expecting = _EXPECT_COLON
                frame.key = "".join(self._key)
                self._key = None
            return
        self._structure(kind, value, out)

    def _structure(self, kind: int, value: str, out: list[str]) -> None:
        """Write a token outside strings: a pending key or keyword name first, then the
        token where it stands."""
        stack = self._stack
        if self._atom is not None:  # keyword arguments: name=value, or a positional word
            if kind == T_COLON:
                atom = self._atom
                self._atom = None
                self._write_key(atom, stack[-1], out)
                return
            self._flush_atom(out)
        top = stack[-1] if stack else None
        if top is not None and top.is_object and top.expecting == _EXPECT_COLON:
            if kind == T_COLON:
                self._write_key(top.key, top, out)
                return
            if kind in (T_STR_BEGIN, T_ATOM, T_OPEN):  # a missing colon
                self._write_key(top.key, top, out)
            else:  # a key without a value: dropped
                top.expecting = _EXPECT_COMMA
                self.skipped += 1
        if kind == T_STR_BEGIN:
            if top is not None and top.is_object and top.expecting in _KEY_OR_COMMA and not top.kwargs:
                self._key = []
            elif self._begin_value(out):
                out.append('"')
                self._in_str = True
            else:
                self.skipped += 1
                self._skip_str = True
        elif kind == T_ATOM:
            self._atom_token(top, value, out)
        elif kind == T_OPEN:
            kwargs = value == "(" and not stack
            if self._begin_value(out):
                is_object = value == "{" or kwargs
                out.append("{" if is_object else "[")
                stack.append(_Frame(is_object, kwargs))
            else:
                self.skipped += 1
                self._skip = 1
        elif kind == T_CLOSE:
            self._close_token(top, out)
        elif kind == T_COMMA:
            self._comma_token(top, out)
        elif kind == T_COLON:
            self.skipped += 1

    def _atom_token(self, top: _Frame | None, value: str, out: list[str]) -> None:
        if top is not None and top.is_object and top.expecting in _KEY_OR_COMMA:
            if top.kwargs:
                self._atom = value
            else:  # a bare key
                top.expecting = _EXPECT_COLON
                top.key = value
        elif self._begin_value(out):
            out.append(atom_json(value))
            self._after_value()
        else:
            self.skipped += 1

    def _close_token(self, top: _Frame | None, out: list[str]) -> None:
        if top is None:
            self.skipped += 1
            return
        if top.is_object and top.expecting == _EXPECT_VALUE:
            out.append("null")
        self._stack.pop()
        out.append("}" if top.is_object else "]")
        self._after_value()

    def _comma_token(self, top: _Frame | None, out: list[str]) -> None:
        if top is None:
            self.skipped += 1
            return
        if top.is_object:
            if top.expecting == _EXPECT_VALUE:  # a key without a value
                out.append("null")
                top.expecting = _EXPECT_COMMA
            if top.expecting == _EXPECT_COMMA:
                top.expecting = _EXPECT_KEY
        elif top.expecting == _EXPECT_COMMA:
            top.expecting = _EXPECT_VALUE


def _separator(top: _Frame) -> str:
    """What goes before the next key of object ``top``."""
    return ", " if top.count else ""


_PYTHON_LITERALS: Final = {"True": "true", "False": "false", "None": "null"}
_NUMBER_PREFIX: Final = re.compile(r"-?(?:0|[1-9]\d*)?(?:\.\d*)?(?:[eE][+-]?\d*)?")


def _value_prefix(word: str) -> str:
    """The JSON text that begins the value a bare word cut short begins (``tru`` →
    ``tru``, ``Tru`` → ``tru``, ``12`` → ``12``); ``""`` when it begins none."""
    for literal in ("true", "false", "null"):
        if literal.startswith(word):
            return word
    for python, literal in _PYTHON_LITERALS.items():
        if python.startswith(word) and literal.startswith(word.lower()):
            return word.lower()
    if word and _NUMBER_PREFIX.fullmatch(word):
        return word
    return ""
