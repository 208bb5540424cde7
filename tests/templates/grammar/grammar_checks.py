"""What the grammar tests share: the engines that run a grammar on a text (llguidance for
Lark; xgrammar, where installed, for GBNF / EBNF), :func:`check` that holds every text of a
:class:`ToolGrammar` to one verdict, and the tools the tests offer.

Lark grammars run in llguidance (``LLMatcher`` over a byte-level tokenizer, with some
markers as special tokens where a test says so); the GBNF / EBNF text runs in xgrammar
(``Grammar.from_ebnf``), skipped where xgrammar is not installed (llguidance's own GBNF
converter lexes greedily and is no judge of GBNF).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import llguidance as llg
import pytest

from openchatml.templates.format import TemplateFormat
from openchatml.templates.grammar import ToolGrammar

# --------------------------------------------------------------------------- engines


class _ByteTokenizer:
    """One token per byte, then an end-of-sequence token and the given special tokens."""

    def __init__(self, specials: Sequence[str]) -> None:
        self.tokens = [bytes([i]) for i in range(256)]
        self.eos_token_id = 256
        self.bos_token_id = None
        self.specials = {text: 257 + i for i, text in enumerate(specials)}
        self.tokens.append(b"<eos>")
        self.tokens += [text.encode() for text in specials]
        self.special_token_ids = [256, *self.specials.values()]

    def __call__(self, text: str | bytes) -> list[int]:
        return list(text.encode() if isinstance(text, str) else text)

    def encode(self, text: str) -> list[int]:
        """Bytes, with the special tokens' text as their tokens."""
        if not self.specials:
            return list(text.encode())
        pattern = "(" + "|".join(re.escape(s) for s in sorted(self.specials, key=len, reverse=True)) + ")"
        out: list[int] = []
        for i, part in enumerate(re.split(pattern, text)):
            out += [self.specials[part]] if i % 2 else list(part.encode())
        return out


@functools.cache
def _tokenizer(specials: tuple[str, ...]) -> tuple[_ByteTokenizer, llg.LLTokenizer]:
    raw = _ByteTokenizer(specials)
    return raw, llg.LLTokenizer(llg.TokenizerWrapper(raw))


def lark_accepts(lark: str, text: str, specials: Sequence[str] = ()) -> bool:
    """Whether llguidance's matcher takes all of ``text`` and may stop there."""
    raw, tokenizer = _tokenizer(tuple(specials))
    matcher = llg.LLMatcher(tokenizer, llg.LLMatcher.grammar_from_lark(lark), log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    return matcher.consume_tokens(raw.encode(text)) and matcher.is_accepting()


@functools.cache
def _xgrammar() -> Any:
    xgr = pytest.importorskip("xgrammar")
    vocab = [bytes([i]) for i in range(256)] + [b"<eos>"]
    info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, stop_token_ids=[256])
    return xgr, xgr.GrammarCompiler(info, cache_enabled=False)


def ebnf_accepts(ebnf: str, text: str) -> bool:
    """Whether xgrammar takes all of ``text`` and may stop there."""
    xgr, compiler = _xgrammar()
    matcher = xgr.GrammarMatcher(
        compiler.compile_grammar(xgr.Grammar.from_ebnf(ebnf)), terminate_without_stop_token=True
    )
    return bool(matcher.accept_string(text)) and bool(matcher.is_terminated())


def from_trigger(grammar: ToolGrammar, fmt: TemplateFormat, text: str) -> str | None:
    """The part of ``text`` a lazy grammar sees: from the first trigger after the reasoning."""
    start = 0
    end = fmt.reasoning.end
    if end and end in text:
        start = text.rindex(end) + len(end)
    rest = text[start:]
    found: list[int] = []
    for trigger in grammar.triggers:
        if trigger.kind == "word" and trigger.value in rest:
            found.append(rest.index(trigger.value))
        elif trigger.kind == "pattern" and (m := re.search(trigger.value, rest)):
            found.append(m.start(1))
    return rest[min(found) :] if found else None


def check(
    grammar: ToolGrammar, fmt: TemplateFormat, text: str, expected: bool, specials: Sequence[str] = ()
) -> None:
    """Every grammar text agrees with ``expected`` on ``text``."""
    assert lark_accepts(grammar.lark, text, specials) is expected, ("lark", text)
    if specials:
        return
    try:
        xgrammar_ok = ebnf_accepts(grammar.ebnf, text)
    except pytest.skip.Exception:
        return
    assert xgrammar_ok is expected, ("ebnf", text)
    if grammar.lazy and expected:
        tail = from_trigger(grammar, fmt, text)
        if tail is not None:
            assert ebnf_accepts(grammar.gbnf, tail), ("gbnf from the trigger", tail)


# --------------------------------------------------------------------------- tools


def tool(
    name: str, properties: Mapping[str, Any], required: Sequence[str] = (), **extra: Any
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties), **extra}
    if required:
        schema["required"] = list(required)
    return {"type": "function", "function": {"name": name, "description": name, "parameters": schema}}


WEATHER = tool(
    "get_weather",
    {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}, "days": {"type": "integer"}},
    ["city"],
)
TIME = tool("get_time", {"city": {"type": "string"}}, ["city"])
SPECIAL = tool("special_function", {"arg1": {"type": "integer"}}, ["arg1"])
TOOLS = [WEATHER, TIME, SPECIAL]
CONFIGURE = tool(
    "configure",
    {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "enabled": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {
            "type": "object",
            "properties": {"level": {"type": "integer"}, "mode": {"enum": ["fast", "slow"]}},
            "required": ["level"],
        },
        "note": {"type": ["string", "null"]},
    },
    ["name", "count"],
)
