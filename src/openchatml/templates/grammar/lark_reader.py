"""Lark grammars (llguidance's dialect, as custom tools bring them) read into rules of the
intermediate form (:mod:`.ir`), for a writer that cannot embed one (GBNF).

Theory of operation. :func:`lark_lexemes` cuts the text as llguidance's own Lark lexer
does (the same lexemes, longest match first); :class:`LarkReader` parses them by
recursive descent into rules of a :class:`~.builder.RuleSet` — each rule and terminal of
the grammar one rule (``start`` the entry), literals and classes as they are, regular
expressions read by :func:`~.regex_reader.read_regex`, ``%json`` schemas as
:class:`~.ir.JsonValue`. Read: rules and terminals, alternatives (on continued lines too),
groups, ``[…]``, ``? * +``, ``~ n``, ``~ m..n`` and ``{m,n}``, ``"…"`` (``i`` too),
``"a".."z"``, ``/…/flags``, aliases (``-> name``), the ``? ! _`` prefixes of rule names,
``%import common.NAME`` (or ``common (A, B)``, or ``-> ALIAS``) for the common terminals,
``%ignore`` (see below), ``%json``, ``%llguidance`` options, and the rule attributes
``capture``, ``temperature`` and ``max_tokens`` (which change no text). Refused with
:class:`~.regex_reader.UnsupportedGrammarError`: special tokens, other grammars
(``@name``, ``%lark``), ``%regex``, ``%declare``, ``%override``, priorities, templates,
parameters, ``&`` and ``~`` on lexemes, and the attributes ``lazy``, ``stop`` and
``suffix``.

Lark lexes: a terminal is the longest text its lexeme takes. Rules of characters take
every split, so the rules may take a few texts the lexer would not (a terminal ``/a*/``
followed by ``"a"``); those are checked after parsing.

``%ignore X``: llguidance skips ``X`` between two lexemes (never first or last). The rules
take it between two parts of a rule that neither may be empty, and between repetitions
of a part that may not be empty (fewer places than llguidance: never a text it refuses).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from .builder import RuleSet
from .char_sets import as_class, normalized
from .ir import (
    CharClass,
    Choice,
    Concat,
    JsonValue,
    LiteralText,
    Node,
    Repeat,
    RuleRef,
    choice,
    concat,
    optional,
)
from .regex_reader import UnsupportedGrammarError, lark_flags, read_regex

_SKIP: Final = re.compile(r"(?:#|//)[^\n]*|[ \t]+")
_LITERALS: Final = (
    "%llguidance", "%override", "%declare", "%ignore", "%import", "%json", "%regex", "%lark", "%if",
    "->", "::", "..", ":", ",", ".", "(", ")", "{", "}", "[", "]", "~", "|", "&", "=", "#", "_",
)  # fmt: skip
_PATTERNS: Final = {
    "op": r"[+*?]",
    "rule": r"!?[_?]?[a-z][_a-z0-9\-]*",
    "token": r"_?[A-Z][_A-Z0-9\-]*",
    "string": r'"(?:\\(?:["\\/bfnrt]|u[a-fA-F0-9]{4}|x[a-fA-F0-9]{2})|[^"\\\x00-\x1F\x7F])*"i?',
    "regexp": r"/(?:\\.|[^/\\])+/[imslux]*",
    "number": r"[+-]?[0-9]+(?:\.(?!\.)[0-9]*)?(?:[eE][+-]?[0-9]+)?",  # `2..3` is a range
    "hex": r"0[xX][0-9a-fA-F]+",
    "newline": r"(?:\r?\n)+[ \t]*",
    "special": r"<[^<>\s]+>",
    "ref": r"@[a-zA-Z0-9_\-]+",
}
_COMPILED: Final = {kind: re.compile(pattern) for kind, pattern in _PATTERNS.items()}
_WITH_JSON: Final = ("%json", "%llguidance", "%regex")
_ENDS: Final = frozenset({"newline", "|", "->", "}", ")", "]", "&", "%if", "end"})
"""The lexemes that end a sequence of parts."""
_INT: Final = r"[0-9]+"
_DECIMAL: Final = rf"{_INT}\.[0-9]*|\.{_INT}"
_EXPONENT: Final = rf"[eE][+-]?{_INT}"
_FLOAT: Final = rf"(?:{_DECIMAL})(?:{_EXPONENT})?|{_INT}{_EXPONENT}"
COMMON: Final = {
    "DIGIT": "[0-9]",
    "HEXDIGIT": "[a-fA-F0-9]",
    "INT": _INT,
    "SIGNED_INT": rf"[+-]?{_INT}",
    "DECIMAL": _DECIMAL,
    "_EXP": _EXPONENT,
    "FLOAT": _FLOAT,
    "SIGNED_FLOAT": rf"[+-]?(?:{_FLOAT})",
    "NUMBER": rf"{_INT}|{_FLOAT}",
    "SIGNED_NUMBER": rf"[+-]?(?:{_INT}|{_FLOAT})",
    "ESCAPED_STRING": r'"(?:[^"\\]|\\.)*"',
    "LCASE_LETTER": "[a-z]",
    "UCASE_LETTER": "[A-Z]",
    "LETTER": "[A-Za-z]",
    "WORD": "[A-Za-z]+",
    "CNAME": "[_A-Za-z][_A-Za-z0-9]*",
    "WS_INLINE": "[ \t]+",
    "WS": "[ \t\f\r\n]+",
    "CR": "\r",
    "LF": "\n",
    "NEWLINE": "(?:\r?\n)+",
    "SH_COMMENT": "#[^\n]*",
    "CPP_COMMENT": "//[^\n]*",
    "C_COMMENT": r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/",
    "SQL_COMMENT": "--[^\n]*",
}
"""The terminals of Lark's ``common`` library, as regular expressions."""


