"""The intermediate form written as llguidance's Lark dialect.

Rules reachable from the start are written in the order they are first reached, the start
first. Terminal rules (:attr:`~.builder.RuleSet.terminals`) become upper-case lexemes
(``STR_3: /"…"/``), the others lower-case rules. Layout whitespace is ``_WS?``; a JSON value
is an inline ``%json`` schema (``lenient``; with the same whitespace bound, or with
``json_separators`` in one fixed spacing: no whitespace beyond them, which every llguidance
version honours — vLLM's pins one that ignores a whitespace bound); free text is a
lexeme ``TEXT_n`` that runs up to its marker, made lazy (``text_n[lazy]: TEXT_n``) so that it
ends at the first occurrence. Free text with ``max_tokens`` before a marker that is a special
token is a rule ``text_n[max_tokens=N]: TEXT_n``: at the bound the lexeme ends and the marker
must follow (a marker spelled as text cannot be forced so: its text stays unbounded). A
value's bounds on free text (characters, a pattern, texts it must not hold) are the lexeme's
own: a counted repetition, intersected (``&``) with the pattern and with the negation
(``~``) of the forbidden texts, all in one negation (each one more multiplies the lexer's
states). Text
that equals a special token of the tokenizer is written as a token reference ``<[id]>``:
llguidance matches a special token only so.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Final

from .builder import RuleSet
from .ir import (
    WHITESPACE_MAX,
    CharClass,
    Choice,
    Concat,
    FreeText,
    JsonValue,
    Layout,
    LiteralText,
    Node,
    Repeat,
    RuleRef,
    Subgrammar,
    referenced_rules,
)

_BLANK: Final = "[ \\t\\r\\n]"


@functools.cache
def regex_char(code: int, *, in_class: bool) -> str:
    """The character ``code`` in a Lark regular expression, inside a class or not."""
    char = chr(code)
    if code < 0x20 or code == 0x7F:
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(char, f"\\x{{{code:02x}}}")
    meta = "\\]^-[&~" if in_class else "\\.+*?()|[]{}^$#&-~"
    if char in meta:
        return "\\" + char
    if char == "/":
        return "\\/"
    return char


def regex_slashes(regex: str) -> str:
    """``regex`` with its unescaped ``/`` escaped, to stand between Lark's slashes."""
    out: list[str] = []
    escaped = False
    for char in regex:
        if char == "/" and not escaped:
            out.append("\\")
        out.append(char)
        escaped = char == "\\" and not escaped
    return "".join(out)


def regex_text(text: str) -> str:
    """``text`` matched literally by a Lark regular expression."""
    return "".join(regex_char(ord(char), in_class=False) for char in text)


def regex_class(node: CharClass) -> str:
    """A character class as a Lark regular expression."""
    body = "".join(
        regex_char(low, in_class=True)
        if low == high
        else regex_char(low, in_class=True) + "-" + regex_char(high, in_class=True)
        for low, high in node.ranges
    )
    return f"[{'^' if node.negated else ''}{body}]"


