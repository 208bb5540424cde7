"""llguidance against xgrammar on our grammars over o200k_harmony (201k ids), in one run:
compile time, time per token mask (p50 / p99), and whether each holds gpt-oss to the Harmony
envelope with its special tokens as tokens.

Usage: ``.venv/bin/python bench/bench_grammar_engines.py [--rounds 20] [--markdown]``
(xgrammar is not a dependency: ``pip install xgrammar`` first, else its rows say so).

Grammars (from ``openchatml.templates.grammar``): a forced call of one of two tools with
bounded JSON arguments (``required``), the same under ``auto`` (lazy: free text until the
recipient), and a final answer held to a JSON Schema. Each is run over the token trace
gpt-oss writes for it — reasoning, then the call or the answer — computing the mask before
every token and then taking the token, as a sampler does. llguidance reads the Lark text
(markers as token references); xgrammar reads the EBNF text, where a marker is its text.
``markers only as tokens``: whether the engine refuses the same trace with each special
token spelled as ordinary text (a model, or a user's text echoed by one, writing
``<|call|>`` as characters must not end a call).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import llguidance as llg
import numpy as np

from openchatml import load_encoding
from openchatml.core.tokens import FIRST_SPECIAL_ID
from openchatml.engines.guidance import Guidance
from openchatml.templates.grammar import ToolGrammar, harmony_tool_call_grammar

ENCODING = load_encoding()
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 32},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "array", "items": {"type": "integer"}, "maxItems": 7},
        },
        "required": ["city", "unit"],
    },
}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
ANSWER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "score": {"type": "integer"}, "tags": {"type": "array"}},
    "required": ["city", "score"],
}
THOUGHT = "<|channel|>analysis<|message|>The user asks for the weather in Paris; I will call the tool.<|end|>"
CALL = "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
CALL += '{"city": "Paris", "unit": "celsius", "days": [1, 2, 3]}<|call|>'
FINAL = (
    '<|start|>assistant<|channel|>final<|message|>{"city": "Paris", "score": 7, "tags": ["sunny", "mild"]}'
)
FINAL += "<|return|>"


@dataclass(frozen=True)
class Case:
    name: str
    grammar: ToolGrammar
    text: str


CASES = [
    Case("required call", harmony_tool_call_grammar([WEATHER, TIME], tool_choice="required"), THOUGHT + CALL),
    Case("auto (lazy)", harmony_tool_call_grammar([WEATHER, TIME]), THOUGHT + CALL),
    Case(
        "json answer",
        harmony_tool_call_grammar([], tool_choice="none", answer_schema=ANSWER),
        THOUGHT + FINAL,
    ),
]


@dataclass
class Row:
    engine: str
    case: str
    compile_ms: float
    p50_us: float
    p99_us: float
    accepts: str
    specials: str


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def _spelled(ids: list[int]) -> list[int]:
    """``ids`` with each special token replaced by the ids of its spelled text."""
    out: list[int] = []
    for token in ids:
        out += ENCODING.encode_ordinary(ENCODING.decode([token])) if token >= FIRST_SPECIAL_ID else [token]
    return out


def _timed(step: Callable[[int], bool], mask: Callable[[], None], ids: list[int]) -> tuple[list[float], bool]:
    times: list[float] = []
    for token in ids:
        started = time.perf_counter()
        mask()
        times.append(time.perf_counter() - started)
        if not step(token):
            return times, False
    return times, True


def run_llguidance(case: Case, rounds: int) -> Row:
    guidance = Guidance.of(None)
    ids = ENCODING.encode(case.text, allowed_special="all")
    compiles, masks, accepted = [], [], True
    for _ in range(rounds):
        started = time.perf_counter()
        matcher = llg.LLMatcher(
            guidance.tokenizer, llg.LLMatcher.grammar_from_lark(case.grammar.lark), log_level=0
        )
        compiles.append(time.perf_counter() - started)
        bitmask = np.zeros((guidance.vocab_size + 31) // 32, dtype=np.int32)

        def mask(m: Any = matcher, b: Any = bitmask) -> None:
            m.unsafe_compute_mask_ptr(b.ctypes.data, b.nbytes)

        times, ok = _timed(matcher.consume_token, mask, ids)
        masks += times
        accepted = accepted and ok and matcher.is_accepting()
    spelled = llg.LLMatcher(
        guidance.tokenizer, llg.LLMatcher.grammar_from_lark(case.grammar.lark), log_level=0
    )
    takes_spelled = spelled.consume_tokens(_spelled(ids)) and spelled.is_accepting()
    return Row(
        "llguidance",
        case.name,
        1000 * statistics.median(compiles),
        1e6 * _percentile(masks, 50),
        1e6 * _percentile(masks, 99),
        "yes" if accepted else "no",
        "no: accepts them spelled as text" if takes_spelled else "yes",
    )


def run_xgrammar(case: Case, rounds: int) -> Row:
    try:
        import torch
        import xgrammar as xgr
    except ImportError:
        return Row("xgrammar", case.name, float("nan"), float("nan"), float("nan"), "not installed", "-")
    vocab = list(ENCODING.token_bytes)
    info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, stop_token_ids=[199999])
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    ids = ENCODING.encode(case.text, allowed_special="all")
    compiles, masks, accepted = [], [], True
    for _ in range(rounds):
        started = time.perf_counter()
        try:
            compiled = compiler.compile_grammar(xgr.Grammar.from_ebnf(case.grammar.ebnf))
        except Exception as exc:
            return Row(
                "xgrammar", case.name, float("nan"), float("nan"), float("nan"), f"error: {exc}"[:40], "-"
            )
        compiles.append(time.perf_counter() - started)
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        bitmask = xgr.allocate_token_bitmask(1, len(vocab))

        def mask(m: Any = matcher, b: torch.Tensor = bitmask) -> None:
            m.fill_next_token_bitmask(b)

        times, ok = _timed(matcher.accept_token, mask, ids)
        masks += times
        accepted = accepted and ok
    text = xgr.GrammarMatcher(compiler.compile_grammar(xgr.Grammar.from_ebnf(case.grammar.ebnf)))
    takes_spelled = all(text.accept_token(token) for token in _spelled(ids))
    return Row(
        "xgrammar",
        case.name,
        1000 * statistics.median(compiles),
        1e6 * _percentile(masks, 50),
        1e6 * _percentile(masks, 99),
        "yes" if accepted else "no",
        "no: accepts them spelled as text" if takes_spelled else "yes",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    Guidance.of(None)  # the vocabulary, built once outside the timings
    rows = [run(case, args.rounds) for case in CASES for run in (run_llguidance, run_xgrammar)]
    head = [
        "engine",
        "grammar",
        "compile ms",
        "mask p50 µs",
        "mask p99 µs",
        "accepts the trace",
        "markers only as tokens",
    ]
    body = [
        [r.engine, r.case, f"{r.compile_ms:.2f}", f"{r.p50_us:.0f}", f"{r.p99_us:.0f}", r.accepts, r.specials]
        for r in rows
    ]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for line in body:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    for line in [head, *body]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))


if __name__ == "__main__":
    main()