@dataclass(frozen=True, slots=True)
class Lexeme:
    """One lexeme: its ``kind`` (the literal itself, or a name from the lexer's table), its
    ``text``, its ``line`` and, for ``%json`` and the like, the JSON ``value`` that follows."""

    kind: str
    text: str
    line: int
    value: object = None


def lark_lexemes(text: str) -> list[Lexeme]:
    """The lexemes of ``text``, comments and blanks left out, an ``end`` lexeme last.
    Raises :class:`UnsupportedGrammarError` where none fits."""
    out: list[Lexeme] = []
    position, line = 0, 1
    text += "\n"
    decoder = json.JSONDecoder()
    while position < len(text):
        skipped = _SKIP.match(text, position)
        if skipped:
            position = skipped.end()
            continue
        kind, end = "", position
        for literal in _LITERALS:
            if text.startswith(literal, position) and position + len(literal) > end:
                kind, end = literal, position + len(literal)
        for name, pattern in _COMPILED.items():
            found = pattern.match(text, position)
            if found and found.end() > end:
                kind, end = name, found.end()
        if not kind:
            raise UnsupportedGrammarError(f"line {line}: no lexeme fits {text[position : position + 20]!r}")
        value: object = None
        if kind in _WITH_JSON:
            start = len(text) - len(text[end:].lstrip())
            try:
                value, end = decoder.raw_decode(text, start)
            except ValueError as exc:
                raise UnsupportedGrammarError(f"line {line}: {kind} takes a JSON value: {exc}") from None
        out.append(Lexeme(kind, text[position:end], line, value))
        line += text.count("\n", position, end)
        position = end
    out.append(Lexeme("end", "", line))
    return out