class LarkWriter:
    """Writes the rules of a :class:`~.builder.RuleSet` as llguidance Lark; markers in
    ``special_tokens`` (text → token id) become token references. Free-text and JSON rules
    get fresh names from the rule set."""

    def __init__(
        self,
        rule_set: RuleSet,
        special_tokens: Mapping[str, int],
        json_separators: tuple[str, str] | None = None,
    ) -> None:
        self.rule_set = rule_set
        self.json_separators = json_separators
        self.special_tokens = sorted(special_tokens.items(), key=lambda item: -len(item[0]))
        self.extra_lines: list[str] = []
        self.free_text_rules: dict[FreeText, str] = {}
        self.json_rules: dict[str, str] = {}
        self.subgrammar_rules: dict[tuple[str, str], str] = {}
        self.layout_used = False

    def write(self, start: str) -> str:
        """The grammar of the rules reachable from ``start``."""
        lines: list[str] = []
        seen: set[str] = set()
        queue = [start]
        while queue:
            name = queue.pop(0)
            if name in seen:
                continue
            seen.add(name)
            node = self.rule_set.definitions[name]
            if name in self.rule_set.terminals:
                lines.append(f"{name.upper()}: /{self.regex(node)}/")
            else:
                lines.append(f"{name.lower()}: {self.expression(node, top=True)}")
                queue.extend(ref for ref in referenced_rules(node) if ref not in seen)
        head = ["%llguidance {}", ""]
        if self.layout_used:
            self.extra_lines.append(f"_WS: /{_BLANK}{{1,{WHITESPACE_MAX}}}/")
        return "\n".join(head + lines + self.extra_lines) + "\n"

    def rule_name(self, ref: str) -> str:
        """How the rule ``ref`` is named: upper case for a lexeme, lower case otherwise."""
        return ref.upper() if ref in self.rule_set.terminals else ref.lower()

    def pieces(self, text: str) -> list[str]:
        """``text`` as Lark: quoted strings, with special tokens as token references."""
        out: list[str] = []
        pending = ""
        i = 0
        while i < len(text):
            for marker, token in self.special_tokens:
                if marker and text.startswith(marker, i):
                    if pending:
                        out.append(json.dumps(pending, ensure_ascii=False))
                        pending = ""
                    out.append(f"<[{token}]>")
                    i += len(marker)
                    break
            else:
                pending += text[i]
                i += 1
        if pending:
            out.append(json.dumps(pending, ensure_ascii=False))
        return out

    def expression(self, node: Node, *, top: bool = False) -> str:
        """``node`` as a Lark expression (``top``: the whole body of a rule, alternatives
        written bare)."""
        if isinstance(node, LiteralText):
            return " ".join(self.pieces(node.text)) or '""'
        if isinstance(node, CharClass):
            return f"/{regex_class(node)}/"
        if isinstance(node, RuleRef):
            return self.rule_name(node.name)
        if isinstance(node, Layout):
            self.layout_used = True
            return "_WS?"
        if isinstance(node, Concat):
            if not node.items:
                return '""'
            return " ".join(self.expression(item) for item in node.items)
        if isinstance(node, Choice):
            body = " | ".join(self.expression(item) for item in node.items)
            return body if top else f"({body})"
        if isinstance(node, Repeat):
            return f"({self.expression(node.item, top=True)}){node.quantifier}"
        if isinstance(node, FreeText):
            return self.free_text(node)
        if isinstance(node, Subgrammar):
            return self.subgrammar(node)
        return self.json(node)

    def subgrammar(self, node: Subgrammar) -> str:
        """A nested grammar then its stop: ``%lark { … }`` in a rule of its own, or a regular
        expression as a lexeme."""
        stop = self.pieces(node.stop) if node.stop else []
        name = self.subgrammar_rules.get((node.syntax, node.definition))
        if name is None:
            name = self.rule_set.fresh_name("input")
            if node.syntax == "lark":
                self.extra_lines.append(f"{name}: %lark {{\n{node.definition.strip()}\n}}")
            else:
                name = name.upper()
                self.extra_lines.append(f"{name}: /{regex_slashes(node.definition)}/")
            self.subgrammar_rules[node.syntax, node.definition] = name
        return " ".join([name, *stop])

    def json(self, node: JsonValue) -> str:
        """A rule ``json_n: %json {...}`` for the schema (one per schema)."""
        if node.schema not in self.json_rules:
            schema = json.loads(node.schema)
            guidance: dict[str, object] = {"lenient": True}
            if self.json_separators is None:
                guidance["whitespace_pattern"] = f"[\\x20\\x0A\\x0D\\x09]{{1,{WHITESPACE_MAX}}}"
            else:
                item, key = self.json_separators
                guidance.update(whitespace_flexible=False, item_separator=item, key_separator=key)
            text = json.dumps({"x-guidance": guidance, **schema}, ensure_ascii=False)
            name = self.rule_set.fresh_name("json")
            self.json_rules[node.schema] = name
            self.extra_lines.append(f"{name}: %json {text}")
        return self.json_rules[node.schema]

    def free_text(self, node: FreeText) -> str:
        """Free text as a lexeme up to its marker (see the module docstring); an opening
        marker that is a special token is written before it, outside the lexeme."""
        if node in self.free_text_rules:
            return self.free_text_rules[node]
        opening = self.pieces(node.open) if node.open else []
        stop_pieces = self.pieces(node.stop) if node.stop else []
        if any(piece.startswith("<[") for piece in opening):
            bare = FreeText(
                node.stop,
                node.not_start,
                node.avoid,
                "",
                node.max_tokens,
                node.least,
                node.most,
                node.pattern,
                node.forbid,
            )
            inner = self.free_text(bare)
            out = " ".join(["_WS?", *opening, inner])
            self.layout_used = True
            self.free_text_rules[node] = out
            return out
        lead = f"{_BLANK}*" + regex_text(node.open) if node.open else ""
        exclude = ""
        if node.not_start:
            heads = "|".join(regex_text(head) for head in node.not_start)
            exclude = f" & ~/{_BLANK}*(?:{heads})(?s:.*)/"
        if node.avoid and not self.pieces(node.avoid)[0].startswith("<["):  # a token is never text
            exclude += f" & ~/(?s:.*){regex_text(node.avoid)}(?s:.*)/"
        body = "(?s:.*)"
        if node.least or node.most is not None:
            body = f"(?s:.{{{node.least},{'' if node.most is None else node.most}}})"
        textual_stop = bool(node.stop) and not stop_pieces[0].startswith("<[")
        stop_regex = regex_text(json.loads(stop_pieces[0])) if textual_stop else ""
        exclude += self.value_limits(node, lead, stop_regex)
        lexeme = self.rule_set.fresh_name("TEXT").upper()
        if not textual_stop:
            self.extra_lines.append(f"{lexeme}: /{lead}{body}/{exclude}")
            text = lexeme
            if node.max_tokens is not None:  # a bound holds a rule over one lexeme
                text = lexeme.lower()
                self.extra_lines.append(f"{text}[max_tokens={node.max_tokens}]: {lexeme}")
            out = " ".join([text, *stop_pieces])
        else:
            self.extra_lines.append(f"{lexeme}: /{lead}{body}{stop_regex}/{exclude}")
            lazy = lexeme.lower()
            self.extra_lines.append(f"{lazy}[lazy]: {lexeme}")
            out = " ".join([lazy, *stop_pieces[1:]])
        self.free_text_rules[node] = out
        return out

    @staticmethod
    def value_limits(node: FreeText, lead: str, stop_regex: str) -> str:
        """The lexeme's intersections for a value's ``pattern`` (a search, unless anchored)
        and its ``forbid`` texts: one that ends the stop may close the text only."""
        out = ""
        if node.pattern:
            pattern = node.pattern
            head = "" if pattern.startswith("^") else "(?s:.*)"
            tail = "" if pattern.endswith("$") and not pattern.endswith("\\$") else "(?s:.*)"
            pattern = pattern.removeprefix("^")
            pattern = pattern[:-1] if not tail else pattern
            out += f" & /{lead}{head}(?:{regex_slashes(pattern)}){tail}{stop_regex}/"
        closing = [regex_text(text) for text in node.forbid if text and node.stop.endswith(text)]
        inner = [regex_text(text) for text in node.forbid if text and text not in node.stop]
        held = [f"(?:{'|'.join(closing)})(?s:.+)"] if closing else []
        held += [f"(?:{'|'.join(inner)})(?s:.*)"] if inner else []
        if held:  # one negation: each one more multiplies the lexer's states
            out += f" & ~/(?s:.*)(?:{'|'.join(held)})/"
        return out

    def regex(self, node: Node) -> str:
        """A regular node (of a terminal rule) as a Lark regular expression."""
        if isinstance(node, LiteralText):
            return regex_text(node.text)
        if isinstance(node, CharClass):
            return regex_class(node)
        if isinstance(node, RuleRef):
            return f"(?:{self.regex(self.rule_set.definitions[node.name])})"
        if isinstance(node, Concat):
            return "".join(self.regex(item) for item in node.items)
        if isinstance(node, Choice):
            return "(?:" + "|".join(self.regex(item) for item in node.items) + ")"
        if isinstance(node, Repeat):
            return f"(?:{self.regex(node.item)}){node.quantifier}"
        raise AssertionError(f"not a regular expression: {node!r}")
