"""Tool-call arguments as models write them, read as tokens.

Models spell arguments in many dialects: strict JSON, Python literals (``True``,
``None``, ``'single quotes'``, ``f(k=v)`` keyword arguments), bare keys and odd string
quotes (Gemma 4's ``{k:<|"|>v<|"|>}``). :class:`Lexer` is a resumable, lenient tokenizer
of all of them: it reads as far as it is sure of and says where it stopped, so a parser
can feed it a growing buffer. Its tokens become JSON text through
:class:`~.json_writer.JsonWriter`. Nothing here raises on bad input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Final

__all__ = ["Lexer", "Token"]

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
        """Read the open string's text from ``i``; return where reading stopped."""
        quote = self._quote
        if len(quote) > 1:
            return self._custom_string(buf, i, n, final)
        if quote == '"':  # JSON's own strings: decoded by the json module when it can
            i, settled = self._json_string(buf, i, n, final)
            if settled:
                return i
        return self._escaped_string(buf, i, n, final)

    def _custom_string(self, buf: str, i: int, n: int, final: bool) -> int:
        """A custom quote's string: raw text up to the closing quote."""
        quote = self._quote
        toks = self.tokens
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

    def _json_string(self, buf: str, i: int, n: int, final: bool) -> tuple[int, bool]:
        """A double-quoted string through the json module: ``(where it stopped, settled)``;
        not settled, the rest is read by :meth:`_escaped_string` from there (an escape
        JSON does not know, surrogate halves, an unfinished escape)."""
        toks = self.tokens
        m = _DQ_BODY.match(buf, i)
        e = m.end() if m is not None else i
        if _SURROGATE.search(buf, i, e):  # surrogate halves: decoded one by one
            return i, False
        try:
            if e < n:  # the closing quote is here
                text, end = scanstring(buf, i, False)
                if text:
                    toks.append((T_STR, text))
                toks.append((T_STR_END, '"'))
                self._quote = ""
                return int(end), True
            body = buf[i:e]
            if body:
                text, _ = scanstring(body + '"', 0, False)
                toks.append((T_STR, text))
                i += len(body)
        except ValueError:  # an escape JSON does not know (``\'``) or an unfinished one
            return i, False
        # all read, or a lone backslash at the end
        return i, i == n or (i == n - 1 and not final)

    def _escaped_string(self, buf: str, i: int, n: int, final: bool) -> int:
        """A quoted string read character by character, with Python's escapes too."""
        quote = self._quote
        toks = self.tokens
        plain = _PLAIN[quote]
        pieces: list[str] = []
        while i < n:
            m = plain.match(buf, i)
            if m is not None:
                pieces.append(m.group())
                i = m.end()
                continue
            if buf[i] == quote:
                if pieces:
                    toks.append((T_STR, "".join(pieces)))
                toks.append((T_STR_END, quote))
                self._quote = ""
                return i + 1
            j = _escape(buf, i, n, final, pieces)  # a backslash
            if j < 0:
                break
            i = j
        if pieces:
            toks.append((T_STR, "".join(pieces)))
        return i


def _escape(buf: str, i: int, n: int, final: bool, pieces: list[str]) -> int:
    """Decode the escape at ``buf[i]`` (a backslash) into ``pieces``; return the index past
    it, or ``-1`` when it may go on past the buffer's end (not ``final``)."""
    if i + 1 >= n:
        if final:
            pieces.append("\\")
            return i + 1
        return -1
    esc = buf[i + 1]
    if esc == "u":
        return _unicode_escape(buf, i, n, final, pieces)
    if esc == "x" or esc == "U":  # Python's \xXX and \UXXXXXXXX
        width = 2 if esc == "x" else 8
        m = (_HEX2 if esc == "x" else _HEX8).match(buf, i + 2)
        if m is None or int(m.group(), 16) > 0x10FFFF:
            if n - (i + 2) < width and not final:
                return -1
            pieces.append("\\" + esc)
            return i + 2
        code = int(m.group(), 16)
        pieces.append("\ufffd" if 0xD800 <= code < 0xE000 else chr(code))
        return i + 2 + width
    decoded = _ESCAPES.get(esc)
    pieces.append(decoded if decoded is not None else "\\" + esc)
    return i + 2


def _unicode_escape(buf: str, i: int, n: int, final: bool, pieces: list[str]) -> int:
    """A ``\\uXXXX`` escape (a surrogate pair: both halves) at ``buf[i]``, as :func:`_escape`."""
    m = _HEX4.match(buf, i + 2)
    if m is None:
        if n - (i + 2) < 4 and not final:
            return -1
        pieces.append("\\u")
        return i + 2
    code = int(m.group(), 16)
    if 0xD800 <= code < 0xDC00:  # a high surrogate: wants its low half
        if n - (i + 6) < 6 and not final and buf.startswith("\\u"[: n - (i + 6)], i + 6):
            return -1
        low = _HEX4.match(buf, i + 8) if buf.startswith("\\u", i + 6) else None
        if low is not None and 0xDC00 <= int(low.group(), 16) < 0xE000:
            pieces.append(chr(0x10000 + ((code - 0xD800) << 10) + (int(low.group(), 16) - 0xDC00)))
            return i + 12
        pieces.append("\ufffd")
    elif 0xDC00 <= code < 0xE000:
        pieces.append("\ufffd")
    else:
        pieces.append(chr(code))
    return i + 6