class LarkReader:
    """Reads one Lark grammar into ``rule_set`` (see the module docstring): :meth:`read`
    returns the reference to its ``start`` rule."""

    def __init__(self, rule_set: RuleSet) -> None:
        self.rule_set = rule_set
        self.lexemes: list[Lexeme] = []
        self.position = 0
        self.refs: dict[str, RuleRef] = {}
        self.bodies: dict[str, Node] = {}
        self.terminals: set[str] = set()
        self.ignored: list[Node] = []
        self.ignore_once = False
        self.imported: dict[str, str] = {}

    # -- lexemes
    @property
    def kind(self) -> str:
        return self.lexemes[self.position].kind

    def take(self, *kinds: str) -> Lexeme:
        """The next lexeme, which must be of one of ``kinds``."""
        lexeme = self.lexemes[self.position]
        if lexeme.kind not in kinds:
            expected = " or ".join(kinds)
            raise UnsupportedGrammarError(f"line {lexeme.line}: expected {expected}, found {lexeme.text!r}")
        self.position += 1
        return lexeme

    def taking(self, kind: str) -> bool:
        """Whether the next lexeme is ``kind`` (then taken)."""
        if self.kind != kind:
            return False
        self.position += 1
        return True

    def refuse(self, what: str) -> UnsupportedGrammarError:
        line = self.lexemes[self.position].line
        return UnsupportedGrammarError(f"line {line}: {what} cannot be expressed")

    # -- the grammar
    def read(self, text: str) -> RuleRef:
        """The rules of ``text``; the reference to ``start``. Raises
        :class:`UnsupportedGrammarError` for what the rules cannot express."""
        self.lexemes = lark_lexemes(text)
        while self.kind != "end":
            if self.taking("newline"):
                continue
            if self.kind == "rule":
                self.definition(self.take("rule").text, terminal=False)
            elif self.kind == "token":
                self.definition(self.take("token").text, terminal=True)
            else:
                self.statement()
            if self.kind != "end":
                self.take("newline")
        undefined = sorted(set(self.refs) - set(self.bodies))
        if undefined:
            raise UnsupportedGrammarError(f"undefined rules or terminals: {', '.join(undefined)}")
        if "start" not in self.bodies:
            raise UnsupportedGrammarError("the grammar has no start rule")
        ignore = choice(*self.ignored) if self.ignored else None
        for name, body in self.bodies.items():
            if ignore is not None and name not in self.terminals:
                body = _interleaved(body, Repeat(ignore, 0, 1 if self.ignore_once else None), self.nullable)
            self.rule_set.define(self.ref(name).name, body)
            if name in self.terminals:
                self.rule_set.terminals.add(self.ref(name).name)
        return self.ref("start")

    def ref(self, name: str) -> RuleRef:
        """The rule of the grammar's ``name``."""
        if name not in self.refs:
            base = "in_" + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
            self.refs[name] = RuleRef(self.rule_set.fresh_name(base))
        return self.refs[name]

    def definition(self, name: str, *, terminal: bool) -> None:
        """A rule (``name: …``) or a terminal (``NAME: …``)."""
        name = name.lstrip("!?")
        if self.kind in ("::", "{"):
            raise self.refuse("a parametric or template rule")
        if self.kind == ".":
            raise self.refuse("a priority")
        if self.kind == "[":
            self.attributes()
        self.take(":")
        self.define(name, self.alternatives(), terminal=terminal)

    def define(self, name: str, body: Node, *, terminal: bool) -> None:
        if name in self.bodies:
            raise UnsupportedGrammarError(f"{name!r} is defined twice")
        self.bodies[name] = body
        if terminal:
            self.terminals.add(name)
        self.ref(name)

    def attributes(self) -> None:
        """``[capture, temperature=…, max_tokens=…]``: none changes the text."""
        self.take("[")
        while not self.taking("]"):
            key = self.take("rule").text
            if key in ("lazy", "stop", "suffix", "stop_capture"):
                raise self.refuse(f"the attribute {key!r}")
            if key not in ("capture", "temperature", "max_tokens"):
                raise self.refuse(f"the attribute {key!r}")
            if self.taking("="):
                self.take("string", "number")
            if self.kind != "]":
                self.take(",")

    def statement(self) -> None:
        """``%ignore``, ``%import``, ``%llguidance``; the others are refused."""
        lexeme = self.take("%ignore", "%import", "%llguidance", "%declare", "%override")
        if lexeme.kind == "%ignore":
            self.ignored.append(self.alternatives())
        elif lexeme.kind == "%import":
            self.imports()
        elif lexeme.kind == "%llguidance":
            options = lexeme.value if isinstance(lexeme.value, dict) else {}
            self.ignore_once = self.ignore_once or bool(options.get("ignore_once"))
        else:
            raise self.refuse(lexeme.kind)

    def imports(self) -> None:
        """``%import common.NAME [-> ALIAS]`` or ``%import common (A, B)``."""
        module = self.take("rule").text
        names: list[tuple[str, str]] = []
        if self.taking("."):
            name = self.take("token", "rule").text
            alias = self.take("token", "rule").text if self.taking("->") else name
            names.append((name, alias))
        else:
            self.take("(")
            while True:
                name = self.take("token", "rule").text
                names.append((name, name))
                if not self.taking(","):
                    break
            self.take(")")
        for name, alias in names:
            if module != "common" or name not in COMMON:
                raise UnsupportedGrammarError(f"%import of {module}.{name}: only common terminals are known")
            if alias not in self.bodies or self.imported.get(alias) != name:  # the same import twice is one
                self.define(alias, self.terminal(read_regex(COMMON[name])), terminal=True)
                self.imported[alias] = name

    # -- expressions
    def alternatives(self) -> Node:
        """``a | b | …`` (a ``|`` may open a continued line)."""
        options = [self.sequence()]
        while True:
            if self.taking("|"):
                options.append(self.sequence())
            elif self.kind == "newline" and self.lexemes[self.position + 1].kind == "|":
                self.position += 2
                options.append(self.sequence())
            else:
                return choice(*options)

    def sequence(self) -> Node:
        """Parts up to the end of an alternative; an alias after them is dropped."""
        parts: list[Node] = []
        while self.kind not in _ENDS:
            parts.append(self.repeated())
        if self.kind == "&":
            raise self.refuse("'&' (the intersection of lexemes)")
        if self.taking("->"):
            self.take("rule")
        if self.kind == "%if":
            raise self.refuse("a parameter condition")
        return concat(*parts)

    def repeated(self) -> Node:
        """A part and its repetition: ``? * +``, ``~ n``, ``~ m..n`` or ``{m,n}``."""
        atom = self.atom()
        if self.kind == "op":
            op = self.take("op").text
            return optional(atom) if op == "?" else Repeat(atom, 0 if op == "*" else 1, None)
        if self.kind == "~" and self.lexemes[self.position + 1].kind == "number":
            self.position += 1
            least = self.count()
            return Repeat(atom, least, self.count() if self.taking("..") else least)
        if self.taking("{"):
            least = 0 if self.kind == "," else self.count()
            most: int | None = least
            if self.taking(","):
                most = None if self.kind == "}" else self.count()
            self.take("}")
            return Repeat(atom, least, most)
        return atom

    def count(self) -> int:
        text = self.take("number").text
        if not text.isdigit():
            raise UnsupportedGrammarError(f"{text!r} is not a count")
        return int(text)

    def atom(self) -> Node:
        """A group, an optional part, or a value."""
        if self.kind == "~":
            raise self.refuse("'~' (the complement of a lexeme)")
        if self.taking("("):
            inner = self.alternatives()
            self.take(")")
            return inner
        if self.taking("["):
            inner = self.alternatives()
            self.take("]")
            return optional(inner)
        return self.value()

    def value(self) -> Node:
        """A literal, a range, a regular expression, a name or a ``%json`` schema."""
        lexeme = self.lexemes[self.position]
        self.position += 1
        if lexeme.kind == "string":
            text, insensitive = _string(lexeme.text)
            if self.taking(".."):
                last, _ = _string(self.take("string").text)
                chars = normalized(((ord(text[:1] or "\0"), ord(last[:1] or "\0")),))
                if len(text) != 1 or len(last) != 1 or insensitive or not chars:
                    raise UnsupportedGrammarError(
                        f"line {lexeme.line}: a range is of two characters, in order"
                    )
                return as_class(chars)
            if not insensitive:
                return LiteralText(text)
            return self.terminal(read_regex(re.escape(text), re.IGNORECASE))
        if lexeme.kind == "regexp":
            body, _, letters = lexeme.text[1:].rpartition("/")
            return self.terminal(read_regex(body, lark_flags(letters)))
        if lexeme.kind in ("rule", "token"):
            if self.kind == "::" or (
                self.kind == "{" and self.lexemes[self.position + 1].kind not in (",", "number")
            ):
                raise self.refuse("a parametric or template rule")
            return self.ref(lexeme.text.lstrip("!?"))
        if lexeme.kind == "%json":
            return JsonValue(json.dumps(lexeme.value))
        names = {"special": "a special token", "ref": "a reference to another grammar", "%lark": "%lark"}
        raise UnsupportedGrammarError(
            f"line {lexeme.line}: {names.get(lexeme.kind, repr(lexeme.text))} cannot be expressed"
        )

    def terminal(self, node: Node) -> Node:
        """``node`` as one lexeme: a rule of its own unless it is one literal or class."""
        if isinstance(node, LiteralText | CharClass):
            return node
        return self.rule_set.add("in_lexeme", node, terminal=True)

    def nullable(self, node: Node) -> bool:
        """Whether ``node`` may take the empty text."""
        names = {ref.name: name for name, ref in self.refs.items()}

        def lookup(rule: str) -> Node | None:
            return self.bodies[names[rule]] if rule in names else self.rule_set.definitions.get(rule)

        return _nullable(node, lookup, frozenset())


