"""Tool calls written as whole JSON objects (the ``json`` syntax):
``{"name": "f", "arguments": {...}, "id": "…"}``, maybe under a wrapper key
(``{"function": {...}}``), the arguments maybe a JSON string of their own, or the name as
the key (``{"f": {...}}``).

:class:`JsonCallReader` takes the :class:`~.lexer.Lexer` tokens of one such object as
they come and finds its name, id and arguments, under the format's keys or common ones;
the arguments are written out as JSON text by a :class:`~.json_writer.JsonWriter`, piece
by piece, while the object is still being read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from ..format import ToolCallFormat
from .json_writer import JsonWriter
from .lexer import T_ATOM, T_CLOSE, T_COLON, T_COMMA, T_OPEN, T_STR, T_STR_BEGIN, T_STR_END, Lexer, Token

_EXPECT_KEY: Final = 0
_EXPECT_COLON: Final = 1
_EXPECT_VALUE: Final = 2
_EXPECT_COMMA: Final = 3
"""Where the reader is in the object: before a key, its colon, its value, or after it."""


class JsonCallReader:
    """Reads one call written as a JSON object, token by token (see the module docstring).

    ``name`` and ``id`` are ``None`` until read; ``out`` collects the arguments' JSON
    text as it is written (the caller empties it); ``done`` once the object has ended.
    ``positional`` names the positional arguments of keyword-argument values.
    """

    __slots__ = (
        "_arg_keys",
        "_capture",
        "_depth",
        "_expecting",
        "_id_keys",
        "_key",
        "_mode",
        "_name_is_key",
        "_name_keys",
        "_skip",
        "_string_buffer",
        "_string_lexer",
        "_string_read",
        "_wrapper_keys",
        "args_started",
        "done",
        "id",
        "name",
        "out",
        "positional",
        "writer",
    )

    def __init__(self, tools: ToolCallFormat) -> None:
        self._name_keys = {k for k in (tools.name_key, "name") if k}
        self._arg_keys = {k for k in (tools.arguments_key, "arguments", "parameters") if k}
        self._id_keys = {k for k in (tools.id_key, "id") if k}
        self._wrapper_keys = {k for k in (tools.wrapper_key, "function") if k}
        self._name_is_key = tools.name_is_key
        self._depth = 0
        """How many objects deep the reader is (a wrapper object counts)."""
        self._expecting = _EXPECT_KEY
        self._mode = ""
        """What the tokens are read for: ``"key"``, ``"name"``, ``"id"`` (a string being
        captured), ``"skip"`` (a value of no interest), ``"args"`` (the arguments, to the
        writer), ``"args_str"`` (the arguments as a JSON string), ``""`` (the object)."""
        self._key = ""
        self._capture: list[str] = []
        self._skip = 0
        """The skipped value's depth; ``-1`` for a string at its top."""
        self._string_lexer: Lexer | None = None
        """Reads arguments written as a JSON string: the text inside it."""
        self._string_buffer = ""
        self._string_read = 0
        self.writer: JsonWriter | None = None
        self.args_started = False
        self.done = False
        self.name: str | None = None
        self.id: str | None = None
        self.out: list[str] = []
        self.positional: Sequence[str] = ()

    @property
    def in_args(self) -> bool:
        """Whether the arguments object is being written (not as a string)."""
        return self._mode == "args"

    def feed(self, tokens: list[Token]) -> None:
        """Read the next tokens of the object (those after its end are ignored)."""
        n = len(tokens)
        k = 0
        while k < n:
            if self.done:
                return
            if self._mode == "args":
                writer = self.writer
                assert writer is not None
                out: list[str] = []
                k = writer.write_from(tokens, k, out)
                if out:
                    self.out.append("".join(out))
                if writer.done:
                    self._value_read()
                continue
            kind, value = tokens[k]
            k += 1
            self._token(kind, value)

    def close(self) -> str:
        """Text that ends the arguments now (``""`` if they have not begun)."""
        if self.writer is None:
            return ""
        if self._mode == "args_str":
            self._read_string_arguments(True)
        return self.writer.close()

    def pending(self, held_word: Callable[[Lexer, str, int], str]) -> str:
        """A partial parse ends inside arguments written as a JSON string: what was read
        of them and not yet written (see :meth:`.JsonWriter.pending`); ``""`` elsewhere.
        ``held_word`` finds the bare word a lexer left unread at its buffer's end."""
        if self._mode != "args_str" or self.writer is None or self._string_lexer is None:
            return ""
        tail = held_word(self._string_lexer, self._string_buffer, self._string_read)
        return self.writer.pending(tail)

    # --- internals ---------------------------------------------------------------

    def _token(self, kind: int, value: str) -> None:
        mode = self._mode
        if mode == "key":
            if kind == T_STR:
                self._capture.append(value)
            elif kind == T_STR_END:
                self._key = "".join(self._capture)
                self._mode = ""
                self._expecting = _EXPECT_COLON
        elif mode == "name" or mode == "id":
            self._capture_token(mode, kind, value)
        elif mode == "skip":
            self._skip_token(kind)
        elif mode == "args_str":
            if kind == T_STR:
                self._string_buffer += value
                self._read_string_arguments(False)
            elif kind == T_STR_END:
                self._read_string_arguments(True)
                assert self.writer is not None
                closing = self.writer.close()
                if closing:
                    self.out.append(closing)
                self._value_read()
        else:
            self._structure(kind, value)

    def _value_read(self) -> None:
        self._mode = ""
        self._expecting = _EXPECT_COMMA

    def _capture_token(self, mode: str, kind: int, value: str) -> None:
        """A token of the name or id being read."""
        if kind == T_STR:
            self._capture.append(value)
            return
        if kind == T_STR_BEGIN:
            return
        if kind in (T_STR_END, T_ATOM):
            if kind == T_ATOM:
                self._capture.append(value)
            text = "".join(self._capture)
            if mode == "name":
                self.name = text
            else:
                self.id = text
            self._value_read()
            return
        self._mode = "skip"  # a container where a name or id should be
        self._skip = 0
        self._skip_token(kind)

    def _skip_token(self, kind: int) -> None:
        if kind == T_OPEN:
            self._skip += 1
        elif kind == T_CLOSE:
            self._skip -= 1
        elif kind == T_STR_BEGIN and self._skip == 0:
            self._skip = -1  # a string at the top of the skipped value
            return
        if self._skip <= 0 and kind in (T_CLOSE, T_ATOM, T_STR_END):
            self._value_read()
            self._skip = 0

    def _read_string_arguments(self, final: bool) -> None:
        """Write the arguments held in a JSON string, as far as its text goes."""
        assert self._string_lexer is not None and self.writer is not None
        self._string_read = self._string_lexer.run(self._string_buffer, self._string_read, final)
        text = self.writer.write(self._string_lexer.tokens)
        self._string_lexer.tokens.clear()
        if text:
            self.out.append(text)
        if self._string_read > 4096:
            self._string_buffer = self._string_buffer[self._string_read :]
            self._string_read = 0

    def _structure(self, kind: int, value: str) -> None:
        """A token of the object itself: its braces, keys, colons and commas, or a value."""
        if self._depth == 0:
            if kind == T_OPEN and value == "{":
                self._depth = 1
                self._expecting = _EXPECT_KEY
            return
        expecting = self._expecting
        if expecting in (_EXPECT_KEY, _EXPECT_COMMA):
            if kind == T_STR_BEGIN:
                self._mode = "key"
                self._capture = []
            elif kind == T_OPEN:  # a container where a key should be: skipped
                self._mode = "skip"
                self._skip = 1
            elif kind == T_ATOM:
                self._key = value
                self._expecting = _EXPECT_COLON
            elif kind == T_CLOSE:
                self._end_object()
            elif kind == T_COMMA:
                self._expecting = _EXPECT_KEY
            return
        if expecting == _EXPECT_COLON:
            self._expecting = _EXPECT_VALUE
            if kind == T_COLON:
                return
        self._value(kind, value)

    def _end_object(self) -> None:
        self._depth -= 1
        self._expecting = _EXPECT_COMMA
        if self._depth == 0:
            self.done = True

    def _value(self, kind: int, value: str) -> None:
        """The first token of the value of ``self._key``."""
        key = self._key
        if key in self._wrapper_keys and kind == T_OPEN and value == "{" and self.name is None:
            self._depth += 1
            self._expecting = _EXPECT_KEY
            return
        if key in self._name_keys and kind in (T_STR_BEGIN, T_ATOM) and self.name is None:
            self._begin_capture("name", kind, value)
            return
        if key in self._id_keys and kind in (T_STR_BEGIN, T_ATOM):
            self._begin_capture("id", kind, value)
            return
        is_args = key in self._arg_keys and not self.args_started
        if (
            not is_args
            and self._name_is_key
            and self.name is None
            and kind == T_OPEN
            and value == "{"
            and key not in ("type", *self._id_keys)
        ):
            self.name = key
            is_args = True
        if is_args:
            self._begin_arguments(kind, value)
        elif kind == T_CLOSE:  # a key with no value
            self._end_object()
        else:
            self._skip_value(kind)

    def _begin_arguments(self, kind: int, value: str) -> None:
        self.args_started = True
        self.writer = JsonWriter(self.positional)
        if kind == T_STR_BEGIN:
            self._mode = "args_str"
            self._string_lexer = Lexer()
            return
        self._mode = "args"
        text = self.writer.write(((kind, value),))
        if text:
            self.out.append(text)
        if self.writer.done:
            self._value_read()

    def _skip_value(self, kind: int) -> None:
        self._mode = "skip"
        self._skip = 0
        if kind == T_OPEN:
            self._skip = 1
        elif kind == T_STR_BEGIN:
            self._skip = -1
        else:
            self._value_read()

    def _begin_capture(self, mode: str, kind: int, value: str) -> None:
        if kind == T_ATOM:
            if mode == "name":
                self.name = value
            else:
                self.id = value
            self._expecting = _EXPECT_COMMA
            return
        self._mode = mode
        self._capture = []