def _string(lexeme: str) -> tuple[str, bool]:
    """A string lexeme's text and whether it ignores case (``"…"i``)."""
    insensitive = lexeme.endswith("i")
    body = lexeme[:-1] if insensitive else lexeme
    body = re.sub(r"\\x([0-9a-fA-F]{2})", r"\\u00\1", body)
    return json.loads(body), insensitive


def _nullable(node: Node, lookup: Callable[[str], Node | None], seen: frozenset[str]) -> bool:
    """Whether ``node`` may take the empty text (``lookup``: a rule's body by its name)."""
    if isinstance(node, LiteralText):
        return not node.text
    if isinstance(node, Concat):
        return all(_nullable(item, lookup, seen) for item in node.items)
    if isinstance(node, Choice):
        return any(_nullable(item, lookup, seen) for item in node.items)
    if isinstance(node, Repeat):
        return node.least == 0 or _nullable(node.item, lookup, seen)
    if isinstance(node, RuleRef) and node.name not in seen:
        body = lookup(node.name)
        return body is not None and _nullable(body, lookup, seen | {node.name})
    return False


def _interleaved(node: Node, ignore: Node, nullable: Callable[[Node], bool]) -> Node:
    """``node`` with ``ignore`` between its parts wherever text comes before and after."""
    if isinstance(node, Concat):
        parts: list[Node] = []
        started = False
        for item in node.items:
            item = _interleaved(item, ignore, nullable)
            parts.append(_led(item, ignore, nullable) if started else item)
            started = started or not nullable(item)
        return concat(*parts)
    if isinstance(node, Choice):
        return choice(*(_interleaved(item, ignore, nullable) for item in node.items))
    if isinstance(node, Repeat):
        item = _interleaved(node.item, ignore, nullable)
        if nullable(item) or node.most == 1:
            return Repeat(item, node.least, node.most)
        more = Repeat(
            concat(ignore, item), max(node.least - 1, 0), None if node.most is None else node.most - 1
        )
        return concat(item, more) if node.least else optional(concat(item, more))
    return node


def _led(node: Node, ignore: Node, nullable: Callable[[Node], bool]) -> Node:
    """``node`` with ``ignore`` before it where it takes text (an optional or repeated part
    that may not be empty: before each of its texts; other empty ones: nowhere)."""
    if not nullable(node):
        return concat(ignore, node)
    if isinstance(node, Repeat) and node.least == 0 and not nullable(node.item):
        return Repeat(concat(ignore, node.item), 0, node.most)
    if isinstance(node, Choice):
        return choice(*(_led(item, ignore, nullable) for item in node.items))
    return node
